// mergeResources: the cases of kubernetes/apiserver pkg/endpoints/discovery/aggregated/
// peer_aggregated_handler_test.go `TestMergeResources` (and the group-name expectations of
// `TestPeerAggregatedDiscovery` / `TestFetchFromCache`), read in kubernetes/kubernetes staging at
// 9d2a8fb7c431, rewritten by hand; docs/kubernetes-mvp.md §5.4/§5.4.1 corrections; the worked example on the
// fixture pair; and a property test over random subsets of the fixture GVRs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  gvrKeysOf,
  mergeResourceCapabilities,
  mergeResources,
  mergeResourcesAcrossVersion,
  mergeVersionsAcrossGroup,
} from '../../src/aggregation/merge';
import type {
  APIGroupDiscovery,
  APIResourceDiscovery,
  APIVersionDiscovery,
} from '../../src/aggregation/types';
import { aggregatedFixture } from '../support/fixtures';

const peers = (entries: Record<string, APIGroupDiscovery[]>) => new Map(Object.entries(entries));

function deepFreeze<T>(o: T): T {
  if (o !== null && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o as object)) deepFreeze(v);
  }
  return o;
}

const names = (gs: APIGroupDiscovery[]) => gs.map((g) => g.metadata.name);

// ---- TestMergeResources ---------------------------------------------------------------------

// Go's test data. Resources carry only a name (Go zero values elsewhere); the UID shows whose
// metadata won.
const r1: APIResourceDiscovery = { resource: 'r1', scope: '', singularResource: '', verbs: null };
const r2: APIResourceDiscovery = { resource: 'r2', scope: '', singularResource: '', verbs: null };
const v1r1: APIVersionDiscovery = { version: 'v1', resources: [r1] };
const v1r2: APIVersionDiscovery = { version: 'v1', resources: [r2] };
const v2r1: APIVersionDiscovery = { version: 'v2', resources: [r1] };
const serverA = 'serverA';
const serverB = 'serverB';

const g1v1r1: APIGroupDiscovery = { metadata: { name: 'g1', uid: 'g1-uid' }, versions: [v1r1] };
const g2v1r1: APIGroupDiscovery = { metadata: { name: 'g2', uid: 'g2-uid' }, versions: [v1r1] };
const g1v1r2: APIGroupDiscovery = { metadata: { name: 'g1', uid: 'g1-peer-uid' }, versions: [v1r2] };
const g1v2r1: APIGroupDiscovery = { metadata: { name: 'g1', uid: 'g1-peer-uid' }, versions: [v2r1] };
const g1v1r1r2Merged: APIGroupDiscovery = {
  metadata: { name: 'g1', uid: 'g1-uid' }, // from the first server in sorted ID order
  versions: [{ version: 'v1', resources: [r1, r2] }],
};
const g1v1r1v2r1Merged: APIGroupDiscovery = {
  metadata: { name: 'g1', uid: 'g1-uid' },
  versions: [
    { version: 'v1', resources: [r1] },
    { version: 'v2', resources: [r1] },
  ],
};

const rVerbs1: APIResourceDiscovery = { resource: 'pods', scope: '', singularResource: '', verbs: ['get', 'list'] };
const rVerbs2: APIResourceDiscovery = { resource: 'pods', scope: '', singularResource: '', verbs: ['get', 'watch'] };
const rVerbsMerged: APIResourceDiscovery = {
  resource: 'pods', scope: '', singularResource: '', verbs: ['get', 'list', 'watch'],
};
const gVerbs1: APIGroupDiscovery = { metadata: { name: 'g1', uid: 'g1-uid-a' }, versions: [{ version: 'v1', resources: [rVerbs1] }] };
const gVerbs2: APIGroupDiscovery = { metadata: { name: 'g1', uid: 'g1-uid-b' }, versions: [{ version: 'v1', resources: [rVerbs2] }] };
const gVerbsMerged: APIGroupDiscovery = {
  metadata: { name: 'g1', uid: 'g1-uid-a' },
  versions: [{ version: 'v1', resources: [rVerbsMerged] }],
};

const rSub1: APIResourceDiscovery = {
  resource: 'pods', scope: '', singularResource: '', verbs: null,
  subresources: [{ subresource: 'status', verbs: null }],
};
const rSub2: APIResourceDiscovery = {
  resource: 'pods', scope: '', singularResource: '', verbs: null,
  subresources: [{ subresource: 'log', verbs: null }],
};
const rSubMerged: APIResourceDiscovery = {
  resource: 'pods', scope: '', singularResource: '', verbs: null,
  subresources: [{ subresource: 'log', verbs: null }, { subresource: 'status', verbs: null }],
};
const gSub1: APIGroupDiscovery = { metadata: { name: 'g1', uid: 'g1-uid-a' }, versions: [{ version: 'v1', resources: [rSub1] }] };
const gSub2: APIGroupDiscovery = { metadata: { name: 'g1', uid: 'g1-uid-b' }, versions: [{ version: 'v1', resources: [rSub2] }] };
const gSubMerged: APIGroupDiscovery = {
  metadata: { name: 'g1', uid: 'g1-uid-a' },
  versions: [{ version: 'v1', resources: [rSubMerged] }],
};

deepFreeze([g1v1r1, g2v1r1, g1v1r2, g1v2r1, gVerbs1, gVerbs2, gSub1, gSub2]);

const goMergeCases: {
  name: string;
  localServerID: string;
  localGroups: APIGroupDiscovery[];
  peerGroupDiscovery: Record<string, APIGroupDiscovery[]>;
  wantResult: APIGroupDiscovery[];
  validateShortCircuit?: boolean;
}[] = [
  {
    name: 'no peers, just local resources',
    localServerID: serverA,
    localGroups: [g1v1r1, g2v1r1],
    peerGroupDiscovery: {},
    wantResult: [g1v1r1, g2v1r1],
    validateShortCircuit: true,
  },
  {
    name: 'peer adds no new g/v/r',
    localServerID: serverA,
    localGroups: [g1v1r1, g2v1r1],
    peerGroupDiscovery: { serverB: [g1v1r1, g2v1r1] },
    wantResult: [g1v1r1, g2v1r1],
    validateShortCircuit: true,
  },
  {
    name: 'peer adds a new resource to existing g/v',
    localServerID: serverA,
    localGroups: [g1v1r1],
    peerGroupDiscovery: { serverB: [g1v1r2] },
    wantResult: [g1v1r1r2Merged],
  },
  {
    name: 'peer adds a new version to existing group',
    localServerID: serverA,
    localGroups: [g1v1r1],
    peerGroupDiscovery: { serverB: [g1v2r1] },
    wantResult: [g1v1r1v2r1Merged],
  },
  {
    name: 'peer adds a completely new group',
    localServerID: serverA,
    localGroups: [g1v1r1],
    peerGroupDiscovery: { serverB: [g2v1r1] },
    wantResult: [g1v1r1, g2v1r1],
  },
  {
    name: 'peer has same data but different group order',
    localServerID: serverA,
    localGroups: [g1v1r1, g2v1r1],
    peerGroupDiscovery: { serverB: [g2v1r1, g1v1r1] },
    wantResult: [g1v1r1, g2v1r1], // both lists complete: the first server's (serverA) wins
  },
  {
    name: "deterministic merge (Server A's view)",
    localServerID: serverA,
    localGroups: [g1v1r1],
    peerGroupDiscovery: { serverB: [g2v1r1] },
    wantResult: [g1v1r1, g2v1r1],
  },
  {
    name: "deterministic merge (Server B's view)",
    localServerID: serverB,
    localGroups: [g2v1r1],
    peerGroupDiscovery: { serverA: [g1v1r1] },
    wantResult: [g1v1r1, g2v1r1],
  },
  {
    name: 'peer adds a new verb to existing resource (triggers Case 2)',
    localServerID: serverA,
    localGroups: [gVerbs1],
    peerGroupDiscovery: { serverB: [gVerbs2] },
    wantResult: [gVerbsMerged],
  },
  {
    name: 'peer adds a new subresource to existing resource (triggers Case 2)',
    localServerID: serverA,
    localGroups: [gSub1],
    peerGroupDiscovery: { serverB: [gSub2] },
    wantResult: [gSubMerged],
  },
  {
    name: 'empty local, non-empty peer (triggers Case 3)',
    localServerID: serverA,
    localGroups: [],
    peerGroupDiscovery: { serverB: [g1v1r1] },
    wantResult: [g1v1r1],
  },
];

for (const tc of goMergeCases) {
  test(`TestMergeResources: ${tc.name}`, () => {
    const got = mergeResources(tc.localServerID, tc.localGroups, peers(tc.peerGroupDiscovery));
    assert.deepEqual(got, tc.wantResult);
    if (tc.validateShortCircuit) assert.equal(got, tc.localGroups, 'short-circuit must return the local array itself');
  });
}

// ---- TestPeerAggregatedDiscovery / TestFetchFromCache group names ------------------------------

function newAPIGroup(group: string, version: string, resource: string): APIGroupDiscovery {
  return {
    metadata: { name: group },
    versions: [{ version, resources: [{ resource, scope: '', singularResource: '', verbs: null }] }],
  };
}

test('TestPeerAggregatedDiscovery: multiple peer resources (should return all)', () => {
  const got = mergeResources('test-server', [newAPIGroup('local.example.com', 'v1', 'local-resource')], peers({
    'peer-server-1': [newAPIGroup('peer.example.com', 'v2', 'peer-resource')],
    'peer-server-2': [newAPIGroup('peer2.example.com', 'v1', 'peer2-resource')],
  }));
  // Go asserts ElementsMatch; the order is the topological one: no constraints → byte order.
  assert.deepEqual(names(got), ['local.example.com', 'peer.example.com', 'peer2.example.com']);
});

test('TestFetchFromCache: no local resources, only peer', () => {
  const got = mergeResources('test-server', [], peers({ 'peer-server-1': [newAPIGroup('peer.example.com', 'v1', 'peer-resource')] }));
  assert.deepEqual(names(got), ['peer.example.com']);
});

test('TestPeerAggregatedDiscovery_ETagHandling: a peer adding a resource changes the result', () => {
  const local = [newAPIGroup('local.example.com', 'v1', 'local-resource')];
  const before = mergeResources('test-server', local, peers({ 'peer-server-1': [newAPIGroup('peer.example.com', 'v2', 'peer-resource')] }));
  const after = mergeResources('test-server', local, peers({
    'peer-server-1': [newAPIGroup('peer.example.com', 'v2', 'peer-resource')],
    'peer-server-3': [newAPIGroup('peer.example.com', 'v2', 'peer-resource2')],
  }));
  assert.notDeepEqual(after, before);
  assert.deepEqual(
    after[1]!.versions![0]!.resources!.map((r) => r.resource),
    ['peer-resource', 'peer-resource2'],
  );
});

// ---- docs/kubernetes-mvp.md §5.4 / §5.4.1 rules ----------------------------------------------

test('server IDs sort in byte order and the local ID takes part: a lower peer ID supplies metadata and freshness', () => {
  const local: APIGroupDiscovery[] = [{ metadata: { name: 'g', uid: 'local' }, versions: [{ version: 'v1', resources: [r1], freshness: 'Current' }] }];
  const peer: APIGroupDiscovery[] = [{ metadata: { name: 'g', uid: 'peer' }, versions: [{ version: 'v1', resources: [r1, r2], freshness: 'Stale' }] }];
  // "B-peer" < "a-local" in byte order (uppercase first): the peer is "a" in the merge.
  const got = mergeResources('a-local', local, peers({ 'B-peer': peer }));
  assert.equal(got[0]!.metadata.uid, 'peer');
  assert.equal(got[0]!.versions![0]!.freshness, 'Stale');
  const got2 = mergeResources('A-local', local, peers({ 'b-peer': peer }));
  assert.equal(got2[0]!.metadata.uid, 'local');
  assert.equal(got2[0]!.versions![0]!.freshness, 'Current', "b's Stale is lost when merged into a Current a");
});

test('unchanged merge returns the local document itself, freshness and metadata included (§5.4.1)', () => {
  const local: APIGroupDiscovery[] = [{ metadata: { name: 'g', uid: 'local' }, versions: [{ version: 'v1', resources: [r1], freshness: 'Stale' }] }];
  const peer: APIGroupDiscovery[] = [{ metadata: { name: 'g', uid: 'peer' }, versions: [{ version: 'v1', resources: [r1], freshness: 'Current' }] }];
  const got = mergeResources('z-local', local, peers({ 'a-peer': peer }));
  assert.equal(got, local);
});

test('a peer lacking a resource still counts as a change (full path, first server wins)', () => {
  const local: APIGroupDiscovery[] = [{ metadata: { name: 'g', uid: 'local' }, versions: [{ version: 'v1', resources: [r1, r2] }] }];
  const peer: APIGroupDiscovery[] = [{ metadata: { name: 'g', uid: 'peer' }, versions: [{ version: 'v1', resources: [r1] }] }];
  const got = mergeResources('z-local', local, peers({ 'a-peer': peer }));
  assert.notEqual(got, local);
  assert.equal(got[0]!.metadata.uid, 'peer');
  assert.deepEqual(got[0]!.versions![0]!.resources!.map((r) => r.resource), ['r1', 'r2']);
});

test('identical verbs in another order count as a change and come out sorted (§5.4.1)', () => {
  const a: APIResourceDiscovery = { resource: 'x', scope: 'Cluster', singularResource: 'x', verbs: ['list', 'get'] };
  const b: APIResourceDiscovery = { resource: 'x', scope: 'Cluster', singularResource: 'x', verbs: ['get', 'list'] };
  const [merged, changed] = mergeResourcesAcrossVersion({ version: 'v1', resources: [a] }, { version: 'v1', resources: [b] });
  assert.equal(changed, true);
  assert.deepEqual(merged.resources![0]!.verbs, ['get', 'list']);
});

test('nil verbs vs empty verbs are not DeepEqual (Go reflect.DeepEqual); the union is null', () => {
  const a: APIResourceDiscovery = { resource: 'x', scope: '', singularResource: '', verbs: null };
  const b: APIResourceDiscovery = { resource: 'x', scope: '', singularResource: '', verbs: [] };
  const [merged, changed] = mergeResourcesAcrossVersion({ version: 'v1', resources: [a] }, { version: 'v1', resources: [b] });
  assert.equal(changed, true);
  assert.equal(merged.resources![0]!.verbs, null);
  // absent and null are both Go nil: equal.
  const c = { resource: 'x', scope: '', singularResource: '' } as unknown as APIResourceDiscovery;
  assert.equal(mergeResourcesAcrossVersion({ version: 'v1', resources: [a] }, { version: 'v1', resources: [c] })[1], false);
});

test('mergeResourceCapabilities: b replaces a shared subresource whole; other fields from a', () => {
  const a: APIResourceDiscovery = {
    resource: 'pods', scope: 'Namespaced', singularResource: 'pod', verbs: ['get'], shortNames: ['po'],
    responseKind: { group: '', version: '', kind: 'Pod' },
    subresources: [{ subresource: 'status', verbs: ['get', 'patch'], responseKind: { group: '', version: '', kind: 'Pod' } }],
  };
  const b: APIResourceDiscovery = {
    resource: 'pods', scope: 'Cluster', singularResource: 'podb', verbs: ['list'], categories: ['all'],
    subresources: [{ subresource: 'status', verbs: ['update'] }, { subresource: 'eviction', verbs: ['create'] }],
  };
  deepFreeze([a, b]);
  const m = mergeResourceCapabilities(a, b);
  assert.deepEqual(m, {
    resource: 'pods', scope: 'Namespaced', singularResource: 'pod', verbs: ['get', 'list'], shortNames: ['po'],
    responseKind: { group: '', version: '', kind: 'Pod' },
    subresources: [{ subresource: 'eviction', verbs: ['create'] }, { subresource: 'status', verbs: ['update'] }],
  });
  // Empty unions: verbs null, subresources absent.
  const e = mergeResourceCapabilities({ resource: 'x', scope: '', singularResource: '', verbs: null, subresources: [] }, { resource: 'x', scope: '', singularResource: '', verbs: [] });
  assert.equal(e.verbs, null);
  assert.equal('subresources' in e, false);
  // a without a resource name: b's fields.
  const f = mergeResourceCapabilities({ resource: '', scope: 'A', singularResource: '', verbs: null }, { resource: '', scope: 'B', singularResource: '', verbs: null });
  assert.equal(f.scope, 'B');
});

test('three servers: the first by ID wins fields, the last differing server wins subresources (§5.4.1)', () => {
  const mk = (uid: string, scope: string, subVerbs: string[]): APIGroupDiscovery[] => [{
    metadata: { name: 'g', uid },
    versions: [{ version: 'v1', resources: [{ resource: 'x', scope, singularResource: 'x', verbs: ['get'], subresources: [{ subresource: 's', verbs: subVerbs }] }] }],
  }];
  const got = mergeResources('s2', mk('2', 'B', ['b']), peers({ s1: mk('1', 'A', ['a']), s3: mk('3', 'C', ['c']) }));
  const x = got[0]!.versions![0]!.resources![0]!;
  assert.equal(got[0]!.metadata.uid, '1');
  assert.equal(x.scope, 'A');
  assert.deepEqual(x.subresources, [{ subresource: 's', verbs: ['c'] }]);
});

test("peers' core group and repeated group names are dropped; the local list is taken as is", () => {
  const core: APIGroupDiscovery = { metadata: { name: '' }, versions: [{ version: 'v1', resources: [{ resource: 'pods', scope: 'Namespaced', singularResource: 'pod', verbs: ['get'] }] }] };
  const dupe: APIGroupDiscovery = { metadata: { name: 'g1', uid: 'dupe' }, versions: [v2r1] };
  const got = mergeResources('a', [g1v1r1], peers({ b: [core, g1v1r1, dupe] }));
  assert.equal(got.length, 1);
  assert.equal(got[0]!.metadata.name, 'g1');
  assert.deepEqual(got[0]!.versions!.map((v) => v.version), ['v1'], "the duplicate's v2 is not merged");
  // Only core and a duplicate from the peer: nothing changes, local returned as is.
  const local = [g1v1r1];
  assert.equal(mergeResources('a', local, peers({ b: [core, g1v1r1, dupe] })), local);
});

test('a peer entry under the local ID is ignored (one server → local as is)', () => {
  const local = [g1v1r1];
  assert.equal(mergeResources('a', local, peers({ a: [g2v1r1] })), local);
});

test('version order comes from topology, not priority (§5.4)', () => {
  const a: APIGroupDiscovery = { metadata: { name: 'g' }, versions: [{ version: 'v2', resources: [r1] }] };
  const b: APIGroupDiscovery = { metadata: { name: 'g' }, versions: [{ version: 'v1beta1', resources: [r1] }] };
  const [m, changed] = mergeVersionsAcrossGroup(a, b);
  assert.equal(changed, true);
  assert.deepEqual(m.versions!.map((v) => v.version), ['v1beta1', 'v2']);
  assert.deepEqual(mergeVersionsAcrossGroup(a, a), [a, false]);
});

// ---- The fixture pair (docs/kubernetes-mvp.md §5.4 worked example, §5.4.1 last item) ---------

const v133 = deepFreeze(aggregatedFixture('v1.33').items);
const v137 = deepFreeze(aggregatedFixture('v1.37').items);

const pairings: [string, APIGroupDiscovery[], string, APIGroupDiscovery[]][] = [
  ['server-a', v133, 'server-b', v137],
  ['server-b', v133, 'server-a', v137],
  ['server-a', v137, 'server-b', v133],
  ['server-b', v137, 'server-a', v133],
];

function groupOf(gs: APIGroupDiscovery[], name: string): APIGroupDiscovery {
  const g = gs.find((x) => x.metadata.name === name);
  assert.ok(g, `group ${name}`);
  return g;
}
function versionOf(gs: APIGroupDiscovery[], group: string, version: string): APIVersionDiscovery {
  const v = groupOf(gs, group).versions!.find((x) => x.version === version);
  assert.ok(v, `${group}/${version}`);
  return v;
}
function resourceOf(gs: APIGroupDiscovery[], group: string, version: string, resource: string): APIResourceDiscovery {
  const r = versionOf(gs, group, version).resources!.find((x) => x.resource === resource);
  assert.ok(r, `${group}/${version}/${resource}`);
  return r;
}

test('fixture pair: same output whichever is local and whichever server ID sorts first', () => {
  const results = pairings.map(([lid, local, pid, peer]) => mergeResources(lid, local, peers({ [pid]: peer })));
  for (const r of results.slice(1)) assert.deepEqual(r, results[0]);
  const merged = results[0]!;

  // Groups in v1.37's order (the only complete list), lifecycle.k8s.io last.
  assert.deepEqual(names(merged), names(v137));
  assert.equal(merged.at(-1)!.metadata.name, 'lifecycle.k8s.io');

  assert.deepEqual(groupOf(merged, 'storagemigration.k8s.io').versions!.map((v) => v.version), ['v1', 'v1alpha1', 'v1beta1']);
  assert.deepEqual(groupOf(merged, 'resource.k8s.io').versions!.map((v) => v.version), ['v1', 'v1beta2', 'v1beta1', 'v1alpha3']);

  // resource.k8s.io/v1alpha3 is the union of both servers' resources.
  const alpha3 = versionOf(merged, 'resource.k8s.io', 'v1alpha3').resources!.map((r) => r.resource);
  const want = new Set([
    ...versionOf(v133, 'resource.k8s.io', 'v1alpha3').resources!.map((r) => r.resource),
    ...versionOf(v137, 'resource.k8s.io', 'v1alpha3').resources!.map((r) => r.resource),
  ]);
  assert.deepEqual(new Set(alpha3), want);
  assert.equal(alpha3.length, want.size);

  // Every GVR of either input, exactly once.
  assert.deepEqual(gvrKeysOf(merged), new Set([...gvrKeysOf(v133), ...gvrKeysOf(v137)]));
});

test('fixture pair: the only unions are the status subresources of csinodes and devicetaintrules', () => {
  for (const [lid, local, pid, peer] of pairings) {
    const merged = mergeResources(lid, local, peers({ [pid]: peer }));
    // Resources that are new objects went through mergeResourceCapabilities.
    const inputs = new Set<APIResourceDiscovery>();
    for (const gs of [v133, v137]) for (const g of gs) for (const v of g.versions ?? []) for (const r of v.resources ?? []) inputs.add(r);
    const unions: string[] = [];
    for (const g of merged) for (const v of g.versions ?? []) for (const r of v.resources ?? []) {
      if (!inputs.has(r)) unions.push(`${g.metadata.name}/${v.version}/${r.resource}`);
    }
    assert.deepEqual(unions.sort(), ['resource.k8s.io/v1alpha3/devicetaintrules', 'storage.k8s.io/v1/csinodes']);
    for (const [g, v, r] of [['storage.k8s.io', 'v1', 'csinodes'], ['resource.k8s.io', 'v1alpha3', 'devicetaintrules']] as const) {
      const res = resourceOf(merged, g, v, r);
      const newer = resourceOf(v137, g, v, r);
      assert.deepEqual(res.subresources, newer.subresources, `${g}/${v}/${r} has the v1.37 status subresource`);
      assert.ok(res.subresources!.some((s) => s.subresource === 'status'));
      assert.deepEqual(res.verbs, [...new Set([...(newer.verbs ?? []), ...(resourceOf(v133, g, v, r).verbs ?? [])])].sort());
    }
  }
});

test('fixture: one server → the local list returned as is; identical peers → local unchanged (same reference)', () => {
  assert.equal(mergeResources('a', v137, new Map()), v137);
  const copy = (): APIGroupDiscovery[] => aggregatedFixture('v1.37').items;
  assert.equal(mergeResources('m', v137, peers({ a: copy(), z: copy() })), v137);
  assert.equal(mergeResources('m', v133, peers({ a: aggregatedFixture('v1.33').items })), v133);
});

// ---- property: every GVR of every input exactly once ----------------------------------------

type Gvr = { g: string; v: string; r: APIResourceDiscovery };
const fixtureGvrs: Gvr[] = [];
{
  const seen = new Set<string>();
  for (const gs of [v137, v133]) for (const g of gs) for (const v of g.versions ?? []) for (const r of v.resources ?? []) {
    const k = `${g.metadata.name}/${v.version}/${r.resource}`;
    if (!seen.has(k)) {
      seen.add(k);
      fixtureGvrs.push({ g: g.metadata.name!, v: v.version, r });
    }
  }
}

/** A document from a subset of GVRs, with groups, versions and resources in the given orders. */
function buildDocument(subset: Gvr[], groupOrder: number[], freshnessStale: boolean): APIGroupDiscovery[] {
  const byGroup = new Map<string, Map<string, APIResourceDiscovery[]>>();
  for (const { g, v, r } of subset) {
    let vs = byGroup.get(g);
    if (!vs) byGroup.set(g, (vs = new Map()));
    let rs = vs.get(v);
    if (!rs) vs.set(v, (rs = []));
    rs.push(r);
  }
  const groups = Array.from(byGroup, ([name, vs]): APIGroupDiscovery => ({
    metadata: { name },
    versions: Array.from(vs, ([version, resources]) => ({ version, resources, freshness: freshnessStale ? 'Stale' : 'Current' })),
  }));
  // Permute the groups with the random keys.
  return groups
    .map((g, i) => [g, groupOrder[i % groupOrder.length]! + i / 1000] as const)
    .sort((x, y) => x[1] - y[1])
    .map(([g]) => g);
}

const arbDocument = fc
  .tuple(
    fc.shuffledSubarray(fixtureGvrs, { minLength: 0, maxLength: 40 }),
    fc.array(fc.nat(100), { minLength: 1, maxLength: 30 }),
    fc.boolean(),
  )
  .map(([subset, order, stale]) => buildDocument(subset, order, stale));

test('property: the merge of 1–4 documents lists every GVR of every input exactly once', () => {
  fc.assert(
    fc.property(
      fc.array(arbDocument, { minLength: 1, maxLength: 4 }),
      fc.array(fc.string({ minLength: 1, maxLength: 3 }), { minLength: 4, maxLength: 4 }),
      (docs, ids) => {
        const uniqueIds = ids.map((id, i) => `${id}-${i}`);
        const [local, ...rest] = docs;
        deepFreeze(docs);
        const merged = mergeResources(uniqueIds[0]!, local!, new Map(rest.map((d, i) => [uniqueIds[i + 1]!, d])));
        const want = new Set<string>();
        for (const d of docs) for (const k of gvrKeysOf(d)) want.add(k);
        const got: string[] = [];
        const groupNames: string[] = [];
        for (const g of merged) {
          groupNames.push(g.metadata.name!);
          const versions = (g.versions ?? []).map((v) => v.version);
          assert.equal(new Set(versions).size, versions.length, 'each version once');
          for (const v of g.versions ?? []) for (const r of v.resources ?? []) got.push(`${g.metadata.name}/${v.version}/${r.resource}`);
        }
        assert.equal(new Set(groupNames).size, groupNames.length, 'each group once');
        assert.equal(got.length, want.size, 'each GVR once');
        assert.deepEqual(new Set(got), want);
        // Deterministic whatever the map order of the peers.
        const reversed = mergeResources(uniqueIds[0]!, local!, new Map(rest.map((d, i) => [uniqueIds[i + 1]!, d] as const).reverse()));
        assert.deepEqual(reversed, merged);
      },
    ),
    { numRuns: 150 },
  );
});
