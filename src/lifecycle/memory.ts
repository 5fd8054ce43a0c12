// Memory given back after a burst of requests ends (issue 33 §3). After 10,000 watches ended, the
// node front end stayed at 2.5 GiB RSS: what they held was garbage, but V8 collects its old space
// only when more is allocated into it, and an idle proxy allocates little, so the heap it grew to
// hold them (and the native memory its dead socket and TLS objects keep) stayed for hours.
// Measured with 5,000 HTTP/1.1 watches on the node front end (test/slow/watch-memory.test.ts):
// RSS 194 MiB before, 588 MiB with them open, 590 MiB 5 s after they ended, V8 heap 212 MiB of
// which 20 MiB live.
//
// So when the requests in flight have dropped by at least MIN_DROP since the last collection and
// stopped dropping (the burst is over), one full collection that also shrinks the heap runs (V8's
// gc() with the last-resort flavour: what a heap snapshot does; 20-60 ms for such a heap, once per
// burst, at most every MIN_INTERVAL_MS). V8 exposes gc() only with --expose-gc; the flag is set at
// run time (v8.setFlagsFromString) and the function read from a new context, as Jest does for
// --logHeapUsage, so the daemon keeps working however node is started.
//
// The native memory those objects freed stays in glibc's heap unless its tunables allow it back:
// docs/deploy.md "Memory" says which the image sets.

import v8 from 'node:v8';
import vm from 'node:vm';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../observability/log';

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
  /** Tests: the threshold and the check interval. */
  minDrop?: number;
  checkMs?: number;
  minIntervalMs?: number;
}

export class MemoryReturn {
  private timer: NodeJS.Timeout | null = null;
  /** The most requests in flight since the last collection. */
  private high = 0;
  private last = 0;
  private lastCollection = -Infinity;
  /** Collections run (tests, logs). */
  collections = 0;

  constructor(private readonly o: MemoryReturnOptions) {}

  start(): void {
    this.timer = setInterval(() => this.check(), this.o.checkMs ?? CHECK_MS);
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
    if (stillDropping || this.high - n < (this.o.minDrop ?? MIN_DROP) || now - this.lastCollection < (this.o.minIntervalMs ?? MIN_INTERVAL_MS)) return;
    const gc = gcFunction();
    if (gc === null) return;
    const ended = this.high - n;
    this.high = n;
    this.lastCollection = now;
    const before = v8.getHeapStatistics().total_heap_size;
    const t = performance.now();
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    this.collections++;
    const after = v8.getHeapStatistics().total_heap_size;
    this.o.log.info(1, 'requests ended in a burst: their memory collected', { ended, inFlight: n, heapMiB: `${(before / 2 ** 20).toFixed(0)} -> ${(after / 2 ** 20).toFixed(0)}`, ms: +(performance.now() - t).toFixed(1) });
  }
}
