// The routing decision table (docs/kubernetes-mvp.md §2 summary table, Kubernetes TestPeerProxy in
// peerproxy_handler_test.go): each row is one request against one route table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide } from '../../src/routing/decide';
import { RouteTable } from '../../src/routing/routetable';
import type { RequestInfo } from "../../src/request/requestinfo";
import { RequestInfoError } from '../../src/request/requestinfo';
import { aggregatedFixture } from '../support/fixtures';
import type { APIGroupDiscovery } from '../../src/aggregation/types';

const v133 = aggregatedFixture('v1.33').items;
const v137 = aggregatedFixture('v1.37').items;
const core: APIGroupDiscovery[] = [
  { metadata: { name: '' }, versions: [{ version: 'v1', resources: [{ resource: 'pods', scope: 'Namespaced', singularResource: 'pod', verbs: ['get'] }] }] },
];

function ri(p: Partial<RequestInfo>): RequestInfo {
  return {
    isResourceRequest: true, path: '/', verb: 'get', apiPrefix: 'apis', apiGroup: '', apiVersion: '', namespace: '',
    resource: '', subresource: '', name: '', ...p,
  };
}

// This node runs v1.33; peer "apiserver-b" runs v1.37 and is reachable; "apiserver-c" runs v1.37 with no address.
const table = RouteTable.build({
  synced: true,
  local: { groups: [...core, ...v133] },
  peers: new Map([
    ['apiserver-b', { address: '127.0.0.1:9443', groups: [...core, ...v137] }],
  ]),
});
const tableUnresolved = RouteTable.build({
  synced: true,
  local: { groups: [...core, ...v133] },
  peers: new Map([['apiserver-c', { address: '', groups: v137 }]]),
});
const tableExcluded = RouteTable.build({
  synced: true,
  local: { groups: v133 },
  peers: new Map([['apiserver-b', { address: '127.0.0.1:9443', groups: v137 }]]),
  excludedGroupVersions: new Set(['lifecycle.k8s.io/v1alpha1']),
});
const notSynced = RouteTable.empty();

const peerOnly = { apiGroup: 'lifecycle.k8s.io', apiVersion: 'v1alpha1', resource: 'evictionrequests' };
const both = { apiGroup: 'apps', apiVersion: 'v1', resource: 'deployments' };

const cases: { desc: string; info: RequestInfo | RequestInfoError; header?: string; table: RouteTable; want: unknown }[] = [
  { desc: 'RequestInfo error → local', info: new RequestInfoError('MVP_ERR_REQUESTINFO_WATCH_PATH', 'x'), table, want: { kind: 'local', reason: 'requestInfoError' } },
  { desc: 'non-resource (/apis) → local', info: ri({ isResourceRequest: false, path: '/apis' }), table, want: { kind: 'local', reason: 'nonResource' } },
  { desc: 'non-resource wins over the peer-proxied header', info: ri({ isResourceRequest: false }), header: 'true', table, want: { kind: 'local', reason: 'nonResource' } },
  { desc: 'peer-proxied true, peer-only GVR → local (one hop)', info: ri(peerOnly), header: 'true', table, want: { kind: 'local', reason: 'peerProxied' } },
  { desc: 'peer-proxied "True" is not "true" (exact match)', info: ri(peerOnly), header: 'True', table, want: { kind: 'peer', peers: ['apiserver-b'] } },
  { desc: 'peer-proxied false → normal routing', info: ri(peerOnly), header: 'false', table, want: { kind: 'peer', peers: ['apiserver-b'] } },
  { desc: 'not synced, peer-only GVR → local', info: ri(peerOnly), table: notSynced, want: { kind: 'local', reason: 'notSynced' } },
  { desc: 'served by both → local', info: ri(both), table, want: { kind: 'local', reason: 'servedLocally' } },
  { desc: 'core pods served by both → local', info: ri({ apiPrefix: 'api', apiGroup: '', apiVersion: 'v1', resource: 'pods' }), table, want: { kind: 'local', reason: 'servedLocally' } },
  { desc: 'peer-only GVR → peer', info: ri(peerOnly), table, want: { kind: 'peer', peers: ['apiserver-b'] } },
  { desc: 'peer-only resource in a GV both serve (resource-level skew) → peer', info: ri({ apiGroup: 'storage.k8s.io', apiVersion: 'v1', resource: 'volumeattributesclasses' }), table, want: { kind: 'peer', peers: ['apiserver-b'] } },
  { desc: 'subresource is ignored: peer-only GVR with /status → peer', info: ri({ ...peerOnly, subresource: 'status', name: 'x' }), table, want: { kind: 'peer', peers: ['apiserver-b'] } },
  { desc: 'subresource skew invisible: csinodes/status served locally → local', info: ri({ apiGroup: 'storage.k8s.io', apiVersion: 'v1', resource: 'csinodes', subresource: 'status' }), table, want: { kind: 'local', reason: 'servedLocally' } },
  { desc: 'local-only GVR (v1.33 networking v1beta1) → local', info: ri({ apiGroup: 'networking.k8s.io', apiVersion: 'v1beta1', resource: 'ipaddresses' }), table, want: { kind: 'local', reason: 'servedLocally' } },
  { desc: 'unknown everywhere → notFound (local 404)', info: ri({ apiGroup: 'example.com', apiVersion: 'v1', resource: 'widgets' }), table, want: { kind: 'notFound' } },
  { desc: 'version skew has no fallback: unknown version → notFound', info: ri({ apiGroup: 'apps', apiVersion: 'v2', resource: 'deployments' }), table, want: { kind: 'notFound' } },
  { desc: 'peers serve it but none has an address → unavailable (503)', info: ri(peerOnly), table: tableUnresolved, want: { kind: 'unavailable' } },
  { desc: 'excluded GV (a CRD/APIService of this cluster) is never routed to a peer → notFound', info: ri(peerOnly), table: tableExcluded, want: { kind: 'notFound' } },
];

for (const c of cases) {
  test(`decide: ${c.desc}`, () => {
    assert.deepEqual({ ...decide(c.info, c.header, c.table) }, c.want);
  });
}

test('route table counts the fixture pair: 71 local + peer-only GVRs', () => {
  const t = RouteTable.build({ synced: true, local: { groups: v133 }, peers: new Map([['b', { address: '127.0.0.1:1', groups: v137 }]]) });
  let localCount = 0;
  let peerOnlyCount = 0;
  for (const g of v137.concat(v133)) for (const v of g.versions ?? []) for (const r of v.resources ?? []) {
    const e = t.lookup(g.metadata.name ?? '', v.version, r.resource)!;
    assert.ok(e, `${g.metadata.name}/${v.version}/${r.resource}`);
  }
  for (const g of v133) for (const v of g.versions ?? []) localCount += v.resources?.length ?? 0;
  assert.equal(localCount, 71);
  for (const g of v137) for (const v of g.versions ?? []) for (const r of v.resources ?? []) {
    if (!t.lookup(g.metadata.name ?? '', v.version, r.resource)!.servedLocally) peerOnlyCount++;
  }
  assert.ok(peerOnlyCount > 10, `peer-only GVRs: ${peerOnlyCount}`);
  assert.equal(t.size, 71 + peerOnlyCount);
});

test('a stale version is not routed (client-go drops stale GVs)', () => {
  const t = RouteTable.build({
    synced: true, local: { groups: [] },
    peers: new Map([['b', { address: '127.0.0.1:1', groups: [{ metadata: { name: 'x.io' }, versions: [{ version: 'v1', freshness: 'Stale', resources: [{ resource: 'foos', scope: 'Cluster', singularResource: 'foo', verbs: [] }] }] }] }]]),
  });
  assert.equal(t.lookup('x.io', 'v1', 'foos'), undefined);
});

test('peers are sorted by server ID and a GVR listed twice by a peer counts once', () => {
  const doc: APIGroupDiscovery[] = [{ metadata: { name: 'x.io' }, versions: [{ version: 'v1', resources: [{ resource: 'foos', scope: 'Cluster', singularResource: 'foo', verbs: [] }, { resource: 'foos', scope: 'Cluster', singularResource: 'foo', verbs: [] }] }] }];
  const t = RouteTable.build({ synced: true, local: { groups: [] }, peers: new Map([['z', { address: '127.0.0.1:2', groups: doc }], ['a', { address: '[::1]:3', groups: doc }]]) });
  assert.deepEqual(t.lookup('x.io', 'v1', 'foos')!.peers, ['a', 'z']);
});

test('distinctMembers: one server ID per distinct peer listener address (two IDs behind one listener are asked once after a local 404)', () => {
  const t = RouteTable.build({ synced: true, local: { groups: [] }, peers: new Map(), memberAddresses: new Map([['b', '10.0.0.2:6445'], ['b-old', '10.0.0.2:6445'], ['c', '10.0.0.3:6445']]) });
  assert.deepEqual(t.distinctMembers, ['b', 'c']);
});

test('one resource name in several group/versions: each is routed by its own group and version', () => {
  const widgets = (group: string, version: string): APIGroupDiscovery => ({
    metadata: { name: group },
    versions: [{ version, resources: [{ resource: 'widgets', scope: 'Namespaced', singularResource: 'widget', verbs: ['get'] }] }],
  });
  const t = RouteTable.build({
    synced: true,
    local: { groups: [widgets('a.example.com', 'v1')] },
    peers: new Map([['apiserver-b', { address: '127.0.0.1:9443', groups: [widgets('b.example.com', 'v1'), widgets('a.example.com', 'v2')] }]]),
  });
  const d = (apiGroup: string, apiVersion: string) => decide(ri({ apiGroup, apiVersion, resource: 'widgets' }), undefined, t);
  assert.deepEqual(d('a.example.com', 'v1'), { kind: 'local', reason: 'servedLocally' });
  assert.deepEqual(d('b.example.com', 'v1'), { kind: 'peer', peers: ['apiserver-b'] });
  assert.deepEqual(d('a.example.com', 'v2'), { kind: 'peer', peers: ['apiserver-b'] });
  assert.deepEqual(d('b.example.com', 'v2'), { kind: 'notFound' }, 'the group of one entry and the version of another are no GVR');
  assert.deepEqual(d('c.example.com', 'v1'), { kind: 'notFound' });
});
