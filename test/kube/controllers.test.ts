// The real controllers in the loop (issue 39): kube-controller-manager and kube-scheduler of the old
// release (v1.34.4) on the old node, connected through the mvproxy beside its apiserver as kubeadm
// connects them (all default controllers, leader election, --use-service-account-credentials),
// against v1.34.4 + v1.37.2 at their release defaults: the namespace controller, the garbage
// collector and the scheduler (controllers/scenario.ts says what is counted). The same scenario
// with the controllers connected straight to the old apiserver runs first as the comparison (its
// numbers are reported, not asserted: it is what KEP-4020 exists to prevent); through mvproxy, on
// each front end, nothing leaks, nothing is wrongly deleted, every right deletion happens, the
// Deployment is scheduled, and the controllers log no error mvproxy caused.
// `npm run real-controllers` writes the full comparison, a load balancer included, to
// docs/real-controllers.md.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startControlPlane, NEW, OLD, type KubeControlPlane } from './support/control-plane';
import { KubeClient } from './support/client';
import { frontends } from './support/suite';
import { startMvproxies, type Member } from './support/mvproxy';
import { causedByMvproxy, DEAD_DEPENDENTS, LIVE_DEPENDENTS, PCR, REPLICAS, runScenario, runStartupRace, type Outcome } from './controllers/scenario';

const line = (o: Outcome) => `namespace finalized ${o.namespaceFinalized}, PodCertificateRequests leaked ${o.leaked}/${PCR}, wrong GC deletions ${o.wrongDeletions}/${LIVE_DEPENDENTS}, right ${o.rightDeletions}/${DEAD_DEPENDENTS}, pods scheduled ${o.scheduled}/${REPLICAS}, error lines ${o.errors.length}, leader changes ${o.leaderChanges}`;

describe('the real kube-controller-manager and kube-scheduler (v1.34.4) through mvproxy', () => {
  let plane: KubeControlPlane;

  before(async () => {
    plane = await startControlPlane([
      { name: 'kube-old', version: OLD, releaseDefaults: true },
      { name: 'kube-new', version: NEW, releaseDefaults: true },
    ]);
    const served = async (i: number, path: string) => (await new KubeClient(plane.apiservers[i]!.url, plane.pki.caFile, { cert: plane.admin }).get(path)).status;
    assert.equal(await served(1, '/apis/certificates.k8s.io/v1/podcertificaterequests'), 200, 'v1.37.2 serves PodCertificateRequest');
    assert.equal(await served(0, '/apis/certificates.k8s.io/v1/podcertificaterequests'), 404, 'v1.34.4 does not');
    assert.equal(await served(0, '/apis/certificates.k8s.io/v1/clustertrustbundles'), 404, 'nor ClusterTrustBundle');
  });
  after(async () => plane?.stop());

  test("the comparison, connected straight to the old apiserver (kubeadm's default): reported, not asserted", async (t) => {
    const o = await runScenario(plane, plane.apiservers[0]!.url, 'direct');
    t.diagnostic(`direct: ${line(o)}`);
    assert.equal(o.scheduled, REPLICAS, 'the comparison ran: the scheduler works either way');
  });

  test('mvproxy never answers from a partial view: the namespace controller, started with mvproxy while its peer is not up yet, leaks nothing (with --peer-discovery-startup-timeout=0s, the view before the fix, it does)', async (t) => {
    const before = await runStartupRace(plane, 'node', 'race-partial', ['--peer-discovery-startup-timeout=0s']);
    t.diagnostic(`a local-only view served at start: namespace finalized ${before.namespaceFinalized}, leaked ${before.leaked}/${PCR}`);
    const after = await runStartupRace(plane, 'node', 'race-complete', []);
    t.diagnostic(`discovery held until complete: namespace finalized ${after.namespaceFinalized}, leaked ${after.leaked}/${PCR}`);
    assert.equal(after.namespaceFinalized, true, 'the namespace is finalized once the peer is merged');
    assert.equal(after.leaked, 0, 'nothing left in etcd');
    assert.ok(before.leaked > 0, `the race is real: served from the local-only view, the namespace controller leaked (${before.leaked}); else this test proves nothing`);
  });

  for (const { frontend, skip } of frontends()) {
    describe(`through mvproxy, ${frontend} front end`, { skip }, () => {
      let members: Member[] = [];
      before(async () => {
        members = await startMvproxies(plane, { frontend });
      });
      after(async () => Promise.all(members.map((m) => m.stop())));

      test("nothing leaked, no wrong deletion, every right one, the Deployment scheduled, no error mvproxy caused in the controllers' logs", async (t) => {
        const o = await runScenario(plane, members[0]!.url, frontend);
        t.diagnostic(`mvproxy ${frontend}: ${line(o)}`);
        for (const e of o.errors) t.diagnostic(`error line: ${e.slice(0, 300)}`);
        assert.equal(o.namespaceFinalized, true, 'the namespace is finalized');
        assert.equal(o.leaked, 0, 'no PodCertificateRequest is left behind in etcd');
        assert.equal(o.wrongDeletions, 0, 'no dependent of a live owner is deleted');
        assert.equal(o.rightDeletions, DEAD_DEPENDENTS, 'every dependent of a deleted owner is deleted');
        assert.equal(o.scheduled, REPLICAS, "the Deployment's pods are scheduled by the real scheduler");
        assert.equal(o.leaderChanges, 0, 'each controller kept its leader Lease');
        assert.deepEqual(o.errors.filter(causedByMvproxy), [], 'no controller error mvproxy caused');
      });
    });
  }
});
