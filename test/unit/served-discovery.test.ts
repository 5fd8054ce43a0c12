// buildServedDiscovery: merged and local documents, both encodings, ETags, peer exclusion
// (docs/kubernetes-mvp.md §4.5) and the legacy documents derived from the merged data.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import {
  buildServedDiscovery,
  filterExcludedGroupVersions,
  packServedDiscovery,
  unpackServedDiscovery,
  EncodingMemo,
  type ServedDiscovery,
  type EncodedDiscovery,
  type LegacyDiscovery,
  type PackedServedDiscovery,
} from '../../src/aggregation/served-discovery';
import { mergeResources } from '../../src/aggregation/merge';
import { encodeJSON, encodeJSONReference } from '../../src/aggregation/codec/json';
import { decodeDiscovery, encodeAPIGroupDiscoveryList } from '../../src/aggregation/codec/protobuf';
import { buildLegacyDiscovery } from '../../src/aggregation/legacy';
import { MergeCaches, parseDiscoveryBytes, runMergeTask } from '../../src/aggregation/merge.worker';
import type { APIGroupDiscovery, APIGroupDiscoveryList } from '../../src/aggregation/types';
import { aggregatedFixture, readFixture } from '../support/fixtures';
import { discoveryGroup, discoveryList } from '../support/discovery-arbitrary';
import { everyResourceChanged, oneResourceChanged, syntheticServer } from '../../native-bench/synthetic';

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
  return buildServedDiscovery({ localID: 'apiserver-a', localApis: local, peers: [{ id: 'apiserver-b', apis: peer }], excludedGroupVersions });
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
    // docs/kubernetes-mvp.md §5.4.1: v1.37's group order, lifecycle.k8s.io last; storagemigration [v1, v1alpha1, v1beta1].
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
  const alone = buildServedDiscovery({ localID: 'a', localApis: v137, peers: [], excludedGroupVersions: [] });
  assert.equal(alone.merged, alone.local);
  const same = buildServedDiscovery({ localID: 'a', localApis: v137, peers: [{ id: 'b', apis: v137 }], excludedGroupVersions: [] });
  assert.equal(same.merged.etag, same.local.etag);
  assert.equal(same.merged.etag, alone.merged.etag);
  // Key order of the input objects does not matter.
  const reverseKeys = (o: unknown): unknown =>
    Array.isArray(o) ? o.map(reverseKeys) : o !== null && typeof o === 'object'
      ? Object.fromEntries(Object.entries(o).reverse().map(([k, v]) => [k, reverseKeys(v)]))
      : o;
  const shuffled = reverseKeys(v137) as APIGroupDiscoveryList;
  assert.notDeepEqual(Object.keys(shuffled), Object.keys(v137));
  assert.equal(buildServedDiscovery({ localID: 'a', localApis: shuffled, peers: [], excludedGroupVersions: [] }).local.etag, alone.local.etag);
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

  const s = buildServedDiscovery({ localID: 'b', localApis: list([]), peers: [{ id: 'a', apis: list(peer) }], excludedGroupVersions: ['y.example/v1'] });
  assert.deepEqual(names(parse(s.merged.json)), ['x.example']);
});

test('the core group and a peer under the local ID never reach the merged document', () => {
  const core: APIGroupDiscovery = { metadata: {}, versions: [{ version: 'v1', resources: [{ resource: 'pods', scope: 'Namespaced', singularResource: 'pod', verbs: ['get'] }] }] };
  const s = buildServedDiscovery({
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

test('every group a peer contributes to gets APIGroup and APIResourceList documents for all its versions (the union); a group the merge left as local is left to the apiserver', () => {
  const s = pair('v1.33'); // local v1.33, peer v1.37
  const keys = [...s.legacy.resourceLists.keys()].sort();
  assert.ok(keys.includes('lifecycle.k8s.io/v1alpha1'));
  assert.ok(keys.includes('resource.k8s.io/v1'));
  assert.ok(keys.includes('storagemigration.k8s.io/v1'));
  // Shared groups the local apiserver serves an older subset of: all their versions, union and all.
  assert.ok(keys.includes('storagemigration.k8s.io/v1alpha1'), 'a version both serve, in a group whose preferred version changed');
  assert.ok(keys.includes('resource.k8s.io/v1alpha3'), 'a version whose resources are a union');
  assert.ok(keys.includes('storage.k8s.io/v1'), 'csinodes/status only the peer lists');
  assert.equal(parse(s.legacy.groups.get('storagemigration.k8s.io')!).preferredVersion.version, 'v1', "the merged document's preferred version");
  assert.ok(!keys.includes('apps/v1'), 'served the same by both: left to the apiserver');
  assert.ok(s.counts.peerOnlyGroupVersions > 0 && s.counts.peerOnlyGroupVersions < keys.length);

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
  const p = packServedDiscovery(s);
  const u = unpackServedDiscovery(p);
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
  const alone = buildServedDiscovery({ localID: 'a', localApis: v137, peers: [], excludedGroupVersions: [] });
  const ua = unpackServedDiscovery(packServedDiscovery(alone));
  assert.equal(ua.merged, ua.local);
});

test('pack options: held documents left out, local apart, the merged buffer moved; unpack restores every body', () => {
  const s = pair('v1.33');
  const ids = new Map([[s.local, 'L'], [s.merged, 'M']]);
  const idOf = (e: EncodedDiscovery) => ids.get(e)!;
  const whole = (p: PackedServedDiscovery, held?: Map<string, EncodedDiscovery>) => bodiesOf(unpackServedDiscovery(p, undefined, held));
  // Nothing held: everything travels; local apart; merged in its own buffer, not copied.
  const p1 = packServedDiscovery(s, { idOf, separateLocal: true, moveMerged: true });
  assert.equal(p1.mergedBuffer, s.merged.json.buffer);
  assert.ok(p1.localBuffer !== undefined && p1.localBuffer.byteLength === s.local.json.length + s.local.protobuf.length);
  assertSameBodies(whole(p1), bodiesOf(s), 'all sent');
  // The receiver holds the local document: left out, and restored from what it holds.
  const p2 = packServedDiscovery(s, { idOf, omit: new Set(['L']), separateLocal: true });
  assert.equal(p2.meta.localJSON, null);
  assert.equal(p2.localBuffer, undefined);
  assert.equal(p2.buffer.byteLength, s.merged.json.length + s.merged.protobuf.length + legacyEntries(s.legacy).reduce((n, [, b]) => n + b.length, 0));
  const u2 = unpackServedDiscovery(p2, undefined, new Map([['L', s.local]]));
  assert.equal(u2.local, s.local);
  assertSameBodies(bodiesOf(u2), bodiesOf(s), 'local held');
  assert.throws(() => unpackServedDiscovery(p2), /left out but not held/);
  // Merged = local and held: nothing but the legacy documents travels.
  const alone = buildServedDiscovery({ localID: 'a', localApis: v137, peers: [], excludedGroupVersions: [] });
  const p3 = packServedDiscovery(alone, { idOf: () => 'A', omit: new Set(['A']), separateLocal: true, moveMerged: true });
  assert.equal(p3.mergedBuffer, undefined);
  const u3 = unpackServedDiscovery(p3, undefined, new Map([['A', alone.local]]));
  assert.equal(u3.merged, alone.local);
  assert.equal(u3.local, alone.local);
});

// ---- the cached build path = the uncached one, byte for byte --------------------------------------
// runMergeTask with caches kept across builds (parsed documents and groups found again by bytes
// and text, memoised group encodings, pairwise merges and exclusion filters, the local encodings)
// against an independent rebuild of what the code did before any cache: whole-document
// JSON.parse, the exclusion filter as it was, mergeResources without memo, the field-by-field JSON
// walk, the protobuf Writer path, SHA-512 of the list without TypeMeta, the legacy documents.

function oldFilterExcludedGroupVersions(groups: readonly APIGroupDiscovery[], excluded: ReadonlySet<string>): [APIGroupDiscovery[], number] {
  if (excluded.size === 0) return [groups as APIGroupDiscovery[], 0];
  let dropped = 0;
  for (const g of groups) {
    const name = g.metadata?.name ?? '';
    for (const v of g.versions ?? []) if (excluded.has(`${name}/${v.version}`)) dropped += v.resources?.length ?? 0;
  }
  if (dropped === 0) return [groups as APIGroupDiscovery[], 0];
  const out: APIGroupDiscovery[] = [];
  for (const g of groups) {
    const name = g.metadata?.name ?? '';
    const versions = g.versions ?? [];
    const kept = versions.filter((v) => !excluded.has(`${name}/${v.version}`));
    if (kept.length === versions.length) out.push(g);
    else if (kept.length > 0) out.push({ ...g, versions: kept });
  }
  return [out, dropped];
}

interface Bodies {
  mergedJSON: Buffer;
  mergedProtobuf: Buffer;
  mergedEtag: string;
  localJSON: Buffer;
  localProtobuf: Buffer;
  localEtag: string;
  mergedIsLocal: boolean;
  legacy: [string, Buffer][];
  counts: unknown;
}

function referenceBuild(localID: string, local: Buffer, peerDocs: [string, Buffer][], excludedList: string[]): Bodies {
  const localItems = parseDiscoveryBytes(local, 'local').items;
  const excluded = new Set(excludedList);
  const peerMap = new Map<string, APIGroupDiscovery[]>();
  let excludedPeerResources = 0;
  for (const [id, bytes] of peerDocs) {
    if (id === localID || peerMap.has(id)) continue;
    const [groups, dropped] = oldFilterExcludedGroupVersions(parseDiscoveryBytes(bytes, id).items, excluded);
    excludedPeerResources += dropped;
    peerMap.set(id, groups);
  }
  const encode = (items: APIGroupDiscovery[]) => {
    const json = encodeJSONReference(list(items));
    const prefix = '{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2",';
    assert.ok(json.toString('utf8').startsWith(prefix));
    const etag = `"${createHash('sha512').update(Buffer.concat([Buffer.from('{'), json.subarray(prefix.length)])).digest('hex').toUpperCase()}"`;
    return { json, protobuf: encodeAPIGroupDiscoveryList(list(items), 'v2'), etag };
  };
  const mergedItems = mergeResources(localID, localItems, peerMap);
  const l = encode(localItems);
  const m = mergedItems === localItems ? l : encode(mergedItems);
  const legacy = buildLegacyDiscovery(mergedItems, localItems);
  const gvrs = (items: APIGroupDiscovery[]) => items.reduce((n, g) => n + (g.versions ?? []).reduce((k, v) => k + (v.resources?.length ?? 0), 0), 0);
  return {
    mergedJSON: m.json, mergedProtobuf: m.protobuf, mergedEtag: m.etag,
    localJSON: l.json, localProtobuf: l.protobuf, localEtag: l.etag,
    mergedIsLocal: mergedItems === localItems,
    legacy: legacyEntries(legacy),
    counts: {
      servers: 1 + peerMap.size, groups: mergedItems.length,
      groupVersions: mergedItems.reduce((n, g) => n + (g.versions ?? []).length, 0), resources: gvrs(mergedItems),
      localResources: gvrs(localItems), peerOnlyGroupVersions: mergedItems.reduce((n, g) => n + (g.versions ?? []).filter((v) => !localItems.some((lg) => (lg.metadata?.name ?? '') === (g.metadata?.name ?? '') && (lg.versions ?? []).some((lv) => lv.version === v.version))).length, 0), excludedPeerResources,
    },
  };
}

function legacyEntries(l: LegacyDiscovery): [string, Buffer][] {
  return [['apis', l.apis], ...[...l.groups].map(([k, b]) => [`group ${k}`, b] as [string, Buffer]), ...[...l.resourceLists].map(([k, b]) => [`list ${k}`, b] as [string, Buffer])];
}

function bodiesOf(s: ServedDiscovery): Bodies {
  return {
    mergedJSON: s.merged.json, mergedProtobuf: s.merged.protobuf, mergedEtag: s.merged.etag,
    localJSON: s.local.json, localProtobuf: s.local.protobuf, localEtag: s.local.etag,
    mergedIsLocal: s.merged === s.local, legacy: legacyEntries(s.legacy), counts: { ...s.counts },
  };
}

function assertSameBodies(got: Bodies, want: Bodies, label: string): void {
  for (const k of ['mergedJSON', 'mergedProtobuf', 'localJSON', 'localProtobuf'] as const) {
    assert.ok(got[k].equals(want[k]), `${label}: ${k} differs`);
  }
  assert.equal(got.mergedEtag, want.mergedEtag, `${label}: merged ETag`);
  assert.equal(got.localEtag, want.localEtag, `${label}: local ETag`);
  assert.equal(got.mergedIsLocal, want.mergedIsLocal, `${label}: merged is local`);
  assert.deepEqual(got.legacy.map(([k]) => k), want.legacy.map(([k]) => k), `${label}: legacy documents`);
  got.legacy.forEach(([k, b], i) => assert.ok(b.equals(want.legacy[i]![1]), `${label}: legacy ${k}`));
  assert.deepEqual(got.counts, want.counts, `${label}: counts`);
}

/** Documents whose groups overlap in every way the caches care about. */
function documentPool(): Buffer[] {
  const canonical = (l: APIGroupDiscoveryList) => encodeJSON(l);
  const s = [0, 1, 2, 3].map((i) => canonical(syntheticServer(300, i)));
  const odd = fc.sample(discoveryList, { numRuns: 3, seed: 99 }).map((l) => Buffer.from(JSON.stringify(l)));
  const mixed = list([...v137.items.slice(0, 6), ...syntheticServer(120, 1).items.slice(20), ...(fc.sample(discoveryGroup, { numRuns: 4, seed: 5 }))]);
  return [
    readFixture('v1.33-0b1dcaba/aggregated_v2.json'), // pretty-printed, sorted keys: the walk
    readFixture('v1.37.0-dev-6732d913/aggregated_v2.json'),
    canonical(v133), canonical(v137), // Go order: the JSON.stringify path
    ...s,
    oneResourceChanged(s[2]!, 'changed-'),
    everyResourceChanged(s[1]!, 'new-'),
    Buffer.from(JSON.stringify(list(v137.items.slice(0, 20)), null, 1)),
    ...odd,
    Buffer.from(JSON.stringify(mixed)),
  ];
}

test('cached builds (warm and cold caches) = the uncached build, byte for byte, over changing inputs', () => {
  const pool = documentPool();
  const ids = ['apiserver-a', 'apiserver-b', 'apiserver-c', 'apiserver-d', 'apiserver-e'];
  const gvs = ['apps/v1', 'g1.example.com/v1', 'resource.k8s.io/v1alpha3', 'crd3.example.com/v1', 'crd4.example.com/v1beta1', 'storagemigration.k8s.io/v1alpha1'];
  const caches = new MergeCaches(false);
  let n = 0;
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          local: fc.nat(pool.length - 1),
          localID: fc.constantFrom(...ids),
          peers: fc.array(fc.tuple(fc.constantFrom(...ids), fc.nat(pool.length - 1)), { minLength: 0, maxLength: 4 }),
          excluded: fc.subarray(gvs),
        }),
        { minLength: 1, maxLength: 6 },
      ),
      (steps) => {
        for (const step of steps) {
          const peerDocs = step.peers.map(([id, d]) => [id, pool[d]!] as [string, Buffer]);
          const task = {
            localID: step.localID,
            localApis: pool[step.local]!,
            peers: peerDocs.map(([id, apis]) => ({ id, apis })),
            excludedGroupVersions: step.excluded,
            generation: ++n,
          };
          const want = referenceBuild(step.localID, pool[step.local]!, peerDocs, step.excluded);
          assertSameBodies(bodiesOf(runMergeTask(task, 'inline', undefined, caches)), want, `warm ${JSON.stringify(step)}`);
          assertSameBodies(bodiesOf(runMergeTask(task, 'inline')), want, `cold ${JSON.stringify(step)}`);
          // The same input again: everything from the caches.
          assertSameBodies(bodiesOf(runMergeTask(task, 'inline', undefined, caches)), want, `again ${JSON.stringify(step)}`);
        }
      },
    ),
    { numRuns: 25, seed: 4020 },
  );
  assert.ok(caches.documents.stats.reusedDocuments > 0 && caches.documents.stats.reusedItems > 0);
});

test('a bad document leaves the caches as they were; the next build is still exact', () => {
  const caches = new MergeCaches(false);
  const a = encodeJSON(syntheticServer(200, 0));
  const b = encodeJSON(syntheticServer(200, 1));
  const task = (local: Buffer, peer: Buffer) => ({ localID: 's0', localApis: local, peers: [{ id: 's1', apis: peer }], excludedGroupVersions: [], generation: 1 });
  runMergeTask(task(a, b), 'inline', undefined, caches);
  assert.throws(() => runMergeTask(task(a, Buffer.from('{"items":[{"metadata":')), 'inline', undefined, caches), /peer s1 \/apis/);
  assertSameBodies(bodiesOf(runMergeTask(task(b, a), 'inline', undefined, caches)), referenceBuild('s0', b, [['s1', a]], []), 'after error');
  // A caller's buffer reused for other bytes of the same length is not mistaken for the cached
  // document (the cache keeps a copy of what it was given).
  const reused = Buffer.from(a);
  runMergeTask(task(reused, b), 'inline', undefined, caches);
  const changed = Buffer.from(a.toString('latin1').replace('"widget1"', '"wodget1"'), 'latin1');
  assert.equal(changed.length, a.length);
  assert.ok(!changed.equals(a));
  changed.copy(reused);
  assertSameBodies(bodiesOf(runMergeTask(task(reused, b), 'inline', undefined, caches)), referenceBuild('s0', changed, [['s1', b]], []), 'reused buffer');
});

test('buildServedDiscovery with a memo kept across builds = without', () => {
  const memo = new EncodingMemo();
  for (const [local, peer, excluded] of [[v133, v137, []], [v137, v133, ['apps/v1']], [v133, v137, []], [v133, v137, ['resource.k8s.io/v1alpha3']]] as const) {
    const input = { localID: 'apiserver-a', localApis: local, peers: [{ id: 'apiserver-b', apis: peer }], excludedGroupVersions: [...excluded] };
    assertSameBodies(bodiesOf(buildServedDiscovery(input, undefined, memo)), bodiesOf(buildServedDiscovery(input)), JSON.stringify(excluded));
  }
});
