// The suite's one polling helper (test/support/poll.ts): bounded always, and a timeout names what
// was awaited and the last value or error seen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, GiveUp, PollTimeout } from '../support/poll';

test('eventually resolves with the first value that is not false/undefined/null, and how long it took', async () => {
  let n = 0;
  const r = await eventually(() => (++n < 3 ? (n === 1 ? undefined : false) : { n }), { what: 'three tries', timeoutMs: 1000, intervalMs: 5 });
  assert.deepEqual(r.value, { n: 3 });
  assert.ok(r.ms >= 0 && r.ms < 1000);
  assert.equal((await eventually(() => 0, { what: 'zero is a value', timeoutMs: 100 })).value, 0);
});

test('a thrown error is "not yet"; on timeout the message names what, the bound, the tries and the last error', async () => {
  let n = 0;
  await assert.rejects(
    eventually(
      () => {
        n++;
        assert.equal(n, -1, `try ${n}`);
        return true;
      },
      { what: 'never', timeoutMs: 100, intervalMs: 10 },
    ),
    (e: unknown) => e instanceof PollTimeout && /^never: not within 100 ms \(\d+ tries; last error: AssertionError.*try \d+/.test(e.message) && n > 2,
  );
  await assert.rejects(eventually(() => false, { what: 'false', timeoutMs: 30, intervalMs: 10 }), /false: not within 30 ms \(\d+ tries; last value: false\)$/);
});

test('a GiveUp ends the wait at once', async () => {
  const t0 = Date.now();
  await assert.rejects(eventually(() => { throw new GiveUp('the process exited'); }, { what: 'x', timeoutMs: 5000 }), (e: unknown) => e instanceof GiveUp);
  assert.ok(Date.now() - t0 < 1000);
});

test('a try that never settles is bounded by the timeout too', async () => {
  const t0 = Date.now();
  await assert.rejects(eventually(() => new Promise<boolean>(() => undefined), { what: 'a hung try', timeoutMs: 100 }), /a hung try: not within 100 ms \(\d+ tries?; a try was still pending\)/);
  assert.ok(Date.now() - t0 < 1000);
});
