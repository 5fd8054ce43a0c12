// Builds the served discovery documents in a piscina worker pool (1 thread by default), so that parsing,
// merging and encoding never block the request path (issue 4). The caller swaps the returned
// immutable snapshot in; requests never wait for a merge.
//
// Transfers, both ways:
// - in: each document's raw JSON bytes. An ArrayBuffer given to build() is *transferred* (it is
//   detached in the caller afterwards); a Uint8Array/Buffer view is copied into a fresh
//   ArrayBuffer first (so a FetchedDocument.raw the caller keeps for If-None-Match stays intact,
//   and a slice of Node's shared Buffer pool is never detached). The copy is a memcpy, far
//   cheaper than the structured clone of parsed objects it replaces.
// - out: one ArrayBuffer with every encoded body, moved back (Piscina.move) and wrapped into
//   Buffers on the main thread without copying (served-discovery.ts unpackServedDiscovery); the local document's
//   bodies in an ArrayBuffer of their own.
// - only what changed: the worker keeps the documents of its last build (merge.worker.ts). When
//   every input carries a content key (discoveryMergeInput: the server ID and its ETag, or a
//   hash) and the pool has one thread, a document the worker got in the last build is sent by key
//   only: no copy, no transfer. If the worker no longer has it (builds submitted concurrently), it
//   says so and gets exactly those documents again. Back, an encoded document the main thread
//   already holds from the last build (the worker names each one) is not sent again: an unchanged
//   local document's bodies are the same Buffers as in the last snapshot.
//
// Fallback: before the first real task the pool is probed with a trivial task; if the worker
// cannot start (module not loadable, bad execArgv, …) every build runs inline on the main thread
// and the snapshot carries `build.workerError` (no logging here: the caller decides). A worker
// that dies *during* a build has already received (and detached) the inputs, so that build
// rejects with a DiscoveryMergerError whose `workerFailed` is true, and later builds run inline.
//
// Worker file: merge.worker.ts under tsx (tests, `node --import tsx`), merge.worker.js when
// compiled to dist/. Under tsx the worker inherits the parent's execArgv (which already loads
// tsx); `--import tsx` is added only when the parent's execArgv does not mention tsx.

import { extname, join } from 'node:path';
import Piscina from 'piscina';
import { ErrorCode } from '../api/errors';
import type { MergeTask, MergeTaskResult, DocumentBytes } from './merge.worker';
import { runMergeTask, MergeCaches, decodeForRouting, contentDigest } from './merge.worker';
import { unpackServedDiscovery, type ServedDiscovery, type EncodedDiscovery } from './served-discovery';

export type { DocumentBytes } from './merge.worker';
import type { DecodeTask, DecodeTaskResult, DecodedForRouting } from './merge.worker';
import { DiscoveryLimitError, type DiscoveryLimits } from './decode';
import { DiscoveryFetchError } from './errors';

/**
 * How long the merge worker may sit idle before it exits. Its isolate held ~12–15 MB of RSS for as
 * long as discovery stayed steady (issue 18: an idle mvproxy 124.5 MB 2 s after start, 112.3 MB at
 * 90 s with the worker gone; bench/idle-rss.ts).
 */
// 75 s: longer than two default discovery refreshes (--discovery-refresh-interval 30 s), so a
// peer that answers every refresh with a full body (no ETag) keeps the worker instead of
// restarting it each time.
export const MERGE_WORKER_IDLE_MS = 75_000;

export interface DiscoveryMergerOptions {
  /** Worker threads (default 1). */
  threads?: number;
  /** Build on the calling thread; no worker is started. */
  inline?: boolean;
  /** Overrides the worker module (tests: a module that cannot load exercises the fallback). */
  workerFilename?: string;
  /** How long an idle worker lives (default MERGE_WORKER_IDLE_MS). */
  workerIdleMs?: number;
}

export interface DiscoveryMergeInput {
  localID: string;
  /** Raw JSON of the local `/apis` (FetchedDocument.raw). ArrayBuffer: transferred; view: copied. */
  localApis: DocumentBytes;
  /**
   * Optional content keys (an ETag, a hash), one per document: the same key for the same server
   * means the same bytes. When every document has one, a document the worker already has from the
   * last build is not copied and sent again (discoveryMergeInput sets them).
   */
  localKey?: string;
  peers: readonly { id: string; apis: DocumentBytes; key?: string }[];
  /** "group/version" strings removed from peer data before the merge. */
  excludedGroupVersions: Iterable<string>;
  /** Defaults to a counter of this merger (1, 2, …). */
  generation?: number;
}

export class DiscoveryMergerError extends Error {
  constructor(
    message: string,
    /** true: the worker pool failed (not the input); later builds run inline. */
    readonly workerFailed: boolean,
  ) {
    super(message);
    this.name = 'DiscoveryMergerError';
  }
}

export class DiscoveryMerger {
  private readonly threads: number;
  private readonly filename: string;
  private readonly workerIdleMs: number;
  private pool: Piscina | undefined;
  private ready: Promise<void> | undefined;
  private generation = 0;
  private closed = false;
  /** Parsed documents and encodings kept between inline builds (the worker keeps its own). */
  private readonly inlineCaches = new MergeCaches(false);
  /** Keys (server ID + document key) of the documents the worker holds: those of its last build. */
  private workerDocuments = new Set<string>();
  /** The encoded documents of the last worker build, by the worker's ids: not sent back again. */
  private held = new Map<string, EncodedDiscovery>();
  /** Worker builds: documents copied and sent / left out (the worker had them), and resends. */
  readonly transfers = { documentsSent: 0, bytesSent: 0, documentsKept: 0, resends: 0 };
  /** Why builds run inline although a worker was asked for (undefined while the worker works). */
  workerError: string | undefined;
  readonly inline: boolean;

  constructor(opts: DiscoveryMergerOptions = {}) {
    this.threads = Math.max(1, Math.floor(opts.threads ?? 1));
    this.inline = opts.inline === true;
    this.filename = opts.workerFilename ?? DiscoveryMerger.workerFilename();
    this.workerIdleMs = opts.workerIdleMs ?? MERGE_WORKER_IDLE_MS;
  }

  /** The worker file next to this module, with this module's own extension (.ts or .js). */
  static workerFilename(): string {
    return join(__dirname, `merge.worker${extname(__filename)}`);
  }

  /**
   * Worker execArgv: the parent's module loaders (`--import`, `--require`, `--loader`, either
   * spelling), plus a tsx loader when running from .ts without one. Nothing else: Node 24's test
   * runner hands its children every option default (`--test-isolation=process`,
   * `--inspect-port=…`, ~40 of them), and a Worker given those fails to start (every merge then ran
   * inline on the main thread).
   */
  static workerExecArgv(): string[] {
    const argv: string[] = [];
    const src = process.execArgv;
    for (let i = 0; i < src.length; i++) {
      const a = src[i];
      if (/^--(import|require|loader|experimental-loader)=/.test(a) || /^-r[^-]/.test(a)) argv.push(a);
      else if ((a === '--import' || a === '--require' || a === '-r' || a === '--loader' || a === '--experimental-loader') && i + 1 < src.length) argv.push(a, src[++i]);
    }
    if (extname(__filename) === '.ts' && !argv.some((a) => a.includes('tsx'))) argv.push('--import', 'tsx');
    return argv;
  }

  /**
   * Decodes a discovery body as Kubernetes would (decode.ts) in the worker thread, so a hostile
   * body cannot stall the event loop; inline when there is no worker. `limits`: a peer's document,
   * refused past them. `transfer`: the caller gives `body` up (it may be detached). What comes back
   * is what the main thread keeps (merge.worker.ts DecodedForRouting). Rejects with the DiscoveryFetchError the decoder gives (TOO_LARGE, DECODE, OVER_LIMIT as
   * a DiscoveryLimitError), or DECODE if the worker died on it.
   */
  async decode(body: Uint8Array, what: string, o: { limits?: DiscoveryLimits; transfer?: boolean } = {}): Promise<DecodedForRouting> {
    if (this.closed) throw new Error('DiscoveryMerger is closed');
    if (!this.inline && this.workerError === undefined) await this.start();
    const pool = this.pool;
    const limits = o.limits;
    if (this.inline || this.workerError !== undefined || pool === undefined) return decodeForRouting(body, what, limits);
    // A body the caller gives up whose view is its whole ArrayBuffer (Buffer.concat of a large body
    // allocates one of its own) goes over as it is; else it is copied, a slice per turn.
    const whole = o.transfer === true && body.byteOffset === 0 && body.buffer instanceof ArrayBuffer && body.buffer.byteLength === body.byteLength;
    const bytes = whole ? (body.buffer as ArrayBuffer) : await copyToArrayBufferSliced([body]);
    let r: DecodeTaskResult;
    try {
      r = (await pool.run({ bytes, what, limits } satisfies DecodeTask, { name: 'decodeTask', transferList: [bytes] })) as DecodeTaskResult;
    } catch (e) {
      throw new DiscoveryFetchError(ErrorCode.MVP_ERR_DISCOVERY_DECODE, `${what}: the decode worker failed on it: ${(e as Error)?.message ?? String(e)}`);
    }
    if (!r.ok) throw r.limit !== undefined ? new DiscoveryLimitError(r.limit, r.message) : new DiscoveryFetchError(r.code, r.message);
    return { routes: r.routes, raw: Buffer.from(r.raw), format: r.format, digest: r.digest };
  }

  /**
   * Builds a snapshot of the inputs. Resolves with the snapshot (with `build.ms`, and
   * `build.workerError` when it had to run inline). Rejects with a DiscoveryMergerError:
   * `workerFailed` false for bad input (an unparsable document), true when the worker died
   * during the build (its inputs are gone with it; later builds run inline).
   */
  async build(input: DiscoveryMergeInput): Promise<ServedDiscovery> {
    if (this.closed) throw new Error('DiscoveryMerger is closed');
    const generation = input.generation ?? ++this.generation;
    if (input.generation !== undefined && input.generation > this.generation) this.generation = input.generation;
    const excludedGroupVersions = Array.from(input.excludedGroupVersions);

    if (!this.inline && this.workerError === undefined) {
      await this.start();
    }
    if (this.closed) throw new Error('DiscoveryMerger is closed');
    const pool = this.pool;
    if (this.inline || this.workerError !== undefined || pool === undefined) {
      const task: MergeTask = { localID: input.localID, localApis: input.localApis, peers: input.peers.map((p) => ({ id: p.id, apis: p.apis })), excludedGroupVersions, generation };
      try {
        return runMergeTask(task, 'inline', this.inline ? undefined : (this.workerError ?? 'discovery merge worker unavailable'), this.inlineCaches);
      } catch (e) {
        throw new DiscoveryMergerError((e as Error)?.message ?? String(e), false);
      }
    }

    // A document the worker has from its last build goes by key only (no copy, no transfer). Only
    // with one worker thread (whose cache we know), when every document has a key (so that a retry
    // can name every document it does not send again) and is a view (copied, so still there for a
    // retry; an ArrayBuffer is transferred).
    const keyed =
      this.threads === 1 &&
      input.localKey !== undefined &&
      !(input.localApis instanceof ArrayBuffer) &&
      input.peers.every((p) => p.key !== undefined && !(p.apis instanceof ArrayBuffer));
    const docs = [
      { id: input.localID, apis: input.localApis, key: keyed ? docKey(input.localID, input.localKey!) : undefined },
      ...input.peers.map((p) => ({ id: p.id, apis: p.apis, key: keyed ? docKey(p.id, p.key!) : undefined })),
    ];
    const held = this.held;
    const submitted = performance.now();
    let sendAll = (key: string | undefined) => key === undefined || !this.workerDocuments.has(key);
    for (let attempt = 0; ; attempt++) {
      const transferList: ArrayBuffer[] = [];
      const seen = new Set<ArrayBuffer>();
      // Large views to send are copied first, a slice per turn (copyToArrayBufferSliced); the
      // rest is decided and copied at once, as the task is submitted.
      const copies = new Map<DocumentBytes, ArrayBuffer>();
      for (const d of docs) {
        if (sendAll(d.key) && !(d.apis instanceof ArrayBuffer) && d.apis.byteLength > COPY_SLICE_BYTES && !copies.has(d.apis)) copies.set(d.apis, await copyToArrayBufferSliced([d.apis]));
      }
      const own = (b: DocumentBytes): ArrayBuffer => {
        const ab = b instanceof ArrayBuffer ? b : (copies.get(b) ?? copyToArrayBuffer(b));
        if (!seen.has(ab)) {
          seen.add(ab);
          transferList.push(ab);
        }
        return ab;
      };
      const send = (d: { apis: DocumentBytes; key: string | undefined }): ArrayBuffer | null => {
        if (!sendAll(d.key)) {
          this.transfers.documentsKept++;
          return null;
        }
        this.transfers.documentsSent++;
        this.transfers.bytesSent += d.apis.byteLength;
        return own(d.apis);
      };
      const task: MergeTask = {
        localID: input.localID,
        localApis: send(docs[0]!),
        peers: docs.slice(1).map((p) => ({ id: p.id, apis: send(p), ...(p.key === undefined ? {} : { key: p.key }) })),
        excludedGroupVersions,
        generation,
        held: [...held.keys()],
      };
      if (docs[0]!.key !== undefined) task.localKey = docs[0]!.key;
      let result: MergeTaskResult;
      try {
        result = (await pool.run(task, { transferList })) as MergeTaskResult;
      } catch (e) {
        this.workerError = `discovery merge worker failed: ${(e as Error)?.message ?? String(e)}`;
        this.workerDocuments = new Set();
        void this.dropPool();
        throw new DiscoveryMergerError(this.workerError, true);
      }
      if (!result.ok) {
        if (result.missing !== undefined && attempt === 0) {
          // The worker no longer has some documents (another build ran in between): send those;
          // it kept everything this task did send.
          const missing = new Set(result.missing);
          sendAll = (key) => key === undefined || missing.has(key);
          this.transfers.resends++;
          continue;
        }
        this.workerDocuments = new Set();
        throw new DiscoveryMergerError(result.message, false);
      }
      this.workerDocuments = new Set(docs.flatMap((d) => (d.key === undefined ? [] : [d.key])));
      const packed = result.packed;
      const snapshot = unpackServedDiscovery(packed, { ...packed.meta.build, wallMs: performance.now() - submitted }, held);
      const next = new Map<string, EncodedDiscovery>();
      if (packed.meta.localId !== undefined) next.set(packed.meta.localId, snapshot.local);
      if (packed.meta.mergedId !== undefined) next.set(packed.meta.mergedId, snapshot.merged);
      this.held = next;
      return snapshot;
    }
  }

  /** Stops the worker threads. Builds after close() reject. */
  async close(): Promise<void> {
    this.closed = true;
    await this.dropPool();
  }

  private start(): Promise<void> {
    if (this.ready) return this.ready;
    this.ready = (async () => {
      try {
        this.pool = new Piscina({
          filename: this.filename,
          name: 'mergeTask',
          // Merges happen when discovery changes (an upgrade, a member joining), not while it
          // is steady: an idle worker exits after MERGE_WORKER_IDLE_MS and the next build starts
          // one again. Its caches go with it; the new one answers `missing` for documents sent
          // by key and gets them again, and its encoded-document ids carry its own threadId.
          minThreads: 0,
          maxThreads: this.threads,
          idleTimeout: this.workerIdleMs,
          execArgv: DiscoveryMerger.workerExecArgv(),
          // Piscina's run- and wait-time histograms, which mvproxy never reads: 2 × 360 KiB of
          // native memory held for the daemon's life (a heap snapshot at rest).
          recordTiming: false,
        });
        // Errors outside a task (a worker failing to load or dying while idle) are emitted on the
        // pool; without a listener they would be uncaught exceptions. Record them instead: the
        // next build then runs inline.
        const pool = this.pool;
        pool.on('error', (e: unknown) => {
          if (this.pool !== pool) return;
          this.workerError ??= `discovery merge worker failed: ${(e as Error)?.message ?? String(e)}`;
          void this.dropPool();
        });
        // A worker that cannot load its module rejects every task; find out before any input is
        // transferred. The ping is an empty merge (cheap) whose result is discarded.
        const ping = (await this.pool.run(pingTask())) as MergeTaskResult;
        if (!ping.ok) throw new Error(ping.message);
      } catch (e) {
        this.workerError = `discovery merge worker unavailable: ${(e as Error)?.message ?? String(e)}`;
        await this.dropPool();
      }
    })();
    return this.ready;
  }

  private async dropPool(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    if (pool) await pool.destroy().catch(() => undefined);
  }
}

function pingTask(): MergeTask {
  const empty = new TextEncoder().encode('{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[]}');
  return { localID: '', localApis: empty, peers: [], excludedGroupVersions: [], generation: 0 };
}

/** A fresh, whole ArrayBuffer holding a copy of the view's bytes. */
export function copyToArrayBuffer(view: Uint8Array): ArrayBuffer {
  const ab = new ArrayBuffer(view.byteLength);
  new Uint8Array(ab).set(view);
  return ab;
}

/** How much copyToArrayBufferSliced copies in one turn of the event loop (~0.5 ms). */
export const COPY_SLICE_BYTES = 1024 * 1024;

/**
 * copyToArrayBuffer of the parts, one after the other, COPY_SLICE_BYTES per turn of the event loop
 * (setImmediate between): a 16 MiB document copied at once held the event loop ~10 ms, page faults
 * of the fresh buffer included, and a peer may send two (/api and /apis).
 */
export async function copyToArrayBufferSliced(parts: readonly Uint8Array[]): Promise<ArrayBuffer> {
  let total = 0;
  for (const p of parts) total += p.byteLength;
  const out = new Uint8Array(new ArrayBuffer(total));
  let at = 0;
  let sinceYield = 0;
  for (const p of parts) {
    for (let from = 0; from < p.byteLength; ) {
      if (sinceYield >= COPY_SLICE_BYTES) {
        await new Promise((resolve) => setImmediate(resolve));
        sinceYield = 0;
      }
      const n = Math.min(p.byteLength - from, COPY_SLICE_BYTES - sinceYield);
      out.set(p.subarray(from, from + n), at);
      at += n;
      from += n;
      sinceYield += n;
    }
  }
  return out.buffer;
}

/** The part of a FetchedDocument (snapshot/fetch.ts) a build needs. */
export interface FetchedApisDocument {
  /** The server's ETag for the document ('' when it sent none). */
  readonly etag: string;
  /** The body as received. Passed as a view, so build() copies it and the caller's stays intact. */
  readonly raw: Uint8Array;
  /** contentDigest(raw) when the decoder computed it (decode()): not hashed again on this thread. */
  readonly digest?: string;
}

/** What tells one fetched document from another: its ETag, else a SHA-256 of its bytes (a 304 keeps the document, hence the ETag). */
export function documentKey(d: FetchedApisDocument): string {
  return d.etag !== '' ? `e${d.etag}` : `h${d.digest ?? contentDigest(d.raw)}`;
}

/**
 * The build input for the current views, and a key that changes exactly when the inputs do (a
 * 304 returns the same document, hence the same ETag), so a caller builds once per input change:
 *
 *   const { input, key } = discoveryMergeInput(localID, local.apis, peerApis, excluded);
 *   if (key !== lastKey) { lastKey = key; snapshot = await merger.build(input); }
 *
 * Documents without an ETag are keyed by a SHA-256 of their bytes (the digest decode() computed
 * off this thread; 16 MiB hashed here took ~10-30 ms at every publication).
 */
export function discoveryMergeInput(
  localID: string,
  local: FetchedApisDocument,
  peers: Iterable<readonly [string, FetchedApisDocument]>,
  excludedGroupVersions: Iterable<string>,
): { input: DiscoveryMergeInput; key: string } {
  const peerList = Array.from(peers, ([id, doc]) => ({ id, doc })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const excluded = Array.from(new Set(excludedGroupVersions)).sort();
  const localKey = documentKey(local);
  const peerKeys = peerList.map((p) => documentKey(p.doc));
  const key = JSON.stringify([localID, localKey, peerList.map((p, i) => [p.id, peerKeys[i]]), excluded]);
  return {
    input: {
      localID,
      localApis: local.raw,
      localKey,
      peers: peerList.map((p, i) => ({ id: p.id, apis: p.doc.raw, key: peerKeys[i]! })),
      excludedGroupVersions: excluded,
    },
    key,
  };
}

/** A document's key in the worker's cache: the server's ID and the document's key for it. */
function docKey(id: string, key: string): string {
  return JSON.stringify([id, key]);
}
