// Legacy discovery shows the whole union (issue 16 §1). Three members; the client's member is the
// oldest (v1.33), so for groups it shares with the others it serves an older subset: fewer
// versions (storagemigration.k8s.io, whose preferred version moves to v1), fewer resources in a
// version (resource.k8s.io/v1alpha3), a missing subresource (storage.k8s.io/v1 csinodes/status).
// kubectl 1.27–1.29 read legacy discovery (/apis, then /apis/<g>/<v> per group/version); 1.30+
// read the aggregated /apis. Through mvproxy both must list the same resources.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { DEFAULT_FRONTEND } from '../support/frontends';
import { twoVersionPlane, call, OLD } from '../support/plane';
import { findKubectl, kubectl, rowsOf } from '../support/kubectl';
import type { Plane } from '../../src/demo/topology';

const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

describe(`legacy discovery through mvproxy is the union of three members (${DEFAULT_FRONTEND} front end)`, () => {
  let plane: Plane & { tmp: string };
  /** `kubectl 1.33 api-resources` through the old member: NAME APIVERSION NAMESPACED KIND rows, sorted. */
  let reference: string[] = [];
  before(async () => {
    plane = await twoVersionPlane(DEFAULT_FRONTEND, {
      members: [
        { name: OLD, kubernetesVersion: 'v1.33' },
        { name: 'new-a', kubernetesVersion: 'v1.37' },
        // A third member without lifecycle.k8s.io: what one member lacks, another supplies.
        { name: 'new-b', kubernetesVersion: 'v1.37', runtimeConfig: ['lifecycle.k8s.io/v1alpha1=false'] },
      ],
    });
    for (const m of plane.members) await m.daemon.publisher.mergesDone();
  });
  after(async () => plane?.close());

  /** api-resources rows without SHORTNAMES (an optional column that shifts cells), sorted. */
  async function apiResources(minor: number): Promise<string[]> {
    const k = findKubectl(minor);
    if ('skip' in k) throw new Error(k.skip);
    const { stdout } = await kubectl(k.bin, plane.member(OLD).url, ['api-resources', '-o', 'wide', '--no-headers=false']);
    const header = stdout.split('\n')[0]!;
    const col = (name: string) => header.indexOf(name);
    const cols = ['NAME', 'APIVERSION', 'NAMESPACED', 'KIND'].map(col);
    const nextCol = (start: number) => Math.min(...[...cols, col('SHORTNAMES'), col('VERBS'), col('CATEGORIES')].filter((c) => c > start), Infinity);
    return stdout.split('\n').slice(1).filter(Boolean).map((l) => cols.map((c) => l.slice(c, nextCol(c)).trim()).join(' ')).sort();
  }

  test('kubectl 1.33 (aggregated discovery) lists the union: the reference', async (t) => {
    const k = findKubectl(33);
    if ('skip' in k) return t.skip(k.skip);
    reference = await apiResources(33);
    assert.ok(reference.some((r) => r.startsWith('storageversionmigrations storagemigration.k8s.io/v1 ')), 'the merged preferred version of a shared group');
    assert.ok(reference.some((r) => r.startsWith('evictionrequests lifecycle.k8s.io/v1alpha1 ')));
    assert.ok(rowsOf((await kubectl(k.bin, plane.member(OLD).url, ['api-resources'])).stdout).length === reference.length);
  });

  for (const minor of [27, 28, 29]) {
    test(`kubectl 1.${minor} (legacy discovery) lists exactly what kubectl 1.33 lists`, async (t) => {
      const k = findKubectl(minor);
      if ('skip' in k) return t.skip(k.skip);
      if (reference.length === 0) return t.skip('no kubectl 1.33 reference');
      assert.deepEqual(await apiResources(minor), reference);
    });
  }

  test('/apis/<g>/<v> of a version both serve is the union; /apis/<g> prefers the merged document\'s version; both carry an ETag that answers 304', async () => {
    const url = plane.member(OLD).url;
    const merged = (await call(url, '/apis', { headers: { accept: V2 } })).json() as { items: { metadata: { name: string }; versions: { version: string; resources: { resource: string; subresources?: { subresource: string }[] }[] }[] }[] };
    const union = (g: string, v: string) => merged.items.find((x) => x.metadata.name === g)!.versions.find((x) => x.version === v)!.resources.flatMap((r) => [r.resource, ...(r.subresources ?? []).map((s) => `${r.resource}/${s.subresource}`)]).sort();
    for (const [g, v] of [['resource.k8s.io', 'v1alpha3'], ['storage.k8s.io', 'v1'], ['storagemigration.k8s.io', 'v1alpha1']] as const) {
      const r = await call(url, `/apis/${g}/${v}`, { headers: { accept: 'application/json' } });
      assert.equal(r.status, 200, `${g}/${v}`);
      assert.deepEqual((r.json().resources as { name: string }[]).map((x) => x.name).sort(), union(g, v), `${g}/${v}`);
      const etag = String(r.headers.etag);
      assert.equal((await call(url, `/apis/${g}/${v}`, { headers: { accept: 'application/json', 'if-none-match': etag } })).status, 304);
    }
    const group = (await call(url, '/apis/storagemigration.k8s.io', { headers: { accept: 'application/json' } })).json();
    assert.equal(group.preferredVersion.version, merged.items.find((x) => x.metadata.name === 'storagemigration.k8s.io')!.versions[0]!.version);
    // A group every member serves alike is the local apiserver's own answer.
    assert.equal((await call(url, '/apis/apps/v1', { headers: { accept: 'application/json' } })).headers['x-sim-server'], OLD);
  });

  test('python3-kubernetes (legacy discovery) finds every resource of the merged document', async (t) => {
    const py = '/usr/bin/python3';
    const ok = await new Promise<boolean>((res) => execFile(py, ['-c', 'import kubernetes'], (err) => res(!err)));
    if (!ok) return t.skip('python3-kubernetes is not installed (apt-get install python3-kubernetes)');
    const merged = (await call(plane.member(OLD).url, '/apis', { headers: { accept: V2 } })).json() as { items: { metadata: { name: string }; versions: { version: string; resources: { responseKind?: { kind: string } }[] }[] }[] };
    const wanted = merged.items.flatMap((g) => g.versions.flatMap((v) => v.resources.filter((r) => r.responseKind?.kind).map((r) => [`${g.metadata.name}/${v.version}`, r.responseKind!.kind])));
    const script = `
import json, sys
from kubernetes import client, dynamic
cfg = client.Configuration()
cfg.host = sys.argv[1]
dc = dynamic.DynamicClient(client.ApiClient(cfg))
missing = []
for api_version, kind in json.loads(sys.argv[2]):
    try:
        dc.resources.get(api_version=api_version, kind=kind)
    except Exception as e:
        missing.append('%s %s: %s' % (api_version, kind, type(e).__name__))
print(json.dumps(missing))
`;
    const out = await new Promise<string>((res, rej) => execFile(py, ['-c', script, plane.member(OLD).url, JSON.stringify(wanted)], { timeout: 60_000, env: { ...process.env, HOME: plane.tmp } }, (err, so, se) => (err ? rej(new Error(`${err.message}\n${se}`)) : res(so))));
    assert.deepEqual(JSON.parse(out.trim().split('\n').pop()!), [], `resources python3-kubernetes could not find (of ${wanted.length})`);
  });
});
