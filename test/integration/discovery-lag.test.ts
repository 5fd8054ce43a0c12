// A snapshot that lags a peer (docs/kubernetes-mvp.md §8; seen for real in the rolling upgrade,
// test/kube/upgrade.test.ts):
// right after a peer's apiserver restarts as a newer release, this node's route table does not list
// the peer's new resources for up to a refresh. A GET of an object that exists there must not get
// the local 404 (controllers read it as "deleted"): a request without a body that the local
// apiserver answers 404 for a resource no snapshot lists is asked of the peers first.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_FRONTEND } from '../support/frontends';
import { twoVersionPlane, call, AUTH, OLD, NEW } from '../support/plane';
import { RouteTable } from '../../src/routing/routetable';
import type { Plane } from '../../src/demo/topology';

const NEW_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads'; // the v1.37 member serves it

describe(`a route table that lags a peer (${DEFAULT_FRONTEND} front end)`, () => {
  let plane: Plane & { tmp: string };
  let lagging: (routed: boolean) => void = () => undefined;
  before(async () => {
    plane = await twoVersionPlane(DEFAULT_FRONTEND);
    const created = await call(plane.member(NEW).url, NEW_ONLY, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ apiVersion: 'scheduling.k8s.io/v1beta1', kind: 'Workload', metadata: { name: 'lag' }, spec: {} }) });
    assert.equal(created.status, 201, created.text);
    // The old member's table as it was before the peer started serving workloads: the peer is
    // known (with its address) but lists nothing. Discovery refreshes every 60 s in this plane.
    const snapshots = plane.member(OLD).daemon.snapshots;
    const peerID = `mvproxy-${NEW}`;
    const address = snapshots.current.table.peerAddresses.get(peerID)!;
    assert.ok(address, 'the peer is known');
    const localOnly = snapshots.current.table;
    const local = { groups: [...localOnly.entries()].filter(([, , , e]) => e.servedLocally).map(([g, v, r]) => ({ metadata: { name: g }, versions: [{ version: v, resources: [{ resource: r, responseKind: { group: g, version: v, kind: 'X' }, scope: 'Namespaced', singularResource: r, verbs: ['get'] }] }] })) };
    lagging = (routed: boolean) => snapshots.publish({ table: RouteTable.build({ local: local as never, peers: new Map([[peerID, { address: routed ? address : '', groups: [] }]]), memberAddresses: new Map([[peerID, address]]), synced: true }) });
    lagging(true);
    assert.equal(snapshots.current.table.lookup('scheduling.k8s.io', 'v1beta1', 'workloads'), undefined, 'the lagging table does not list workloads');
  });
  after(async () => plane?.close());

  test('GET and LIST of an object only the peer serves: the peer\'s answer, not the local 404', async () => {
    const got = await call(plane.member(OLD).url, `${NEW_ONLY}/lag`, { headers: AUTH });
    assert.equal(got.status, 200, got.text);
    assert.equal(got.headers['x-sim-server'], NEW);
    const list = await call(plane.member(OLD).url, NEW_ONLY, { headers: AUTH });
    assert.equal(list.status, 200);
    assert.match(list.text, /"name":"lag"/);
  });

  test('an object nobody has: still a 404, now the peer\'s; a resource nobody serves: 404', async () => {
    const missing = await call(plane.member(OLD).url, `${NEW_ONLY}/nope`, { headers: AUTH });
    assert.equal(missing.status, 404);
    assert.equal(missing.headers['x-sim-server'], NEW);
    const unknown = await call(plane.member(OLD).url, '/apis/nope.example.com/v1/things', { headers: AUTH });
    assert.equal(unknown.status, 404);
  });

  test('a create with a small body is sent again to the peer: created there; a chunked body streams and gets the local answer', async () => {
    const body = JSON.stringify({ apiVersion: 'scheduling.k8s.io/v1beta1', kind: 'Workload', metadata: { name: 'lag2' }, spec: {} });
    const created = await call(plane.member(OLD).url, NEW_ONLY, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers['x-sim-server'], NEW);
    const stored = await call(plane.member(NEW).url, `${NEW_ONLY}/lag2`, { headers: AUTH });
    assert.equal(stored.status, 200, 'stored once, on the peer');
    const { Readable } = await import('node:stream');
    const chunked = await call(plane.member(OLD).url, NEW_ONLY, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: Readable.from([Buffer.from(body.replace('lag2', 'lag3'))]) as never });
    assert.equal(chunked.status, 404);
    assert.equal(chunked.headers['x-sim-server'], OLD);
  });

  test('the peer is asked even while it is out of routing (its apiserver just restarted and its probe has not passed yet)', async () => {
    lagging(false);
    const got = await call(plane.member(OLD).url, `${NEW_ONLY}/lag`, { headers: AUTH });
    assert.equal(got.status, 200, got.text);
    assert.equal(got.headers['x-sim-server'], NEW);
  });

  test('a peer whose own apiserver is down (its mvproxy answers 503) cannot have the object: the local 404 stands, not a 503', async () => {
    // As while the peer's apiserver restarts in a rolling upgrade: the client reaches its own node,
    // whose apiserver answers, and gets that answer (in-tree: a resource no peer's discovery lists
    // is the local handler's 404).
    lagging(true);
    await plane.member(NEW).sim.close();
    const direct = await call(plane.member(NEW).url, `${NEW_ONLY}/lag`, { headers: AUTH });
    assert.equal(direct.status, 503, 'the peer mvproxy cannot reach its apiserver');
    const got = await call(plane.member(OLD).url, `${NEW_ONLY}/lag`, { headers: AUTH });
    assert.equal(got.status, 404, got.text);
    assert.equal(got.headers['x-sim-server'], OLD);
    assert.match(got.text, /"kind":"Status"/);
  });
});
