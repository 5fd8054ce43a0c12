// Legacy documents derived from aggregated data (src/aggregation/legacy.ts) against the real legacy
// format: the /api/v1 APIResourceList fixture is converted to aggregated discovery the way
// apiserver does (subresources under their parent, responseKind nil exactly when the kind is
// empty) and back; everything but storageVersionHash (not in aggregated data) must survive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  buildLegacyDiscovery,
  encodeLegacyAPIGroup,
  encodeLegacyAPIGroupList,
  encodeLegacyAPIResourceList,
  legacyAPIResources,
} from '../../src/aggregation/legacy';
import type { APIGroupDiscovery, APIResourceDiscovery, APIVersionDiscovery } from '../../src/aggregation/types';
import { readFixture, aggregatedFixture } from '../support/fixtures';

interface LegacyResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  group?: string;
  version?: string;
  kind: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  storageVersionHash?: string;
}

/** apiserver's legacy → aggregated conversion, for the test. */
function toAggregated(version: string, resources: LegacyResource[]): APIVersionDiscovery {
  const out: APIResourceDiscovery[] = [];
  const byName = new Map<string, APIResourceDiscovery>();
  for (const r of resources) {
    const rk = r.kind === '' ? undefined : { group: r.group ?? '', version: r.version ?? '', kind: r.kind };
    const slash = r.name.indexOf('/');
    if (slash === -1) {
      const a: APIResourceDiscovery = { resource: r.name, scope: r.namespaced ? 'Namespaced' : 'Cluster', singularResource: r.singularName, verbs: r.verbs };
      if (rk) a.responseKind = rk;
      if (r.shortNames) a.shortNames = r.shortNames;
      if (r.categories) a.categories = r.categories;
      out.push(a);
      byName.set(r.name, a);
    } else {
      const parent = byName.get(r.name.slice(0, slash))!;
      (parent.subresources ??= []).push({ subresource: r.name.slice(slash + 1), ...(rk ? { responseKind: rk } : {}), verbs: r.verbs });
    }
  }
  return { version, resources: out, freshness: 'Current' };
}

const sortKeys = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));

test('the /api/v1 fixture survives legacy → aggregated → legacy (storageVersionHash aside)', () => {
  const fixture = JSON.parse(readFixture('commit-4d817e79/api__v1.json').toString('utf8')) as { resources: LegacyResource[] };
  const expected = fixture.resources.map(({ storageVersionHash: _h, ...r }) => sortKeys(r as unknown as Record<string, unknown>));
  const got = legacyAPIResources('', toAggregated('v1', fixture.resources));
  assert.deepEqual(got.map((r) => sortKeys(r as unknown as Record<string, unknown>)), expected);
  // Cross-group subresources keep their group/version; the same-group ones have none.
  assert.deepEqual(got.find((r) => r.name === 'pods/eviction'), { name: 'pods/eviction', singularName: '', namespaced: true, group: 'policy', version: 'v1', kind: 'Eviction', verbs: ['create'] });
  // Go field order.
  assert.deepEqual(Object.keys(got.find((r) => r.name === 'pods')!), ['name', 'singularName', 'namespaced', 'kind', 'verbs', 'shortNames', 'categories']);
});

test('APIResourceList of a group: apps/v1 deployments with scale (autoscaling/v1) and status', () => {
  const apps = aggregatedFixture('v1.37').items.find((g) => g.metadata.name === 'apps')!;
  const body = encodeLegacyAPIResourceList('apps', apps.versions![0]!).toString();
  assert.ok(body.startsWith('{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[{"name":"controllerrevisions","singularName":"controllerrevision","namespaced":true,"kind":"ControllerRevision","verbs":['));
  const doc = JSON.parse(body);
  const names = doc.resources.map((r: { name: string }) => r.name);
  assert.deepEqual(names.slice(names.indexOf('deployments'), names.indexOf('deployments') + 3), ['deployments', 'deployments/scale', 'deployments/status']);
  assert.deepEqual(doc.resources.find((r: { name: string }) => r.name === 'deployments/scale'), {
    name: 'deployments/scale', singularName: '', namespaced: true, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'],
  });
  assert.deepEqual(doc.resources.find((r: { name: string }) => r.name === 'deployments'), {
    name: 'deployments', singularName: 'deployment', namespaced: true, kind: 'Deployment',
    verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'], shortNames: ['deploy'], categories: ['all'],
  });
});

test('null verbs become [], a responseKind naming its own group/version is not repeated', () => {
  const v: APIVersionDiscovery = {
    version: 'v1',
    resources: [{
      resource: 'foos', responseKind: { group: 'x.example', version: 'v1', kind: 'Foo' }, scope: 'Cluster', singularResource: 'foo', verbs: null,
      subresources: [{ subresource: 'status', verbs: null }],
    }],
  };
  assert.deepEqual(legacyAPIResources('x.example', v), [
    { name: 'foos', singularName: 'foo', namespaced: false, kind: 'Foo', verbs: [] },
    { name: 'foos/status', singularName: '', namespaced: false, kind: '', verbs: [] },
  ]);
});

test('APIGroupList / APIGroup: the v1.31 fixture layout (sorted keys aside)', () => {
  const fixture = JSON.parse(readFixture('v1.31-0260c7d0/apis.json').toString('utf8')) as { groups: { name: string; versions: { version: string }[] }[] };
  const groups: APIGroupDiscovery[] = fixture.groups.map((g) => ({ metadata: { name: g.name }, versions: g.versions.map((v) => ({ version: v.version })) }));
  const got = JSON.parse(encodeLegacyAPIGroupList(groups).toString());
  // The fixture's preferred version is the first listed one for every group, as here.
  assert.deepEqual(got, fixture);
  assert.equal(encodeLegacyAPIGroup({ metadata: { name: 'empty' }, versions: [] }), undefined);
  assert.deepEqual(JSON.parse(encodeLegacyAPIGroup(groups[1]!)!.toString()), { kind: 'APIGroup', apiVersion: 'v1', ...fixture.groups[1] });
});

test('buildLegacyDiscovery: documents for every group the peer contributes to (all its versions), none for a group the merge left as local', () => {
  const local = aggregatedFixture('v1.33').items;
  const merged = aggregatedFixture('v1.37').items;
  const l = buildLegacyDiscovery(merged, local);
  const localGroup = (g: string) => local.find((x) => x.metadata.name === g);
  for (const key of l.resourceLists.keys()) {
    const [g] = key.split('/');
    assert.ok(l.groups.has(g!), `group of ${key}`);
  }
  for (const [g] of l.groups) {
    const m = merged.find((x) => x.metadata.name === g)!;
    for (const v of m.versions!) assert.ok(l.resourceLists.has(`${g}/${v.version}`), `${g}/${v.version}: every version of a contributed group`);
    const lg = localGroup(g);
    if (lg) assert.notDeepEqual(lg.versions!.map((v) => [v.version, (v.resources ?? []).map((r) => r.resource).sort()]), m.versions!.map((v) => [v.version, (v.resources ?? []).map((r) => r.resource).sort()]), `${g}: the merge changed it`);
  }
  for (const g of merged) {
    const lg = localGroup(g.metadata.name!);
    if (lg && JSON.stringify(lg.versions) === JSON.stringify(g.versions)) assert.ok(!l.groups.has(g.metadata.name!), `${g.metadata.name}: identical, left to the apiserver`);
  }
  assert.ok(l.resourceLists.has('scheduling.k8s.io/v1alpha3'));
  assert.equal(buildLegacyDiscovery(local, local).resourceLists.size, 0);
  assert.equal(buildLegacyDiscovery(local, local).groups.size, 0);
});
