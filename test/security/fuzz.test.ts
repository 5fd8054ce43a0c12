// RequestInfo and discovery Accept negotiation under generated hostile input (fast-check): the
// suite's share of scripts/fuzz.ts. Both parsers run on the main thread for every request, so an
// exception escaping one would answer a client with a crash. No exception escapes and every result
// has the documented shape. Linear time is the script's check (it times inputs up to 64 KiB and
// fits the exponent; tests never time things): `node --import tsx scripts/fuzz.ts`, 1,000,000
// inputs by default.
//
// Seeded: the seed is printed first (a diagnostic line); MVPROXY_FUZZ_SEED=N replays run N
// (test/support/fuzz-seed.ts), e.g. `MVPROXY_FUZZ_SEED=N node --import tsx --test test/security/fuzz.test.ts`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runFuzz } from '../../scripts/fuzz';
import { fuzzSeed, seedLine } from '../support/fuzz-seed';

test('fuzzing RequestInfo and Accept negotiation (20,000 generated inputs): no exception escapes and every result has the documented shape', (t) => {
  const seed = fuzzSeed();
  t.diagnostic(seedLine(seed));
  const r = runFuzz({ inputs: 20_000, seconds: 120, seed, log: () => undefined });
  t.diagnostic(`${r.inputs} inputs in ${r.seconds} s`);
  assert.equal(r.stoppedByBudget, false, `finished within the budget (${seedLine(seed)})`);
  assert.ok(r.inputs >= 20_000);
  assert.deepEqual(r.targets.map((x) => x.target).sort(), ['Accept', 'RequestInfo']);
  for (const x of r.targets) assert.deepEqual(x.failures, [], `${x.target} (${seedLine(seed)})`);
});
