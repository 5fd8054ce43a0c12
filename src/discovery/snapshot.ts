// One immutable discovery snapshot: everything mvproxy answers for `/apis` itself, encoded once
// per input change and never per request (spec §5.2, §5.4, §5.5; issue 4).
//
// - merged: the peer-aggregated `/apis` (mergeResources of the local document and every peer's,
//   spec §5.4), as compact JSON and as Kubernetes protobuf (v2), one ETag for both;
// - local: the local apiserver's `/apis` (what `profile=nopeer` gets), re-encoded the same way;
// - legacy: APIGroupList / APIGroup / APIResourceList derived from the merged data (legacy.ts).
//
// ETag: upstream hashes Go's json.Marshal of `APIGroupDiscoveryList{Items: …}`, i.e. without
// TypeMeta: `{"metadata":{},"items":[…]}`. Our JSON encoder follows Go's field order and
// omitempty rules, so the ETag is computed over exactly that form (the body minus its
// `"kind":…,"apiVersion":…,` prefix): for documents our encoder reproduces byte for byte it equals
// the apiserver's own ETag, and it is opaque either way (spec §5.2).
//
// Peer exclusion (spec §4.5, the refilter worker): per peer, every GVR whose "group/version" is
// excluded is dropped; if anything was dropped, excluded versions are dropped from that peer's
// groups and groups left with no versions are dropped; group metadata is kept. The local document
// is never filtered (CRDs and aggregated APIs are shown from the local view only).

import { createHash } from 'node:crypto';
import type { APIGroupDiscovery, APIGroupDiscoveryList, APIVersionDiscovery } from './types';
import { mergeResources } from './merge';
import { encodeJSON } from './codec/json';
import { encodeAPIGroupDiscoveryList } from './codec/protobuf';
import { buildLegacyDiscovery, type LegacyDiscovery } from './legacy';

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

export interface SnapshotCounts {
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
export interface SnapshotBuildInfo {
  /** Parse + merge + encode time, milliseconds, measured where it ran. */
  readonly ms: number;
  readonly thread: 'worker' | 'inline';
  /** Worker builds: submit → snapshot on the main thread, milliseconds (queueing and transfer included). */
  readonly wallMs?: number;
  /** Set when the worker pool could not run the build and it ran inline instead. */
  readonly workerError?: string;
}

export interface DiscoverySnapshot {
  readonly generation: number;
  readonly merged: EncodedDiscovery;
  readonly local: EncodedDiscovery;
  readonly legacy: LegacyDiscovery;
  readonly counts: SnapshotCounts;
  readonly build: SnapshotBuildInfo;
}

export interface DiscoverySnapshotInput {
  /** This server's ID (identity-lease name); takes part in the sort of server IDs (spec §5.4). */
  localID: string;
  localApis: APIGroupDiscoveryList;
  peers: { id: string; apis: APIGroupDiscoveryList }[];
  /** "group/version" strings excluded from peer data (CRD and aggregated-APIService GVs). */
  excludedGroupVersions: readonly string[];
  /** Stamped on the snapshot; 0 when absent. */
  generation?: number;
}

/** Builds a snapshot. Pure and synchronous; the inputs are not modified. */
export function buildDiscoverySnapshot(input: DiscoverySnapshotInput, build?: SnapshotBuildInfo): DiscoverySnapshot {
  const started = performance.now();
  const localItems = input.localApis.items ?? [];
  const excluded = new Set(input.excludedGroupVersions);
  const peers = new Map<string, APIGroupDiscovery[]>();
  let excludedPeerResources = 0;
  for (const p of input.peers) {
    if (p.id === input.localID || peers.has(p.id)) continue;
    const [groups, dropped] = filterExcludedGroupVersions(p.apis.items ?? [], excluded);
    excludedPeerResources += dropped;
    peers.set(p.id, groups);
  }

  const local = encodeDocument(localItems);
  const mergedItems = mergeResources(input.localID, localItems, peers);
  const merged = mergedItems === localItems ? local : encodeDocument(mergedItems);
  const legacy = buildLegacyDiscovery(mergedItems, localItems);

  let groupVersions = 0;
  let resources = 0;
  for (const g of mergedItems) {
    for (const v of g.versions ?? []) {
      groupVersions++;
      resources += v.resources?.length ?? 0;
    }
  }
  let localResources = 0;
  for (const g of localItems) for (const v of g.versions ?? []) localResources += v.resources?.length ?? 0;

  const counts: SnapshotCounts = {
    servers: 1 + peers.size,
    groups: mergedItems.length,
    groupVersions,
    resources,
    localResources,
    peerOnlyGroupVersions: legacy.resourceLists.size,
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
 * A peer's groups without the excluded group/versions (spec §4.5). Returns the groups (the
 * input array itself when nothing was dropped) and the number of GVRs dropped.
 */
export function filterExcludedGroupVersions(
  groups: readonly APIGroupDiscovery[],
  excluded: ReadonlySet<string>,
): [APIGroupDiscovery[], number] {
  if (excluded.size === 0) return [groups as APIGroupDiscovery[], 0];
  let dropped = 0;
  for (const g of groups) {
    const name = g.metadata?.name ?? '';
    for (const v of g.versions ?? []) {
      if (excluded.has(`${name}/${v.version}`)) dropped += v.resources?.length ?? 0;
    }
  }
  // Upstream filters the GVR cache; the group list changes only when some GVR was dropped.
  if (dropped === 0) return [groups as APIGroupDiscovery[], 0];
  const out: APIGroupDiscovery[] = [];
  for (const g of groups) {
    const name = g.metadata?.name ?? '';
    const versions = g.versions ?? [];
    const kept: APIVersionDiscovery[] = versions.filter((v) => !excluded.has(`${name}/${v.version}`));
    if (kept.length === versions.length) out.push(g);
    else if (kept.length > 0) out.push({ ...g, versions: kept });
    // else: every version excluded → the group goes
  }
  return [out, dropped];
}

const TYPE_META_PREFIX = Buffer.from('{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2",');

function encodeDocument(items: APIGroupDiscovery[]): EncodedDiscovery {
  const list: APIGroupDiscoveryList = {
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items,
  };
  const json = encodeJSON(list);
  const protobuf = encodeAPIGroupDiscoveryList(list, 'v2');
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
// no copy on the main thread.

export interface PackedSnapshotMeta {
  generation: number;
  mergedEtag: string;
  localEtag: string;
  /** [offset, length] of each body in the ArrayBuffer. */
  mergedJSON: [number, number];
  mergedProtobuf: [number, number];
  /** Equal to the merged ranges when the merge returned the local document unchanged. */
  localJSON: [number, number];
  localProtobuf: [number, number];
  legacyApis: [number, number];
  legacyGroups: [string, number, number][];
  legacyResourceLists: [string, number, number][];
  counts: SnapshotCounts;
  build: SnapshotBuildInfo;
}

export interface PackedSnapshot {
  buffer: ArrayBuffer;
  meta: PackedSnapshotMeta;
}

/** Copies every body of a snapshot into one fresh ArrayBuffer (transferable: never a pooled one). */
export function packSnapshot(s: DiscoverySnapshot): PackedSnapshot {
  const parts: Buffer[] = [];
  const offsets = new Map<Buffer, [number, number]>();
  let total = 0;
  const place = (b: Buffer): [number, number] => {
    const known = offsets.get(b);
    if (known !== undefined) return known;
    const r: [number, number] = [total, b.length];
    offsets.set(b, r);
    parts.push(b);
    total += b.length;
    return r;
  };
  const mergedJSON = place(s.merged.json);
  const mergedProtobuf = place(s.merged.protobuf);
  const localJSON = place(s.local.json);
  const localProtobuf = place(s.local.protobuf);
  const legacyApis = place(s.legacy.apis);
  const legacyGroups: [string, number, number][] = [];
  for (const [k, b] of s.legacy.groups) legacyGroups.push([k, ...place(b)]);
  const legacyResourceLists: [string, number, number][] = [];
  for (const [k, b] of s.legacy.resourceLists) legacyResourceLists.push([k, ...place(b)]);

  const buffer = new ArrayBuffer(total);
  const view = new Uint8Array(buffer);
  let at = 0;
  for (const p of parts) {
    view.set(p, at);
    at += p.length;
  }
  return {
    buffer,
    meta: {
      generation: s.generation,
      mergedEtag: s.merged.etag,
      localEtag: s.local.etag,
      mergedJSON,
      mergedProtobuf,
      localJSON,
      localProtobuf,
      legacyApis,
      legacyGroups,
      legacyResourceLists,
      counts: { ...s.counts },
      build: { ...s.build },
    },
  };
}

/** Wraps a packed snapshot without copying. `build` overrides the packed build info. */
export function unpackSnapshot(p: PackedSnapshot, build?: SnapshotBuildInfo): DiscoverySnapshot {
  const { buffer, meta } = p;
  const at = (r: readonly [number, number]) => Buffer.from(buffer, r[0], r[1]);
  const mergedJSON = at(meta.mergedJSON);
  const mergedProtobuf = at(meta.mergedProtobuf);
  const same = meta.localJSON[0] === meta.mergedJSON[0] && meta.localProtobuf[0] === meta.mergedProtobuf[0];
  const merged: EncodedDiscovery = Object.freeze({ json: mergedJSON, protobuf: mergedProtobuf, etag: meta.mergedEtag });
  const local: EncodedDiscovery = same
    ? merged
    : Object.freeze({ json: at(meta.localJSON), protobuf: at(meta.localProtobuf), etag: meta.localEtag });
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
