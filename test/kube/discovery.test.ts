// Discovery against the real thing: the same v1.34.4 + v1.37.2 pair, this time with Kubernetes'
// own peer proxy on (gate UnknownVersionInteroperabilityProxy, --peer-ca-file,
// --peer-advertise-ip/-port, as the seed document configures it), so kube-apiserver v1.37.2 serves
// its own peer-aggregated /apis. mvproxy beside it (which asks each apiserver for profile=nopeer, the
// local view) must answer /apis with the same document, in JSON and in protobuf; and profile=nopeer
// through mvproxy must be the local apiserver's own document.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startControlPlane, type KubeControlPlane } from './support/control-plane';
import { KubeClient, type Cred } from './support/client';
import type { Member } from './support/mvproxy';
import { waitFor } from './support/processes';
import { forEachFrontend } from './support/suite';

const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const V2_PB = 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const NOPEER = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer';

interface Doc {
  items: { metadata: { name: string }; versions: { version: string; resources: { resource: string }[] }[] }[];
}
/** How many /apis answers the member served from its own merged view (not passed through). */
async function servedByMvproxy(m: Member): Promise<number> {
  const text = await fetch(`${m.metricsURL}/metrics`).then((r) => r.text());
  const line = text.split('\n').find((l) => l.startsWith('mvproxy_request_duration_seconds_count{route="discovery"'));
  return line ? Number(line.split(' ').pop()) : 0;
}

const gvrs = (d: Doc) => d.items.flatMap((g) => g.versions.flatMap((v) => v.resources.map((r) => `${g.metadata.name}/${v.version}/${r.resource}`))).sort();

describe('peer-aggregated discovery: mvproxy against kube-apiserver v1.37.2 with the in-tree feature on', () => {
  let plane: KubeControlPlane;
  const NEW = 1;
  before(async () => {
    plane = await startControlPlane([
      { name: 'kube-old', version: 'v1.34.4' as const, args: ['--feature-gates=UnknownVersionInteroperabilityProxy=true'] },
      { name: 'kube-new', version: 'v1.37.2' as const, args: ['--feature-gates=UnknownVersionInteroperabilityProxy=true'] },
    ].map((s) => ({ ...s, inTreePeerProxy: true })));
    // The in-tree cache fills when the peer's identity lease and endpoint record are seen (~10 s).
    const direct = new KubeClient(plane.apiservers[NEW]!.url, plane.pki.caFile, { cert: plane.admin });
    await waitFor(() => 'v1.37.2 lists v1.34.4-only autoscaling/v1 in its peer-aggregated /apis', async () => {
      const r = await direct.get('/apis', { accept: V2 });
      return r.status === 200 && gvrs(JSON.parse(r.body) as Doc).includes('autoscaling/v1/horizontalpodautoscalers');
    }, 90_000);
  });
  after(async () => plane?.stop());

  forEachFrontend(() => plane, (frontend, members) => {

      test('/apis (aggregated v2, JSON) through the v1.37.2 member equals v1.37.2\'s own peer-aggregated document', async () => {
        const inTree = await new KubeClient(plane.apiservers[NEW]!.url, plane.pki.caFile, { cert: plane.admin }).get('/apis', { accept: V2 });
        const before = await servedByMvproxy(members()[NEW]!);
        const ours = await new KubeClient(members()[NEW]!.url, plane.pki.caFile, { cert: plane.admin }).get('/apis', { accept: V2 });
        assert.equal(ours.status, 200);
        assert.equal(await servedByMvproxy(members()[NEW]!), before + 1, 'mvproxy answered from its own merge, not the apiserver\'s');
        assert.equal(ours.headers['content-type'], inTree.headers['content-type']);
        assert.deepEqual(JSON.parse(ours.body), JSON.parse(inTree.body));
      });

      test('/apis (aggregated v2, protobuf) through the v1.37.2 member is byte for byte v1.37.2\'s own', async () => {
        const inTree = await new KubeClient(plane.apiservers[NEW]!.url, plane.pki.caFile, { cert: plane.admin }).get('/apis', { accept: V2_PB });
        const before = await servedByMvproxy(members()[NEW]!);
        const ours = await new KubeClient(members()[NEW]!.url, plane.pki.caFile, { cert: plane.admin }).get('/apis', { accept: V2_PB });
        assert.equal(ours.status, 200);
        assert.equal(await servedByMvproxy(members()[NEW]!), before + 1, 'mvproxy answered from its own merge');
        assert.equal(ours.headers['content-type'], inTree.headers['content-type']);
        assert.ok(ours.raw.equals(inTree.raw), `protobuf bodies differ: ${ours.raw.length} vs ${inTree.raw.length} bytes`);
      });

      // Issue 38's adversarial probe: mvproxy answered these from its merged view to anyone. The
      // oracle is v1.37.2 itself: its peer-aggregated /apis, its /openapi/v3 and the legacy
      // /apis/autoscaling/v1 of the group only its peer serves, asked anonymously and with a bad
      // token, after an admin read them through the same member (a credential it lets through is
      // remembered: never anyone else's).
      test('anonymous and a bad token get v1.37.2\'s own answer (403, 401) for /apis, legacy discovery and the /openapi/v3 index, after an admin read them; a user\'s HEAD after its GET too', async () => {
        const direct = (cred: Cred) => new KubeClient(plane.apiservers[NEW]!.url, plane.pki.caFile, cred);
        const ours = (cred: Cred) => new KubeClient(members()[NEW]!.url, plane.pki.caFile, cred);
        const reads: [string, string][] = [['/apis', V2], ['/apis', 'application/json'], ['/apis/autoscaling/v1', 'application/json'], ['/apis/autoscaling', 'application/json'], ['/openapi/v3', 'application/json']];
        for (const [path, accept] of reads) {
          const admin = await ours({ cert: plane.admin }).get(path, { accept });
          assert.equal(admin.status, 200, `${path} (${accept}) as admin: ${admin.body.slice(0, 200)}`);
          for (const [who, cred] of [['anonymous', { anonymous: true }], ['a bad token', { token: 'not-a-token' }]] as [string, Cred][]) {
            const want = await direct(cred).get(path, { accept });
            assert.ok(want.status === 401 || want.status === 403, `v1.37.2 refuses ${who} ${path}: ${want.status}`);
            const got = await ours(cred).get(path, { accept });
            assert.equal(got.status, want.status, `${path} (${accept}), ${who}: ${got.body.slice(0, 200)}`);
            assert.deepEqual(JSON.parse(got.body), JSON.parse(want.body), `${path}, ${who}: the apiserver's own Status`);
          }
        }
        // What was let through is that request only: RBAC's system:discovery grants "get", and a
        // HEAD is authorized as "head", so a user's HEAD after its own GET is the apiserver's 403
        // (a grant keyed by the credential alone served it: found by the attack on this fix).
        const user = { cert: await plane.pki.user('discovery-reader', []) };
        for (const [path, accept] of reads) {
          assert.equal((await ours(user).get(path, { accept })).status, 200, `${path}: GET as an ordinary user`);
          const want = await direct(user).request('HEAD', path, { headers: { accept } });
          const got = await ours(user).request('HEAD', path, { headers: { accept } });
          assert.equal(got.status, want.status, `${path} (${accept}): HEAD after a GET, as v1.37.2 answers it`);
        }
      });

      test('profile=nopeer through each member is its apiserver\'s own local document', async () => {
        for (const [i, m] of members().entries()) {
          const local = await new KubeClient(plane.apiservers[i]!.url, plane.pki.caFile, { cert: plane.admin }).get('/apis', { accept: NOPEER });
          const ours = await new KubeClient(m.url, plane.pki.caFile, { cert: plane.admin }).get('/apis', { accept: NOPEER });
          assert.equal(ours.status, 200);
          assert.deepEqual(JSON.parse(ours.body), JSON.parse(local.body), m.name);
        }
      });
  });
});
