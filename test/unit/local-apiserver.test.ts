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
