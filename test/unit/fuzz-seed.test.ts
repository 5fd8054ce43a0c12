// MVPROXY_FUZZ_SEED (test/support/fuzz-seed.ts): replays a fuzz run, and a typo must not fuzz with another seed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fuzzSeed, seedLine } from '../support/fuzz-seed';

test('the seed comes from MVPROXY_FUZZ_SEED when set, is random otherwise, and a value that is not an integer is refused', () => {
  assert.equal(fuzzSeed({ MVPROXY_FUZZ_SEED: '1172462412' }), 1172462412);
  assert.equal(fuzzSeed({ MVPROXY_FUZZ_SEED: ' -7 ' }), -7);
  const r = fuzzSeed({});
  assert.ok(Number.isInteger(r) && r >= 0 && r < 2 ** 31);
  assert.equal(typeof fuzzSeed({ MVPROXY_FUZZ_SEED: '' }), 'number');
  for (const bad of ['12x', '1.5', 'seed', '1e3']) assert.throws(() => fuzzSeed({ MVPROXY_FUZZ_SEED: bad }), /is not an integer/, bad);
  assert.equal(seedLine(42), 'seed 42 (replay: MVPROXY_FUZZ_SEED=42)');
});
