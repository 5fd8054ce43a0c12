// Memory given back after a burst of requests ends (issue 33 §3). After 10,000 watches ended, the
// node front end stayed at 2.5 GiB RSS: what they held was garbage, but V8 collects its old space
// only when more is allocated into it, and an idle proxy allocates little, so the heap it grew to
// hold them stayed. Measured (test/slow/watch-memory.test.ts, 5,000 watches opened and closed,
// jemalloc preloaded as in the image) without this collection: RSS after 183 -> 310 MiB (node,
// HTTP/2 clients) and 196 -> 387 MiB (HTTP/1.1), the V8 heap still ~190-215 MiB.
//
// Idle connections hold the same kind of garbage once they close (10,000 of them: 617 MiB RSS
// after, 236 after a collection: test/slow/idle-connections.test.ts), so the daemon counts open
// connections with the requests (telemetry/connections.ts).
//
// So when the requests in flight have dropped by at least MIN_DROP since the last collection and
// stopped dropping (the burst is over), one full collection that also shrinks the heap runs (V8's
// gc() with the last-resort flavour: what a heap snapshot does; 20-60 ms for such a heap, once per
// burst, at most every MIN_INTERVAL_MS). V8 exposes gc() only with --expose-gc; the flag is set at
// run time (v8.setFlagsFromString) and the function read from a new context, as Jest does for
// --logHeapUsage, so the daemon keeps working however node is started.
//
// At rest the same collection runs once more (issue 40 §2): a daemon that started, merged discovery
// and then sat idle kept the young generation its start-up grew (8 MiB at --max-semi-space-size=4,
// 0.5 used) and the pages V8 pools instead of returning, for as long as it stayed idle. Measured in
// front of real kube-apiservers (bench/idle-rss-kube.ts, node front end, the image's environment):
// 92.8-93.1 MiB at rest without it, 84.3-84.4 with it (one collection, 32-34 ms); V8's own
// idle collections (the memory reducer, a plain gc()) shrink the young generation without giving its
// pages back. "At rest" is the event loop busy less than REST_UTILIZATION for REST_MS, as Go's
// runtime forces a collection after two minutes without one: a trickle of requests (a node's
// kubelet, leases) is rest; load is not, and keeps the heap it needs.
//
// The native memory those objects freed (TLS and socket buffers) glibc's malloc keeps; the image
// preloads jemalloc, which gives it back (docs/deploy.md "Memory").

import v8 from 'node:v8';
import vm from 'node:vm';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../telemetry/log';

/** Requests that must have ended since the last collection (and the high mark) before one runs. */
export const MIN_DROP = 1_000;
/** How often the count is read. */
const CHECK_MS = 2_000;
/** Collections at most this often, however the requests come and go. */
const MIN_INTERVAL_MS = 30_000;
/** The event loop's busy share below which the daemon is at rest: 500 GET/s cost ~2 % of one core here. */
export const REST_UTILIZATION = 0.05;
/** The log message of the collection at rest (--v=1): bench/scale.ts --settle and the idle benches wait for it. */
export const REST_COLLECTED_MSG = 'at rest: memory collected';

/** How long at rest before the collection: past the merge worker's idle exit (MERGE_WORKER_IDLE_MS, 75 s) after a merge. */
export const REST_MS = 90_000;
/**
 * RSS grown since the last collection, below which one at rest has nothing worth its pause to give back.
 * Not the heap's own statistics: V8 shrinks the young generation when idle (total_heap_size drops, slack
 * 1-4 MiB against a real apiserver) but keeps its pages pooled, so only the RSS shows them.
 */
export const REST_GROWTH_BYTES = 4 * 2 ** 20;

type GC = (o?: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

let collect: GC | null | undefined;

/** V8's gc(), exposed at run time; null if this runtime refuses. */
function gcFunction(): GC | null {
  if (collect !== undefined) return collect;
  try {
    v8.setFlagsFromString('--expose-gc');
    collect = vm.runInNewContext('gc') as GC;
  } catch {
    collect = null;
  }
  return collect;
}

export interface MemoryReturnOptions {
  /** Requests in flight now (watches included). */
  inFlight(): number;
  /** The most in flight at once since the last call (a burst between two checks counts). */
  peak(): number;
  log: Logger;
  /** The event loop's busy share since the last call (default: performance.eventLoopUtilization). */
  utilization?(): number;
  /** The process's RSS in bytes (default: process.memoryUsage.rss). */
  rss?(): number;
  /** The collection (default: V8's gc(), last-resort flavour). */
  gc?: GC | null;
}

export class MemoryReturn {
  private timer: NodeJS.Timeout | null = null;
  /** The most requests in flight since the last collection. */
  private high = 0;
  private last = 0;
  private lastCollection = -Infinity;
  /** Since when the event loop has been at rest (null: busy at the last check). */
  private restSince: number | null = null;
  /** This rest was collected: the next collection at rest waits for load and a new rest. */
  private restCollected = false;
  private elu = performance.eventLoopUtilization();
  /** RSS after the last collection (none yet: any RSS has grown). */
  private rssAfter = -Infinity;

  constructor(private readonly o: MemoryReturnOptions) {}

  private utilization(): number {
    if (this.o.utilization) return this.o.utilization();
    const now = performance.eventLoopUtilization();
    const u = performance.eventLoopUtilization(now, this.elu).utilization;
    this.elu = now;
    return u;
  }

  private rss(): number {
    return this.o.rss ? this.o.rss() : process.memoryUsage.rss();
  }

  start(): void {
    this.timer = setInterval(() => this.check(), CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  check(now = performance.now()): void {
    const n = this.o.inFlight();
    this.high = Math.max(this.high, this.o.peak());
    const stillDropping = n < this.last;
    this.last = n;
    if (this.utilization() < REST_UTILIZATION) this.restSince ??= now;
    else {
      this.restSince = null;
      this.restCollected = false;
    }
    if (now - this.lastCollection < MIN_INTERVAL_MS) return;
    if (!stillDropping && this.high - n >= MIN_DROP) {
      const ended = this.high - n;
      if (this.collect(now, 'requests ended in a burst: their memory collected', { ended, inFlight: n })) this.high = n;
      return;
    }
    if (this.restSince !== null && now - this.restSince >= REST_MS && !this.restCollected && this.rss() - this.rssAfter >= REST_GROWTH_BYTES) {
      this.restCollected = true;
      this.collect(now, REST_COLLECTED_MSG, { inFlight: n });
    }
  }

  private collect(now: number, msg: string, fields: Record<string, unknown>): boolean {
    const gc = this.o.gc === undefined ? gcFunction() : this.o.gc;
    if (gc === null) return false;
    this.lastCollection = now;
    const before = v8.getHeapStatistics().total_heap_size;
    const t = performance.now();
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    const after = v8.getHeapStatistics().total_heap_size;
    this.rssAfter = this.rss();
    this.o.log.info(1, msg, { ...fields, heapMiB: `${(before / 2 ** 20).toFixed(0)} -> ${(after / 2 ** 20).toFixed(0)}`, ms: +(performance.now() - t).toFixed(1) });
    return true;
  }
}
