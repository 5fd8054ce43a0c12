// mvproxy operated from a real Prometheus (issue 31 §2): Debian's Prometheus scrapes both mvproxy
// ops listeners beside the real kube-apiservers, with deploy/prometheus/rules.yaml loaded. After
// traffic on every route (local, proxied both ways, discovery, open watches) and a stopped peer,
// every PromQL expression of deploy/grafana/mvproxy.json returns data (no broken panel), the
// dashboard's variables find the mvproxies, and MvproxyPeerDown fires within its `for:`.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../support/poll';
import { alerts, asSent, dashboardQueries, dashboardVariableQueries, durationMs } from '../support/monitoring';
import { KubeClient, type Watch } from './support/client';
import { startControlPlane, type KubeControlPlane } from './support/control-plane';
import { startMvproxies, type Member } from './support/mvproxy';
import { prometheusSkip, startPrometheus, type Prometheus } from './support/prometheus';
import { collectionPath, frontends, PEER_ONLY } from './support/suite';

// The shipped front end where it loads here, else node (the metrics are the same).
const frontend = frontends().find((f) => f.frontend === 'uws' && !f.skip)?.frontend ?? 'node';
const ROUNDS = 6;

describe(`a real Prometheus scraping both mvproxies (${frontend}) with the shipped rules and dashboard`, { skip: prometheusSkip() }, () => {
  let plane: KubeControlPlane;
  let members: Member[] = [];
  let prom: Prometheus;
  const watches: Watch[] = [];

  before(async () => {
    plane = await startControlPlane();
    members = await startMvproxies(plane, { frontend });
    prom = await startPrometheus(plane.dir, members.map((m) => new URL(m.metricsURL).host));
    await eventually(async () => {
      const t = await prom.targets();
      return t.length === members.length && t.every((x) => x.health === 'up');
    }, { what: 'Prometheus scrapes both ops listeners', timeoutMs: 30_000, intervalMs: 500 });
  });
  after(async () => {
    for (const w of watches) w.close();
    await prom?.stop();
    await Promise.all(members.map((m) => m.stop()));
    await plane?.stop();
  });

  const tag = (m: Member) => new URL(m.metricsURL).host;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const peerDown = async () => (await prom.alerts()).filter((a) => a.labels.alertname === 'MvproxyPeerDown');

  test('after traffic on every route and a stopped peer, every dashboard expression returns data and MvproxyPeerDown fires within its for:', async () => {
    const [a, b] = members as [Member, Member];
    const ctb = PEER_ONLY.find((k) => k.resource === 'clustertrustbundles')!; // served by kube-new only: through a, proxied to b
    const hpa = PEER_ONLY.find((k) => k.resource === 'horizontalpodautoscalers')!; // served by kube-old only: through b, proxied to a
    const through = (m: Member) => new KubeClient(m.url, plane.pki.caFile, { cert: plane.admin });
    // Long-running requests open while Prometheus looks: a local watch (an HTTP/2 stream to the
    // apiserver) and one proxied to the peer. (Their heads come with the first event on uWS: README
    // Limitations; each gets events below.)
    watches.push(through(a).watch('/api/v1/namespaces/default/configmaps?watch=true'), through(a).watch(`${collectionPath(ctb)}?watch=true`));
    const aggregated = { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' };
    for (let i = 0; i < ROUNDS; i++) {
      for (const m of members) {
        assert.equal((await through(m).get('/api/v1/namespaces/default/configmaps')).status, 200);
        assert.equal((await through(m).get('/apis', aggregated)).status, 200);
      }
      await through(a).json('POST', collectionPath(ctb), { body: ctb.object(plane, `prom-${i}`) });
      await through(a).json('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `prom-${i}` } } });
      assert.equal((await through(b).get(collectionPath(hpa))).status, 200);
      await sleep(1000);
    }
    for (const w of watches) assert.equal(await w.status, 200);
    assert.deepEqual(await peerDown(), [], 'no MvproxyPeerDown while both members are up');

    await b.stop();
    const stoppedAt = Date.now();
    // What only the stopped member's apiserver serves, through the one left: 503 Status, never 404.
    for (let i = 0; i < ROUNDS; i++) {
      assert.equal((await through(a).get(`${collectionPath(ctb)}/prom-${i}`)).status, 503);
      assert.equal((await through(a).get('/api/v1/namespaces/default/configmaps')).status, 200);
      await sleep(500);
    }

    // Every panel's expression, as Grafana sends it with all jobs and instances selected.
    const empty = async () => {
      const out: string[] = [];
      for (const q of dashboardQueries()) {
        const r = await prom.query(asSent(q.expr));
        if (!r.some((s) => Number.isFinite(Number(s.value[1])))) out.push(`${q.panel} (${q.refId}): ${q.expr}`);
      }
      return out;
    };
    let last: string[] = [];
    await eventually(async () => (last = await empty()).length === 0, { what: 'every dashboard expression returns a finite value', timeoutMs: 30_000, intervalMs: 1000 }).catch(() => {
      assert.fail(`dashboard expressions without data from Prometheus:\n${last.join('\n')}`);
    });
    for (const [name, q] of Object.entries(dashboardVariableQueries())) {
      const [, match, label] = /^label_values\((.*), (\w+)\)$/.exec(q)!;
      const values = new Set((await prom.series(asSent(match!))).map((s) => s[label!]));
      assert.deepEqual([...values].sort(), label === 'job' ? ['mvproxy'] : members.map(tag).sort(), `variable ${name}`);
    }

    // The alert, at the member left, for the stopped one: firing once its for: has passed (bounded
    // by for: plus a few scrapes and evaluations).
    const rule = alerts().find((r) => r.alert === 'MvproxyPeerDown')!;
    const forMs = durationMs(rule.for!);
    const { value: fired } = await eventually(async () => (await peerDown()).find((x) => x.state === 'firing'), { what: 'MvproxyPeerDown firing', timeoutMs: forMs + 30_000 - (Date.now() - stoppedAt), intervalMs: 1000 });
    assert.deepEqual({ instance: fired.labels.instance, peer: fired.labels.peer, severity: fired.labels.severity }, { instance: tag(a), peer: b.name, severity: 'warning' });
    assert.equal(fired.annotations.runbook_url, 'docs/operating.md#mvproxypeerdown');
    assert.match(fired.annotations.summary!, new RegExp(`peer ${b.name}`));
  });
});
