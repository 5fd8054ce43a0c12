// The peer-proxy and discovery metrics counted exactly where Kubernetes counts them (issue 16 §3;
// docs/kubernetes-mvp.md §6), in the style of Kubernetes' TestPeerProxy (staging/src/k8s.io/apiserver/pkg/util/
// peerproxy/peerproxy_handler_test.go): a table of requests, and after each one the change in the
// exposition text of the counters it may touch, compared whole. Upstream, read in
// k8s.io/apiserver@v0.37.2: apiserver_rerouted_request_total once per proxied request with the
// status the client got (peerproxy_handler.go:266); apiserver_peer_proxy_errors_total
// {type=endpoint_resolution} when no serving peer has an address, with no rerouted request
// (WrapHandler); aggregator_discovery_peer_aggregated_cache_{hits,misses}_total one per
// peer-aggregated /apis request (peer_aggregated_handler.go:114-121); nopeer_requests_total per
// profile=nopeer request (wrapper.go:48).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { DEFAULT_FRONTEND } from '../support/frontends';
import { twoVersionPlane, call, AUTH, OLD, NEW } from '../support/plane';
import type { Plane } from '../../src/demo/topology';

const FAMILIES = ['apiserver_rerouted_request_total', 'apiserver_peer_proxy_errors_total', 'aggregator_discovery_peer_aggregated_cache_hits_total', 'aggregator_discovery_peer_aggregated_cache_misses_total', 'aggregator_discovery_nopeer_requests_total', 'mvproxy_upstream_errors_total'];
const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const WORKLOADS = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads'; // only the v1.37 member serves it
const GVR = 'group="scheduling.k8s.io",version="v1beta1",resource="workloads"';

/** Every sample of the tracked families, series → value. */
function samples(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !FAMILIES.some((f) => line.startsWith(f + '{') || line.startsWith(f + ' '))) continue;
    const i = line.lastIndexOf(' ');
    m.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return m;
}

/** What changed between two scrapes, as exposition lines `series delta`, sorted. */
function delta(a: Map<string, number>, b: Map<string, number>): string[] {
  const out: string[] = [];
  for (const [k, v] of b) if (v !== (a.get(k) ?? 0)) out.push(`${k} ${v - (a.get(k) ?? 0)}`);
  return out.sort();
}

describe(`peer-proxy metrics, case by case as TestPeerProxy (${DEFAULT_FRONTEND} front end)`, () => {
  let plane: Plane & { tmp: string };
  const scrape = async () => samples(await (await request(plane.member(OLD).metricsUrl)).body.text());
  before(async () => {
    plane = await twoVersionPlane(DEFAULT_FRONTEND);
    for (const m of plane.members) await m.daemon.publisher.mergesDone();
  });
  after(async () => plane?.close());

  const cases: { name: string; run: () => Promise<void>; want: () => string[] }[] = [
    { name: 'a non-resource request (/version): nothing', run: async () => void (await call(plane.member(OLD).url, '/version', { headers: AUTH })), want: () => [] },
    { name: 'a resource the local apiserver serves: nothing', run: async () => assert.equal((await call(plane.member(OLD).url, '/api/v1/namespaces/default/configmaps', { headers: AUTH })).status, 200), want: () => [] },
    {
      name: 'a resource only the peer serves: one rerouted request, code 200',
      run: async () => assert.equal((await call(plane.member(OLD).url, WORKLOADS, { headers: AUTH })).status, 200),
      want: () => [`apiserver_rerouted_request_total{code="200",${GVR}} 1`],
    },
    {
      name: 'an object the peer does not have: rerouted with the 404 the client got',
      run: async () => assert.equal((await call(plane.member(OLD).url, `${WORKLOADS}/nope`, { headers: AUTH })).status, 404),
      want: () => [`apiserver_rerouted_request_total{code="404",${GVR}} 1`],
    },
    {
      name: 'peer-aggregated /apis, first request after the snapshot was built: a cache miss',
      run: async () => assert.equal((await call(plane.member(OLD).url, '/apis', { headers: { ...AUTH, accept: V2 } })).status, 200),
      want: () => ['aggregator_discovery_peer_aggregated_cache_misses_total 1'],
    },
    {
      name: 'peer-aggregated /apis again (protobuf this time): a cache hit',
      run: async () => assert.equal((await call(plane.member(OLD).url, '/apis', { headers: { ...AUTH, accept: V2.replace('application/json', 'application/vnd.kubernetes.protobuf') } })).status, 200),
      want: () => ['aggregator_discovery_peer_aggregated_cache_hits_total 1'],
    },
    {
      name: '/apis with profile=nopeer: one nopeer request, no hit or miss',
      run: async () => assert.equal((await call(plane.member(OLD).url, '/apis', { headers: { ...AUTH, accept: `${V2};profile=nopeer` } })).status, 200),
      want: () => ['aggregator_discovery_nopeer_requests_total 1'],
    },
    {
      name: 'a periodic discovery refresh, membership unchanged: nothing (upstream has no periodic refresh; its fetches follow lease events)',
      run: () => plane.member(OLD).daemon.publisher.refresh(),
      want: () => [],
    },
    { name: 'legacy /apis (application/json): nothing', run: async () => assert.equal((await call(plane.member(OLD).url, '/apis', { headers: { ...AUTH, accept: 'application/json' } })).status, 200), want: () => [] },
    {
      name: 'the serving peer left the membership (within its grace period, no address): endpoint_resolution, 503, no rerouted request',
      run: async () => {
        await plane.member(OLD).daemon.setStaticPeers([]);
        const r = await call(plane.member(OLD).url, WORKLOADS, { headers: AUTH });
        assert.equal(r.status, 503, r.text);
      },
      want: () => [`apiserver_peer_proxy_errors_total{type="endpoint_resolution",${GVR}} 1`],
    },
    {
      name: 'the serving peer back (its /api and /apis fetched: two rerouted requests with empty group, version and resource, as upstream), then its mvproxy down: rerouted with code 503, the peer named in mvproxy_upstream_errors_total',
      run: async () => {
        await plane.member(OLD).daemon.setStaticPeers([{ id: `mvproxy-${NEW}`, address: plane.member(NEW).peerAddress }]);
        await plane.stopProxy(NEW);
        const r = await call(plane.member(OLD).url, WORKLOADS, { headers: AUTH });
        assert.equal(r.status, 503, r.text);
      },
      want: () => ['apiserver_rerouted_request_total{code="200",group="",version="",resource=""} 2', `apiserver_rerouted_request_total{code="503",${GVR}} 1`, `mvproxy_upstream_errors_total{route="peer",peer="mvproxy-${NEW}"} 1`],
    },
  ];

  for (const c of cases) {
    test(c.name, async () => {
      const before = await scrape();
      await c.run();
      assert.deepEqual(delta(before, await scrape()), c.want());
    });
  }
});
