// When the daemon gives memory back (src/lifecycle/memory.ts): after a burst of requests ends, and
// once at rest. The clock, the event loop's busy share, the RSS and the collection are the
// test's, so the policy is asserted without waiting for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryReturn, MIN_DROP, REST_MS, REST_GROWTH_BYTES, REST_UTILIZATION } from '../../src/lifecycle/memory';
import { capturingLogger } from '../support/daemon';

const CHECK = 2_000;

function harness() {
  const s = { inFlight: 0, peak: 0, busy: 0, rss: 100 * 2 ** 20, collections: 0, now: 0 };
  const log = capturingLogger();
  const m = new MemoryReturn({
    inFlight: () => s.inFlight,
    peak: () => s.peak,
    log,
    utilization: () => s.busy,
    rss: () => s.rss,
    // A collection gives back 10 MiB.
    gc: () => {
      s.collections++;
      s.rss -= 10 * 2 ** 20;
    },
  });
  /** Checks every 2 s (the daemon's period) for `ms`. */
  const run = (ms: number) => {
    for (const end = s.now + ms; s.now < end; ) {
      s.now += CHECK;
      m.check(s.now);
    }
  };
  return { s, log, run };
}

test('an idle daemon is collected once, after REST_MS at rest, and logs it', () => {
  const { s, log, run } = harness();
  s.busy = REST_UTILIZATION / 2; // a trickle of requests
  run(REST_MS - CHECK * 2);
  assert.equal(s.collections, 0, 'not before REST_MS at rest');
  run(CHECK * 3);
  assert.equal(s.collections, 1);
  assert.ok(log.lines.some((l) => l.includes('at rest: memory collected')), log.lines.join('\n'));
  run(REST_MS * 5);
  assert.equal(s.collections, 1, 'one rest, one collection');
});

test('load keeps its heap: no collection while the event loop is busy, and a new rest is collected again', () => {
  const { s, run } = harness();
  s.busy = 0.5;
  run(REST_MS * 3);
  assert.equal(s.collections, 0, 'busy is not rest');
  s.busy = 0.01;
  run(REST_MS + CHECK * 2);
  assert.equal(s.collections, 1);
  s.busy = 0.5;
  s.rss += 20 * 2 ** 20; // what the load grew
  run(CHECK * 5);
  s.busy = 0.01;
  run(REST_MS - CHECK * 2);
  assert.equal(s.collections, 1);
  run(CHECK * 4);
  assert.equal(s.collections, 2, 'the next rest, after load, is collected');
});

test('busy once within the window restarts the rest', () => {
  const { s, run } = harness();
  run(REST_MS - CHECK * 5);
  s.busy = 0.2;
  run(CHECK);
  s.busy = 0;
  run(REST_MS - CHECK * 2);
  assert.equal(s.collections, 0);
  run(CHECK * 3);
  assert.equal(s.collections, 1);
});

test('a rest after load that grew nothing is not collected: nothing worth the pause', () => {
  const { s, run } = harness();
  run(REST_MS + CHECK * 2);
  assert.equal(s.collections, 1);
  s.busy = 0.5;
  run(CHECK * 5);
  s.busy = 0;
  s.rss += REST_GROWTH_BYTES - 1;
  run(REST_MS * 3);
  assert.equal(s.collections, 1, 'RSS grew less than REST_GROWTH_BYTES since the last collection');
  s.rss += 1;
  run(CHECK * 2);
  assert.equal(s.collections, 2, 'collected once it grew that much, still in the same rest');
});

test('a burst of requests that ended is collected once it stops dropping, busy or not', () => {
  const { s, run } = harness();
  s.busy = 0.5;
  s.inFlight = s.peak = MIN_DROP + 200;
  run(CHECK * 2);
  s.peak = s.inFlight = 300;
  run(CHECK);
  s.peak = s.inFlight = 200; // still dropping
  run(CHECK);
  assert.equal(s.collections, 0, 'not while the burst is still ending');
  run(CHECK);
  assert.equal(s.collections, 1);
});

test('a runtime that refuses gc(): no collection and no error', () => {
  const log = capturingLogger();
  const m = new MemoryReturn({ inFlight: () => 0, peak: () => 0, log, utilization: () => 0, rss: () => 2 ** 30, gc: null });
  for (let t = CHECK; t <= REST_MS * 2; t += CHECK) m.check(t);
  assert.ok(!log.lines.some((l) => l.includes('collected')));
});
