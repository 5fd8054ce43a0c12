// x-kubernetes-peer-proxied from a client never causes a second hop. In-tree, the source *adds*
// "true" to whatever the client sent, so a client's "false" comes first and the destination's
// Header.Get() reads "false": with disagreeing caches the destination proxies again (docs/kubernetes-mvp.md §2.2).
// Here the tables are made to disagree on purpose: A believes B serves the resource, B believes
// only C does. Whatever a client writes into the header, a request A sends to B is served by B's
// own apiserver and never travels on to C. (test/faults/one-hop.test.ts checks the same property
// over random tables.)
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startPlane, type Plane, type Member } from '../../src/demo/topology';
import { RouteTable } from '../../src/routing/routetable';
import { GVRS, groupsOf } from '../faults/harness';

const WORKLOADS = GVRS[1]; // scheduling.k8s.io/v1beta1 workloads: the v1.37 members serve it
const CONFIGMAPS = GVRS[0];

describe('x-kubernetes-peer-proxied from a client never causes a second hop', () => {
  let plane: Plane;
  let tmp: string;
  let a: Member, b: Member, c: Member;
  let seq = 0;

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'mvproxy-pp-'));
    plane = await startPlane({
      dir: join(tmp, 'pki'),
      frontend: 'auto',
      members: [
        { name: 'pp-a', kubernetesVersion: 'v1.33' },
        { name: 'pp-b', kubernetesVersion: 'v1.37' },
        { name: 'pp-c', kubernetesVersion: 'v1.37' },
      ],
      configure: (cfg) => {
        cfg.connectTimeoutMs = 1000;
        cfg.discoveryRefreshIntervalMs = 600_000;
      },
    });
    [a, b, c] = plane.members;
    const id = (m: Member) => m.daemon.config.serverID;
    // A: workloads at B. B: not served here, only at C (a stale or lying view).
    a.daemon.snapshots.publish({ table: RouteTable.build({ synced: true, local: { groups: groupsOf([CONFIGMAPS]) }, peers: new Map([[id(b), { address: b.peerAddress, groups: groupsOf([WORKLOADS]) }]]) }) });
    b.daemon.snapshots.publish({ table: RouteTable.build({ synced: true, local: { groups: groupsOf([CONFIGMAPS]) }, peers: new Map([[id(c), { address: c.peerAddress, groups: groupsOf([WORKLOADS]) }]]) }) });
  });
  after(async () => {
    await plane?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  const hits = (tag: string) => plane.members.flatMap((m) => m.sim.requests.filter((q) => q.headers['x-test-id'] === tag).map((q) => ({ server: m.spec.name, peerProxied: q.headers['x-kubernetes-peer-proxied'], xff: q.headers['x-forwarded-for'] })));

  for (const [label, values] of [
    ['"false"', ['false']],
    ['"False"', ['False']],
    ['"0"', ['0']],
    ['"" (empty)', ['']],
    ['"false" then "true"', ['false', 'true']],
    ['"false, true" in one field', ['false, true']],
    ['"TRUE" (compared case-sensitively, as in Go)', ['TRUE']],
  ] as const) {
    test(`a client's x-kubernetes-peer-proxied: ${label} → A hops to B, and B's apiserver serves it (never C)`, async () => {
      const tag = `pp-${++seq}`;
      const headers = ['x-test-id', tag, ...values.flatMap((v) => ['x-kubernetes-peer-proxied', v])];
      const r = await request(a.url + WORKLOADS.path, { headers });
      await r.body.dump();
      assert.equal(r.statusCode, 200);
      assert.equal(r.headers['x-sim-server'], b.spec.name);
      assert.deepEqual(hits(tag), [{ server: b.spec.name, peerProxied: 'true', xff: '127.0.0.1, 127.0.0.1' }]);
    });
  }

  test('a client\'s "true" keeps the request on A (A\'s apiserver answers 404: the upstream rule, docs/kubernetes-mvp.md §2 step 3)', async () => {
    const tag = `pp-${++seq}`;
    const r = await request(a.url + WORKLOADS.path, { headers: { 'x-test-id': tag, 'x-kubernetes-peer-proxied': 'true' } });
    await r.body.dump();
    assert.equal(r.statusCode, 404);
    assert.deepEqual(hits(tag).map((h) => h.server), [a.spec.name]);
  });

  test('control: sent to B\'s client listener, the same request takes B\'s (disagreeing) view: one hop to C', async () => {
    const tag = `pp-${++seq}`;
    const r = await request(b.url + WORKLOADS.path, { headers: { 'x-test-id': tag, 'x-kubernetes-peer-proxied': 'false' } });
    await r.body.dump();
    assert.equal(r.statusCode, 200);
    assert.deepEqual(hits(tag), [{ server: c.spec.name, peerProxied: 'true', xff: '127.0.0.1, 127.0.0.1' }]);
  });
});
