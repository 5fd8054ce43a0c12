// Peer-aggregated discovery through the proxies (issue 4), with real clients where present.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { request } from 'undici';
import { twoVersionPlane, call, OLD, NEW } from '../support/plane';
import { eventually } from '../support/poll';
import { aggregatedFixture } from '../support/fixtures';
import { findKubectl, kubectl, rowsOf } from '../support/kubectl';
import { mergeResources } from '../../src/aggregation/merge';
import { decodeDiscovery } from '../../src/aggregation/codec/protobuf';
import type { Plane } from '../../src/demo/topology';
import type { APIGroupDiscoveryList } from '../../src/aggregation/types';

const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const V2_PB = 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

function gvrs(items: APIGroupDiscoveryList['items']): string[] {
  const out: string[] = [];
  for (const g of items) for (const v of g.versions ?? []) for (const r of v.resources ?? []) out.push(`${g.metadata.name ?? ''}/${v.version}/${r.resource}`);
  return out.sort();
}

/** Waits (bounded) until every member published a discovery snapshot that includes its peers. */
async function discoverySettled(plane: Plane): Promise<void> {
  for (const m of plane.members) await m.daemon.publisher.mergesDone();
}

describe('peer-aggregated discovery', () => {
  let plane: Plane & { tmp: string };
  before(async () => {
    plane = await twoVersionPlane('auto');
    await discoverySettled(plane);
  });
  after(async () => {
    await plane?.close();
  });

  test('/apis v2 through either proxy is the reference merge of the fixture pair, and both agree on it', async () => {
    const v133 = aggregatedFixture('v1.33').items;
    const v137 = aggregatedFixture('v1.37').items;
    const oldID = plane.member(OLD).daemon.config.serverID;
    const newID = plane.member(NEW).daemon.config.serverID;
    const want = mergeResources(oldID, v133, new Map([[newID, v137]]));
    for (const m of [OLD, NEW]) {
      const r = await call(plane.member(m).url, '/apis', { headers: { accept: V2 } });
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], V2);
      assert.equal(r.headers['vary'], 'Accept');
      assert.equal(r.headers['cache-control'], 'public');
      const got = r.json() as APIGroupDiscoveryList;
      assert.equal(got.kind, 'APIGroupDiscoveryList');
      assert.deepEqual(gvrs(got.items), gvrs(want));
      assert.deepEqual(got.items.map((g) => g.metadata.name), want.map((g) => g.metadata.name), 'group order');
      assert.equal(got.items.at(-1)!.metadata.name, 'lifecycle.k8s.io');
      assert.deepEqual(got.items.find((g) => g.metadata.name === 'storagemigration.k8s.io')!.versions!.map((v) => v.version), ['v1', 'v1alpha1', 'v1beta1']);
    }
  });

  test('profile=nopeer returns exactly the local document', async () => {
    for (const [m, v] of [[OLD, 'v1.33'], [NEW, 'v1.37']] as const) {
      const r = await call(plane.member(m).url, '/apis', { headers: { accept: `${V2};profile=nopeer` } });
      assert.equal(r.status, 200);
      assert.deepEqual(gvrs(r.json().items), gvrs(aggregatedFixture(v).items));
    }
  });

  test('protobuf decodes to the same content as JSON, with the same ETag; If-None-Match gives 304', async () => {
    const url = plane.member(OLD).url;
    const json = await call(url, '/apis', { headers: { accept: V2 } });
    const pb = await request(url + '/apis', { headers: { accept: V2_PB } });
    assert.equal(pb.statusCode, 200);
    assert.equal(pb.headers['content-type'], V2_PB);
    const decoded = decodeDiscovery(new Uint8Array(await pb.body.arrayBuffer()));
    assert.deepEqual(gvrs((decoded.object as APIGroupDiscoveryList).items), gvrs(json.json().items));
    const etag = String(json.headers['etag']);
    assert.equal(pb.headers['etag'], etag);
    const again = await call(url, '/apis', { headers: { accept: V2, 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
  });

  test('legacy discovery lists peer-only groups and answers their group/versions (the kubectl 1.27–1.29 and python path)', async () => {
    const url = plane.member(OLD).url;
    const list = await call(url, '/apis', { headers: { accept: 'application/json' } });
    assert.equal(list.json().kind, 'APIGroupList');
    const names = list.json().groups.map((g: { name: string }) => g.name);
    assert.ok(names.includes('lifecycle.k8s.io'), 'peer-only group listed');
    const gv = await call(url, '/apis/lifecycle.k8s.io/v1alpha1', { headers: { accept: 'application/json' } });
    assert.equal(gv.status, 200, gv.text);
    assert.equal(gv.json().kind, 'APIResourceList');
    assert.ok(gv.json().resources.some((r: { name: string }) => r.name === 'evictionrequests'));
    // A GV the local apiserver serves is its own answer (passes through).
    const local = await call(url, '/apis/apps/v1', { headers: { accept: 'application/json' } });
    assert.equal(local.headers['x-sim-server'], OLD);
  });

  test('/api is never merged: it passes through to the local apiserver', async () => {
    const r = await call(plane.member(OLD).url, '/api', { headers: { accept: V2 } });
    assert.equal(r.headers['x-sim-server'], OLD);
  });

  test('metrics: cache hits, misses and nopeer requests are counted', async () => {
    const text = await (await request(plane.member(OLD).metricsUrl)).body.text();
    assert.match(text, /aggregator_discovery_peer_aggregated_cache_hits_total [1-9]/);
    assert.match(text, /aggregator_discovery_peer_aggregated_cache_misses_total [1-9]/);
    assert.match(text, /aggregator_discovery_nopeer_requests_total [1-9]/);
    assert.match(text, /mvproxy_request_duration_seconds_count\{route="discovery",/);
  });

  for (const minor of [33, 30, 29, 27]) {
    test(`kubectl 1.${minor} api-resources through the old member lists the union of both versions`, async (t) => {
      const k = findKubectl(minor);
      if ('skip' in k) return t.skip(k.skip);
      const { stdout } = await kubectl(k.bin, plane.member(OLD).url, ['api-resources', '--api-group=scheduling.k8s.io']);
      const names = rowsOf(stdout).map((r) => r[0]);
      assert.ok(names.includes('workloads'), `peer-only workloads listed:\n${stdout}`);
      assert.ok(names.includes('priorityclasses'), stdout);
      const { stdout: lifecycle } = await kubectl(k.bin, plane.member(OLD).url, ['api-resources', '--api-group=lifecycle.k8s.io']);
      assert.ok(rowsOf(lifecycle).some((r) => r[0] === 'evictionrequests'), lifecycle);
    });
  }

  test('kubectl 1.33 auth whoami through the old member works against the simulated apiserver (its SelfSubjectReview is sent as protobuf)', async (t) => {
    const k = findKubectl(33);
    if ('skip' in k) return t.skip(k.skip);
    const { stdout } = await kubectl(k.bin, plane.member(OLD).url, ['auth', 'whoami']);
    assert.match(stdout, /system:anonymous/);
  });

  test('kubectl 1.33 creates and gets a resource only the new version serves, through the old member', async (t) => {
    const k = findKubectl(33);
    if ('skip' in k) return t.skip(k.skip);
    const url = plane.member(OLD).url;
    const manifest = JSON.stringify({ apiVersion: 'scheduling.k8s.io/v1beta1', kind: 'Workload', metadata: { name: 'kubectl-made', namespace: 'default' } });
    // Validation reads /openapi/v3: mvproxy lists the peer-only group/version and proxies its document.
    await kubectl(k.bin, url, ['create', '-f', '-'], manifest);
    await kubectl(k.bin, url, ['apply', '-f', '-'], manifest.replace('kubectl-made', 'kubectl-applied'));
    const { stdout } = await kubectl(k.bin, url, ['get', 'workloads.v1beta1.scheduling.k8s.io', '-n', 'default']);
    assert.ok(rowsOf(stdout).some((r) => r[0] === 'kubectl-made'), stdout);
    assert.ok(rowsOf(stdout).some((r) => r[0] === 'kubectl-applied'), stdout);
  });

  test('/openapi/v3 lists peer-only group/versions and their documents come from a peer', async () => {
    const url = plane.member(OLD).url;
    const index = await call(url, '/openapi/v3');
    assert.equal(index.status, 200);
    const paths = index.json().paths;
    assert.ok(paths['apis/apps/v1'].serverRelativeURL.startsWith('/openapi/v3/apis/apps/v1?hash='), 'local entries untouched');
    assert.equal(paths['apis/lifecycle.k8s.io/v1alpha1'].serverRelativeURL, '/openapi/v3/apis/lifecycle.k8s.io/v1alpha1');
    const doc = await call(url, paths['apis/lifecycle.k8s.io/v1alpha1'].serverRelativeURL);
    assert.equal(doc.status, 200);
    assert.equal(doc.headers['x-sim-server'], NEW);
    const local = await call(url, '/openapi/v3/apis/apps/v1');
    assert.equal(local.headers['x-sim-server'], OLD);
  });

  test('kubectl 1.27 (legacy discovery) gets a resource only the new version serves', async (t) => {
    const k = findKubectl(27);
    if ('skip' in k) return t.skip(k.skip);
    const { stdout } = await kubectl(k.bin, plane.member(OLD).url, ['get', 'evictionrequests.v1alpha1.lifecycle.k8s.io', '-n', 'default']);
    assert.ok(!/error/i.test(stdout));
  });

  test("python3-kubernetes' DynamicClient finds and lists a resource only the new version serves", async (t) => {
    const py = '/usr/bin/python3';
    const ok = await new Promise<boolean>((res) => execFile(py, ['-c', 'import kubernetes'], (err) => res(!err)));
    if (!ok) return t.skip('python3-kubernetes is not installed (apt-get install python3-kubernetes)');
    const script = `
import sys
from kubernetes import client, dynamic
cfg = client.Configuration()
cfg.host = sys.argv[1]
dc = dynamic.DynamicClient(client.ApiClient(cfg))
api = dc.resources.get(api_version='lifecycle.k8s.io/v1alpha1', kind='EvictionRequest')
print('FOUND', api.name)
print('ITEMS', len(api.get(namespace='default').items))
`;
    const out = await new Promise<string>((res, rej) => execFile(py, ['-c', script, plane.member(OLD).url], { timeout: 30_000, env: { ...process.env, HOME: plane.tmp } }, (err, so, se) => (err ? rej(new Error(`${err.message}\n${se}`)) : res(so))));
    assert.match(out, /FOUND evictionrequests/);
    assert.match(out, /ITEMS \d+/);
  });
});

describe('discovery follows the cluster', () => {
  let plane: Plane & { tmp: string };
  before(async () => {
    plane = await twoVersionPlane('node', {
      configure: (c) => {
        c.connectTimeoutMs = 500;
        c.discoveryRefreshIntervalMs = 300;
        c.peerDiscoveryGraceMs = 1000;
      },
    });
    await discoverySettled(plane);
  });
  after(async () => {
    await plane?.close();
  });

  async function mergedGroups(url: string): Promise<string[]> {
    return (await call(url, '/apis', { headers: { accept: V2 } })).json().items.map((g: { metadata: { name: string } }) => g.metadata.name);
  }
  /** Every wait below: 5 s, checked every 100 ms. */
  const POLL = { timeoutMs: 5000, intervalMs: 100 };

  test('a peer that changes its API set is reflected in the merged document and the routes within a refresh', async () => {
    const old = plane.member(OLD).url;
    assert.ok((await mergedGroups(old)).includes('lifecycle.k8s.io'));
    await plane.replaceApiserver(NEW, { runtimeConfig: ['lifecycle.k8s.io/v1alpha1=false'] });
    await eventually(async () => !(await mergedGroups(old)).includes('lifecycle.k8s.io'), { ...POLL, what: 'lifecycle.k8s.io leaves the merged document' });
    const r = await call(old, '/apis/lifecycle.k8s.io/v1alpha1/namespaces/default/evictionrequests');
    assert.equal(r.status, 404, 'nobody serves it any more: the local apiserver answers');
    await plane.replaceApiserver(NEW, { runtimeConfig: [] });
    await eventually(async () => (await mergedGroups(old)).includes('lifecycle.k8s.io'), { ...POLL, what: 'lifecycle.k8s.io is back' });
  });

  test("a dead peer's groups leave routing and the merged document after the grace period", async () => {
    const old = plane.member(OLD).url;
    await plane.stopProxy(NEW);
    try {
      const during = await call(old, '/apis/lifecycle.k8s.io/v1alpha1/namespaces/default/evictionrequests');
      assert.equal(during.status, 503, 'within the grace period: known but unreachable');
      await eventually(async () => !(await mergedGroups(old)).includes('lifecycle.k8s.io'), { ...POLL, what: 'lifecycle.k8s.io leaves' });
      const after = await call(old, '/apis/lifecycle.k8s.io/v1alpha1/namespaces/default/evictionrequests');
      assert.equal(after.status, 404);
    } finally {
      await plane.startProxy(NEW);
    }
    await eventually(async () => (await mergedGroups(old)).includes('lifecycle.k8s.io'), { ...POLL, what: 'lifecycle.k8s.io returns with the peer' });
  });
});
