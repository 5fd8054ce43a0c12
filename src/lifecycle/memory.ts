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
}

export class MemoryReturn {
  private timer: NodeJS.Timeout | null = null;
  /** The most requests in flight since the last collection. */
  private high = 0;
  private last = 0;
  private lastCollection = -Infinity;

  constructor(private readonly o: MemoryReturnOptions) {}

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
    if (stillDropping || this.high - n < MIN_DROP || now - this.lastCollection < MIN_INTERVAL_MS) return;
    const gc = gcFunction();
    if (gc === null) return;
    const ended = this.high - n;
    this.high = n;
    this.lastCollection = now;
    const before = v8.getHeapStatistics().total_heap_size;
    const t = performance.now();
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    const after = v8.getHeapStatistics().total_heap_size;
    this.o.log.info(1, 'requests ended in a burst: their memory collected', { ended, inFlight: n, heapMiB: `${(before / 2 ** 20).toFixed(0)} -> ${(after / 2 ** 20).toFixed(0)}`, ms: +(performance.now() - t).toFixed(1) });
  }
}
