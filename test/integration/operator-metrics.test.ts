// Metrics an operator alerts on (issue 15 §8): requests in flight by route, upstream errors by
// peer, the expiry of every certificate mvproxy presents and of each peer's serving certificate,
// and the latency of rerouted requests by peer. Scraped from /metrics as Prometheus would.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { request } from 'undici';
import { DEFAULT_FRONTEND } from '../support/frontends';
import { eventually } from '../support/poll';
import { twoVersionPlane, call, AUTH, OLD, NEW } from '../support/plane';
import type { Plane } from '../../src/demo/topology';

const PEER_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads'; // served only by the v1.37 member
const LOCAL = '/api/v1/namespaces/default/configmaps';

/** The value of one series in a Prometheus text scrape, or undefined when it is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function notAfter(file: string): number {
  return Date.parse(new X509Certificate(readFileSync(file)).validTo) / 1000;
}

describe(`metrics an operator alerts on (${DEFAULT_FRONTEND} front end)`, () => {
  let plane: Plane & { tmp: string };
  const scrape = () => fetch(plane.member(OLD).metricsUrl).then((r) => r.text());
  before(async () => {
    plane = await twoVersionPlane(DEFAULT_FRONTEND);
  });
  after(async () => plane?.close());

  test('in flight by route: a watch to the peer and one to the local apiserver count while open, and not once closed', async () => {
    const before = await scrape();
    assert.equal(sample(before, 'mvproxy_inflight_requests{route="peer",long_running="true"}'), 0);
    const watches = [PEER_ONLY, LOCAL].map((path) => {
      const ac = new AbortController();
      const res = request(`${plane.member(OLD).url}${path}?watch=true`, { headers: AUTH, signal: ac.signal });
      return { ac, res };
    });
    for (const w of watches) w.res.catch(() => undefined);
    // Not waiting for the heads: on uWS a watch with no event yet gets its head with the first event.
    await eventually(() => plane.members.every((m) => m.sim.openStreams() === 1), { what: 'both watches open at the apiservers', timeoutMs: 5000 });
    const open = await scrape();
    assert.equal(sample(open, 'mvproxy_inflight_requests{route="peer",long_running="true"}'), 1, open);
    assert.equal(sample(open, 'mvproxy_inflight_requests{route="local",long_running="true"}'), 1);
    assert.equal(sample(open, 'mvproxy_inflight_requests{route="peer",long_running="false"}'), 0);
    for (const w of watches) {
      w.ac.abort();
      await w.res.then((r) => r.body.text()).catch(() => undefined);
    }
    await eventually(
      async () => {
        const closed = await scrape();
        assert.equal(sample(closed, 'mvproxy_inflight_requests{route="peer",long_running="true"}'), 0);
        assert.equal(sample(closed, 'mvproxy_inflight_requests{route="local",long_running="true"}'), 0);
        return true;
      },
      { what: 'the in-flight watches counted out', timeoutMs: 1000, intervalMs: 20 },
    );
  });

  test('rerouted latency by peer counts each request proxied to that peer; the peer\'s serving certificate expiry is the one it presented', async () => {
    const series = `mvproxy_rerouted_request_duration_seconds_count{peer="mvproxy-${NEW}"}`;
    const n0 = sample(await scrape(), series) ?? 0;
    for (let i = 0; i < 3; i++) assert.equal((await call(plane.member(OLD).url, PEER_ONLY, { headers: AUTH })).status, 200);
    const text = await scrape();
    assert.equal(sample(text, series), n0 + 3);
    assert.equal(sample(text, `mvproxy_rerouted_request_duration_seconds_count{peer="mvproxy-${OLD}"}`), undefined, 'no series for a peer nothing went to');
    const peer = plane.member(NEW);
    assert.equal(sample(text, `mvproxy_peer_certificate_expiration_timestamp_seconds{peer="${peer.peerAddress}"}`), notAfter(peer.daemon.config.peerTLSCertFile ?? peer.daemon.config.tlsCertFile!));
  });

  test('the expiry of each certificate mvproxy presents: peer-serving and proxy-client, from the files in use', async () => {
    const c = plane.member(OLD).daemon.config;
    const text = await scrape();
    assert.equal(sample(text, 'mvproxy_certificate_expiration_timestamp_seconds{certificate="peer-serving"}'), notAfter(c.peerTLSCertFile ?? c.tlsCertFile!));
    assert.equal(sample(text, 'mvproxy_certificate_expiration_timestamp_seconds{certificate="proxy-client"}'), notAfter(c.proxyClientCertFile!));
    assert.ok(notAfter(c.proxyClientCertFile!) > Date.now() / 1000);
  });

  test('upstream errors by peer: the serving peer gone, each failed request counts against it (and the client gets a 503 Status)', async () => {
    const series = `mvproxy_upstream_errors_total{route="peer",peer="mvproxy-${NEW}"}`;
    const n0 = sample(await scrape(), series) ?? 0;
    await plane.stopProxy(NEW);
    const got = await call(plane.member(OLD).url, `${PEER_ONLY}/x`, { headers: AUTH });
    assert.equal(got.status, 503, got.text);
    assert.match(got.text, /"kind":"Status"/);
    const text = await scrape();
    assert.ok((sample(text, series) ?? 0) >= n0 + 1, text.split('\n').filter((l) => l.startsWith('mvproxy_upstream_errors_total')).join('\n'));
    assert.equal(sample(text, 'mvproxy_upstream_errors_total{route="local",peer=""}') ?? 0, 0, 'the local route had no error');
  });
});
