// The one polling helper of the suite: waits until a condition holds, always bounded in time, and on
// timeout says what it waited for, how long, how many tries, and the last value or error seen (a
// bare "timed out" says nothing about which state the daemon was stuck in). Every test that waits
// for something to become true uses it, with that call site's own timeout and interval.
import { inspect } from 'node:util';

export interface EventuallyOptions {
  /** What is awaited, for the timeout message ("lease written", "A routes C_ONLY to C"). */
  what: string;
  /** The bound: a try still pending then is not awaited further. */
  timeoutMs: number;
  /** The pause between tries (default 50 ms). */
  intervalMs?: number;
}

/** Thrown by `eventually` when the condition did not hold within the bound. */
export class PollTimeout extends Error {
  constructor(
    message: string,
    /** The last value the condition returned, or the last error it threw. */
    readonly last: unknown,
  ) {
    super(message);
    this.name = 'PollTimeout';
  }
}

/** Thrown by a condition to stop polling at once (the process it watches has exited, say). */
export class GiveUp extends Error {
  override name = 'GiveUp';
}

/**
 * Calls `fn` until it returns something other than `false`, `undefined` or `null` without throwing,
 * and resolves with that value and the milliseconds it took. An error thrown by `fn` counts as "not
 * yet" (an assertion can be the condition: `() => { assert.equal(...); return true; }`), except a
 * `GiveUp`, which ends the wait at once. After `timeoutMs` it throws a `PollTimeout`.
 */
export async function eventually<T>(fn: () => T | Promise<T>, o: EventuallyOptions): Promise<{ value: NonNullable<Exclude<T, false>>; ms: number }> {
  const interval = o.intervalMs ?? 50;
  const t0 = Date.now();
  const deadline = t0 + o.timeoutMs;
  let tries = 0;
  let last: { error: unknown } | { value: unknown } | { pending: true } = { value: undefined };
  for (;;) {
    tries++;
    const outcome = await bounded(fn, deadline - Date.now());
    if ('error' in outcome && outcome.error instanceof GiveUp) throw outcome.error;
    if ('value' in outcome && outcome.value !== false && outcome.value !== undefined && outcome.value !== null) {
      return { value: outcome.value as NonNullable<Exclude<T, false>>, ms: Date.now() - t0 };
    }
    last = outcome;
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(interval, left));
  }
  const seen = 'pending' in last ? 'a try was still pending' : 'error' in last ? `last error: ${describe(last.error)}` : `last value: ${describe(last.value)}`;
  throw new PollTimeout(`${o.what}: not within ${o.timeoutMs} ms (${tries} tries; ${seen})`, 'error' in last ? last.error : 'value' in last ? last.value : undefined);
}

/** One try of `fn`, given at most `ms` (and at least one turn of the event loop) to settle. */
async function bounded<T>(fn: () => T | Promise<T>, ms: number): Promise<{ value: T } | { error: unknown } | { pending: true }> {
  let p: Promise<T>;
  try {
    const v = fn();
    if (!(v instanceof Promise)) return { value: v };
    p = v;
  } catch (error) {
    return { error };
  }
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<{ pending: true }>((resolve) => (timer = setTimeout(() => resolve({ pending: true }), Math.max(ms, 0))));
  try {
    return await Promise.race([p.then((value) => ({ value }), (error: unknown) => ({ error })), expired]);
  } finally {
    clearTimeout(timer);
  }
}

function describe(x: unknown): string {
  if (x instanceof Error) return `${x.name}: ${x.message}`.slice(0, 600);
  return inspect(x, { depth: 3, maxArrayLength: 20, maxStringLength: 300, breakLength: Infinity });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
