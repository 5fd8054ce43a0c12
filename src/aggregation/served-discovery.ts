// The served discovery documents (one immutable set, part of the snapshot): everything mvproxy
// answers for `/apis` itself, encoded once per input change and never per request
// (docs/kubernetes-mvp.md §5.2, §5.4, §5.5; issue 4).
//
// - merged: the peer-aggregated `/apis` (mergeResources of the local document and every peer's,
//   docs/kubernetes-mvp.md §5.4), as compact JSON and as Kubernetes protobuf (v2), one ETag for both;
// - local: the local apiserver's `/apis` (what `profile=nopeer` gets), re-encoded the same way;
// - legacy: APIGroupList / APIGroup / APIResourceList derived from the merged data (legacy.ts).
//
// ETag: upstream hashes Go's json.Marshal of `APIGroupDiscoveryList{Items: …}`, i.e. without
// TypeMeta: `{"metadata":{},"items":[…]}`. Our JSON encoder follows Go's field order and
// omitempty rules, so the ETag is computed over exactly that form (the body minus its
// `"kind":…,"apiVersion":…,` prefix): for documents our encoder reproduces byte for byte it equals
// the apiserver's own ETag, and it is opaque either way (docs/kubernetes-mvp.md §5.2).
//
// Encoding: each document is assembled from per-group encodings (codec/json.ts groupJSON, which
// takes JSON.stringify for groups already in Go form; codec/protobuf.ts
// encodeAPIGroupDiscoveryMessage), the same bytes encodeJSON and encodeAPIGroupDiscoveryList write
// for the whole list. A EncodingMemo keeps those per group object, so the merged document reuses
// what the local one encoded, and a builder that keeps its parsed documents (merge.worker.ts)
// reuses them across builds, with the pairwise merges and exclusion filtering too.
//
// Peer exclusion (docs/kubernetes-mvp.md §4.5, the refilter worker): per peer, every GVR whose "group/version" is
// excluded is dropped; if anything was dropped, excluded versions are dropped from that peer's
// groups and groups left with no versions are dropped; group metadata is kept. The local document
// is never filtered (CRDs and aggregated APIs are shown from the local view only).

import { createHash } from 'node:crypto';
import type { APIGroupDiscovery, APIGroupDiscoveryList, APIVersionDiscovery } from './types';
import { mergeResources, type GroupMergeMemo } from './merge';
import { groupJSON, isRawGroupJSON, stringifyAPIGroupDiscoveryList } from './codec/json';
import { assembleAPIGroupDiscoveryList, encodeAPIGroupDiscoveryMessages } from './codec/protobuf';
import { buildLegacyDiscovery, newLegacyMemo, type LegacyDiscovery, type LegacyMemo } from './legacy';

export type { LegacyDiscovery } from './legacy';

/** One aggregated v2 document, pre-encoded. */
export interface EncodedDiscovery {
  /** Compact JSON, `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2",…}`. */
  readonly json: Buffer;
  /** `application/vnd.kubernetes.protobuf` body (k8s\0 + runtime.Unknown), v2. */
  readonly protobuf: Buffer;
  /** Quoted uppercase hex SHA-512, the same for both encodings. */
  readonly etag: string;
}

export interface ServedDiscoveryCounts {
  /** Servers that took part in the merge (local included; a peer under the local ID is ignored). */
  readonly servers: number;
  /** Groups / group-versions / group-version-resources of the merged document. */
  readonly groups: number;
  readonly groupVersions: number;
  readonly resources: number;
  /** Group-version-resources of the local document. */
  readonly localResources: number;
  /** Group/versions of the merged document that the local apiserver does not serve. */
  readonly peerOnlyGroupVersions: number;
  /** Peer GVRs dropped by the exclusion set, summed over peers. */
  readonly excludedPeerResources: number;
}

/** How a snapshot was built (set by the builder that ran it). */
export interface ServedDiscoveryBuild {
  /** Parse + merge + encode time, milliseconds, measured where it ran. */
  readonly ms: number;
  readonly thread: 'worker' | 'inline';
  /** Worker builds: submit → snapshot on the main thread, milliseconds (queueing and transfer included). */
  readonly wallMs?: number;
  /** Set when the worker pool could not run the build and it ran inline instead. */
  readonly workerError?: string;
}

export interface ServedDiscovery {
  readonly generation: number;
  readonly merged: EncodedDiscovery;
  readonly local: EncodedDiscovery;
  readonly legacy: LegacyDiscovery;
  readonly counts: ServedDiscoveryCounts;
  readonly build: ServedDiscoveryBuild;
}

export interface ServedDiscoveryInput {
  /** This server's ID (identity-lease name); takes part in the sort of server IDs (docs/kubernetes-mvp.md §5.4). */
  localID: string;
  localApis: APIGroupDiscoveryList;
  peers: { id: string; apis: APIGroupDiscoveryList }[];
  /** "group/version" strings excluded from peer data (CRD and aggregated-APIService GVs). */
  excludedGroupVersions: readonly string[];
  /** Stamped on the snapshot; 0 when absent. */
  generation?: number;
}

/**
 * What a builder may keep from one build to the next, all keyed by object identity (WeakMaps, so
 * nothing outlives the documents it was computed from): each group's JSON and protobuf encoding,
 * each pairwise group merge, each peer group's exclusion-filtered form, the local document's
 * encodings. Valid only while the documents given to the builds are never modified, which holds
 * for the documents merge.worker.ts parses itself. A fresh memo (the default) lives for one build:
 * the merged document then still reuses the encoded local groups it shares.
 */
export class EncodingMemo {
  readonly groupMerges: GroupMergeMemo = new WeakMap();
  readonly legacy: LegacyMemo = newLegacyMemo();
  private readonly json = new WeakMap<APIGroupDiscovery, GroupJSON>();
  private readonly protobuf = new WeakMap<APIGroupDiscovery, Uint8Array>();
  private readonly filtered = new WeakMap<APIGroupDiscovery, { key: string; group: APIGroupDiscovery | undefined; dropped: number }>();
  private readonly documents = new WeakMap<readonly APIGroupDiscovery[], EncodedDiscovery>();
  /** The last merged document encoded: its groups and encodings. */
  private lastMerged: { items: readonly APIGroupDiscovery[]; encoded: EncodedDiscovery } | undefined;

  /**
   * `rawJSON`: the JSON text each group was parsed from, where known (merge.worker.ts). A group's
   * own text is copied as its encoding when it is exactly that (codec/json.ts isRawGroupJSON), as
   * it is for groups from a current Go apiserver.
   */
  constructor(private readonly rawJSON?: WeakMap<object, Buffer>) {}

  /** The JSON of one group as it appears among a list's items (codec/json.ts groupJSON), as text or bytes. */
  groupJSON(g: APIGroupDiscovery): GroupJSON {
    let j = this.json.get(g);
    if (j === undefined) {
      const raw = this.rawJSON?.get(g);
      if (raw !== undefined && isRawGroupJSON(g, raw)) {
        j = { raw, bytes: raw.length };
      } else {
        const text = groupJSON(g);
        j = { text, bytes: Buffer.byteLength(text, 'utf8') };
      }
      this.json.set(g, j);
    }
    return j;
  }

  /** The protobuf message of each group (codec/protobuf.ts encodeAPIGroupDiscoveryMessage). */
  groupProtobufs(groups: readonly APIGroupDiscovery[]): Uint8Array[] {
    const missing = groups.filter((g) => !this.protobuf.has(g));
    if (missing.length > 0) {
      // The new ones in one go: views on one buffer rather than one allocation per group.
      const encoded = encodeAPIGroupDiscoveryMessages(missing);
      missing.forEach((g, i) => this.protobuf.set(g, encoded[i]!));
    }
    return groups.map((g) => this.protobuf.get(g)!);
  }

  /** filterExcludedGroupVersions of one group, remembered per exclusion set (`key`). */
  filterGroup(g: APIGroupDiscovery, excluded: ReadonlySet<string>, key: string): [APIGroupDiscovery | undefined, number] {
    const known = this.filtered.get(g);
    if (known !== undefined && known.key === key) return [known.group, known.dropped];
    const r = filterGroup(g, excluded);
    this.filtered.set(g, { key, group: r[0], dropped: r[1] });
    return r;
  }

  /** The encodings of the local document: the same array, the same (immutable) encodings. */
  encodeLocal(items: APIGroupDiscovery[]): EncodedDiscovery {
    let e = this.documents.get(items);
    if (e === undefined) {
      e = encodeDocument(items, this);
      this.documents.set(items, e);
    }
    return e;
  }

  /**
   * The encodings of a merged document. It is a new array every build; the same groups in the same
   * order (an input change that did not change the merge) give the last encodings again.
   */
  encodeMerged(items: APIGroupDiscovery[]): EncodedDiscovery {
    const last = this.lastMerged;
    if (last !== undefined && sameItems(last.items, items)) return last.encoded;
    const encoded = encodeDocument(items, this);
    this.lastMerged = { items, encoded };
    return encoded;
  }

  /** Forgets an encoded merged document whose buffer was given away (PackOptions.moveMerged). */
  forgetMerged(e: EncodedDiscovery): void {
    if (this.lastMerged?.encoded === e) this.lastMerged = undefined;
  }
}

/** One group's JSON: text to write, or bytes to copy; `bytes` is its UTF-8 length either way. */
type GroupJSON = { text: string; raw?: undefined; bytes: number } | { text?: undefined; raw: Buffer; bytes: number };

function sameItems(a: readonly APIGroupDiscovery[], b: readonly APIGroupDiscovery[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Builds a snapshot. Synchronous; the inputs are not modified. `memo` (default: one for this
 * build) carries encodings and merges over from earlier builds of the same, unmodified objects.
 */
export function buildServedDiscovery(input: ServedDiscoveryInput, build?: ServedDiscoveryBuild, memo: EncodingMemo = new EncodingMemo()): ServedDiscovery {
  const started = performance.now();
  const localItems = input.localApis.items ?? [];
  const excluded = new Set(input.excludedGroupVersions);
  const excludedKey = JSON.stringify(Array.from(excluded).sort());
  const peers = new Map<string, APIGroupDiscovery[]>();
  let excludedPeerResources = 0;
  for (const p of input.peers) {
    if (p.id === input.localID || peers.has(p.id)) continue;
    const [groups, dropped] = filterExcludedGroupVersions(p.apis.items ?? [], excluded, memo, excludedKey);
    excludedPeerResources += dropped;
    peers.set(p.id, groups);
  }

  const local = memo.encodeLocal(localItems);
  const mergedItems = mergeResources(input.localID, localItems, peers, memo.groupMerges);
  const merged = mergedItems === localItems ? local : memo.encodeMerged(mergedItems);
  const legacy = buildLegacyDiscovery(mergedItems, localItems, memo.legacy);

  let groupVersions = 0;
  let resources = 0;
  for (const g of mergedItems) {
    for (const v of g.versions ?? []) {
      groupVersions++;
      resources += v.resources?.length ?? 0;
    }
  }
  let localResources = 0;
  const localGVs = new Set<string>();
  for (const g of localItems) {
    for (const v of g.versions ?? []) {
      localResources += v.resources?.length ?? 0;
      localGVs.add(`${g.metadata?.name ?? ''}/${v.version}`);
    }
  }
  let peerOnlyGroupVersions = 0;
  for (const g of mergedItems) for (const v of g.versions ?? []) if (!localGVs.has(`${g.metadata?.name ?? ''}/${v.version}`)) peerOnlyGroupVersions++;

  const counts: ServedDiscoveryCounts = {
    servers: 1 + peers.size,
    groups: mergedItems.length,
    groupVersions,
    resources,
    localResources,
    peerOnlyGroupVersions,
    excludedPeerResources,
  };
  return Object.freeze({
    generation: input.generation ?? 0,
    merged,
    local,
    legacy: Object.freeze(legacy),
    counts: Object.freeze(counts),
    build: Object.freeze(build ?? { ms: performance.now() - started, thread: 'inline' as const }),
  });
}

/**
 * A peer's groups without the excluded group/versions (docs/kubernetes-mvp.md §4.5). Returns the groups (the
 * input array itself when nothing was dropped) and the number of GVRs dropped.
 */
export function filterExcludedGroupVersions(
  groups: readonly APIGroupDiscovery[],
  excluded: ReadonlySet<string>,
  memo?: EncodingMemo,
  excludedKey?: string,
): [APIGroupDiscovery[], number] {
  if (excluded.size === 0) return [groups as APIGroupDiscovery[], 0];
  const key = excludedKey ?? JSON.stringify(Array.from(excluded).sort());
  let dropped = 0;
  let out: APIGroupDiscovery[] | undefined;
  for (let i = 0; i < groups.length; i++) {
    const g = groups[i]!;
    const [kept, n] = memo !== undefined ? memo.filterGroup(g, excluded, key) : filterGroup(g, excluded);
    dropped += n;
    // Upstream filters the GVR cache; the group list changes only when some GVR was dropped.
    if (kept !== g && out === undefined) out = groups.slice(0, i);
    if (out !== undefined && kept !== undefined) out.push(kept);
  }
  return out === undefined || dropped === 0 ? [groups as APIGroupDiscovery[], 0] : [out, dropped];
}

/**
 * One group without its excluded versions: the group itself when none is excluded, undefined
 * when all are (the group goes), else a copy with the kept versions. Also the GVRs dropped.
 */
function filterGroup(g: APIGroupDiscovery, excluded: ReadonlySet<string>): [APIGroupDiscovery | undefined, number] {
  const name = g.metadata?.name ?? '';
  const versions = g.versions ?? [];
  let dropped = 0;
  let kept: APIVersionDiscovery[] | undefined;
  let i = 0;
  for (const v of versions) {
    if (excluded.has(`${name}/${v.version}`)) {
      dropped += v.resources?.length ?? 0;
      kept ??= versions.slice(0, i);
    } else if (kept !== undefined) {
      kept.push(v);
    }
    i++;
  }
  if (kept === undefined) return [g, 0];
  return [kept.length > 0 ? { ...g, versions: kept } : undefined, dropped];
}

/** The JSON body of a list around its items: `{"kind":…,"metadata":{},"items":[` … `]}`. */
const LIST_JSON = (() => {
  const empty = stringifyAPIGroupDiscoveryList({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [] });
  if (!empty.endsWith('[]}')) throw new Error('unexpected list JSON');
  return { head: Buffer.from(empty.slice(0, -2), 'utf8'), tail: Buffer.from(']}', 'utf8') };
})();
const COMMA = 0x2c;
const TYPE_META_PREFIX = Buffer.from('{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2",');

/**
 * Both encodings of `{kind, apiVersion, metadata: {}, items}` and its ETag: the bytes encodeJSON and
 * encodeAPIGroupDiscoveryList write for it, assembled from the memo's per-group encodings into one
 * allocation (JSON then protobuf).
 */
// The document's own ArrayBuffer, JSON then protobuf, nothing else: the worker can transfer it
// instead of copying it (PackOptions.moveMerged).
function encodeDocument(items: APIGroupDiscovery[], memo: EncodingMemo): EncodedDiscovery {
  const jsonParts = items.map((g) => memo.groupJSON(g));
  const pbParts = memo.groupProtobufs(items);
  let jsonLen = LIST_JSON.head.length + LIST_JSON.tail.length + Math.max(0, jsonParts.length - 1);
  for (const j of jsonParts) jsonLen += j.bytes;
  let block: Buffer | undefined;
  const protobuf = assembleAPIGroupDiscoveryList('v2', pbParts, (n) => {
    block = Buffer.allocUnsafeSlow(jsonLen + n);
    return block.subarray(jsonLen);
  }) as Buffer;
  const json = block!.subarray(0, jsonLen);
  let at = LIST_JSON.head.copy(json, 0);
  for (let i = 0; i < jsonParts.length; i++) {
    if (i > 0) json[at++] = COMMA;
    const j = jsonParts[i]!;
    if (j.raw !== undefined) j.raw.copy(json, at);
    else if (json.write(j.text, at, j.bytes, 'utf8') !== j.bytes) throw new Error('encodeDocument: short JSON write');
    at += j.bytes;
  }
  at += LIST_JSON.tail.copy(json, at);
  if (at !== jsonLen) throw new Error(`encodeDocument: wrote ${at} of ${jsonLen} JSON bytes`);
  return Object.freeze({ json, protobuf, etag: goETag(json) });
}

/** The ETag of Go's json.Marshal of the list without TypeMeta (`{"metadata":{},"items":[…]}`). */
function goETag(json: Buffer): string {
  const h = createHash('sha512');
  if (json.subarray(0, TYPE_META_PREFIX.length).equals(TYPE_META_PREFIX)) {
    h.update('{');
    h.update(json.subarray(TYPE_META_PREFIX.length));
  } else {
    h.update(json);
  }
  return `"${h.digest('hex').toUpperCase()}"`;
}

// ---- transfer form ----------------------------------------------------------------------------
// A snapshot crosses the worker boundary as one ArrayBuffer holding every body back to back plus
// a small description (offsets, ETags, counts). The receiver wraps Buffers over the ArrayBuffer:
// no copy on the main thread. Options for the worker (merger.ts): an encoded document the
// receiver already holds (by the sender's id for it) is left out, and the local document may
// travel in an ArrayBuffer of its own, so that a receiver keeping it for later builds keeps
// nothing else alive with it.

export interface PackedServedDiscoveryMeta {
  generation: number;
  mergedEtag: string;
  localEtag: string;
  /** [offset, length] of each body in `buffer` (mergedBuffer when there is one); null when left out (the receiver holds it: mergedId). */
  mergedJSON: [number, number] | null;
  mergedProtobuf: [number, number] | null;
  /** In `localBuffer` when there is one, else in `buffer`; null when left out (localId). */
  localJSON: [number, number] | null;
  localProtobuf: [number, number] | null;
  /** The merge returned the local document unchanged: local and merged are one. */
  mergedIsLocal: boolean;
  /** The sender's ids of the encoded documents (PackOptions.idOf). */
  mergedId?: string;
  localId?: string;
  legacyApis: [number, number];
  legacyGroups: [string, number, number][];
  legacyResourceLists: [string, number, number][];
  counts: ServedDiscoveryCounts;
  build: ServedDiscoveryBuild;
}

export interface PackedServedDiscovery {
  buffer: ArrayBuffer;
  /** The local document's bodies, when packed apart (PackOptions.separateLocal). */
  localBuffer?: ArrayBuffer;
  /** The merged document's bodies, when their own ArrayBuffer is passed on (PackOptions.moveMerged). */
  mergedBuffer?: ArrayBuffer;
  meta: PackedServedDiscoveryMeta;
}

export interface PackOptions {
  /** A stable id for an encoded document (the same object, the same id). */
  idOf?: (e: EncodedDiscovery) => string;
  /** Ids of encoded documents the receiver holds: their bodies are left out. */
  omit?: ReadonlySet<string>;
  /** Pack the local document's bodies (when sent, and not the merged document) in localBuffer. */
  separateLocal?: boolean;
  /**
   * When the merged document (sent, not the local one) has an ArrayBuffer of its own (as
   * EncodingMemo encodes it), pass that on as mergedBuffer instead of copying it. The caller
   * transfers it: the snapshot's merged Buffers are then unusable on this side.
   */
  moveMerged?: boolean;
}

/** Places buffers back to back; copy() writes them into one fresh ArrayBuffer. */
class Layout {
  private readonly parts: Buffer[] = [];
  private readonly offsets = new Map<Buffer, [number, number]>();
  private total = 0;

  place(b: Buffer): [number, number] {
    const known = this.offsets.get(b);
    if (known !== undefined) return known;
    const r: [number, number] = [this.total, b.length];
    this.offsets.set(b, r);
    this.parts.push(b);
    this.total += b.length;
    return r;
  }

  copy(): ArrayBuffer {
    const buffer = new ArrayBuffer(this.total);
    const view = new Uint8Array(buffer);
    let at = 0;
    for (const p of this.parts) {
      view.set(p, at);
      at += p.length;
    }
    return buffer;
  }
}

/** Copies the bodies of a snapshot into fresh ArrayBuffers (transferable: never a pooled one). */
export function packServedDiscovery(s: ServedDiscovery, opts: PackOptions = {}): PackedServedDiscovery {
  const main = new Layout();
  const mergedIsLocal = s.merged === s.local;
  const mergedId = opts.idOf?.(s.merged);
  const localId = mergedIsLocal ? mergedId : opts.idOf?.(s.local);
  const sendMerged = mergedId === undefined || opts.omit?.has(mergedId) !== true;
  const sendLocal = localId === undefined || opts.omit?.has(localId) !== true;
  const movable = opts.moveMerged === true && sendMerged && !mergedIsLocal ? ownBuffer(s.merged) : undefined;
  const mergedJSON = movable !== undefined ? movable.json : sendMerged ? main.place(s.merged.json) : null;
  const mergedProtobuf = movable !== undefined ? movable.protobuf : sendMerged ? main.place(s.merged.protobuf) : null;
  const apart = opts.separateLocal === true && !mergedIsLocal && sendLocal ? new Layout() : undefined;
  const localLayout = apart ?? main;
  const localJSON = sendLocal ? localLayout.place(s.local.json) : null;
  const localProtobuf = sendLocal ? localLayout.place(s.local.protobuf) : null;
  const legacyApis = main.place(s.legacy.apis);
  const legacyGroups: [string, number, number][] = [];
  for (const [k, b] of s.legacy.groups) legacyGroups.push([k, ...main.place(b)]);
  const legacyResourceLists: [string, number, number][] = [];
  for (const [k, b] of s.legacy.resourceLists) legacyResourceLists.push([k, ...main.place(b)]);

  const meta: PackedServedDiscoveryMeta = {
    generation: s.generation,
    mergedEtag: s.merged.etag,
    localEtag: s.local.etag,
    mergedJSON,
    mergedProtobuf,
    localJSON,
    localProtobuf,
    mergedIsLocal,
    legacyApis,
    legacyGroups,
    legacyResourceLists,
    counts: { ...s.counts },
    build: { ...s.build },
  };
  if (mergedId !== undefined) meta.mergedId = mergedId;
  if (localId !== undefined) meta.localId = localId;
  const packed: PackedServedDiscovery = { buffer: main.copy(), meta };
  if (apart !== undefined) packed.localBuffer = apart.copy();
  if (movable !== undefined) packed.mergedBuffer = movable.buffer;
  return packed;
}

/** The ArrayBuffer holding exactly an encoded document's JSON then protobuf body, if it has one. */
function ownBuffer(e: EncodedDiscovery): { buffer: ArrayBuffer; json: [number, number]; protobuf: [number, number] } | undefined {
  const { json, protobuf } = e;
  const ab = json.buffer;
  if (!(ab instanceof ArrayBuffer) || protobuf.buffer !== ab) return undefined;
  if (json.byteOffset !== 0 || protobuf.byteOffset !== json.length || ab.byteLength !== json.length + protobuf.length) return undefined;
  return { buffer: ab, json: [0, json.length], protobuf: [json.length, protobuf.length] };
}

/**
 * Wraps a packed snapshot without copying. `build` overrides the packed build info. `held`: the
 * encoded documents the packer was told to leave out (PackOptions.omit), by id.
 */
export function unpackServedDiscovery(p: PackedServedDiscovery, build?: ServedDiscoveryBuild, held?: ReadonlyMap<string, EncodedDiscovery>): ServedDiscovery {
  const { buffer, meta } = p;
  const at = (r: readonly [number, number], b: ArrayBuffer = buffer) => Buffer.from(b, r[0], r[1]);
  const heldDocument = (id: string | undefined, etag: string): EncodedDiscovery => {
    const e = id === undefined ? undefined : held?.get(id);
    if (e === undefined || e.etag !== etag) throw new Error(`packed snapshot: encoded document ${id ?? '(no id)'} left out but not held`);
    return e;
  };
  const merged: EncodedDiscovery =
    meta.mergedJSON === null || meta.mergedProtobuf === null
      ? heldDocument(meta.mergedId, meta.mergedEtag)
      : Object.freeze({ json: at(meta.mergedJSON, p.mergedBuffer), protobuf: at(meta.mergedProtobuf, p.mergedBuffer), etag: meta.mergedEtag });
  const local: EncodedDiscovery = meta.mergedIsLocal
    ? merged
    : meta.localJSON === null || meta.localProtobuf === null
      ? heldDocument(meta.localId, meta.localEtag)
      : Object.freeze({ json: at(meta.localJSON, p.localBuffer), protobuf: at(meta.localProtobuf, p.localBuffer), etag: meta.localEtag });
  const legacy: LegacyDiscovery = Object.freeze({
    apis: at(meta.legacyApis),
    groups: new Map(meta.legacyGroups.map(([k, o, n]) => [k, Buffer.from(buffer, o, n)] as const)),
    resourceLists: new Map(meta.legacyResourceLists.map(([k, o, n]) => [k, Buffer.from(buffer, o, n)] as const)),
  });
  return Object.freeze({
    generation: meta.generation,
    merged,
    local,
    legacy,
    counts: Object.freeze(meta.counts),
    build: Object.freeze(build ?? meta.build),
  });
}
