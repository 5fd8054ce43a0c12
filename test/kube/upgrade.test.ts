// The rolling upgrade through mvproxy (test/kube/upgrade/scenario.ts; npm run upgrade-scenario
// prints it side by side with the clients straight to the apiservers): a client-go controller per
// apiserver and kubectl watches run while kube-apiserver v1.34.4 is replaced by v1.37.2, one after
// the other, on the same etcd.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runUpgradeScenario, upgradeTable } from './upgrade/scenario';

test('rolling upgrade v1.34.4 → v1.37.2 with a client-go controller and kubectl watches through mvproxy: no 404 for an object that exists, every 503 inside its window, every client recovers', { timeout: 240_000 }, async (t) => {
  const r = await runUpgradeScenario({ mode: 'mvproxy', steadyMs: 3000, mixedMs: 8000, afterMs: 5000 });
  const table = `${upgradeTable([r])}\n${r.clients.map((c) => `${c.via}: ${c.samples.join('; ')}`).join('\n')}\n${r.timeline.map((e) => `${(e.atMs / 1000).toFixed(2)} s ${e.event}`).join('\n')}`;
  for (const line of table.split('\n')) t.diagnostic(line);
  for (const c of r.clients) {
    assert.equal(c.spurious404, 0, `${c.via}: 404s for objects that existed\n${table}`);
    assert.equal(c.outsideWindow, 0, `${c.via}: 503s or unanswered requests outside the window of its own apiserver's restart\n${table}`);
    assert.ok((c.byCode['200'] ?? 0) > 0, `${c.via}: no request succeeded\n${table}`);
  }
  // The client beside the apiserver upgraded last reaches the v1.37-only kind through mvproxy while
  // its own apiserver is still v1.34.4 (straight to that apiserver, every such request is a 404).
  const late = r.clients[1]!;
  assert.ok(late.newerOnlyWhileMixed.ok > 0, `${late.via}: no v1.37-only request answered while mixed\n${table}`);
  assert.equal(late.newerOnlyWhileMixed.failed, 0, `${late.via}: v1.37-only requests failed while mixed\n${table}`);
});
