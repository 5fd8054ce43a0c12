// The seed of the suite's fuzz tests (test/security/fuzz.test.ts, discovery-decode-fuzz.test.ts):
// MVPROXY_FUZZ_SEED=N replays a run (fast-check's `seed`: the same N generates the same inputs);
// unset, each run draws a new one. The tests print it first (t.diagnostic), so a failure in CI can
// be replayed here: `MVPROXY_FUZZ_SEED=N node --import tsx --test test/security/fuzz.test.ts`.
// prng() is the generator of the suites that draw their cases by hand (test/support/differential.ts,
// test/unit/response-parser.test.ts) from that seed.
import { randomInt } from 'node:crypto';

export const FUZZ_SEED_ENV = 'MVPROXY_FUZZ_SEED';

/** MVPROXY_FUZZ_SEED when set (an integer, else an error: a typo must not fuzz with another seed), or a random 31-bit seed. */
export function fuzzSeed(env: NodeJS.ProcessEnv = process.env): number {
  const v = env[FUZZ_SEED_ENV]?.trim();
  if (v === undefined || v === '') return randomInt(2 ** 31);
  if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new Error(`${FUZZ_SEED_ENV}=${JSON.stringify(v)} is not an integer`);
  return Number(v);
}

/** How a test prints its seed, and how to replay it. */
export function seedLine(seed: number): string {
  return `seed ${seed} (replay: ${FUZZ_SEED_ENV}=${seed})`;
}

/** mulberry32: a small seeded PRNG, so a seed replays a run exactly. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
