// RequestInfo and discovery Accept negotiation under generated hostile input (fast-check): the
// suite's share of scripts/fuzz.ts. Both parsers run on the main thread for every request, so an
// exception escaping one would answer a client with a crash. No exception escapes and every result
// has the documented shape. Linear time is the script's check (it times inputs up to 64 KiB and
// fits the exponent; tests never time things): `node --import tsx scripts/fuzz.ts`, 1,000,000
// inputs by default.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runFuzz } from '../../scripts/fuzz';

test('fuzzing RequestInfo and Accept negotiation (20,000 generated inputs): no exception escapes and every result has the documented shape', (t) => {
  const seed = Number(process.env.MVPROXY_FUZZ_SEED ?? Date.now() % 2 ** 31);
  const r = runFuzz({ inputs: 20_000, seconds: 120, seed, log: () => undefined });
  t.diagnostic(`seed ${seed} (MVPROXY_FUZZ_SEED replays it): ${r.inputs} inputs in ${r.seconds} s`);
  assert.equal(r.stoppedByBudget, false, 'finished within the budget');
  assert.ok(r.inputs >= 20_000);
  assert.deepEqual(r.targets.map((x) => x.target).sort(), ['Accept', 'RequestInfo']);
  for (const x of r.targets) assert.deepEqual(x.failures, [], `${x.target} (seed ${seed})`);
});
