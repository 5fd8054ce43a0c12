// /metrics in both formats (issue 15 §8): an OpenMetrics scrape once made every counter lose its
// `_total` for every later Prometheus-text scrape (prom-client renames the metric in place).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metrics } from '../../src/telemetry/metrics';

test('an OpenMetrics scrape leaves the next Prometheus-text scrape as it was, also when both run at once', async () => {
  const m = new Metrics();
  m.reroutedRequests.inc({ code: '200', group: 'g', version: 'v1', resource: 'r' });
  const before = await m.scrape(false);
  assert.match(before.text, /^apiserver_rerouted_request_total\{code="200",group="g",version="v1",resource="r"\} 1$/m);
  const open = await m.scrape(true);
  assert.match(open.contentType, /^application\/openmetrics-text/);
  assert.match(open.text, /^apiserver_rerouted_request_total\{code="200",group="g",version="v1",resource="r"\} 1$/m);
  assert.match(open.text, /# EOF\n$/);
  const after = await m.scrape(false);
  assert.equal(after.text, before.text);
  assert.match(after.contentType, /^text\/plain; version=0\.0\.4/);
  const [a, b] = await Promise.all([m.scrape(true), m.scrape(false)]);
  assert.match(a.text, /# EOF\n$/);
  assert.equal(b.text, before.text);
});
