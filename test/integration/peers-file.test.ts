// Static membership from --peers-file (issue 5): the file is re-read when it changes, one file can
// serve every node (the own ID is skipped), a bad file keeps the last good list (and says so), and
// a bad file at start is a configuration error with nothing listening.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import { createClusterPKI, type ClusterPKI } from '../../src/pki/bundle';
import { startSimApiserver, ObjectStore, type SimApiserver } from '../../src/sim';
import { parsePeersFile, PeersFileError } from '../../src/peers/static';
import { isConfigError } from '../../src/config/validate';
import { startTestDaemon, capturingLogger } from '../support/daemon';
import { call } from '../support/plane';
import { eventually } from '../support/poll';
import type { Daemon } from '../../src/daemon';
import type { DaemonConfig } from '../../src/config/types';
import { nodePKIConfig } from '../support/node-pki';

const NEW_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads';

/** Every wait below: 5 s unless it says otherwise, checked every 50 ms. */
const POLL = { timeoutMs: 5000, intervalMs: 50 };

function write(file: string, text: string): void {
  writeFileSync(file + '.tmp', text);
  renameSync(file + '.tmp', file);
}

test('peers file format: YAML or JSON, a list or {peers: [...]}, strict', () => {
  const f = '/etc/mvproxy/peers.yaml';
  assert.deepEqual(parsePeersFile('- id: cp-2\n  address: 10.0.0.2:6445\n- {id: cp-3, address: "[fd00::3]:6445"}\n', f), [
    { id: 'cp-2', address: '10.0.0.2:6445' },
    { id: 'cp-3', address: '[fd00::3]:6445' },
  ]);
  assert.deepEqual(parsePeersFile('{"peers": [{"id": "cp-2", "address": "h:1"}]}', f), [{ id: 'cp-2', address: 'h:1' }]);
  assert.deepEqual(parsePeersFile('', f), []);
  assert.deepEqual(parsePeersFile('peers: []\n', f), []);
  const bad = (text: string, msg: RegExp) =>
    assert.throws(() => parsePeersFile(text, f), (e: Error) => e instanceof PeersFileError && isConfigError(e) && msg.test(e.message) && e.message.startsWith(`peers file "${f}": `));
  bad('- id: cp-2\n  address: nope\n', /entry 0: peer "cp-2": address "nope" is not <host>:<port>/);
  bad('- id: CP_2\n  address: h:1\n', /entry 0: peer ID "CP_2" must be a lowercase RFC 1123 subdomain/);
  bad('- {id: a, address: "h:1"}\n- {id: a, address: "h:2"}\n', /entry 1: peer "a" is listed twice/);
  bad('- {id: a, address: "h:1", port: 2}\n', /entry 0: unknown field "port"/);
  bad('- {id: a}\n', /entry 0: want string fields id and address/);
  bad('nodes: []\n', /unknown field "nodes"/);
  bad('just text\n', /want a list/);
  bad('- [unclosed\n', /yaml:/);
});

describe('--peers-file', () => {
  let tmp: string;
  let pki: ClusterPKI;
  let store: ObjectStore;
  let simA: SimApiserver;
  let simB: SimApiserver;
  let b: Daemon;
  let config: (name: string, sim: SimApiserver) => Promise<Partial<DaemonConfig>>;
  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'mvproxy-peers-file-'));
    pki = await createClusterPKI(join(tmp, 'pki'));
    store = new ObjectStore();
    simA = await startSimApiserver({ name: 'a', kubernetesVersion: 'v1.33', store });
    simB = await startSimApiserver({ name: 'b', kubernetesVersion: 'v1.37', store });
    config = async (name, sim) => {
      return {
        serverID: `mvproxy-${name}`,
        frontend: 'node',
        localAPIServer: sim.url,
        ...(await nodePKIConfig(pki, name)),
        discoveryRefreshIntervalMs: 60_000,
        peerProbeIntervalMs: 250,
        connectTimeoutMs: 1000,
      };
    };
    b = await startTestDaemon(await config('b', simB));
  });
  after(async () => {
    await b?.close();
    await simA?.close();
    await simB?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  test('re-read on change; the own ID skipped; a bad file keeps the last good list', async () => {
    const file = join(tmp, 'peers.yaml');
    write(file, '- {id: mvproxy-a, address: "127.0.0.1:1"}\n'); // only itself
    const log = capturingLogger();
    const a = await startTestDaemon({ ...(await config('a', simA)), peersFile: file, peerDiscoveryGraceMs: 1500 }, { log });
    const base = `http://127.0.0.1:${a.clientPort}`;
    try {
      await a.publisher.refresh();
      assert.deepEqual(a.peering!.peers(), [], 'its own entry is skipped');
      assert.equal((await call(base, NEW_ONLY)).status, 404);

      const everyone = `- {id: mvproxy-a, address: "127.0.0.1:1"}\n- {id: mvproxy-b, address: "127.0.0.1:${b.peerPort}"}\n`;
      write(file, everyone);
      const { ms } = await eventually(async () => (await call(base, NEW_ONLY)).status === 200, { ...POLL, what: 'routed to B' });
      assert.ok(ms < 3000, `${ms} ms`);
      assert.equal((await call(base, NEW_ONLY)).headers['x-sim-server'], 'b');

      write(file, '- {id: mvproxy-b, address: nowhere}\n');
      await eventually(async () => log.lines.some((l) => l.includes('the peers file is not usable; keeping the last good peer list')), { ...POLL, what: 'the error is logged' });
      assert.deepEqual(a.peering!.peers().map((p) => p.id), ['mvproxy-b']);
      assert.equal((await call(base, NEW_ONLY)).status, 200);

      // B gone from the file: what only B served gets a 503 Status for the grace period (its view is
      // kept without an address: a restart must not look like "deleted"), then the local 404.
      write(file, 'peers: []\n');
      await eventually(async () => (await call(base, NEW_ONLY)).status === 503, { ...POLL, what: 'B unaddressed: 503' });
      assert.equal((await call(base, NEW_ONLY)).json().reason, 'ServiceUnavailable');
      await eventually(async () => (await call(base, NEW_ONLY)).status === 404, { ...POLL, what: 'B dropped after the grace period: 404' });
    } finally {
      await a.close();
    }
  });

  test('health in static mode: a peer that stops answering is skipped (503 for what only it serves), and comes back', async () => {
    const file = join(tmp, 'peers2.yaml');
    write(file, `- {id: mvproxy-b, address: "127.0.0.1:${b.peerPort}"}\n`);
    const a = await startTestDaemon({ ...(await config('a', simA)), peersFile: file, serverID: 'mvproxy-a2' });
    const base = `http://127.0.0.1:${a.clientPort}`;
    try {
      await a.publisher.refresh();
      assert.equal((await call(base, NEW_ONLY)).status, 200);
      const port = simB.port;
      await simB.close(); // B's apiserver goes away: B's peer listener answers, its /readyz probe does not pass
      await eventually(async () => a.peering!.reachable('mvproxy-b') === false, { ...POLL, what: 'B marked down', timeoutMs: 3000 });
      const r = await call(base, NEW_ONLY);
      assert.equal(r.status, 503, r.text);
      assert.equal(r.json().reason, 'ServiceUnavailable');
      simB = await startSimApiserver({ name: 'b', kubernetesVersion: 'v1.37', store, port });
      await eventually(async () => (await call(base, NEW_ONLY)).status === 200, { ...POLL, what: 'B back', timeoutMs: 5000 });
    } finally {
      await a.close();
    }
  });

  test('a bad peers file at start is a configuration error, with nothing listening', async () => {
    const file = join(tmp, 'bad.yaml');
    write(file, 'peers: {}\n');
    const free = net.createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
    const port = (free.address() as net.AddressInfo).port;
    await new Promise((r) => free.close(r));
    await assert.rejects(startTestDaemon({ ...(await config('a', simA)), peersFile: file, securePort: port }), (e: Error) => isConfigError(e) && /peers file/.test(e.message));
    const probe = net.createServer();
    await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
    await new Promise((r) => probe.close(r));
  });
});
