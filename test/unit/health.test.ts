// Peer health probes (src/peers/health.ts): a peer that fails its probe is skipped, and one that
// answers again is routed to within about a second (DOWN_REPROBE_MS), not at the next interval.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { PeerHealth } from '../../src/peers/health';
import type { PeerPools } from '../../src/upstream/pools';
import type { Metrics } from '../../src/telemetry/metrics';
import type { Logger } from '../../src/telemetry/log';
import { eventually } from '../support/poll';

function fakePeer() {
  const state = { up: false, probes: 0 };
  const pools = {
    get: () => ({
      request: async () => {
        state.probes++;
        if (!state.up) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        return { statusCode: 200, body: { dump: async () => undefined } };
      },
    }),
  } as unknown as PeerPools;
  return { state, pools };
}

const metrics = { peersUp: { set: () => undefined } } as unknown as Metrics;
const log = { info: () => undefined, error: () => undefined } as unknown as Logger;

test('a peer that failed its probe is probed again within a second, and routed to once it answers (interval 60 s)', async () => {
  const { state, pools } = fakePeer();
  let changes = 0;
  const h = new PeerHealth({ peers: () => [{ id: 'p', address: '127.0.0.1:1' }], pools, intervalMs: 60_000, metrics, log, onChange: () => changes++ });
  h.start();
  try {
    await eventually(() => h.up('p') !== undefined, { what: 'the first probe', timeoutMs: 1000, intervalMs: 20 });
    assert.equal(h.reachable('p'), false, 'down after a failed probe');
    assert.match(h.problem('p') ?? '', /ECONNREFUSED/);
    state.up = true;
    // Bound: the 60 s interval would never get there.
    await eventually(() => h.reachable('p'), { what: 'reachable again once the peer answers', timeoutMs: 3000, intervalMs: 50 });
    assert.ok(changes >= 2, 'the route table was republished on each change');
    const n = state.probes;
    await sleep(1500);
    assert.equal(state.probes, n, 'an up peer is not re-probed before the interval');
  } finally {
    h.stop();
  }
});

test('stop() cancels a pending re-probe of a down peer', async () => {
  const { state, pools } = fakePeer();
  const h = new PeerHealth({ peers: () => [{ id: 'p', address: '127.0.0.1:1' }], pools, intervalMs: 60_000, metrics, log, onChange: () => undefined });
  h.start();
  await eventually(() => h.up('p') !== undefined, { what: 'the first probe', timeoutMs: 1000, intervalMs: 20 });
  h.stop();
  const n = state.probes;
  await sleep(1300);
  assert.equal(state.probes, n);
});

test('a probe that fails for want of a file descriptor (EMFILE, mvproxy\'s own shortage) gives no verdict: an up peer stays up (a refused one is a verdict)', async () => {
  let fail: string | undefined;
  let probes = 0;
  const pools = {
    get: () => ({
      request: async () => {
        probes++;
        // undici reports the socket's error as the cause of its own.
        if (fail) throw Object.assign(new Error('connect failed'), { code: 'UND_ERR_CONNECT', cause: Object.assign(new Error(`connect ${fail}`), { code: fail }) });
        return { statusCode: 200, body: { dump: async () => undefined } };
      },
    }),
  } as unknown as PeerPools;
  const lines: string[] = [];
  const logged = { info: (_v: number, msg: string) => void lines.push(msg), error: () => undefined } as unknown as Logger;
  let changes = 0;
  const h = new PeerHealth({ peers: () => [{ id: 'p', address: '127.0.0.1:1' }], pools, intervalMs: 100, metrics, log: logged, onChange: () => changes++ });
  h.start();
  try {
    await eventually(() => h.up('p') === true, { what: 'the first probe', timeoutMs: 1000, intervalMs: 10 });
    fail = 'EMFILE';
    const n = probes;
    await eventually(() => probes >= n + 3, { what: 'three probes at EMFILE', timeoutMs: 2000, intervalMs: 20 });
    assert.equal(h.up('p'), true, 'still up');
    assert.equal(changes, 0, 'routing never changed');
    assert.ok(lines.some((l) => /out of file descriptors/.test(l)), `the shortage is logged: ${lines.join(' | ')}`);
    fail = 'ECONNREFUSED';
    await eventually(() => h.up('p') === false, { what: 'a refused probe is a verdict', timeoutMs: 2000, intervalMs: 20 });
  } finally {
    h.stop();
  }
});
