// FixedHistogram (src/telemetry/fixed-histogram.ts) replaces prom-client's Histogram on the request
// path: its exposition must be prom-client's, byte for byte, for the same observations (dashboards
// and the Prometheus rules read it), in both formats, and after series are removed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Histogram, Registry } from 'prom-client';
import { FixedHistogram } from '../../src/telemetry/fixed-histogram';
import { KUBE_LATENCY_BUCKETS, Metrics, OTHER_VERB } from '../../src/telemetry/metrics';

function pair(contentType?: string) {
  // prom-client's typings lack the constructor's content type argument.
  const R = Registry as unknown as new (contentType?: string) => Registry;
  const a = new R(contentType);
  const b = new R(contentType);
  const conf = { name: 'x_duration_seconds', help: 'help "quoted" \\ and\nnewline', labelNames: ['route', 'verb'], buckets: KUBE_LATENCY_BUCKETS };
  return { a, b, ours: new FixedHistogram({ ...conf, registers: [a] }), theirs: new Histogram({ ...conf, registers: [b] }) };
}

for (const format of [undefined, Registry.OPENMETRICS_CONTENT_TYPE]) {
  test(`the exposition is prom-client's for the same observations (${format ? 'OpenMetrics' : 'Prometheus text'}), bounds and +Inf included`, async () => {
    const { a, b, ours, theirs } = pair(format);
    assert.equal(await a.metrics(), await b.metrics(), 'no series yet');
    let x = 7;
    const rand = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const values = [0, 0.005, 0.0050001, 60, 61, 1e9, ...Array.from({ length: 500 }, () => rand() * 70)];
    for (const [i, v] of values.entries()) {
      const labels = { route: ['local', 'peer', 'discovery'][i % 3]!, verb: ['get', 'list'][i % 2]! };
      ours.of(labels.route, labels.verb).observe(v);
      theirs.observe(labels, v);
    }
    assert.equal(await a.metrics(), await b.metrics());
    ours.remove({ route: 'peer', verb: 'get' });
    theirs.remove({ route: 'peer', verb: 'get' });
    assert.equal(await a.metrics(), await b.metrics(), 'after a series is removed');
    // getMetricsAsJSON too (prom-client adds an exemplar field, null or undefined: no exemplars here).
    const json = async (r: Registry) => (await r.getMetricsAsJSON()).map((m) => ({ ...m, values: m.values.map((v) => ({ labels: v.labels, value: v.value, metricName: (v as { metricName?: string }).metricName })) }));
    assert.deepEqual(await json(a), await json(b));
  });
}

test('the latency histograms tell sub-5 ms answers apart: a local GET (~1.5 ms), a peer hop (~3 ms), a discovery answer (<0.5 ms)', async () => {
  const m = new Metrics();
  // Kubernetes' first bucket is 5 ms: all three counted in it alike, and the peer hop's cost did not show.
  for (const s of [0.0003, 0.0015, 0.003]) {
    m.requestDuration.observe('local', 'get', 200, s);
    m.reroutedDuration.of('kube-b').observe(s);
  }
  const text = (await m.scrape(false)).text;
  const bucket = (name: string, le: string, labels: string) => new RegExp(`^${name}_bucket\\{le="${le.replaceAll('.', '\\.')}",${labels}\\} (\\d+)$`, 'm').exec(text)?.[1];
  for (const [name, labels] of [['mvproxy_request_duration_seconds', 'route="local",verb="get",code="2xx"'], ['mvproxy_rerouted_request_duration_seconds', 'peer="kube-b"']] as const) {
    assert.deepEqual(['0.0005', '0.001', '0.0025', '0.005'].map((le) => bucket(name, le, labels)), ['1', '1', '2', '3'], name);
  }
});

test('mvproxy_request_duration_seconds: by route, verb and code class; a verb outside the set is "other"; a held series is the same one', async () => {
  const m = new Metrics();
  m.requestDuration.observe('local', 'get', 200, 0.001);
  m.requestDuration.observe('local', 'get', 204, 0.002);
  m.requestDuration.observe('peer', 'get', 503, 0.3);
  m.requestDuration.observe('local', 'PROPFIND', 405, 0.01);
  m.requestDuration.observe('discovery', 'get', 0, 0.01);
  const text = (await m.scrape(false)).text;
  const count = (labels: string) => new RegExp(`^mvproxy_request_duration_seconds_count\\{${labels}\\} (\\d+)$`, 'm').exec(text)?.[1];
  assert.equal(count('route="local",verb="get",code="2xx"'), '2');
  assert.equal(count('route="peer",verb="get",code="5xx"'), '1');
  assert.equal(count(`route="local",verb="${OTHER_VERB}",code="4xx"`), '1');
  assert.equal(count('route="discovery",verb="get",code="0"'), '1');
  assert.match(text, /^mvproxy_request_duration_seconds_bucket\{le="0\.005",route="local",verb="get",code="2xx"\} 2$/m);
  assert.match(text, /^mvproxy_request_duration_seconds_sum\{route="local",verb="get",code="2xx"\} 0\.003$/m);
  assert.doesNotMatch(text, /PROPFIND/);
});
