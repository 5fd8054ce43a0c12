// Membership through identity Leases (issue 5, "Done means"): three mvproxy daemons over three
// simulated kube-apiservers of two versions, sharing one store as apiservers share etcd, in
// --peer-discovery=lease with short durations (3 s leases, probes every 250 ms, discovery refresh
// only on events: the periodic refresh is 60 s, so whatever happens within seconds was driven by a
// Lease event or a probe).
//
//   A  v1.33                          B  v1.37 without lifecycle.k8s.io/v1alpha1
//   C  v1.37, started later           SHARED (workloads, scheduling.k8s.io/v1beta1): B and C
//                                     C_ONLY (evictionrequests, lifecycle.k8s.io/v1alpha1): C
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startPlane, type Plane } from '../../src/demo/topology';
import { call, type Reply } from '../support/plane';
import { eventually } from '../support/poll';
import { IDENTITY_LEASE_LABEL, PEER_ADVERTISE_ADDRESS_ANNOTATION } from '../../src/peers/lease';
import net from 'node:net';
import { createClusterPKI } from '../../src/pki/bundle';
import { startSimApiserver, ObjectStore } from '../../src/sim';
import { startChildDaemon } from '../support/child-daemon';
import { nodePKIFlags } from '../support/node-pki';

const SHARED = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads';
const C_ONLY = '/apis/lifecycle.k8s.io/v1alpha1/namespaces/default/evictionrequests';
const LEASE_S = 3;

/** Every wait below: 8 s (over two lease durations) unless it says otherwise, checked every 50 ms. */
const POLL = { timeoutMs: 8000, intervalMs: 50 };

const server = (r: Reply) => String(r.headers['x-sim-server']);

describe('peers through identity Leases: three daemons, two versions', () => {
  let plane: Plane;
  let tmp: string;
  let A: string;
  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'mvproxy-lease-'));
    plane = await startPlane({
      dir: join(tmp, 'pki'),
      frontend: 'node',
      peerDiscovery: 'lease',
      members: [
        { name: 'a', kubernetesVersion: 'v1.33' },
        { name: 'b', kubernetesVersion: 'v1.37', runtimeConfig: ['lifecycle.k8s.io/v1alpha1=false'] },
      ],
      configure: (c) => {
        c.identityLeaseDurationSeconds = LEASE_S;
        c.identityLeaseRenewIntervalSeconds = 1;
        c.peerProbeIntervalMs = 250;
        c.discoveryRefreshIntervalMs = 60_000;
        c.peerDiscoveryGraceMs = 20_000;
        c.connectTimeoutMs = 1000;
      },
    });
    A = plane.member('a').url;
  });
  after(async () => {
    await plane?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  test('each daemon keeps its own Lease: label, holder <server-id>_<uuid>, advertised address, duration', async () => {
    const leases = plane.store.list('coordination.k8s.io', 'leases', 'kube-system').filter((l) => l.object.metadata.labels?.[IDENTITY_LEASE_LABEL] === 'mvproxy');
    assert.deepEqual(leases.map((l) => l.name).sort(), ['mvproxy-a', 'mvproxy-b']);
    for (const l of leases) {
      const m = plane.members.find((x) => `mvproxy-${x.spec.name}` === l.name)!;
      const spec = l.object['spec'] as { holderIdentity: string; leaseDurationSeconds: number; renewTime: string };
      assert.match(spec.holderIdentity, new RegExp(`^${l.name}_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`));
      assert.equal(spec.leaseDurationSeconds, LEASE_S);
      assert.match(spec.renewTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'MicroTime');
      assert.equal(l.object.metadata.annotations?.[PEER_ADVERTISE_ADDRESS_ANNOTATION], m.peerAddress);
    }
    const r = await eventually(async () => {
      const x = await call(A, SHARED);
      return x.status === 200 ? x : undefined;
    }, { ...POLL, what: 'A routes SHARED to B' });
    assert.equal(server(r.value), 'b');
    assert.equal((await call(A, C_ONLY)).status, 404, 'nobody serves C_ONLY yet: the local apiserver answers');
  });

  test('a daemon started later is routed to within seconds', async () => {
    const t0 = Date.now();
    await plane.addMember({ name: 'c', kubernetesVersion: 'v1.37' });
    const r = await eventually(async () => {
      const x = await call(A, C_ONLY);
      return x.status === 200 ? x : undefined;
    }, { ...POLL, what: 'A routes C_ONLY to C' });
    const ms = Date.now() - t0;
    assert.equal(server(r.value), 'c');
    assert.ok(ms < 5000, `routed after ${ms} ms`);
    // And C found the others the same way.
    const fromC = await eventually(async () => {
      const x = await call(plane.member('c').url, '/apis/networking.k8s.io/v1beta1/servicecidrs');
      return x.status === 200 ? x : undefined;
    }, { ...POLL, what: 'C routes SHARED' });
    assert.equal(server(fromC.value), 'a', 'a v1.33-only resource from C is served by A');
  });

  test("a killed daemon: its GVRs fail over to another serving peer; 503 only where none is left", async (t) => {
    await plane.stopProxy('c'); // a crash: no shutdown, its Lease stays until it expires
    const t0 = Date.now();
    // Right away, whatever the probes know yet: failover on connect errors, 503 for C_ONLY.
    for (let i = 0; i < 10; i++) {
      const s = await call(A, SHARED);
      assert.equal(s.status, 200, s.text);
      assert.equal(server(s), 'b');
      const c = await call(A, C_ONLY);
      assert.equal(c.status, 503, c.text);
      assert.equal(c.json().kind, 'Status');
      assert.equal(c.json().reason, 'ServiceUnavailable');
    }
    // The probe takes C out of routing, and /readyz and the gauge say so without failing readiness.
    await eventually(() => !plane.member('a').daemon.peering!.reachable('mvproxy-c'), { ...POLL, what: 'A marks C down', timeoutMs: 3000 });
    const ready = await call(`http://127.0.0.1:${plane.member('a').daemon.metricsPort}`, '/readyz?verbose');
    assert.equal(ready.status, 200, ready.text);
    assert.match(ready.text, /\[\+\]peer-mvproxy-c failed \(informational/);
    const metrics = await call(`http://127.0.0.1:${plane.member('a').daemon.metricsPort}`, '/metrics');
    assert.match(metrics.text, /mvproxy_peer_up\{peer="mvproxy-c"\} 0/);
    assert.match(metrics.text, /mvproxy_peer_up\{peer="mvproxy-b"\} 1/);
    t.diagnostic(`checked within ${Date.now() - t0} ms of the kill (its Lease lives ${LEASE_S} s)`);
  });

  test('a restarted daemon (new holderIdentity) is re-read at once', async () => {
    const before = leaseOf('mvproxy-c').holderIdentity;
    const csim = plane.member('c').sim;
    csim.requests.length = 0;
    const t0 = Date.now();
    await plane.startProxy('c');
    await eventually(() => leaseOf('mvproxy-c').holderIdentity !== before, { ...POLL, what: 'a new holderIdentity (new UUID)' });
    await eventually(async () => {
      const x = await call(A, C_ONLY);
      return x.status === 200 && server(x) === 'c' ? x : undefined;
    }, { ...POLL, what: 'A routes C_ONLY to C again' });
    // The peers fetched C's discovery afresh (no If-None-Match), though their periodic refresh is 60 s away.
    const refetch = await eventually(
      () => csim.requests.find((r) => r.url === '/apis' && r.headers['x-kubernetes-peer-proxied'] === 'true' && r.headers['if-none-match'] === undefined && r.time >= t0),
      { ...POLL, what: 'a fresh peer fetch of /apis reached C' },
    );
    assert.ok(refetch.value);
  });

  test('with every serving peer gone, the GVR gets a 503 Status', async () => {
    await Promise.all([plane.stopProxy('b'), plane.stopProxy('c')]);
    const s = await call(A, SHARED);
    assert.equal(s.status, 503, s.text);
    assert.equal(s.json().reason, 'ServiceUnavailable');
    assert.ok(s.headers['retry-after']);
    await Promise.all([plane.startProxy('b'), plane.startProxy('c')]);
    await eventually(async () => (await call(A, SHARED)).status === 200, { ...POLL, what: 'A routes SHARED again' });
  });

  test('graceful shutdown deletes the Lease and the others drop the peer at once', async () => {
    const t0 = Date.now();
    await plane.shutdownProxy('b');
    assert.ok(Date.now() - t0 < 3000, `shutdown took ${Date.now() - t0} ms`);
    assert.equal(plane.store.get('coordination.k8s.io', 'leases', 'kube-system', 'mvproxy-b'), undefined, 'the Lease is gone');
    await eventually(() => !plane.member('a').daemon.peering!.peers().some((p) => p.id === 'mvproxy-b'), { ...POLL, what: 'A forgets B', timeoutMs: 2000 });
    const s = await call(A, SHARED);
    assert.equal(s.status, 200, s.text);
    assert.equal(server(s), 'c', 'C serves what B served');
    await plane.startProxy('b'); // leave the plane whole for close()
  });

  function leaseOf(name: string): { holderIdentity: string } {
    return plane.store.get('coordination.k8s.io', 'leases', 'kube-system', name)!.object['spec'] as { holderIdentity: string };
  }
});

describe('identity Lease and SIGTERM (the real CLI)', () => {
  let tmp: string;
  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'mvproxy-lease-cli-'));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  async function cli(localAPIServer: string, extra: string[] = []) {
    const pki = await createClusterPKI(join(tmp, `pki-${Math.random().toString(36).slice(2)}`));
    return startChildDaemon([
      '--frontend=node',
      '--secure-port=0',
      '--peer-port=0',
      '--peer-bind-address=127.0.0.1',
      '--metrics-bind-address=127.0.0.1:0',
      `--local-apiserver=${localAPIServer}`,
      ...(await nodePKIFlags(pki, 'cli')),
      '--server-id=mvproxy-cli',
      '--peer-discovery=lease',
      '--identity-lease-duration-seconds=30',
      ...extra,
    ]);
  }

  test('SIGTERM deletes the Lease, then exits', async () => {
    const store = new ObjectStore();
    const sim = await startSimApiserver({ name: 's', kubernetesVersion: 'v1.37', store });
    const d = await cli(sim.url);
    try {
      await eventually(() => store.get('coordination.k8s.io', 'leases', 'kube-system', 'mvproxy-cli'), { ...POLL, what: 'lease written' });
      const lease = store.get('coordination.k8s.io', 'leases', 'kube-system', 'mvproxy-cli')!;
      assert.equal(lease.object.metadata.annotations?.[PEER_ADVERTISE_ADDRESS_ANNOTATION], `127.0.0.1:${d.peerPort}`);
      const t0 = Date.now();
      assert.equal(await d.stop('SIGTERM'), 0);
      assert.ok(Date.now() - t0 < 3000, `exited after ${Date.now() - t0} ms`);
      assert.equal(store.get('coordination.k8s.io', 'leases', 'kube-system', 'mvproxy-cli'), undefined, 'the Lease is gone');
      assert.match(d.stderr(), /identity lease deleted/);
    } finally {
      await d.stop('SIGKILL');
      await sim.close();
    }
  });

  test('SIGTERM with an apiserver that never answers: exits within the 2 s bound (kubernetes#140242)', async () => {
    const sockets = new Set<net.Socket>();
    const black = net.createServer((s) => sockets.add(s)); // accepts, never answers
    await new Promise<void>((r) => black.listen(0, '127.0.0.1', r));
    const d = await cli(`http://127.0.0.1:${(black.address() as net.AddressInfo).port}`);
    try {
      await sleep(300);
      const t0 = Date.now();
      assert.equal(await d.stop('SIGTERM'), 0);
      const took = Date.now() - t0;
      assert.ok(took < 4000, `exited after ${took} ms`);
      assert.match(d.stderr(), /could not delete the identity lease; it expires by itself/);
    } finally {
      await d.stop('SIGKILL');
      for (const s of sockets) s.destroy();
      await new Promise((r) => black.close(r));
    }
  });
});
