// Routing against real kube-apiservers: every verb on a peer-only kind through the member whose
// apiserver does not serve it reaches the apiserver that does (judged by what that apiserver stored
// and audited), a kind both serve never leaves its node, and with the serving side's mvproxy gone
// the peer-only kind answers 503, never 404.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startControlPlane, type KubeControlPlane } from './support/control-plane';
import { KubeClient } from './support/client';
import { startMvproxies, type Member } from './support/mvproxy';
import { collectionPath, forEachFrontend, PEER_ONLY } from './support/suite';

describe('routing through mvproxy in front of kube-apiserver v1.34.4 and v1.37.2', () => {
  let plane: KubeControlPlane;
  before(async () => {
    plane = await startControlPlane();
  });
  after(async () => plane?.stop());

  forEachFrontend(() => plane, (frontend, members) => {

      for (const kind of PEER_ONLY) {
        test(`${kind.group}/${kind.version} ${kind.resource} (served only by ${kind.servedBy === 0 ? 'v1.34.4' : 'v1.37.2'}): create, get, list, watch, update, every patch type and delete through the other member`, async () => {
          const via = new KubeClient(members()[1 - kind.servedBy]!.url, plane.pki.caFile, { cert: plane.admin });
          const serving = new KubeClient(plane.apiservers[kind.servedBy]!.url, plane.pki.caFile, { cert: plane.admin });
          const coll = collectionPath(kind);
          const name = `routed-${frontend}-${kind.resource.slice(0, 10)}`;
          const item = `${coll}/${name}`;

          const list0 = await via.json<{ metadata: { resourceVersion: string } }>('GET', coll);
          const w = via.watch(`${coll}?watch=true&resourceVersion=${list0.metadata.resourceVersion}&timeoutSeconds=60`);
          assert.equal(await w.status, 200);

          const created = await via.json<{ metadata: { uid: string } }>('POST', coll, { body: kind.object(plane, name) });
          // What the serving apiserver stored, read there directly.
          const stored = await serving.json<{ metadata: { uid: string } }>('GET', item);
          assert.equal(stored.metadata.uid, created.metadata.uid);
          assert.equal((await via.json<{ metadata: { uid: string } }>('GET', item)).metadata.uid, created.metadata.uid);
          const list = await via.json<{ items: { metadata: { name: string } }[] }>('GET', coll);
          assert.ok(list.items.some((i) => i.metadata.name === name), 'LIST through the member shows the object');
          await w.until((e) => e.type === 'ADDED' && e.object.metadata?.name === name);

          // UPDATE, then each PATCH type; each change must land in the serving apiserver's storage.
          const current = await via.json<Record<string, unknown> & { metadata: Record<string, unknown> }>('GET', item);
          current.metadata.labels = { step: 'put' };
          await via.json('PUT', item, { body: current });
          const patches: [string, string, string][] = [
            ['application/merge-patch+json', JSON.stringify({ metadata: { labels: { step: 'merge' } } }), 'merge'],
            ['application/json-patch+json', JSON.stringify([{ op: 'replace', path: '/metadata/labels/step', value: 'json' }]), 'json'],
            ['application/strategic-merge-patch+json', JSON.stringify({ metadata: { labels: { step: 'strategic' } } }), 'strategic'],
          ];
          for (const [type, body, step] of patches) {
            await via.json('PATCH', item, { body, contentType: type });
            const s = await serving.json<{ metadata: { labels: Record<string, string> } }>('GET', item);
            assert.equal(s.metadata.labels.step, step, type);
          }
          const applied = { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name, ...(kind.namespaced ? { namespace: 'default' } : {}), labels: { step: 'apply' } } };
          await via.json('PATCH', `${item}?fieldManager=mvproxy-test&force=true`, { body: JSON.stringify(applied), contentType: 'application/apply-patch+yaml' });
          const s = await serving.json<{ metadata: { labels: Record<string, string>; managedFields: { manager: string }[] } }>('GET', item);
          assert.equal(s.metadata.labels.step, 'apply');
          assert.ok(s.metadata.managedFields.some((f) => f.manager === 'mvproxy-test'), 'server-side apply recorded the field manager');
          await w.until((e) => e.type === 'MODIFIED' && e.object.metadata?.name === name);

          // Who the serving apiserver believed made the create: the certificate user, carried over the peer hop.
          const ev = plane.apiservers[kind.servedBy]!.audit().find((e) => e.verb === 'create' && e.objectRef?.resource === kind.resource && e.objectRef?.name === name) ?? plane.apiservers[kind.servedBy]!.audit().find((e) => e.verb === 'create' && e.requestURI.startsWith(coll) && e.responseStatus?.code === 201);
          assert.ok(ev, 'the serving apiserver audited the create');
          assert.equal(ev.user.username, 'kubernetes-admin');
          assert.ok(ev.user.groups?.includes('system:masters'), `groups ${ev.user.groups}`);

          const del = await via.request('DELETE', item);
          assert.equal(del.status, 200, del.body);
          assert.equal((await serving.get(item)).status, 404);
          await w.until((e) => e.type === 'DELETED' && e.object.metadata?.name === name);
          w.close();
        });
      }

      test('a kind both apiservers serve never leaves its node', async () => {
        for (const [i, m] of members().entries()) {
          const c = new KubeClient(m.url, plane.pki.caFile, { cert: plane.admin });
          const name = `local-${frontend}-${i}`;
          await c.json('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: 'b' } } });
          await c.json('GET', `/api/v1/namespaces/default/configmaps/${name}`);
          const audited = (j: number) => plane.apiservers[j]!.audit().filter((e) => e.requestURI.includes(`/configmaps`) && (e.objectRef?.name === name));
          assert.ok(audited(i).length >= 2, `apiserver ${i} served its member's configmap requests`);
          assert.equal(audited(1 - i).length, 0, `apiserver ${1 - i} never saw member ${i}'s configmap requests`);
        }
      });

      test('the serving side gone: a peer-only kind answers 503 with a Status, never 404', async () => {
        const kind = PEER_ONLY[0]!;
        await members()[kind.servedBy]!.stop();
        const via = new KubeClient(members()[1 - kind.servedBy]!.url, plane.pki.caFile, { cert: plane.admin });
        for (const path of [collectionPath(kind), `${collectionPath(kind)}/does-not-matter`]) {
          const r = await via.get(path);
          assert.equal(r.status, 503, `${path}: ${r.status} ${r.body}`);
          const st = JSON.parse(r.body) as { kind: string; code: number; reason: string };
          assert.equal(st.kind, 'Status');
          assert.equal(st.code, 503);
        }
      });
  });

  describe('peers found through identity Leases in the real coordination.k8s.io API (front end node)', () => {
    let members: Member[] = [];
    before(async () => {
      members = await startMvproxies(plane, { frontend: 'node', peerDiscovery: 'lease' });
    });
    after(async () => Promise.all(members.map((m) => m.stop())));

    test('each mvproxy writes its Lease through its apiserver, finds the other one there, and routes to it', async () => {
      const admin = new KubeClient(plane.apiservers[0]!.url, plane.pki.caFile, { cert: plane.admin });
      const leases = await admin.json<{ items: { metadata: { name: string } }[] }>('GET', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases');
      for (const m of members) assert.ok(leases.items.some((l) => l.metadata.name === m.name), `${m.name}'s identity Lease is in kube-system (there: ${leases.items.map((l) => l.metadata.name).join(', ')})`);
      for (const kind of PEER_ONLY) {
        const via = new KubeClient(members[1 - kind.servedBy]!.url, plane.pki.caFile, { cert: plane.admin });
        const r = await via.get(collectionPath(kind));
        assert.equal(r.status, 200, `${kind.resource} through ${members[1 - kind.servedBy]!.name}: ${r.body.slice(0, 200)}`);
      }
    });
  });
});
