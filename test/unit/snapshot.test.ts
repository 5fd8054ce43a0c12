// buildDiscoverySnapshot: merged and local documents, both encodings, ETags, peer exclusion
// (spec §4.5) and the legacy documents derived from the merged data.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildDiscoverySnapshot, filterExcludedGroupVersions, packSnapshot, unpackSnapshot } from '../../src/discovery/snapshot';
import { mergeResources } from '../../src/discovery/merge';
import { encodeJSON } from '../../src/discovery/codec/json';
import { decodeDiscovery } from '../../src/discovery/codec/protobuf';
import type { APIGroupDiscovery, APIGroupDiscoveryList } from '../../src/discovery/types';
import { aggregatedFixture } from '../support/fixtures';

const v133 = aggregatedFixture('v1.33');
const v137 = aggregatedFixture('v1.37');

const list = (items: APIGroupDiscovery[]): APIGroupDiscoveryList => ({
  kind: 'APIGroupDiscoveryList',
  apiVersion: 'apidiscovery.k8s.io/v2',
  metadata: {},
  items,
});

function pair(localIs: 'v1.33' | 'v1.37', excludedGroupVersions: string[] = []) {
  const [local, peer] = localIs === 'v1.37' ? [v137, v133] : [v133, v137];
  return buildDiscoverySnapshot({ localID: 'apiserver-a', localApis: local, peers: [{ id: 'apiserver-b', apis: peer }], excludedGroupVersions });
}

const names = (l: APIGroupDiscoveryList) => l.items.map((g) => g.metadata.name);
const parse = (b: Buffer) => JSON.parse(b.toString('utf8'));
const versionsOf = (l: APIGroupDiscoveryList, g: string) => l.items.find((x) => x.metadata.name === g)?.versions?.map((v) => v.version);

test('merged JSON of the fixture pair is mergeResources() encoded, both ways round', () => {
  for (const localIs of ['v1.37', 'v1.33'] as const) {
    const [local, peer] = localIs === 'v1.37' ? [v137, v133] : [v133, v137];
    const s = pair(localIs);
    const expected = encodeJSON(list(mergeResources('apiserver-a', local.items, new Map([['apiserver-b', peer.items]]))));
    assert.ok(s.merged.json.equals(expected), `local ${localIs}`);
    const doc = parse(s.merged.json) as APIGroupDiscoveryList;
    assert.equal(doc.kind, 'APIGroupDiscoveryList');
    assert.equal(doc.apiVersion, 'apidiscovery.k8s.io/v2');
    // spec §5.4.1: v1.37's group order, lifecycle.k8s.io last; storagemigration [v1, v1alpha1, v1beta1].
    assert.deepEqual(names(doc), names(v137));
    assert.deepEqual(versionsOf(doc, 'storagemigration.k8s.io'), ['v1', 'v1alpha1', 'v1beta1']);
    assert.deepEqual(versionsOf(doc, 'resource.k8s.io'), ['v1', 'v1beta2', 'v1beta1', 'v1alpha3']);
  }
});

test('the nopeer (local) document carries exactly the local content', () => {
  const s = pair('v1.33');
  assert.ok(s.local.json.equals(encodeJSON(v133)));
  assert.deepEqual(parse(s.local.json), parse(encodeJSON(v133)));
  assert.notEqual(s.local.etag, s.merged.etag);
  assert.equal(s.counts.localResources, 71);
  assert.equal(s.counts.servers, 2);
});

test('protobuf bodies decode to the same content as the JSON bodies', () => {
  const s = pair('v1.37');
  for (const doc of [s.merged, s.local]) {
    const d = decodeDiscovery(doc.protobuf);
    assert.equal(d.apiVersion, 'apidiscovery.k8s.io/v2');
    assert.equal(d.kind, 'APIGroupDiscoveryList');
    assert.ok(encodeJSON(d.object as APIGroupDiscoveryList).equals(doc.json));
  }
});

test('ETag: quoted uppercase SHA-512 of the list without TypeMeta; equal content → equal ETag', () => {
  const s = pair('v1.37');
  assert.match(s.merged.etag, /^"[0-9A-F]{128}"$/);
  const { createHash } = require('node:crypto') as typeof import('node:crypto');
  const goJSON = encodeJSON({ ...list(JSON.parse(s.merged.json.toString()).items), kind: '', apiVersion: '' });
  assert.ok(goJSON.toString().startsWith('{"metadata":{},"items":['));
  assert.equal(s.merged.etag, `"${createHash('sha512').update(goJSON).digest('hex').toUpperCase()}"`);
  // One server, or peers adding nothing: the merged document is the local one (same buffers).
  const alone = buildDiscoverySnapshot({ localID: 'a', localApis: v137, peers: [], excludedGroupVersions: [] });
  assert.equal(alone.merged, alone.local);
  const same = buildDiscoverySnapshot({ localID: 'a', localApis: v137, peers: [{ id: 'b', apis: v137 }], excludedGroupVersions: [] });
  assert.equal(same.merged.etag, same.local.etag);
  assert.equal(same.merged.etag, alone.merged.etag);
  // Key order of the input objects does not matter.
  const reverseKeys = (o: unknown): unknown =>
    Array.isArray(o) ? o.map(reverseKeys) : o !== null && typeof o === 'object'
      ? Object.fromEntries(Object.entries(o).reverse().map(([k, v]) => [k, reverseKeys(v)]))
      : o;
  const shuffled = reverseKeys(v137) as APIGroupDiscoveryList;
  assert.notDeepEqual(Object.keys(shuffled), Object.keys(v137));
  assert.equal(buildDiscoverySnapshot({ localID: 'a', localApis: shuffled, peers: [], excludedGroupVersions: [] }).local.etag, alone.local.etag);
});

test('excluded group/versions are dropped from peer data only', () => {
  // v1.33 only: storagemigration v1alpha1; resource.k8s.io v1alpha3 has deviceclasses etc. only in v1.33.
  const s = pair('v1.37', ['storagemigration.k8s.io/v1alpha1', 'resource.k8s.io/v1alpha3', 'apps/v1']);
  const doc = parse(s.merged.json) as APIGroupDiscoveryList;
  assert.deepEqual(versionsOf(doc, 'storagemigration.k8s.io'), ['v1', 'v1beta1']);
  const v1alpha3 = doc.items.find((g) => g.metadata.name === 'resource.k8s.io')!.versions!.find((v) => v.version === 'v1alpha3')!;
  const localV1alpha3 = v137.items.find((g) => g.metadata.name === 'resource.k8s.io')!.versions!.find((v) => v.version === 'v1alpha3')!;
  assert.deepEqual(v1alpha3.resources!.map((r) => r.resource), localV1alpha3.resources!.map((r) => r.resource));
  // apps/v1 is excluded from the peer but still served from the local view.
  assert.deepEqual(versionsOf(doc, 'apps'), ['v1']);
  assert.ok(s.counts.excludedPeerResources > 0);
  // Local exclusion never applies: the nopeer document is untouched.
  assert.ok(s.local.json.equals(encodeJSON(v137)));
});

test('exclusion drops a peer group left with no versions, keeps group metadata otherwise', () => {
  const peer: APIGroupDiscovery[] = [
    { metadata: { name: 'x.example', labels: { a: 'b' } }, versions: [
      { version: 'v2', resources: [{ resource: 'foos', scope: 'Cluster', singularResource: 'foo', verbs: ['get'] }], freshness: 'Current' },
      { version: 'v1', resources: [{ resource: 'foos', scope: 'Cluster', singularResource: 'foo', verbs: ['get'] }], freshness: 'Current' },
    ] },
    { metadata: { name: 'y.example' }, versions: [
      { version: 'v1', resources: [{ resource: 'bars', scope: 'Namespaced', singularResource: 'bar', verbs: ['list'] }], freshness: 'Current' },
    ] },
  ];
  const [filtered, dropped] = filterExcludedGroupVersions(peer, new Set(['x.example/v1', 'y.example/v1']));
  assert.equal(dropped, 2);
  assert.deepEqual(filtered.map((g) => g.metadata.name), ['x.example']);
  assert.deepEqual(filtered[0]!.metadata, { name: 'x.example', labels: { a: 'b' } });
  assert.deepEqual(filtered[0]!.versions!.map((v) => v.version), ['v2']);
  // Nothing excluded that the peer serves: the same array comes back.
  const [same, none] = filterExcludedGroupVersions(peer, new Set(['z.example/v1']));
  assert.equal(same, peer);
  assert.equal(none, 0);

  const s = buildDiscoverySnapshot({ localID: 'b', localApis: list([]), peers: [{ id: 'a', apis: list(peer) }], excludedGroupVersions: ['y.example/v1'] });
  assert.deepEqual(names(parse(s.merged.json)), ['x.example']);
});

test('the core group and a peer under the local ID never reach the merged document', () => {
  const core: APIGroupDiscovery = { metadata: {}, versions: [{ version: 'v1', resources: [{ resource: 'pods', scope: 'Namespaced', singularResource: 'pod', verbs: ['get'] }] }] };
  const s = buildDiscoverySnapshot({
    localID: 'a',
    localApis: v133,
    peers: [{ id: 'b', apis: list([core, ...v133.items]) }, { id: 'a', apis: v137 }],
    excludedGroupVersions: [],
  });
  assert.equal(s.merged, s.local);
  assert.equal(s.counts.servers, 2);
});

test('legacy APIGroupList lists the union of groups, preferred = first merged version', () => {
  const s = pair('v1.33');
  const gl = parse(s.legacy.apis);
  assert.equal(gl.kind, 'APIGroupList');
  assert.equal(gl.apiVersion, 'v1');
  const merged = parse(s.merged.json) as APIGroupDiscoveryList;
  assert.deepEqual(gl.groups.map((g: { name: string }) => g.name), names(merged));
  assert.ok(gl.groups.some((g: { name: string }) => g.name === 'lifecycle.k8s.io'));
  const sm = gl.groups.find((g: { name: string }) => g.name === 'storagemigration.k8s.io');
  assert.deepEqual(sm, {
    name: 'storagemigration.k8s.io',
    versions: [
      { groupVersion: 'storagemigration.k8s.io/v1', version: 'v1' },
      { groupVersion: 'storagemigration.k8s.io/v1alpha1', version: 'v1alpha1' },
      { groupVersion: 'storagemigration.k8s.io/v1beta1', version: 'v1beta1' },
    ],
    preferredVersion: { groupVersion: 'storagemigration.k8s.io/v1', version: 'v1' },
  });
  // Go field order, compact.
  assert.ok(s.legacy.apis.toString().startsWith('{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apiregistration.k8s.io","versions":[{"groupVersion":"apiregistration.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apiregistration.k8s.io/v1","version":"v1"}}'));
});

test('peer-only group/versions get APIResourceList and APIGroup documents', () => {
  const s = pair('v1.33'); // local v1.33, peer v1.37
  const keys = [...s.legacy.resourceLists.keys()].sort();
  assert.ok(keys.includes('lifecycle.k8s.io/v1alpha1'));
  assert.ok(keys.includes('resource.k8s.io/v1'));
  assert.ok(keys.includes('storagemigration.k8s.io/v1'));
  assert.ok(!keys.includes('apps/v1'), 'served locally: left to the apiserver');
  assert.equal(s.counts.peerOnlyGroupVersions, keys.length);

  const rl = parse(s.legacy.resourceLists.get('resource.k8s.io/v1')!);
  assert.equal(rl.kind, 'APIResourceList');
  assert.equal(rl.apiVersion, 'v1');
  assert.equal(rl.groupVersion, 'resource.k8s.io/v1');
  const claims = rl.resources.find((r: { name: string }) => r.name === 'resourceclaims');
  assert.deepEqual(claims, { name: 'resourceclaims', singularName: 'resourceclaim', namespaced: true, kind: 'ResourceClaim', verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] });
  const i = rl.resources.indexOf(claims);
  assert.deepEqual(rl.resources[i + 1], { name: 'resourceclaims/status', singularName: '', namespaced: true, kind: 'ResourceClaim', verbs: ['get', 'patch', 'update'] });
  const slices = rl.resources.find((r: { name: string }) => r.name === 'resourceslices');
  assert.equal(slices.namespaced, false);
  // Go field order of APIResource.
  assert.deepEqual(Object.keys(claims), ['name', 'singularName', 'namespaced', 'kind', 'verbs']);

  // APIGroup for a wholly peer-only group and for a group with some peer-only versions.
  const life = parse(s.legacy.groups.get('lifecycle.k8s.io')!);
  assert.deepEqual(life, {
    kind: 'APIGroup',
    apiVersion: 'v1',
    name: 'lifecycle.k8s.io',
    versions: [{ groupVersion: 'lifecycle.k8s.io/v1alpha1', version: 'v1alpha1' }],
    preferredVersion: { groupVersion: 'lifecycle.k8s.io/v1alpha1', version: 'v1alpha1' },
  });
  assert.equal(parse(s.legacy.groups.get('resource.k8s.io')!).preferredVersion.version, 'v1');
  assert.equal(s.legacy.groups.get('apps'), undefined);
});

test('pack/unpack round-trips every body without copying on the receiving side', () => {
  const s = pair('v1.33');
  const p = packSnapshot(s);
  const u = unpackSnapshot(p);
  assert.ok(u.merged.json.equals(s.merged.json));
  assert.ok(u.merged.protobuf.equals(s.merged.protobuf));
  assert.ok(u.local.json.equals(s.local.json));
  assert.ok(u.local.protobuf.equals(s.local.protobuf));
  assert.ok(u.legacy.apis.equals(s.legacy.apis));
  assert.equal(u.merged.etag, s.merged.etag);
  assert.deepEqual([...u.legacy.resourceLists.keys()], [...s.legacy.resourceLists.keys()]);
  for (const [k, b] of s.legacy.resourceLists) assert.ok(u.legacy.resourceLists.get(k)!.equals(b));
  assert.equal(u.merged.json.buffer, p.buffer);
  assert.deepEqual(u.counts, s.counts);
  const alone = buildDiscoverySnapshot({ localID: 'a', localApis: v137, peers: [], excludedGroupVersions: [] });
  const ua = unpackSnapshot(packSnapshot(alone));
  assert.equal(ua.merged, ua.local);
});
