// Piscina task: build a discovery snapshot off the main thread.
//
// In: the raw JSON bytes of the local and peer `/apis` documents as (transferred) ArrayBuffers.
// Out: the whole snapshot packed into one ArrayBuffer, moved back (transferred, not copied), plus
// its small description (snapshot.ts packSnapshot). A build error is returned as a value, not
// thrown, so that the main thread can tell a bad input (rejected to the caller) from a worker that
// cannot run at all (the merger then falls back to building inline).

import Piscina from 'piscina';
import type { APIGroupDiscoveryList } from './types';
import { buildDiscoverySnapshot, packSnapshot, type PackedSnapshot, type DiscoverySnapshot, type SnapshotBuildInfo } from './snapshot';

/** The bytes of one document: an ArrayBuffer (transferred whole) or a view on one. */
export type DocumentBytes = ArrayBuffer | Uint8Array;

export interface MergeTask {
  localID: string;
  localApis: DocumentBytes;
  peers: { id: string; apis: DocumentBytes }[];
  excludedGroupVersions: string[];
  generation: number;
}

export type MergeTaskResult = { ok: true; packed: PackedSnapshot } | { ok: false; message: string };

const decoder = new TextDecoder('utf-8', { fatal: false });

/** Parses one raw `/apis` document (JSON). Throws on anything but an APIGroupDiscoveryList. */
export function parseDiscoveryBytes(bytes: DocumentBytes, what: string): APIGroupDiscoveryList {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let list: APIGroupDiscoveryList;
  try {
    list = JSON.parse(decoder.decode(view));
  } catch (e) {
    throw new Error(`${what}: ${(e as Error).message}`);
  }
  if (list === null || typeof list !== 'object' || !Array.isArray(list.items)) {
    throw new Error(`${what}: not an APIGroupDiscoveryList`);
  }
  return list;
}

/** Parse + merge + encode, on whatever thread calls it. `ms` covers all three. */
export function runMergeTask(task: MergeTask, thread: 'worker' | 'inline', workerError?: string): DiscoverySnapshot {
  const started = performance.now();
  const localApis = parseDiscoveryBytes(task.localApis, 'local /apis');
  const peers = task.peers.map((p) => ({ id: p.id, apis: parseDiscoveryBytes(p.apis, `peer ${p.id} /apis`) }));
  const snapshot = buildDiscoverySnapshot({
    localID: task.localID,
    localApis,
    peers,
    excludedGroupVersions: task.excludedGroupVersions,
    generation: task.generation,
  });
  const build: SnapshotBuildInfo =
    workerError === undefined ? { ms: performance.now() - started, thread } : { ms: performance.now() - started, thread, workerError };
  return Object.freeze({ ...snapshot, build });
}

/** The Piscina handler (loaded by name: `mergeTask`). */
export function mergeTask(task: MergeTask): MergeTaskResult | ReturnType<typeof Piscina.move> {
  let packed: PackedSnapshot;
  try {
    const started = performance.now();
    const s = runMergeTask(task, 'worker');
    packed = packSnapshot(s);
    packed.meta.build = { ms: performance.now() - started, thread: 'worker' };
  } catch (e) {
    return { ok: false, message: (e as Error)?.message ?? String(e) };
  }
  const result: MergeTaskResult = { ok: true, packed };
  return Piscina.move({
    get [Piscina.transferableSymbol]() {
      return [packed.buffer];
    },
    get [Piscina.valueSymbol]() {
      return result;
    },
  } as never);
}
