// Piscina task: build the served discovery documents (served-discovery.ts) off the main thread.
//
// In: the raw JSON bytes of the local and peer `/apis` documents as (transferred) ArrayBuffers, or
// only a key for a document this worker has from its last build (merger.ts).
// Out: the whole snapshot packed into one ArrayBuffer (the local document's bodies in one of their
// own; encoded documents the caller holds left out), moved back (transferred, not copied), plus
// its small description (served-discovery.ts packServedDiscovery). A build error is returned as a value, not
// thrown, so that the main thread can tell a bad input (rejected to the caller) from a worker that
// cannot run at all (the merger then falls back to building inline).
//
// Between builds the worker keeps (MergeCaches) what the last build parsed and computed, so that a
// build after one peer changed does the work of that peer only:
// - DocumentCache: each document's bytes and parsed form; a document byte-for-byte equal to one of
//   the last build is not parsed again (a memcmp). A new document is split into its groups
//   (codec/json.ts splitListItems) and only the groups whose bytes were not in the last build
//   are decoded and parsed; the others are the very objects parsed before.
// - EncodingMemo (served-discovery.ts): per group object, its JSON (the very bytes it was parsed from,
//   when they are exactly that) and protobuf encodings, pairwise merges and exclusion filtering;
//   the local document's encodings and ETag.
// All of it is keyed by content (bytes) or by the identity of objects nothing modifies, and a
// cached answer is the one the computation would give: the output bytes do not depend on what was
// cached (test/unit/served-discovery.test.ts compares builds with warm and cold caches against an
// uncached rebuild, test/unit/merger.test.ts the worker's builds against inline ones).

import { createHash } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import Piscina from 'piscina';
import { ErrorCode } from '../api/errors';
import type { APIGroupDiscoveryList } from './types';
import { decodeDiscoveryBody, DiscoveryLimitError, MAX_DISCOVERY_BODY_BYTES, routingView, type DiscoveryLimit, type DiscoveryLimits, type RoutingView } from './decode';
import { DiscoveryFetchError, type DiscoveryErrorCode } from './errors';
import {
  buildServedDiscovery,
  packServedDiscovery,
  EncodingMemo,
  type ServedDiscovery,
  type EncodedDiscovery,
  type PackedServedDiscovery,
  type ServedDiscoveryBuild,
} from './served-discovery';
import { splitListItems } from './codec/json';

/** The bytes of one document: an ArrayBuffer (transferred whole) or a view on one. */
export type DocumentBytes = ArrayBuffer | Uint8Array;

export interface MergeTask {
  localID: string;
  /** null: not sent, the worker has it under localKey (from an earlier task). */
  localApis: DocumentBytes | null;
  /** Names the document's content for this server (merger.ts: server ID + ETag or hash). */
  localKey?: string;
  peers: { id: string; apis: DocumentBytes | null; key?: string }[];
  excludedGroupVersions: string[];
  generation: number;
  /** Ids of encoded documents (PackedServedDiscoveryMeta.localId/mergedId) the caller holds: not sent back. */
  held?: string[];
}

export type MergeTaskResult =
  | { ok: true; packed: PackedServedDiscovery }
  | { ok: false; message: string; /** Keys of documents sent without bytes that the worker does not have. */ missing?: string[] };

/** Documents were sent by key only and this cache does not have them (the caller sends them again). */
export class MissingDocumentsError extends Error {
  constructor(readonly keys: string[]) {
    super(`discovery merge: documents not cached: ${keys.join(', ')}`);
    this.name = 'MissingDocumentsError';
  }
}

const decoder = new TextDecoder('utf-8', { fatal: false });

const asView = (bytes: DocumentBytes): Uint8Array => (bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes));

/** Parses one raw `/apis` document (JSON). Throws on anything but an APIGroupDiscoveryList. */
export function parseDiscoveryBytes(bytes: DocumentBytes, what: string): APIGroupDiscoveryList {
  return parseDiscoveryText(decoder.decode(asView(bytes)), what);
}

function parseDiscoveryText(text: string, what: string): APIGroupDiscoveryList {
  let list: APIGroupDiscoveryList;
  try {
    list = JSON.parse(text);
  } catch (e) {
    throw new Error(`${what}: ${(e as Error).message}`);
  }
  if (list === null || typeof list !== 'object' || !Array.isArray(list.items)) {
    throw new Error(`${what}: not an APIGroupDiscoveryList`);
  }
  return list;
}

interface CachedDocument {
  /** The document's bytes (owned: never a view the caller could reuse). */
  readonly bytes: Buffer;
  readonly list: APIGroupDiscoveryList;
  /** When the document was parsed item by item: [start, end) of each of list.items in bytes, flat. */
  readonly itemRanges: readonly number[] | undefined;
  /** hashBytes of each item's bytes. */
  readonly itemHashes: readonly number[] | undefined;
}

const MAX_CANDIDATES = 8;

/** Parsed items found by their bytes: a hash of the bytes picks candidates, a memcmp decides. */
class ItemTable {
  private readonly byHash = new Map<number, { bytes: Buffer; start: number; end: number; value: unknown }[]>();

  find(hash: number, b: Buffer, start: number, end: number): unknown {
    const candidates = this.byHash.get(hash);
    if (candidates === undefined) return undefined;
    for (const c of candidates) {
      if (c.end - c.start === end - start && c.bytes.compare(b, start, end, c.start, c.end) === 0) return c.value;
    }
    return undefined;
  }

  add(hash: number, bytes: Buffer, start: number, end: number, value: unknown): void {
    const candidates = this.byHash.get(hash);
    if (candidates === undefined) this.byHash.set(hash, [{ bytes, start, end, value }]);
    // A few per hash: colliding items (by chance, or a peer's design) are parsed, never compared at length.
    else if (candidates.length < MAX_CANDIDATES && !candidates.some((c) => c.value === value)) candidates.push({ bytes, start, end, value });
  }

  addAll(other: ItemTable): void {
    for (const [hash, list] of other.byHash) for (const c of list) this.add(hash, c.bytes, c.start, c.end, c.value);
  }
}

/**
 * FNV-1a of the length, the first 256 and the last 64 bytes of b[start, end): picks candidates
 * only, never decides (a group's name comes first; versions of one group differ in length or
 * close to either end more often than not, and otherwise the memcmp tells them apart).
 */
function hashBytes(b: Uint8Array, start: number, end: number): number {
  let h = Math.imul(0x811c9dc5 ^ (end - start), 0x01000193);
  const head = Math.min(end, start + 256);
  for (let i = start; i < head; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  for (let i = Math.max(head, end - 64); i < end; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h;
}

/**
 * Parsed documents of the last build, found again by their bytes (or by the key the caller
 * named them with); and the parsed groups of those documents, found again by their bytes.
 * Parsed objects are shared and must never be modified. A build calls begin(), resolve() per
 * document, then commit() (or abort() when a document fails, or keep() when some were missing):
 * the cache then holds exactly that build's documents.
 */
export class DocumentCache {
  private docs: CachedDocument[] = [];
  private byKey = new Map<string, CachedDocument>();
  private items = new ItemTable();
  private nextDocs: CachedDocument[] = [];
  private nextByKey = new Map<string, CachedDocument>();
  private nextItems = new ItemTable();
  /** Documents parsed / found again, groups parsed / found again, since construction. */
  readonly stats = { parsedDocuments: 0, reusedDocuments: 0, parsedItems: 0, reusedItems: 0 };

  /**
   * owned: the bytes passed to resolve() are this cache's to keep (else they are copied when kept).
   * rawJSON: where to note the JSON bytes each parsed group (object) came from.
   */
  constructor(
    private readonly owned: boolean,
    private readonly rawJSON?: WeakMap<object, Buffer>,
  ) {}

  begin(): void {
    this.nextDocs = [];
    this.nextByKey = new Map();
    this.nextItems = new ItemTable();
  }

  commit(): void {
    this.docs = this.nextDocs;
    this.byKey = this.nextByKey;
    this.items = this.nextItems;
    this.begin();
  }

  abort(): void {
    this.begin();
  }

  /** Keeps this build's documents in addition to the last build's (a build that must be re-sent). */
  keep(): void {
    for (const d of this.docs) if (!this.nextDocs.includes(d)) this.nextDocs.push(d);
    for (const [k, d] of this.byKey) if (!this.nextByKey.has(k)) this.nextByKey.set(k, d);
    this.nextItems.addAll(this.items);
    this.commit();
  }

  /**
   * The parsed document for these bytes (parsed now, or found again); for bytes null, the one
   * cached under `key`, undefined when there is none. Throws when the bytes are not an
   * APIGroupDiscoveryList.
   */
  resolve(bytes: DocumentBytes | null, what: string, key?: string): APIGroupDiscoveryList | undefined {
    let doc: CachedDocument | undefined;
    if (bytes === null) {
      if (key === undefined) return undefined;
      doc = this.nextByKey.get(key) ?? this.byKey.get(key);
      if (doc === undefined) return undefined;
      if (!this.nextDocs.includes(doc)) this.stats.reusedDocuments++;
    } else {
      const view = asView(bytes);
      const buf = Buffer.from(view.buffer, view.byteOffset, view.byteLength);
      doc = find(this.nextDocs, buf);
      if (doc === undefined) {
        doc = find(this.docs, buf);
        if (doc !== undefined) {
          this.stats.reusedDocuments++;
        } else {
          doc = this.parseNew(buf, what);
          this.stats.parsedDocuments++;
        }
      }
    }
    if (key !== undefined) this.nextByKey.set(key, doc);
    if (!this.nextDocs.includes(doc)) {
      this.nextDocs.push(doc);
      const { itemRanges, itemHashes } = doc;
      if (itemRanges !== undefined && itemHashes !== undefined) {
        const items = doc.list.items;
        for (let i = 0; i < items.length; i++) this.nextItems.add(itemHashes[i]!, doc.bytes, itemRanges[2 * i]!, itemRanges[2 * i + 1]!, items[i]);
      }
    }
    return doc.list;
  }

  /** Parses a document's bytes (resolve() with bytes, which are never null then). */
  parse(bytes: DocumentBytes, what: string, key?: string): APIGroupDiscoveryList {
    return this.resolve(bytes, what, key)!;
  }

  private parseNew(buf: Buffer, what: string): CachedDocument {
    const bytes = this.owned ? buf : Buffer.from(buf); // Buffer.from(buffer) copies
    const split = splitListItems(bytes);
    if (split !== undefined) {
      try {
        // Decoded apart at ASCII boundaries: the same characters as decoding the whole.
        const skeleton = `${decoder.decode(bytes.subarray(0, split.itemsOpen))}[]${decoder.decode(bytes.subarray(split.itemsClose))}`;
        const list = JSON.parse(skeleton) as APIGroupDiscoveryList;
        const ranges = split.items;
        const n = ranges.length / 2;
        const items: unknown[] = new Array(n);
        const hashes: number[] = new Array(n);
        // Items repeated within this document are found again too.
        const own = new ItemTable();
        for (let i = 0; i < n; i++) {
          const start = ranges[2 * i]!;
          const end = ranges[2 * i + 1]!;
          const hash = hashBytes(bytes, start, end);
          let item = this.nextItems.find(hash, bytes, start, end);
          if (item === undefined) item = this.items.find(hash, bytes, start, end);
          if (item === undefined) item = own.find(hash, bytes, start, end);
          if (item === undefined) {
            const raw = bytes.subarray(start, end);
            item = JSON.parse(decoder.decode(raw));
            if (this.rawJSON !== undefined && typeof item === 'object' && item !== null) this.rawJSON.set(item, raw);
            own.add(hash, bytes, start, end, item);
            this.stats.parsedItems++;
          } else {
            this.stats.reusedItems++;
          }
          items[i] = item;
          hashes[i] = hash;
        }
        list.items = items as APIGroupDiscoveryList['items'];
        return { bytes, list, itemRanges: ranges, itemHashes: hashes };
      } catch {
        // Not valid JSON after all: the whole-text parse below reports it.
      }
    }
    return { bytes, list: parseDiscoveryText(decoder.decode(bytes), what), itemRanges: undefined, itemHashes: undefined };
  }
}

function find(docs: readonly CachedDocument[], buf: Buffer): CachedDocument | undefined {
  for (const d of docs) if (d.bytes.length === buf.length && d.bytes.equals(buf)) return d;
  return undefined;
}

/** What a builder keeps between builds (one per worker thread; one per inline DiscoveryMerger). */
export class MergeCaches {
  readonly documents: DocumentCache;
  readonly memo: EncodingMemo;
  constructor(ownsInputs: boolean) {
    // The bytes each group was parsed from: copied as its JSON encoding when they are exactly that.
    const rawJSON = new WeakMap<object, Buffer>();
    this.documents = new DocumentCache(ownsInputs, rawJSON);
    this.memo = new EncodingMemo(rawJSON);
  }
}

/**
 * Parse + merge + encode, on whatever thread calls it. `ms` covers all three. `caches` carries
 * parsed documents and encodings over from earlier builds (default: none, a build of its own).
 * Throws MissingDocumentsError when documents sent by key only are not in `caches` (those that
 * were sent are kept, so that a second task needs only the missing ones).
 */
export function runMergeTask(task: MergeTask, thread: 'worker' | 'inline', workerError?: string, caches: MergeCaches = new MergeCaches(false)): ServedDiscovery {
  const started = performance.now();
  const docs = caches.documents;
  docs.begin();
  const missing: string[] = [];
  const resolve = (bytes: DocumentBytes | null, what: string, key: string | undefined): APIGroupDiscoveryList => {
    const list = docs.resolve(bytes, what, key);
    if (list === undefined) missing.push(key ?? what);
    return list!;
  };
  let localApis: APIGroupDiscoveryList;
  let peers: { id: string; apis: APIGroupDiscoveryList }[];
  try {
    localApis = resolve(task.localApis, 'local /apis', task.localKey);
    peers = task.peers.map((p) => ({ id: p.id, apis: resolve(p.apis, `peer ${p.id} /apis`, p.key) }));
  } catch (e) {
    docs.abort();
    throw e;
  }
  if (missing.length > 0) {
    docs.keep();
    throw new MissingDocumentsError(missing);
  }
  docs.commit();
  const snapshot = buildServedDiscovery(
    {
      localID: task.localID,
      localApis,
      peers,
      excludedGroupVersions: task.excludedGroupVersions,
      generation: task.generation,
    },
    undefined,
    caches.memo,
  );
  const build: ServedDiscoveryBuild =
    workerError === undefined ? { ms: performance.now() - started, thread } : { ms: performance.now() - started, thread, workerError };
  return Object.freeze({ ...snapshot, build });
}

/** This worker thread's caches: its task inputs are transferred to it, so it owns them. */
const workerCaches = new MergeCaches(true);

/** Ids of the encoded documents this worker sent (unique across threads; the same object, the same id). */
const encodedIds = new WeakMap<EncodedDiscovery, string>();
let lastEncodedId = 0;
const idOf = (e: EncodedDiscovery): string => {
  let id = encodedIds.get(e);
  if (id === undefined) {
    id = `${threadId}:${++lastEncodedId}`;
    encodedIds.set(e, id);
  }
  return id;
};

/** The Piscina handler (loaded by name: `mergeTask`). */
export function mergeTask(task: MergeTask): MergeTaskResult | ReturnType<typeof Piscina.move> {
  let packed: PackedServedDiscovery;
  try {
    const started = performance.now();
    const s = runMergeTask(task, 'worker', undefined, workerCaches);
    packed = packServedDiscovery(s, { idOf, omit: new Set(task.held ?? []), separateLocal: true, moveMerged: true });
    // Its buffer goes to the main thread: not to be handed out again here.
    if (packed.mergedBuffer !== undefined) workerCaches.memo.forgetMerged(s.merged);
    packed.meta.build = { ms: performance.now() - started, thread: 'worker' };
  } catch (e) {
    if (e instanceof MissingDocumentsError) return { ok: false, message: e.message, missing: e.keys };
    return { ok: false, message: (e as Error)?.message ?? String(e) };
  }
  const result: MergeTaskResult = { ok: true, packed };
  const transfer = [packed.buffer];
  if (packed.localBuffer !== undefined) transfer.push(packed.localBuffer);
  if (packed.mergedBuffer !== undefined) transfer.push(packed.mergedBuffer);
  return Piscina.move({
    get [Piscina.transferableSymbol]() {
      return transfer;
    },
    get [Piscina.valueSymbol]() {
      return result;
    },
  } as never);
}

/** A discovery body to decode off the main thread (merger.ts decode()). */
export interface DecodeTask {
  bytes: ArrayBuffer;
  what: string;
  /** A peer's document: refused past these (decode.ts PEER_DISCOVERY_LIMITS). */
  limits?: DiscoveryLimits;
}

export type DecodeTaskResult =
  | { ok: true; routes: RoutingView; raw: ArrayBuffer; format: 'json' | 'protobuf'; digest: string }
  | { ok: false; code: DiscoveryErrorCode; message: string; limit?: DiscoveryLimit };

/** A body decoded for the main thread (merger.ts decode). */
export interface DecodedForRouting {
  /** What routing reads of it (decode.ts routingView). */
  readonly routes: RoutingView;
  /** Its JSON (decode.ts DecodedDiscoveryBody.raw). */
  readonly raw: Buffer;
  readonly format: 'json' | 'protobuf';
  /** contentDigest(raw): the merge input's key when the server sends no ETag (merger.ts discoveryMergeInput). */
  readonly digest: string;
}

/** Decodes a body (decode.ts) into what the main thread keeps of it, on whichever thread runs it. */
export function decodeForRouting(bytes: Uint8Array, what: string, limits?: DiscoveryLimits): DecodedForRouting {
  const d = decodeDiscoveryBody(bytes, what, MAX_DISCOVERY_BODY_BYTES, limits);
  return { routes: routingView(d.list), raw: d.raw, format: d.format, digest: contentDigest(d.raw) };
}

/** SHA-256 of a document's bytes, base64: names its content in merge input keys. */
export function contentDigest(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('base64');
}

/**
 * The Piscina handler `decodeTask`: a peer's body decoded as Kubernetes decodes it (decode.ts).
 * Here, not on the main thread: a hostile 16 MiB body takes seconds to parse (measured 1.7–2.8 s
 * for tiny nested arrays), which must not stall requests. Only the routing view comes back, by
 * structured clone (decode.ts routingView says why it is flat); the JSON is moved.
 */
export function decodeTask(task: DecodeTask): DecodeTaskResult | ReturnType<typeof Piscina.move> {
  let d: DecodedForRouting;
  try {
    d = decodeForRouting(new Uint8Array(task.bytes), task.what, task.limits);
  } catch (e) {
    if (e instanceof DiscoveryLimitError) return { ok: false, code: e.code, message: e.message, limit: e.limit };
    if (e instanceof DiscoveryFetchError) return { ok: false, code: e.code, message: e.message };
    return { ok: false, code: ErrorCode.MVP_ERR_DISCOVERY_DECODE, message: `${task.what}: ${(e as Error)?.message ?? String(e)}` };
  }
  const raw = copyOut(d.raw);
  const result: DecodeTaskResult = { ok: true, routes: d.routes, raw, format: d.format, digest: d.digest };
  return Piscina.move({
    get [Piscina.transferableSymbol]() {
      return [raw];
    },
    get [Piscina.valueSymbol]() {
      return result;
    },
  } as never);
}

function copyOut(b: Buffer): ArrayBuffer {
  const ab = new ArrayBuffer(b.length);
  new Uint8Array(ab).set(b);
  return ab;
}
