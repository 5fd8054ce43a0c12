// Whether the local apiserver serves (src/snapshot/local-apiserver.ts): /readyz decides, except
// when mvproxy itself could not open a connection for want of a file descriptor (issue 33 §3):
// that is mvproxy's shortage, not the apiserver's, and at 10,000 watches it marked the apiserver
// down and sent every request of the node to the peers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LocalAPIServer } from '../../src/snapshot/local-apiserver';
import { SnapshotHolder } from '../../src/snapshot/holder';
import type { Logger } from '../../src/telemetry/log';
import { eventually } from '../support/poll';

test('the /readyz probe: EMFILE and ENFILE leave the state as it is (logged); a refused connection is down, 200 serving', async () => {
  let outcome: number | string = 200;
  let probes = 0;
  const lines: string[] = [];
  const log = { info: (_v: number, msg: string) => void lines.push(msg), error: () => undefined } as unknown as Logger;
  const snapshots = new SnapshotHolder();
  const changes: string[] = [];
  const m = new LocalAPIServer({
    snapshots,
    log,
    intervalMs: 20,
    onChange: (s) => void changes.push(s),
    probe: async () => {
      probes++;
      if (typeof outcome === 'number') return outcome;
      throw Object.assign(new Error('connect failed'), { code: 'UND_ERR_CONNECT', cause: Object.assign(new Error(outcome), { code: outcome }) });
    },
  });
  m.start();
  try {
    await eventually(() => probes > 0 && m.state === 'serving', { what: 'serving', timeoutMs: 1000, intervalMs: 10 });
    for (const code of ['EMFILE', 'ENFILE']) {
      outcome = code;
      const n = probes;
      await eventually(() => probes >= n + 3, { what: `three probes at ${code}`, timeoutMs: 2000, intervalMs: 10 });
      assert.equal(m.state, 'serving', `${code}: still serving`);
    }
    assert.deepEqual(changes, [], 'no change of state');
    assert.ok(lines.some((l) => /out of file descriptors/.test(l)), `the shortage is logged: ${lines.join(' | ')}`);
    outcome = 'ECONNREFUSED';
    await eventually(() => m.state === 'down', { what: 'a refused connection: down', timeoutMs: 2000, intervalMs: 10 });
  } finally {
    m.stop();
  }
});

test('the /readyz probe: a kept-alive connection closed under it is asked again on a fresh one before the apiserver counts as down (a server closing idle connections sent requests to the peers)', async () => {
  // What undici reports when the server closes the kept-alive connection as the probe is written on it.
  const closed = () => Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
  const script: Array<number | Error> = [];
  let probes = 0;
  const snapshots = new SnapshotHolder();
  const changes: string[] = [];
  const m = new LocalAPIServer({
    snapshots,
    log: { info: () => undefined, error: () => undefined } as unknown as Logger,
    intervalMs: 20,
    onChange: (s) => void changes.push(s),
    probe: async () => {
      probes++;
      const next = script.shift() ?? 200;
      if (next instanceof Error) throw next;
      return next;
    },
  });
  m.start();
  try {
    await eventually(() => m.state === 'serving', { what: 'serving', timeoutMs: 1000, intervalMs: 10 });
    for (const e of [closed(), Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })]) {
      script.push(e, 200);
      const n = probes;
      await eventually(() => probes >= n + 4, { what: 'the probes after the close', timeoutMs: 2000, intervalMs: 10 });
      assert.equal(m.state, 'serving', `${(e as Error & { code: string }).code}, then 200 on the fresh connection: serving`);
    }
    assert.deepEqual(changes, [], 'never taken for down');
    // Closed again on the fresh connection: the apiserver is going away; down.
    script.push(closed(), closed());
    await eventually(() => m.state === 'down', { what: 'closed twice: down', timeoutMs: 2000, intervalMs: 10 });
  } finally {
    m.stop();
  }
});
