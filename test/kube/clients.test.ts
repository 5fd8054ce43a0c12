// Real clients through the member whose apiserver (v1.34.4) does not serve the kind: every kubectl
// 1.27 … 1.33 the machine has (api-resources, create, apply, get -w, delete), python3-kubernetes'
// DynamicClient, and a client-go informer (Go, test/kube/go/cmd/informer); protobuf requests and
// watches on both routes.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN_DIR, kubectlAs, startControlPlane, type KubeControlPlane } from './support/control-plane';
import { KubeClient } from './support/client';
import { forEachFrontend, PEER_ONLY } from './support/suite';
import { kubectlPath } from '../support/kubectl';
import { eventually, PollTimeout } from '../support/poll';

const CTB = PEER_ONLY.find((k) => k.resource === 'clustertrustbundles')!;
const HPA = PEER_ONLY.find((k) => k.resource === 'horizontalpodautoscalers')!;
const OLD_MEMBER = 0; // beside v1.34.4, which does not serve ClusterTrustBundle

/**
 * Every client goes through the v1.34 member and uses ClusterTrustBundle, a v1.37-only kind in a
 * group/version both apiservers serve (certificates.k8s.io/v1). kubectl ≥ 1.30 reads aggregated
 * discovery; kubectl ≤ 1.29 and python read legacy discovery, where mvproxy answers
 * /apis/certificates.k8s.io/v1 with the union of both apiservers (issue 16 §1).
 */

describe('real clients through mvproxy', () => {
  let plane: KubeControlPlane;
  let adminKC: string;
  before(async () => {
    plane = await startControlPlane();
    adminKC = plane.kubeconfig('admin', { cert: plane.admin });
  });
  after(async () => plane?.stop());

  forEachFrontend(() => plane, (frontend, members) => {

      for (let minor = 27; minor <= 33; minor++) {
        const bin = kubectlPath(minor);
        const kind = CTB;
        const via = OLD_MEMBER;
        test(`kubectl 1.${minor}: api-resources, create, apply, get -w and delete of ${kind.kind} (${kind.group}/${kind.version}, not served by the apiserver behind the member)`, { skip: existsSync(bin) ? undefined : `${bin} not found` }, async () => {
          const server = members()[via]!.url;
          const k = (args: string[], input?: string) => kubectlAs(adminKC, server, args, { bin, input });
          const type = `${kind.resource}.${kind.version}.${kind.group}`;
          const names = (await k(['api-resources', `--api-group=${kind.group}`, '-o', 'name'])).stdout;
          assert.match(names, new RegExp(`^${kind.resource}\\.${kind.group.replace(/\./g, '\\.')}$`, 'm'), `kubectl 1.${minor} api-resources`);
          const name = `kubectl-${minor}-${frontend}`;
          const obj = kind.object(plane, name);
          const ns = kind.namespaced ? ['-n', 'default'] : [];
          assert.match((await k(['create', ...ns, '-f', '-'], JSON.stringify(obj))).stdout, /created/);
          (obj.metadata as Record<string, unknown>).labels = { via: 'apply' };
          assert.match((await k(['apply', ...ns, '-f', '-'], JSON.stringify(obj))).stdout, /configured/);
          const got = JSON.parse((await k(['get', ...ns, type, name, '-o', 'json'])).stdout) as { apiVersion: string; metadata: { labels: Record<string, string> } };
          assert.equal(got.metadata.labels.via, 'apply');
          assert.equal(got.apiVersion, `${kind.group}/${kind.version}`);

          // get -w: the watch through mvproxy sees the deletion made by another kubectl.
          const watch = spawn(bin, [`--kubeconfig=${adminKC}`, `--server=${server}`, 'get', ...ns, type, '--watch', '--output-watch-events', '-o', 'json', `--field-selector=metadata.name=${name}`], { env: { ...process.env, HOME: plane.dir } });
          let out = '';
          watch.stdout.on('data', (d: Buffer) => (out += d.toString()));
          watch.stderr.on('data', (d: Buffer) => (out += d.toString()));
          try {
            await until(() => /"type":\s*"ADDED"/.test(out), 20_000, () => `kubectl 1.${minor} get -w printed: ${out.slice(0, 300)}`);
            assert.match((await k(['delete', ...ns, type, name])).stdout, /deleted/);
            await until(() => /"type":\s*"DELETED"/.test(out), 20_000, () => `kubectl 1.${minor} get -w printed: ${out.slice(-300)}`);
          } finally {
            watch.kill();
          }
        });
      }


      test("python3-kubernetes' DynamicClient creates, lists and deletes a v1.37-only kind of a group/version the v1.34 apiserver also serves, through the v1.34 member (legacy discovery)", async (t) => {
        const py = '/usr/bin/python3';
        const ok = await new Promise<boolean>((res) => execFile(py, ['-c', 'import kubernetes'], (err) => res(!err)));
        if (!ok) return t.skip('python3-kubernetes is not installed (.ci/run installs it)');
        const name = `python-${frontend}`;
        const script = `
import sys, json
from kubernetes import client, config, dynamic
config.load_kube_config(config_file=sys.argv[1])
cfg = client.Configuration.get_default_copy()
cfg.host = sys.argv[2]
dc = dynamic.DynamicClient(client.ApiClient(cfg))
api = dc.resources.get(api_version='certificates.k8s.io/v1', kind='ClusterTrustBundle')
api.create(body=json.loads(sys.argv[3]))
print('ITEMS', sorted(i.metadata.name for i in api.get().items))
api.delete(name=sys.argv[4])
`;
        const out = await new Promise<string>((res, rej) =>
          execFile(py, ['-c', script, adminKC, members()[OLD_MEMBER]!.url, JSON.stringify(CTB.object(plane, name)), name], { timeout: 60_000, env: { ...process.env, HOME: plane.dir } }, (err, so, se) => (err ? rej(new Error(`${err.message}\n${se}`)) : res(so))),
        );
        assert.match(out, new RegExp(`ITEMS .*'${name}'`));
      });

      test('a client-go informer on the v1.37-only kind through the v1.34 member sees adds, updates and deletes', async () => {
        const bin = join(BIN_DIR, 'informer');
        const inf = spawn(bin, [`-kubeconfig=${adminKC}`, `-server=${members()[OLD_MEMBER]!.url}`, `-group=${CTB.group}`, `-version=${CTB.version}`, `-resource=${CTB.resource}`, '-duration=60s']);
        let out = '';
        inf.stdout.on('data', (d: Buffer) => (out += d.toString()));
        inf.stderr.on('data', (d: Buffer) => (out += d.toString()));
        const events = () => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { type: string; name?: string });
        const seen = (type: string, name?: string) => events().some((e) => e.type === type && (name === undefined || e.name === name));
        try {
          await until(() => seen('SYNCED'), 30_000, () => `informer printed: ${out}`);
          const c = new KubeClient(members()[OLD_MEMBER]!.url, plane.pki.caFile, { cert: plane.admin });
          const name = `informer-${frontend}`;
          await c.json('POST', '/apis/certificates.k8s.io/v1/clustertrustbundles', { body: CTB.object(plane, name) });
          await until(() => seen('ADD', name), 20_000, () => out);
          await c.json('PATCH', `/apis/certificates.k8s.io/v1/clustertrustbundles/${name}`, { body: JSON.stringify({ metadata: { labels: { step: 'updated' } } }), contentType: 'application/merge-patch+json' });
          await until(() => seen('UPDATE', name), 20_000, () => out);
          await c.json('DELETE', `/apis/certificates.k8s.io/v1/clustertrustbundles/${name}`);
          await until(() => seen('DELETE', name), 20_000, () => out);
          assert.ok(!seen('ERROR'), `the informer's watch saw no error: ${out}`);
        } finally {
          inf.kill();
        }
      });

      test('protobuf: GET, LIST and WATCH of a peer-only kind in application/vnd.kubernetes.protobuf on both routes', async () => {
        const PB = 'application/vnd.kubernetes.protobuf';
        for (const kind of [HPA, CTB]) {
          const name = `pb-${frontend}-${kind.resource.slice(0, 8)}`;
          const coll = kind.namespaced ? `/apis/${kind.group}/${kind.version}/namespaces/default/${kind.resource}` : `/apis/${kind.group}/${kind.version}/${kind.resource}`;
          const admin = new KubeClient(plane.apiservers[kind.servedBy]!.url, plane.pki.caFile, { cert: plane.admin });
          await admin.json('POST', coll, { body: kind.object(plane, name) });
          for (const [i, route] of [[kind.servedBy, 'local'], [1 - kind.servedBy, 'peer']] as const) {
            const c = new KubeClient(members()[i]!.url, plane.pki.caFile, { cert: plane.admin });
            for (const path of [`${coll}/${name}`, coll]) {
              const r = await c.get(path, { accept: PB });
              assert.equal(r.status, 200, `${route} ${path}`);
              assert.equal(r.headers['content-type'], PB);
              assert.ok(r.raw.subarray(0, 4).equals(Buffer.from('k8s\0')), 'the Kubernetes protobuf envelope');
              assert.ok(r.raw.includes(Buffer.from(name)), 'carries the object');
            }
            // A protobuf watch: length-prefixed frames, the first an ADDED of the object.
            const direct = await admin.request('GET', `${coll}?watch=true&fieldSelector=metadata.name%3D${name}&timeoutSeconds=2`, { headers: { accept: PB } });
            const through = await c.request('GET', `${coll}?watch=true&fieldSelector=metadata.name%3D${name}&timeoutSeconds=2`, { headers: { accept: PB }, });
            assert.equal(through.status, 200, route);
            assert.equal(through.headers['content-type'], direct.headers['content-type'], `${route}: the watch's content type`);
            const frameLen = through.raw.readUInt32BE(0);
            assert.ok(frameLen > 0 && frameLen + 4 <= through.raw.length, `${route}: a length-prefixed frame`);
            assert.ok(through.raw.includes(Buffer.from('ADDED')) && through.raw.includes(Buffer.from(name)), `${route}: the ADDED event`);
          }
          await admin.request('DELETE', `${coll}/${name}`);
        }
      });
  });
});

async function until(cond: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  try {
    await eventually(cond, { what: 'the condition', timeoutMs, intervalMs: 100 });
  } catch (e) {
    // what() describes the state at the end (the output so far), not at the start.
    if (e instanceof PollTimeout) e.message = `timed out after ${timeoutMs} ms: ${what()}`;
    throw e;
  }
}
