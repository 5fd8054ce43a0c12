// The simulated kube-apiserver (src/sim): discovery wire format, negotiation, ETag, legacy
// discovery, runtime-config, CRUD, watch, shared store, identity echo, logs, TLS, CLI and real kubectl.
import assert from 'node:assert/strict';
import { kubectl, kubectlPath, rowsOf } from '../support/kubectl';
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import type { APIGroupDiscoveryList } from '../../src/aggregation/types';
import { ObjectStore, startSimApiserver, type SimApiserver } from '../../src/sim';
import {
  ACCEPT_KUBECTL_127,
  ACCEPT_KUBECTL_133,
  ACCEPT_TABLE,
  ACCEPT_V2,
  ACCEPT_V2BETA1,
  ACCEPT_V2_NOPEER,
  openWatch,
  simAgent,
  simGet,
  simRequest,
} from '../support/sim-client';

const FIXTURES = join(__dirname, '..', '..', 'fixtures', 'kubernetes-discovery');
const FIXTURE_DIR = { 'v1.33': 'v1.33-0b1dcaba', 'v1.37': 'v1.37.0-dev-6732d913' } as const;
const fixture = (v: 'v1.33' | 'v1.37'): APIGroupDiscoveryList =>
  JSON.parse(readFileSync(join(FIXTURES, FIXTURE_DIR[v], 'aggregated_v2.json'), 'utf8')) as APIGroupDiscoveryList;
const gvrCount = (d: APIGroupDiscoveryList): number =>
  d.items.reduce((n, g) => n + (g.versions ?? []).reduce((m, v) => m + (v.resources ?? []).length, 0), 0);
const sha512Etag = (body: string): string => `"${createHash('sha512').update(body).digest('hex').toUpperCase()}"`;

const sims: SimApiserver[] = [];
async function sim(o: Parameters<typeof startSimApiserver>[0]): Promise<SimApiserver> {
  const s = await startSimApiserver(o);
  sims.push(s);
  return s;
}
after(async () => {
  await Promise.all(sims.map((s) => s.close()));
  await simAgent.close();
});

const cm = (name: string, labels: Record<string, string> = {}, data: Record<string, string> = { k: 'v' }) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, labels },
  data,
});

describe('aggregated discovery', () => {
  for (const [version, groups, gvrs] of [['v1.37', 23, 83], ['v1.33', 22, 71]] as const) {
    test(`${version}: /apis v2 is the fixture document (${groups} groups, ${gvrs} GVRs) with wire headers`, async () => {
      const s = await sim({ name: `disc-${version}`, kubernetesVersion: version });
      const r = await simGet(`${s.url}/apis`, { accept: ACCEPT_V2 });
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
      assert.equal(r.headers['vary'], 'Accept');
      assert.equal(r.headers['cache-control'], 'public');
      assert.equal(r.headers['etag'], sha512Etag(r.text));
      assert.match(String(r.headers['etag']), /^"[0-9A-F]{128}"$/);
      assert.equal(r.headers['x-sim-server'], `disc-${version}`);
      const doc = r.json() as APIGroupDiscoveryList;
      assert.equal(doc.kind, 'APIGroupDiscoveryList');
      assert.equal(doc.apiVersion, 'apidiscovery.k8s.io/v2');
      assert.equal(doc.items.length, groups);
      assert.equal(gvrCount(doc), gvrs);
      const fx = fixture(version);
      assert.equal(gvrCount(fx), gvrs, 'fixture count as documented in SOURCE.md');
      assert.deepEqual(doc.items, fx.items, 'same groups, versions, resources and order as the fixture');
      assert.ok(!doc.items.some((g) => g.metadata.name === ''), '/apis never lists the core group');
      // Go struct field order on the wire
      assert.ok(r.text.startsWith('{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{"name":'));
      assert.match(r.text, /\{"resource":"deployments","responseKind":\{"group":"","version":"","kind":"Deployment"\},"scope":"Namespaced","singularResource":"deployment","verbs":\[/);
      assert.equal(s.served().size, gvrs + 17, 'served() = non-core GVRs + 17 core resources');
      assert.ok(s.served().has('apps/v1/deployments'));
      assert.ok(s.served().has('/v1/pods'));
    });
  }

  test('/api v2 carries the core group built from the legacy /api/v1 fixture', async () => {
    const s = await sim({ name: 'core', kubernetesVersion: 'v1.37' });
    const r = await simGet(`${s.url}/api`, { accept: ACCEPT_V2 });
    assert.equal(r.status, 200);
    assert.equal(r.headers['etag'], sha512Etag(r.text));
    const doc = r.json() as APIGroupDiscoveryList;
    assert.equal(doc.items.length, 1);
    assert.equal(doc.items[0]!.metadata.name, undefined, 'Go omits the empty core group name');
    const v1 = doc.items[0]!.versions![0]!;
    assert.equal(v1.version, 'v1');
    assert.equal(v1.freshness, 'Current');
    const byName = new Map(v1.resources!.map((x) => [x.resource, x]));
    for (const n of ['pods', 'namespaces', 'configmaps', 'services', 'secrets', 'events']) assert.ok(byName.has(n), n);
    const pods = byName.get('pods')!;
    assert.equal(pods.scope, 'Namespaced');
    assert.deepEqual(pods.shortNames, ['po']);
    assert.deepEqual(pods.categories, ['all']);
    const podSubs = new Map(pods.subresources!.map((x) => [x.subresource, x]));
    for (const n of ['status', 'log', 'eviction', 'binding', 'exec']) assert.ok(podSubs.has(n), `pods/${n}`);
    assert.deepEqual(podSubs.get('eviction')!.responseKind, { group: 'policy', version: 'v1', kind: 'Eviction' });
    const ns = byName.get('namespaces')!;
    assert.equal(ns.scope, 'Cluster');
    assert.deepEqual(ns.subresources!.map((x) => x.subresource).sort(), ['finalize', 'status']);
    assert.notEqual(r.headers['etag'], s.etags.apis);
    assert.equal(r.headers['etag'], s.etags.api);
  });

  test('ETag / If-None-Match: exact match → 304 with empty body, anything else → 200', async () => {
    const s = await sim({ name: 'etag', kubernetesVersion: 'v1.33' });
    const first = await simGet(`${s.url}/apis`, { accept: ACCEPT_V2 });
    const etag = String(first.headers['etag']);
    const again = await simGet(`${s.url}/apis`, { accept: ACCEPT_V2 });
    assert.equal(again.headers['etag'], etag, 'stable across requests');
    const nm = await simGet(`${s.url}/apis`, { accept: ACCEPT_V2, 'if-none-match': etag });
    assert.equal(nm.status, 304);
    assert.equal(nm.text, '');
    assert.equal(nm.headers['etag'], etag);
    assert.equal(nm.headers['vary'], 'Accept');
    assert.equal(nm.headers['cache-control'], 'public');
    assert.equal(nm.headers['x-sim-server'], 'etag');
    for (const other of [`W/${etag}`, etag.slice(1, -1), '*', `${etag}, "x"`, '"0"']) {
      const r = await simGet(`${s.url}/apis`, { accept: ACCEPT_V2, 'if-none-match': other });
      assert.equal(r.status, 200, other);
      assert.equal(r.text, first.text);
    }
    const apiNm = await simGet(`${s.url}/api`, { accept: ACCEPT_V2, 'if-none-match': etag });
    assert.equal(apiNm.status, 200, '/api has its own ETag');
  });

  test('negotiation: nopeer, parameter order, q-values, kubectl Accepts, v2beta1, 406', async () => {
    const s = await sim({ name: 'neg', kubernetesVersion: 'v1.37' });
    const base = await simGet(`${s.url}/apis`, { accept: ACCEPT_V2 });
    const nopeer = await simGet(`${s.url}/apis`, { accept: ACCEPT_V2_NOPEER });
    assert.equal(nopeer.status, 200);
    assert.equal(nopeer.text, base.text, 'no peers: nopeer is the same document');
    assert.equal(nopeer.headers['etag'], base.headers['etag']);
    assert.equal(nopeer.headers['content-type'], 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', 'profile not echoed');
    for (const accept of [
      'application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io',
      'application/json;profile=nopeer;v=v2;as=APIGroupDiscoveryList;g=apidiscovery.k8s.io',
      'application/json; g=apidiscovery.k8s.io; v=v2; as=APIGroupDiscoveryList',
      '*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
      ACCEPT_KUBECTL_133,
      'application/json;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    ]) {
      const r = await simGet(`${s.url}/apis`, { accept });
      assert.equal(r.text, base.text, accept);
    }
    for (const accept of [
      'application/json',
      '*/*',
      ACCEPT_KUBECTL_127,
      'application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
      'application/json;g=apidiscovery.k8s.io;v=v1;as=APIGroupDiscoveryList,application/json',
    ]) {
      const r = await simGet(`${s.url}/apis`, { accept });
      assert.equal(r.status, 200, accept);
      assert.equal(r.headers['content-type'], 'application/json', accept);
      assert.equal(r.json().kind, 'APIGroupList', accept);
      assert.equal(r.headers['etag'], undefined);
    }
    const none = await simGet(`${s.url}/apis`);
    assert.equal(none.json().kind, 'APIGroupList', 'no Accept → legacy');
    const bad = await simGet(`${s.url}/apis`, { accept: 'text/html' });
    assert.equal(bad.status, 406);
    assert.equal(bad.json().reason, 'NotAcceptable');
    const onlyBeta = await simGet(`${s.url}/apis`, { accept: ACCEPT_V2BETA1 });
    assert.equal(onlyBeta.status, 406, 'v2beta1-only Accept without a JSON fallback: nothing acceptable');

    const beta = await sim({ name: 'beta', kubernetesVersion: 'v1.33', serveV2beta1: true });
    const b = await simGet(`${beta.url}/apis`, { accept: ACCEPT_KUBECTL_127 });
    assert.equal(b.headers['content-type'], 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList');
    assert.equal(b.json().apiVersion, 'apidiscovery.k8s.io/v2beta1');
    assert.equal(b.headers['etag'], beta.etags.apis, 'v2beta1 shares the v2 ETag');
    const b2 = await simGet(`${beta.url}/apis`, { accept: ACCEPT_KUBECTL_133 });
    assert.equal(b2.json().apiVersion, 'apidiscovery.k8s.io/v2', 'v2 preferred when listed first');
  });

  test('trailing slash: /apis/ and /api/ are the same endpoints', async () => {
    const s = await sim({ name: 'slash', kubernetesVersion: 'v1.33' });
    const legacy = await simGet(`${s.url}/apis/`, { accept: 'application/json' });
    assert.equal(legacy.status, 200);
    assert.equal(legacy.json().kind, 'APIGroupList');
    const agg = await simGet(`${s.url}/apis/`, { accept: ACCEPT_V2 });
    assert.equal(agg.headers['etag'], s.etags.apis);
    assert.equal((await simGet(`${s.url}/api/`)).json().kind, 'APIVersions');
    assert.equal((await simGet(`${s.url}/apis/apps/v1/`)).json().groupVersion, 'apps/v1');
    assert.equal((await simGet(`${s.url}/api/v1/namespaces/`)).json().kind, 'NamespaceList');
  });
});

describe('legacy discovery', () => {
  test('/api, /apis, /apis/<g>, /apis/<g>/<v>, /api/v1', async () => {
    const s = await sim({ name: 'legacy', kubernetesVersion: 'v1.37' });
    const api = (await simGet(`${s.url}/api`)).json();
    assert.equal(api.kind, 'APIVersions');
    assert.deepEqual(api.versions, ['v1']);
    assert.deepEqual(api.serverAddressByClientCIDRs, [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${s.port}` }]);

    const apis = (await simGet(`${s.url}/apis`, { accept: 'application/json' })).json();
    assert.equal(apis.kind, 'APIGroupList');
    assert.equal(apis.apiVersion, 'v1');
    assert.equal(apis.groups.length, 23);
    const autoscaling = apis.groups.find((g: { name: string }) => g.name === 'autoscaling');
    assert.deepEqual(autoscaling.versions, [
      { groupVersion: 'autoscaling/v2', version: 'v2' },
      { groupVersion: 'autoscaling/v1', version: 'v1' },
    ]);
    assert.deepEqual(autoscaling.preferredVersion, { groupVersion: 'autoscaling/v2', version: 'v2' });

    const g = (await simGet(`${s.url}/apis/resource.k8s.io`)).json();
    assert.equal(g.kind, 'APIGroup');
    assert.equal(g.name, 'resource.k8s.io');
    assert.deepEqual(g.preferredVersion, { groupVersion: 'resource.k8s.io/v1', version: 'v1' });

    const apps = (await simGet(`${s.url}/apis/apps/v1`, { accept: 'application/json, */*' })).json();
    assert.equal(apps.kind, 'APIResourceList');
    assert.equal(apps.apiVersion, 'v1');
    assert.equal(apps.groupVersion, 'apps/v1');
    const byName = new Map<string, Record<string, unknown>>(apps.resources.map((x: { name: string }) => [x.name, x]));
    assert.deepEqual(byName.get('deployments'), {
      name: 'deployments', singularName: 'deployment', namespaced: true, kind: 'Deployment',
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
      shortNames: ['deploy'], categories: ['all'],
    });
    assert.deepEqual(byName.get('deployments/scale'), {
      name: 'deployments/scale', singularName: '', namespaced: true, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'],
    });

    const core = (await simGet(`${s.url}/api/v1`)).json();
    assert.equal(core.kind, 'APIResourceList');
    assert.equal(core.apiVersion, undefined, '/api/v1 carries no apiVersion');
    assert.equal(core.groupVersion, 'v1');
    const names = core.resources.map((x: { name: string }) => x.name);
    for (const n of ['pods', 'pods/status', 'pods/log', 'namespaces/status', 'namespaces/finalize', 'configmaps', 'secrets', 'services', 'events']) {
      assert.ok(names.includes(n), n);
    }
    const evict = core.resources.find((x: { name: string }) => x.name === 'pods/eviction');
    assert.equal(evict.group, 'policy');
    assert.equal(evict.kind, 'Eviction');

    for (const p of ['/apis/nope', '/apis/apps/v2', '/api/v2', '/apis/apps/v1/nothings', '/nope', '/apis/apps/v1/namespaces/default/nodes']) {
      const r = await simGet(s.url + p);
      assert.equal(r.status, 404, p);
      assert.equal(r.text, '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}', p);
    }
  });
});

describe('runtime-config', () => {
  test('disabled group/versions vanish from discovery and their resources 404', async () => {
    const full = await sim({ name: 'rc-full', kubernetesVersion: 'v1.33' });
    const s = await sim({ name: 'rc', kubernetesVersion: 'v1.33', runtimeConfig: ['batch/v1=false', 'storage.k8s.io/v1alpha1=false'] });
    const doc = (await simGet(`${s.url}/apis`, { accept: ACCEPT_V2 })).json() as APIGroupDiscoveryList;
    assert.equal(doc.items.find((g) => g.metadata.name === 'batch'), undefined, 'batch has no version left');
    const storage = doc.items.find((g) => g.metadata.name === 'storage.k8s.io')!;
    assert.deepEqual(storage.versions!.map((v) => v.version), ['v1', 'v1beta1']);
    assert.equal(gvrCount(doc), 71 - 2 - 1, 'jobs, cronjobs and v1alpha1 volumeattributesclasses gone');
    assert.notEqual(s.etags.apis, full.etags.apis);
    const legacy = (await simGet(`${s.url}/apis`)).json();
    assert.ok(!legacy.groups.some((g: { name: string }) => g.name === 'batch'));
    for (const p of ['/apis/batch/v1', '/apis/batch', '/apis/batch/v1/jobs', '/apis/batch/v1/namespaces/default/jobs', '/apis/storage.k8s.io/v1alpha1/volumeattributesclasses']) {
      assert.equal((await simGet(s.url + p)).status, 404, p);
    }
    assert.equal((await simGet(`${s.url}/apis/storage.k8s.io/v1beta1/volumeattributesclasses`)).status, 200);
    assert.equal((await simGet(`${full.url}/apis/batch/v1/namespaces/default/jobs`)).status, 200);
    assert.ok(!s.served().has('batch/v1/jobs'));
    assert.ok(full.served().has('batch/v1/jobs'));

    const noAlpha = await sim({ name: 'rc-alpha', kubernetesVersion: 'v1.37', runtimeConfig: ['api/alpha=false,apps/v1/deployments=false'] });
    const d2 = (await simGet(`${noAlpha.url}/apis`, { accept: ACCEPT_V2 })).json() as APIGroupDiscoveryList;
    assert.ok(d2.items.every((g) => g.versions!.every((v) => !/alpha/.test(v.version))));
    assert.ok(!d2.items.some((g) => g.metadata.name === 'lifecycle.k8s.io'));
    assert.equal((await simGet(`${noAlpha.url}/apis/apps/v1/namespaces/default/deployments`)).status, 404);
    assert.equal((await simGet(`${noAlpha.url}/apis/apps/v1/namespaces/default/statefulsets`)).status, 200);

    await assert.rejects(startSimApiserver({ name: 'x', kubernetesVersion: 'v1.33', runtimeConfig: ['nope.k8s.io/v1=false'] }), /unknown group\/version/);
    await assert.rejects(startSimApiserver({ name: 'x', kubernetesVersion: 'v1.37', runtimeConfig: ['storage.k8s.io/v1alpha1=false'] }), /unknown group\/version/);
    await assert.rejects(startSimApiserver({ name: 'x', kubernetesVersion: 'v1.37', runtimeConfig: ['batch/v1=maybe'] }), /true or false/);
  });
});

describe('resources', () => {
  test('create, get, list, update, patch, delete with Status errors', async () => {
    const s = await sim({ name: 'crud', kubernetesVersion: 'v1.33' });
    const base = `${s.url}/api/v1/namespaces/default/configmaps`;
    const c = await simRequest('POST', base, { body: cm('one', { app: 'a' }) });
    assert.equal(c.status, 201);
    const created = c.json();
    assert.equal(created.kind, 'ConfigMap');
    assert.equal(created.apiVersion, 'v1');
    assert.equal(created.metadata.namespace, 'default');
    assert.match(created.metadata.uid, /^[0-9a-f-]{36}$/);
    assert.match(created.metadata.resourceVersion, /^\d+$/);
    assert.match(created.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    const dup = await simRequest('POST', base, { body: cm('one') });
    assert.equal(dup.status, 409);
    assert.deepEqual(dup.json(), {
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'configmaps "one" already exists',
      reason: 'AlreadyExists', details: { name: 'one', kind: 'configmaps' }, code: 409,
    });

    await simRequest('POST', base, { body: cm('two', { app: 'b' }) });
    const gen = await simRequest('POST', base, { body: { metadata: { generateName: 'gen-' }, data: {} } });
    assert.equal(gen.status, 201);
    assert.match(gen.json().metadata.name, /^gen-[a-z0-9]{5}$/);

    const got = await simGet(`${base}/one`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.json(), created);

    const list = (await simGet(`${base}?labelSelector=app%3Da&limit=500`)).json();
    assert.equal(list.kind, 'ConfigMapList');
    assert.equal(list.apiVersion, 'v1');
    assert.match(list.metadata.resourceVersion, /^\d+$/);
    assert.deepEqual(list.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['one']);
    assert.equal((await simGet(`${base}?labelSelector=app!=a`)).json().items.length, 2);
    assert.equal((await simGet(`${base}?labelSelector=app in (a,b)`.replace(/ /g, '%20'))).json().items.length, 2);
    assert.equal((await simGet(`${s.url}/api/v1/configmaps`)).json().items.length, 3, 'all namespaces');
    const paged = (await simGet(`${base}?limit=2`)).json();
    assert.equal(paged.items.length, 2);
    assert.equal(paged.metadata.remainingItemCount, 1);
    const rest = (await simGet(`${base}?limit=2&continue=${paged.metadata.continue}`)).json();
    assert.equal(rest.items.length, 1);

    const upd = await simRequest('PUT', `${base}/one`, { body: { ...created, data: { k: 'v2' } } });
    assert.equal(upd.status, 200);
    const updated = upd.json();
    assert.equal(updated.data.k, 'v2');
    assert.equal(updated.metadata.uid, created.metadata.uid);
    assert.ok(Number(updated.metadata.resourceVersion) > Number(created.metadata.resourceVersion));
    const stale = await simRequest('PUT', `${base}/one`, { body: { ...created, data: { k: 'v3' } } });
    assert.equal(stale.status, 409);
    assert.equal(stale.json().reason, 'Conflict');

    const merge = await simRequest('PATCH', `${base}/one`, { body: { data: { extra: 'x' }, metadata: { labels: { app: null } } }, contentType: 'application/merge-patch+json' });
    assert.equal(merge.status, 200);
    assert.deepEqual(merge.json().data, { k: 'v2', extra: 'x' });
    assert.deepEqual(merge.json().metadata.labels, {});
    const smp = await simRequest('PATCH', `${base}/one`, { body: { data: { k: 'smp' } }, contentType: 'application/strategic-merge-patch+json' });
    assert.equal(smp.json().data.k, 'smp');
    const jp = await simRequest('PATCH', `${base}/one`, { body: [{ op: 'replace', path: '/data/k', value: 'jp' }, { op: 'remove', path: '/data/extra' }], contentType: 'application/json-patch+json' });
    assert.deepEqual(jp.json().data, { k: 'jp' });
    const badPatchType = await simRequest('PATCH', `${base}/one`, { body: {}, contentType: 'text/plain' });
    assert.equal(badPatchType.status, 415);

    const bad = await simRequest('POST', base, { body: '{"metadata": {' });
    assert.equal(bad.status, 400);
    assert.equal(bad.json().reason, 'BadRequest');
    assert.equal(bad.json().kind, 'Status');
    const wrongNs = await simRequest('POST', base, { body: { metadata: { name: 'x', namespace: 'other' } } });
    assert.equal(wrongNs.status, 400);
    const noName = await simRequest('POST', base, { body: { metadata: {} } });
    assert.equal(noName.status, 422);
    assert.equal(noName.json().reason, 'Invalid');

    const del = await simRequest('DELETE', `${base}/one`);
    assert.equal(del.status, 200);
    assert.equal(del.json().metadata.name, 'one');
    const gone = await simGet(`${base}/one`);
    assert.equal(gone.status, 404);
    assert.deepEqual(gone.json(), {
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'configmaps "one" not found',
      reason: 'NotFound', details: { name: 'one', kind: 'configmaps' }, code: 404,
    });
    assert.equal((await simRequest('DELETE', `${base}/one`)).status, 404);

    const deployGone = await simGet(`${s.url}/apis/apps/v1/namespaces/default/deployments/nope`);
    assert.deepEqual(deployGone.json().details, { name: 'nope', group: 'apps', kind: 'deployments' });
    assert.equal(deployGone.json().message, 'deployments.apps "nope" not found');

    const dc = await simRequest('DELETE', base);
    assert.equal(dc.status, 200);
    assert.equal(dc.json().kind, 'ConfigMapList');
    assert.equal(dc.json().items.length, 2);
    assert.equal((await simGet(base)).json().items.length, 0);

    // cluster-scoped objects, method checks, create-only resources
    const ns = await simRequest('POST', `${s.url}/api/v1/namespaces`, { body: { metadata: { name: 'team-a' } } });
    assert.equal(ns.status, 201);
    assert.equal(ns.json().metadata.namespace, undefined);
    assert.equal(ns.json().status.phase, 'Active');
    assert.equal((await simGet(`${s.url}/api/v1/namespaces/team-a`)).json().metadata.name, 'team-a');
    assert.equal((await simRequest('POST', `${s.url}/api/v1/namespaces/team-a/configmaps`, { body: cm('in-a') })).status, 201);
    assert.equal((await simRequest('DELETE', `${s.url}/api/v1/namespaces/team-a`)).status, 200);
    assert.equal((await simGet(`${s.url}/api/v1/namespaces/team-a/configmaps/in-a`)).status, 404, 'namespace contents deleted');
    assert.equal((await simRequest('DELETE', `${s.url}/api/v1/namespaces/default`)).status, 403);
    assert.equal((await simRequest('POST', `${s.url}/api/v1/configmaps`, { body: cm('x') })).status, 405);
    assert.equal((await simGet(`${s.url}/apis/authentication.k8s.io/v1/selfsubjectreviews`)).status, 405);
    const ssr = await simRequest('POST', `${s.url}/apis/authentication.k8s.io/v1/selfsubjectreviews`, {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      headers: { 'x-remote-user': 'alice', 'x-remote-group': ['dev', 'ops'] },
    });
    assert.equal(ssr.status, 201);
    assert.deepEqual(ssr.json().status.userInfo, { username: 'alice', groups: ['dev', 'ops'] });
  });

  test('status and scale subresources act on the parent', async () => {
    const s = await sim({ name: 'subres', kubernetesVersion: 'v1.37' });
    const base = `${s.url}/apis/apps/v1/namespaces/default/deployments`;
    const d = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 1, selector: { matchLabels: { app: 'web' } } } };
    const created = (await simRequest('POST', base, { body: d })).json();
    assert.equal(created.metadata.generation, 1);
    const st = await simRequest('PUT', `${base}/web/status`, { body: { ...created, status: { replicas: 1 }, spec: { replicas: 9 } } });
    assert.equal(st.status, 200);
    assert.deepEqual(st.json().status, { replicas: 1 });
    assert.equal(st.json().spec.replicas, 1, 'status update ignores spec');
    const main = await simRequest('PUT', `${base}/web`, { body: { ...st.json(), status: { replicas: 99 } } });
    assert.deepEqual(main.json().status, { replicas: 1 }, 'main update keeps status');
    const sp = await simRequest('PATCH', `${base}/web/status`, { body: { status: { readyReplicas: 1 } }, contentType: 'application/merge-patch+json' });
    assert.deepEqual(sp.json().status, { replicas: 1, readyReplicas: 1 });
    const scale = (await simGet(`${base}/web/scale`)).json();
    assert.equal(scale.kind, 'Scale');
    assert.equal(scale.apiVersion, 'autoscaling/v1');
    assert.equal(scale.spec.replicas, 1);
    assert.equal(scale.status.selector, 'app=web');
    const scaled = await simRequest('PATCH', `${base}/web/scale`, { body: { spec: { replicas: 5 } }, contentType: 'application/merge-patch+json' });
    assert.equal(scaled.status, 200);
    assert.equal(scaled.json().spec.replicas, 5);
    const after = (await simGet(`${base}/web`)).json();
    assert.equal(after.spec.replicas, 5);
    assert.equal(after.metadata.generation, 2);
    assert.equal((await simRequest('DELETE', `${base}/web/status`)).status, 405);
  });

  test('Table and PartialObjectMetadata renderings', async () => {
    const s = await sim({ name: 'table', kubernetesVersion: 'v1.33' });
    await simRequest('POST', `${s.url}/api/v1/namespaces/default/configmaps`, { body: cm('t1') });
    const r = await simGet(`${s.url}/api/v1/namespaces/default/configmaps?limit=500`, { accept: ACCEPT_TABLE });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json;as=Table;v=v1;g=meta.k8s.io');
    const t = r.json();
    assert.equal(t.kind, 'Table');
    assert.equal(t.apiVersion, 'meta.k8s.io/v1');
    assert.deepEqual(t.columnDefinitions.map((c: { name: string }) => c.name), ['Name', 'Created At']);
    assert.equal(t.rows.length, 1);
    assert.equal(t.rows[0].cells[0], 't1');
    assert.equal(t.rows[0].object.kind, 'PartialObjectMetadata');
    assert.equal(t.rows[0].object.metadata.name, 't1');
    const one = (await simGet(`${s.url}/api/v1/namespaces/default/configmaps/t1`, { accept: ACCEPT_TABLE })).json();
    assert.equal(one.rows.length, 1);
    const pom = await simGet(`${s.url}/api/v1/namespaces/default/configmaps`, { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json' });
    assert.equal(pom.json().kind, 'PartialObjectMetadataList');
    assert.equal(pom.json().items[0].metadata.name, 't1');
    assert.equal((await simGet(`${s.url}/api/v1/namespaces/default/configmaps`, { accept: 'application/yaml' })).status, 406);
  });
});

describe('watch', () => {
  test('delivers ADDED then MODIFIED and DELETED as they happen; resourceVersion honoured', async () => {
    const s = await sim({ name: 'watch', kubernetesVersion: 'v1.33' });
    const base = `${s.url}/api/v1/namespaces/default/configmaps`;
    const pre = (await simRequest('POST', base, { body: cm('pre') })).json();

    const w = await openWatch(`${base}?watch=true`);
    assert.equal(w.status, 200);
    assert.equal(w.headers['content-type'], 'application/json');
    assert.equal(w.headers['x-sim-server'], 'watch');
    const initial = await w.waitFor(1);
    assert.equal(initial[0]!.type, 'ADDED', 'no resourceVersion: synthetic ADDED for existing objects');
    assert.equal(initial[0]!.object.metadata.name, 'pre');
    assert.equal(initial[0]!.object.kind, 'ConfigMap');

    const created = (await simRequest('POST', base, { body: cm('live') })).json();
    let ev = await w.waitFor(2);
    assert.equal(ev[1]!.type, 'ADDED');
    assert.equal(ev[1]!.object.metadata.resourceVersion, created.metadata.resourceVersion);
    const patched = (await simRequest('PATCH', `${base}/live`, { body: { data: { k: 'changed' } }, contentType: 'application/merge-patch+json' })).json();
    ev = await w.waitFor(3);
    assert.equal(ev[2]!.type, 'MODIFIED');
    assert.equal(ev[2]!.object.data.k, 'changed');
    assert.equal(ev[2]!.object.metadata.resourceVersion, patched.metadata.resourceVersion);
    await simRequest('DELETE', `${base}/live`);
    ev = await w.waitFor(4);
    assert.equal(ev[3]!.type, 'DELETED');
    assert.ok(Number(ev[3]!.object.metadata.resourceVersion) > Number(patched.metadata.resourceVersion));
    w.abort();

    // resourceVersion=N: only what happened after N, replayed from history
    const fromRv = await openWatch(`${base}?watch=1&resourceVersion=${pre.metadata.resourceVersion}`);
    const replay = await fromRv.waitFor(3);
    assert.deepEqual(replay.map((e) => e.type), ['ADDED', 'MODIFIED', 'DELETED']);
    assert.ok(replay.every((e) => e.object.metadata.name === 'live'));
    fromRv.abort();

    // resourceVersion=0 behaves like unset: current state first
    const zero = await openWatch(`${base}?watch=true&resourceVersion=0`);
    assert.deepEqual((await zero.waitFor(1)).map((e) => e.object.metadata.name), ['pre']);
    zero.abort();

    // label selector: an object leaving the selection is DELETED for this watcher
    const sel = await openWatch(`${base}?watch=true&labelSelector=tier%3Dfront`);
    await simRequest('POST', base, { body: cm('fe', { tier: 'front' }) });
    await simRequest('PATCH', `${base}/fe`, { body: { metadata: { labels: { tier: 'back' } } }, contentType: 'application/merge-patch+json' });
    assert.deepEqual((await sel.waitFor(2)).map((e) => e.type), ['ADDED', 'DELETED']);
    sel.abort();

    // path form and timeoutSeconds (ends cleanly, with a closing BOOKMARK when asked)
    const t0 = Date.now();
    const timed = await openWatch(`${s.url}/api/v1/watch/namespaces/default/configmaps/pre?timeoutSeconds=1&allowWatchBookmarks=true`);
    await timed.ended;
    assert.ok(Date.now() - t0 >= 900);
    assert.deepEqual(timed.events.map((e) => e.type), ['ADDED', 'BOOKMARK']);
    assert.equal(timed.events[1]!.object.kind, 'ConfigMap');

    // sendInitialEvents: initial-events-end bookmark
    const wl = await openWatch(`${base}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`);
    const wle = await wl.waitFor(3);
    assert.equal(wle[2]!.type, 'BOOKMARK');
    assert.equal(wle[2]!.object.metadata.annotations['k8s.io/initial-events-end'], 'true');
    wl.abort();

    // Table watch (kubectl get -w)
    const tw = await openWatch(`${base}?watch=true&resourceVersion=${pre.metadata.resourceVersion}`, { accept: ACCEPT_TABLE });
    assert.equal(tw.headers['content-type'], 'application/json;as=Table;v=v1;g=meta.k8s.io');
    const twe = await tw.waitFor(1);
    assert.equal(twe[0]!.object.kind, 'Table');
    tw.abort();
  });

  test('too old resourceVersion → ERROR 410 Expired event; close() ends open watches cleanly', async () => {
    const store = new ObjectStore({ historyLimit: 16 });
    const s = await startSimApiserver({ name: 'expire', kubernetesVersion: 'v1.37', store });
    const base = `${s.url}/api/v1/namespaces/default/configmaps`;
    const first = store.resourceVersion;
    for (let i = 0; i < 40; i++) await simRequest('POST', base, { body: cm(`c${i}`) });
    const w = await openWatch(`${base}?watch=true&resourceVersion=${first}`);
    await w.ended;
    assert.equal(w.events.length, 1);
    assert.equal(w.events[0]!.type, 'ERROR');
    assert.equal(w.events[0]!.object.code, 410);
    assert.equal(w.events[0]!.object.reason, 'Expired');

    const open = await openWatch(`${base}?watch=true&resourceVersion=${store.resourceVersion}`);
    const open2 = await openWatch(`${s.url}/api/v1/pods?watch=true`);
    const t0 = Date.now();
    await s.close();
    await open.ended; // resolves (not rejects): the chunked stream was terminated properly
    await open2.ended;
    assert.ok(Date.now() - t0 < 1500, 'close() does not wait for watches to time out');
  });
});

describe('shared store', () => {
  test('two sims of different versions see each other\'s objects and watch events', async () => {
    const store = new ObjectStore();
    const a = await sim({ name: 'sim-a', kubernetesVersion: 'v1.33', store });
    const b = await sim({ name: 'sim-b', kubernetesVersion: 'v1.37', store });
    assert.equal(a.store, b.store);
    const w = await openWatch(`${b.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${store.resourceVersion}`);
    const c = await simRequest('POST', `${a.url}/api/v1/namespaces/default/configmaps`, { body: cm('shared') });
    assert.equal(c.headers['x-sim-server'], 'sim-a');
    const got = await simGet(`${b.url}/api/v1/namespaces/default/configmaps/shared`);
    assert.equal(got.status, 200);
    assert.equal(got.headers['x-sim-server'], 'sim-b');
    assert.equal(got.json().metadata.uid, c.json().metadata.uid);
    const ev = await w.waitFor(1);
    assert.equal(ev[0]!.type, 'ADDED');
    assert.equal(ev[0]!.object.metadata.name, 'shared');
    await simRequest('PATCH', `${a.url}/api/v1/namespaces/default/configmaps/shared`, { body: { data: { k: 'x' } }, contentType: 'application/merge-patch+json' });
    assert.equal((await w.waitFor(2))[1]!.type, 'MODIFIED');
    w.abort();

    // Keyed by group/resource, not version: DeviceClass written via resource.k8s.io/v1beta2 (1.33) read via v1 (1.37).
    const dc = await simRequest('POST', `${a.url}/apis/resource.k8s.io/v1beta2/deviceclasses`, {
      body: { apiVersion: 'resource.k8s.io/v1beta2', kind: 'DeviceClass', metadata: { name: 'gpu' }, spec: {} },
    });
    assert.equal(dc.status, 201);
    const v1 = await simGet(`${b.url}/apis/resource.k8s.io/v1/deviceclasses/gpu`);
    assert.equal(v1.status, 200);
    assert.equal(v1.json().apiVersion, 'resource.k8s.io/v1');
    assert.equal(v1.json().kind, 'DeviceClass');
    assert.equal((await simGet(`${a.url}/apis/resource.k8s.io/v1/deviceclasses/gpu`)).status, 404, 'v1.33 does not serve resource.k8s.io/v1');
  });
});

describe('echo and recording', () => {
  test('X-Sim-Server and X-Sim-Request-Identity on every response; requests recorded as received', async () => {
    const s = await sim({ name: 'echo', kubernetesVersion: 'v1.33' });
    const headers = {
      authorization: 'Bearer abc',
      'x-remote-user': 'alice',
      'x-remote-group': ['system:masters', 'dev'],
      'x-kubernetes-peer-proxied': ['false', 'true'],
      'x-forwarded-for': '10.0.0.1',
      'audit-id': 'audit-123',
      'x-custom': 'Üñï',
    };
    s.requests.length = 0;
    const r = await simGet(`${s.url}/api/v1/namespaces/default/pods?limit=1`, headers);
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-sim-server'], 'echo');
    assert.equal(r.headers['audit-id'], 'audit-123');
    assert.deepEqual(JSON.parse(String(r.headers['x-sim-request-identity'])), {
      authorization: 'Bearer abc',
      remoteUser: 'alice',
      remoteGroups: ['system:masters', 'dev'],
      peerProxied: ['false', 'true'],
      forwardedFor: '10.0.0.1',
    });
    assert.equal(s.requests.length, 1);
    const rec = s.requests[0]!;
    assert.equal(rec.method, 'GET');
    assert.equal(rec.url, '/api/v1/namespaces/default/pods?limit=1');
    assert.equal(rec.headers['authorization'], 'Bearer abc');
    assert.deepEqual(rec.headers['x-remote-group'], ['system:masters', 'dev']);
    assert.deepEqual(rec.headers['x-kubernetes-peer-proxied'], ['false', 'true']);
    assert.equal(rec.headers['host'], `127.0.0.1:${s.port}`);

    const plain = await simGet(`${s.url}/nothing`);
    assert.equal(plain.status, 404);
    assert.equal(plain.headers['x-sim-server'], 'echo');
    assert.deepEqual(JSON.parse(String(plain.headers['x-sim-request-identity'])), { authorization: null, remoteUser: null, remoteGroups: [], peerProxied: [], forwardedFor: null });
    const nm = await simGet(`${s.url}/apis`, { accept: ACCEPT_V2, 'if-none-match': s.etags.apis, 'x-remote-user': 'bob' });
    assert.equal(nm.status, 304);
    assert.equal(JSON.parse(String(nm.headers['x-sim-request-identity'])).remoteUser, 'bob');

    const capped = await sim({ name: 'capped', kubernetesVersion: 'v1.33', recordLimit: 5 });
    for (let i = 0; i < 12; i++) await simGet(`${capped.url}/healthz?i=${i}`);
    assert.ok(capped.requests.length <= 5);
    assert.equal(capped.requests.at(-1)!.url, '/healthz?i=11');
  });
});

describe('misc endpoints', () => {
  test('health, version, pods/log (with follow)', async () => {
    const s = await sim({ name: 'misc', kubernetesVersion: 'v1.33' });
    for (const p of ['/healthz', '/readyz', '/livez', '/healthz/ping']) {
      const r = await simGet(s.url + p);
      assert.equal(r.status, 200, p);
      assert.equal(r.text, 'ok');
      assert.match(String(r.headers['content-type']), /^text\/plain/);
    }
    const v = (await simGet(`${s.url}/version`)).json();
    assert.equal(v.gitVersion, 'v1.33.0');
    assert.equal(v.major, '1');
    assert.equal(v.minor, '33');
    assert.match(v.platform, /^linux\//);
    const s37 = await sim({ name: 'misc37', kubernetesVersion: 'v1.37' });
    assert.equal((await simGet(`${s37.url}/version`)).json().gitVersion, 'v1.37.0-alpha.0');

    const pods = `${s.url}/api/v1/namespaces/default/pods`;
    await simRequest('POST', pods, { body: { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'x' }] } } });
    const log = await simGet(`${pods}/p/log`);
    assert.equal(log.status, 200);
    assert.equal(log.headers['content-type'], 'text/plain');
    assert.equal(log.text.trim().split('\n').length, 3);
    assert.equal((await simGet(`${pods}/p/log?tailLines=1`)).text.trim().split('\n').length, 1);
    assert.equal((await simGet(`${pods}/missing/log`)).status, 404);

    const ac = new AbortController();
    const t0 = Date.now();
    const r = await request(`${pods}/p/log?follow=true`, { signal: ac.signal, dispatcher: simAgent });
    let text = '';
    r.body.setEncoding('utf8');
    await new Promise<void>((resolve) => {
      r.body.on('data', (c: string) => {
        text += c;
        if (text.split('\n').length > 6) resolve();
      });
    });
    assert.ok(Date.now() - t0 >= 400, 'follow lines arrive over time');
    r.body.on('error', () => undefined);
    ac.abort();
  });

  test('connection upgrades get a well-formed Status (not a dropped connection)', async () => {
    const s = await sim({ name: 'upgrade', kubernetesVersion: 'v1.33' });
    const reply = await new Promise<string>((resolve, reject) => {
      const sock = connect(s.port, '127.0.0.1', () => {
        sock.write('GET /api/v1/namespaces/default/pods/p/exec?command=ls HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nX-Remote-User: eve\r\n\r\n');
      });
      let out = '';
      sock.setEncoding('utf8');
      sock.on('data', (c: string) => (out += c));
      sock.on('end', () => resolve(out));
      sock.on('error', reject);
    });
    assert.match(reply, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(reply, /\r\nX-Sim-Server: upgrade\r\n/);
    assert.match(reply, /"remoteUser":"eve"/);
    assert.equal(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)).reason, 'BadRequest');
    assert.equal(s.requests.at(-1)!.headers['upgrade'], 'websocket');
  });

  test('HTTPS serving with a throwaway certificate', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-tls-'));
    try {
      const ok = await new Promise<boolean>((resolve) => {
        execFile('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
          '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
          '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem')], { timeout: 20_000 }, (err) => resolve(!err));
      });
      if (!ok) {
        t.skip('openssl could not make a certificate');
        return;
      }
      const cert = readFileSync(join(dir, 'c.pem'));
      const s = await sim({ name: 'tls', kubernetesVersion: 'v1.37', tls: { cert, key: readFileSync(join(dir, 'k.pem')) } });
      assert.match(s.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const agent = new Agent({ connect: { ca: cert } });
      try {
        const r = await request(`${s.url}/apis`, { headers: { accept: ACCEPT_V2 }, dispatcher: agent });
        assert.equal(r.statusCode, 200);
        assert.equal(r.headers['etag'], s.etags.apis);
        await r.body.text();
      } finally {
        await agent.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('CLI prints one JSON line when listening and exits 0 on SIGTERM', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '..', '..', 'src', 'sim', 'main.ts'), '--kubernetes-version=v1.37', '--port=0', '--name=cli-sim', '--runtime-config=batch/v1=false'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error('no output from CLI')), 20_000);
        child.stdout!.on('data', (c: Buffer) => {
          out += c.toString();
          const nl = out.indexOf('\n');
          if (nl >= 0) {
            clearTimeout(timer);
            resolve(out.slice(0, nl));
          }
        });
        child.once('exit', (code) => reject(new Error(`CLI exited early with ${code}`)));
      });
      const info = JSON.parse(line) as { url: string; name: string };
      assert.equal(info.name, 'cli-sim');
      const r = await simGet(`${info.url}/apis/batch/v1`);
      assert.equal(r.status, 404);
      assert.equal(r.headers['x-sim-server'], 'cli-sim');
      const w = await openWatch(`${info.url}/api/v1/namespaces?watch=true`);
      await w.waitFor(4);
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      await w.ended;
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Real kubectl (skipped where the binaries are absent)

const KUBECTL_133 = kubectlPath(33);
const KUBECTL_127 = kubectlPath(27);

describe('kubectl', () => {
  for (const version of ['v1.37', 'v1.33'] as const) {
    test(`kubectl 1.33 api-resources against ${version} (aggregated discovery)`, async (t) => {
      if (!existsSync(KUBECTL_133)) return t.skip(`kubectl.1.33 not found at ${KUBECTL_133}`);
      const s = await sim({ name: `kubectl-${version}`, kubernetesVersion: version });
      s.requests.length = 0;
      const { stdout } = await kubectl(KUBECTL_133, s.url, ['api-resources']);
      const rows = rowsOf(stdout);
      const has = (res: string, gv: string): boolean => rows.some((r) => r[0] === res && r.includes(gv));
      assert.ok(has('pods', 'v1'));
      assert.ok(has('deployments', 'apps/v1'));
      if (version === 'v1.37') {
        assert.ok(has('podcertificaterequests', 'certificates.k8s.io/v1'), stdout);
        assert.ok(has('evictionrequests', 'lifecycle.k8s.io/v1alpha1'), stdout);
        assert.ok(!rows.some((r) => r[0] === 'ipaddresses' && r.includes('networking.k8s.io/v1beta1')));
      } else {
        assert.ok(!rows.some((r) => r[0] === 'podcertificaterequests'), 'v1.33 has no podcertificaterequests');
        assert.ok(has('deviceclasses', 'resource.k8s.io/v1beta2'), stdout);
        assert.ok(has('volumeattributesclasses', 'storage.k8s.io/v1beta1'), stdout);
      }
      const paths = s.requests.map((r) => r.url.split('?')[0]);
      assert.deepEqual([...new Set(paths)].sort(), ['/api', '/apis'], 'aggregated discovery needs only /api and /apis');
      const { stdout: versions } = await kubectl(KUBECTL_133, s.url, ['api-versions']);
      assert.equal(versions.split('\n').includes('networking.k8s.io/v1beta1'), version === 'v1.33', 'ipaddresses/servicecidrs v1beta1 only in 1.33');
    });
  }

  test('kubectl 1.27 api-resources uses legacy discovery (/apis/<g>/<v> per group version)', async (t) => {
    if (!existsSync(KUBECTL_127)) return t.skip(`kubectl.1.27 not found at ${KUBECTL_127}`);
    const s = await sim({ name: 'kubectl-127', kubernetesVersion: 'v1.33' });
    s.requests.length = 0;
    const { stdout } = await kubectl(KUBECTL_127, s.url, ['api-resources']);
    const rows = rowsOf(stdout);
    assert.ok(rows.some((r) => r[0] === 'deviceclasses' && r.includes('resource.k8s.io/v1beta2')), stdout);
    assert.ok(rows.some((r) => r[0] === 'configmaps'));
    const paths = new Set(s.requests.map((r) => r.url.split('?')[0]));
    assert.ok(paths.has('/api/v1'));
    assert.ok(paths.has('/apis/apps/v1'));
    assert.ok(paths.has('/apis/resource.k8s.io/v1beta2'));
    const apisReq = s.requests.find((r) => r.url.startsWith('/apis?'))!;
    assert.match(String(apisReq.headers['accept']), /v=v2beta1/);
  });

  test('kubectl 1.33 get configmaps -n default prints the created object', async (t) => {
    if (!existsSync(KUBECTL_133)) return t.skip(`kubectl.1.33 not found at ${KUBECTL_133}`);
    const s = await sim({ name: 'kubectl-get', kubernetesVersion: 'v1.37' });
    await simRequest('POST', `${s.url}/api/v1/namespaces/default/configmaps`, { body: cm('kubectl-cm') });
    const { stdout } = await kubectl(KUBECTL_133, s.url, ['get', 'configmaps', '-n', 'default']);
    const rows = rowsOf(stdout);
    assert.match(stdout.split('\n')[0]!, /^NAME\s+CREATED AT/);
    assert.deepEqual(rows.map((r) => r[0]), ['kubectl-cm']);
    const yaml = (await kubectl(KUBECTL_133, s.url, ['get', 'configmap', 'kubectl-cm', '-n', 'default', '-o', 'jsonpath={.data.k}'])).stdout;
    assert.equal(yaml, 'v');
  });
});
