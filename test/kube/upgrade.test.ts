// The rolling upgrade through mvproxy (test/kube/upgrade/scenario.ts; npm run upgrade-scenario
// prints the whole table: both front ends, each way of stopping, --local-failover=false and the
// clients straight to the apiservers): a controller-manager-like client per node (leader election,
// informers, writes) and kubectl watches run while kube-apiserver v1.34.4 is replaced by v1.37.2,
// one after the other, on the same etcd. kube-a is stopped gracefully, kube-b is killed (SIGKILL):
// both ways in one run, which is no longer than the two graceful stops it replaces.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runUpgradeScenario, upgradeReport } from './upgrade/scenario';

test('rolling upgrade v1.34.4 → v1.37.2 through mvproxy, kube-a stopped gracefully and kube-b killed: no 404 for an object that exists, every 503 inside its window; each node\'s clients are served by the peer while its own apiserver restarts (no request waits for the client\'s timeout, no ConfigMap request fails, the lease is kept, nothing runs twice)', { timeout: 240_000 }, async (t) => {
  const r = await runUpgradeScenario({ mode: 'mvproxy', stop: ['graceful', 'sigkill'], steadyMs: 3000, mixedMs: 8000, afterMs: 5000 });
  const report = upgradeReport([r]);
  for (const line of report.split('\n')) t.diagnostic(line);
  for (const c of r.clients) {
    assert.equal(c.spurious404, 0, `${c.via}: 404s for objects that existed\n${report}`);
    assert.equal(c.outsideWindow, 0, `${c.via}: 503s or unanswered requests outside the window of its own apiserver's restart\n${report}`);
    assert.ok((c.byCode['200'] ?? 0) > 0, `${c.via}: no request succeeded\n${report}`);
    // --local-failover (issue 30): with it off, every one of these fails (requests wait for
    // client-go's 5 s timeout or get the local 503, the controller loses its lease).
    assert.equal(c.clientTimeouts, 0, `${c.via}: requests that got no answer until the client gave up\n${report}`);
    // Less a request in flight on the apiserver at its SIGKILL, or written on a connection its graceful
    // stop closed as idle before mvproxy could know: it may have run, so it fails (as it would directly,
    // and through the round-robin load balancer) instead of going to a peer (ClientCounts.killedInFlight).
    assert.equal(c.failed.configmaps - c.killedInFlight, 0, `${c.via}: ConfigMap requests failed though a peer serves them\n${report}`);
    assert.equal(c.leaderLost, 0, `${c.via}: the controller lost its Lease\n${report}`);
    assert.equal(c.runTwice, 0, `${c.via}: requests run twice\n${report}`);
    assert.ok(Object.values(c.failedOver ?? {}).reduce((s, n) => s + n, 0) > 0, `${c.via}: no request failed over to a peer\n${report}`);
    // The watches the restarting apiserver ends are ended (not mvproxy's to hide); each kubectl
    // get -w starts again once, not in a loop while its node's apiserver is down.
    assert.ok(c.kubectlWatchRestarts <= 2, `${c.via}: kubectl get -w restarted more than once per watch\n${report}`);
  }
  // The client beside the apiserver upgraded last reaches the v1.37-only kind through mvproxy while
  // its own apiserver is still v1.34.4 (straight to that apiserver, every such request is a 404).
  const late = r.clients[1]!;
  assert.ok(late.newerOnlyWhileMixed.ok > 0, `${late.via}: no v1.37-only request answered while mixed\n${report}`);
  assert.equal(late.newerOnlyWhileMixed.failed, 0, `${late.via}: v1.37-only requests failed while mixed\n${report}`);
});
