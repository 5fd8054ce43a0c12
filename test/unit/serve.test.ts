// serveDiscovery: which requests mvproxy answers from the snapshot, with which body and headers
// (docs/kubernetes-mvp.md §5.1, §5.2), and which pass through (false, nothing written).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serveDiscovery, negotiateLegacyEndpoint, AGGREGATED_V2_JSON_CONTENT_TYPE, AGGREGATED_V2_PROTOBUF_CONTENT_TYPE } from '../../src/discovery/serve';
import { buildServedDiscovery, type ServedDiscovery } from '../../src/aggregation/served-discovery';
import type { Exchange, ClientResponse, ResponseHead } from '../../src/listener/exchange';
import { aggregatedFixture } from '../support/fixtures';

interface Recorded {
  status?: number;
  head?: ResponseHead;
  chunks: Buffer[];
  ended: boolean;
}

function fakeExchange(method: string, path: string): { ex: Exchange; rec: Recorded } {
  const rec: Recorded = { chunks: [], ended: false };
  const res: ClientResponse = {
    writeHead(status, head) {
      assert.equal(rec.status, undefined, 'writeHead twice');
      rec.status = status;
      rec.head = head;
    },
    write(chunk) {
      assert.ok(rec.status !== undefined, 'write before writeHead');
      rec.chunks.push(chunk);
      return true;
    },
    end() {
      rec.ended = true;
    },
    destroy() {
      throw new Error('destroy');
    },
    onDrain: null,
    get headersSent() {
      return rec.status !== undefined;
    },
  };
  const ex: Exchange = {
    method, target: path, path, query: '', headers: [], peerProxied: undefined, remoteAddress: '127.0.0.1', body: null, contentLength: -1, res, onClientClose: null, clientClosed: false, refusal: undefined,
  };
  return { ex, rec };
}

class FakeCounter {
  n = 0;
  inc(): void {
    this.n++;
  }
}

function fakeMetrics() {
  return { peerAggregatedCacheHits: new FakeCounter(), peerAggregatedCacheMisses: new FakeCounter(), nopeerRequests: new FakeCounter() };
}

const snap: ServedDiscovery = buildServedDiscovery({
  localID: 'a',
  localApis: aggregatedFixture('v1.33'),
  peers: [{ id: 'b', apis: aggregatedFixture('v1.37') }],
  excludedGroupVersions: [],
});

const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const V2PB = 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const V2B1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

function run(method: string, path: string, accept: string | undefined, o: { legacyFix?: boolean; inm?: string; snapshot?: ServedDiscovery | undefined } = {}) {
  const { ex, rec } = fakeExchange(method, path);
  const m = fakeMetrics();
  const served = serveDiscovery(ex, 'snapshot' in o ? o.snapshot : snap, accept, o.inm, m as never, { legacyFix: o.legacyFix ?? false });
  if (!served) {
    assert.equal(rec.status, undefined, 'pass-through wrote something');
    assert.equal(rec.ended, false);
  } else {
    assert.ok(rec.ended, 'not ended');
  }
  const body = Buffer.concat(rec.chunks);
  const headers = new Map<string, string>();
  const h = rec.head?.headers ?? [];
  for (let i = 0; i < h.length; i += 2) headers.set(h[i]!.toLowerCase(), h[i + 1]!);
  return { served, rec, body, headers, m };
}

test('Accept table on /apis', () => {
  const cases: [string | undefined, 'merged-json' | 'merged-pb' | 'local-json' | 'local-pb' | 'pass'][] = [
    [V2, 'merged-json'],
    [`${V2},application/json`, 'merged-json'],
    [V2PB, 'merged-pb'],
    [`${V2PB},${V2},application/json`, 'merged-pb'],
    [`${V2};profile=nopeer`, 'local-json'],
    [`${V2PB};profile=nopeer`, 'local-pb'],
    [`${V2};profile=foo`, 'merged-json'], // unknown profile → peer-aggregated
    ['application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io', 'merged-json'], // param order irrelevant
    ['*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', 'merged-json'],
    [`${V2};q=0.5,${V2PB}`, 'merged-pb'], // q-values decide
    [`${V2},${V2PB};q=0.9`, 'merged-json'],
    [`${V2};profile=nopeer;q=0.5,${V2PB};q=0.8`, 'merged-pb'],
    [V2B1, 'pass'], // v2beta1: as the local apiserver answers
    ['application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', 'pass'],
    ['application/json', 'pass'], // legacy, no legacyFix
    [undefined, 'pass'],
    ['text/html', 'pass'], // 406 is the apiserver's to write
  ];
  for (const [accept, want] of cases) {
    for (const path of ['/apis', '/apis/']) {
      const r = run('GET', path, accept);
      const label = `${path} ${accept}`;
      if (want === 'pass') {
        assert.equal(r.served, false, label);
        continue;
      }
      assert.equal(r.served, true, label);
      assert.equal(r.rec.status, 200, label);
      const doc = want.startsWith('merged') ? snap.merged : snap.local;
      const pb = want.endsWith('pb');
      assert.ok(r.body.equals(pb ? doc.protobuf : doc.json), label);
      assert.equal(r.headers.get('content-type'), pb ? AGGREGATED_V2_PROTOBUF_CONTENT_TYPE : AGGREGATED_V2_JSON_CONTENT_TYPE, label);
      assert.equal(r.rec.head!.contentType, r.headers.get('content-type'));
      assert.equal(r.rec.head!.contentLength, r.body.length, label);
      assert.equal(r.headers.get('etag'), doc.etag, label);
      assert.equal(r.headers.get('vary'), 'Accept');
      assert.equal(r.headers.get('cache-control'), 'public');
      assert.equal(r.m.peerAggregatedCacheHits.n + r.m.peerAggregatedCacheMisses.n, want.startsWith('merged') ? 1 : 0, label); // one hit or miss per peer-aggregated request
      assert.equal(r.m.nopeerRequests.n, want.startsWith('local') ? 1 : 0, label);
    }
  }
});

test('profile is not echoed; the exact §5.2 header set', () => {
  const r = run('GET', '/apis', `${V2};profile=nopeer`);
  assert.deepEqual(r.rec.head!.headers, ['Content-Type', V2, 'Etag', snap.local.etag, 'Vary', 'Accept', 'Cache-Control', 'public']);
});

test('If-None-Match: exact match → 304, empty body, ETag/Vary/Cache-Control; anything else → 200', () => {
  const hit = run('GET', '/apis', V2, { inm: snap.merged.etag });
  assert.equal(hit.rec.status, 304);
  assert.equal(hit.body.length, 0);
  assert.deepEqual(hit.rec.head!.headers, ['Etag', snap.merged.etag, 'Vary', 'Accept', 'Cache-Control', 'public']);
  assert.equal(hit.m.peerAggregatedCacheHits.n + hit.m.peerAggregatedCacheMisses.n, 1);
  // The protobuf reply carries the same ETag, so a JSON ETag revalidates a protobuf request.
  assert.equal(run('GET', '/apis', V2PB, { inm: snap.merged.etag }).rec.status, 304);
  // nopeer has its own ETag.
  assert.equal(run('GET', '/apis', `${V2};profile=nopeer`, { inm: snap.merged.etag }).rec.status, 200);
  assert.equal(run('GET', '/apis', `${V2};profile=nopeer`, { inm: snap.local.etag }).rec.status, 304);
  for (const inm of [`W/${snap.merged.etag}`, '*', `${snap.merged.etag}, "x"`, snap.merged.etag.slice(1, -1), '']) {
    assert.equal(run('GET', '/apis', V2, { inm }).rec.status, 200, inm);
  }
});

test('HEAD: headers and Content-Length, no body', () => {
  const r = run('HEAD', '/apis', V2PB);
  assert.equal(r.served, true);
  assert.equal(r.rec.status, 200);
  assert.equal(r.rec.chunks.length, 0);
  assert.equal(r.rec.head!.contentLength, snap.merged.protobuf.length);
  assert.equal(r.m.peerAggregatedCacheHits.n + r.m.peerAggregatedCacheMisses.n, 1);
  const l = run('HEAD', '/apis/lifecycle.k8s.io/v1alpha1', 'application/json', { legacyFix: true });
  assert.equal(l.rec.chunks.length, 0);
  assert.equal(l.rec.head!.contentLength, snap.legacy.resourceLists.get('lifecycle.k8s.io/v1alpha1')!.length);
});

test('pass-through: other methods, /api, no snapshot, other paths', () => {
  for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']) assert.equal(run(method, '/apis', V2).served, false, method);
  for (const path of ['/api', '/api/', '/api/v1', '/apisx', '/apis/apps/v1/deployments', '/', '/openapi/v2']) {
    assert.equal(run('GET', path, V2, { legacyFix: true }).served, false, path);
    assert.equal(run('GET', path, 'application/json', { legacyFix: true }).served, false, path);
  }
  assert.equal(run('GET', '/apis', V2, { snapshot: undefined }).served, false);
  assert.equal(run('GET', '/apis', 'application/json', { snapshot: undefined, legacyFix: true }).served, false);
});

test('legacyFix: merged APIGroupList on /apis, peer-only /apis/<g> and /apis/<g>/<v>', () => {
  const apis = run('GET', '/apis', 'application/json', { legacyFix: true });
  assert.equal(apis.served, true);
  assert.ok(apis.body.equals(snap.legacy.apis));
  assert.equal(apis.headers.get('content-type'), 'application/json');
  // An ETag as the aggregated answers have, and a 304 for it.
  assert.match(apis.headers.get('etag') ?? '', /^"[0-9A-F]{128}"$/);
  const again = run('GET', '/apis', 'application/json', { legacyFix: true, inm: apis.headers.get('etag') });
  assert.equal(again.rec.status, 304);
  assert.equal(again.body.length, 0);
  assert.equal(apis.m.peerAggregatedCacheHits.n + apis.m.peerAggregatedCacheMisses.n, 0);
  for (const accept of [undefined, '', '*/*', 'application/json, */*', 'application/json;q=0.9,application/yaml;q=0.5']) {
    assert.equal(run('GET', '/apis', accept, { legacyFix: true }).served, true, String(accept));
  }
  // v2beta1 with a legacy fallback (kubectl 1.27–1.29): the merged APIGroupList, as a 1.33+
  // apiserver answers legacy there. v2beta1 alone stays with the apiserver.
  const kubectl127 = run('GET', '/apis', `${V2B1},application/json`, { legacyFix: true });
  assert.equal(kubectl127.served, true);
  assert.equal(JSON.parse(kubectl127.body.toString()).kind, 'APIGroupList');
  assert.equal(run('GET', '/apis', V2B1, { legacyFix: true }).served, false);
  assert.equal(run('GET', '/apis', `${V2B1},application/json`, { legacyFix: false }).served, false);
  // Only JSON: legacy protobuf / yaml stay with the apiserver.
  assert.equal(run('GET', '/apis', 'application/vnd.kubernetes.protobuf', { legacyFix: true }).served, false);
  assert.equal(run('GET', '/apis', 'application/yaml', { legacyFix: true }).served, false);
  // Aggregated requests are unaffected by the flag.
  assert.ok(run('GET', '/apis', V2, { legacyFix: true }).body.equals(snap.merged.json));

  const rl = run('GET', '/apis/lifecycle.k8s.io/v1alpha1', 'application/json', { legacyFix: true });
  assert.equal(rl.served, true);
  assert.ok(rl.body.equals(snap.legacy.resourceLists.get('lifecycle.k8s.io/v1alpha1')!));
  assert.equal(JSON.parse(rl.body.toString()).kind, 'APIResourceList');
  const g = run('GET', '/apis/lifecycle.k8s.io', 'application/json, */*', { legacyFix: true });
  assert.equal(JSON.parse(g.body.toString()).kind, 'APIGroup');
  // A partially peer-only group is answered whole (all merged versions).
  assert.equal(run('GET', '/apis/resource.k8s.io', 'application/json', { legacyFix: true }).served, true);
  // A version both serve, of a group the peer contributes to: the union, from mvproxy.
  assert.equal(run('GET', '/apis/resource.k8s.io/v1beta1', 'application/json', { legacyFix: true }).served, true);
  // A group both serve the same → the apiserver answers.
  assert.equal(run('GET', '/apis/apps/v1', 'application/json', { legacyFix: true }).served, false);
  assert.equal(run('GET', '/apis/apps', 'application/json', { legacyFix: true }).served, false);
  // Malformed paths.
  for (const p of ['/apis/lifecycle.k8s.io/', '/apis//v1alpha1', '/apis/lifecycle.k8s.io/v1alpha1/', '/apis/lifecycle.k8s.io/v1alpha1/evictionrequests']) {
    assert.equal(run('GET', p, 'application/json', { legacyFix: true }).served, false, p);
  }
  // An aggregated Accept on a per-group endpoint: only its plain clause counts there.
  assert.equal(run('GET', '/apis/lifecycle.k8s.io/v1alpha1', `${V2},application/json`, { legacyFix: true }).served, true);
  assert.equal(run('GET', '/apis/lifecycle.k8s.io/v1alpha1', V2, { legacyFix: true }).served, false);
});

test('legacyFix off: legacy discovery always passes through', () => {
  assert.equal(run('GET', '/apis', 'application/json').served, false);
  assert.equal(run('GET', '/apis/lifecycle.k8s.io/v1alpha1', 'application/json').served, false);
  assert.equal(run('GET', '/apis/lifecycle.k8s.io', 'application/json').served, false);
});

test('negotiateLegacyEndpoint drops conversion clauses only', () => {
  assert.equal(negotiateLegacyEndpoint(undefined)?.encoding, 'json');
  assert.equal(negotiateLegacyEndpoint(V2), null);
  assert.equal(negotiateLegacyEndpoint(`${V2},`), null);
  assert.equal(negotiateLegacyEndpoint(`${V2},application/json`)?.kind, 'legacy');
  assert.equal(negotiateLegacyEndpoint(`${V2PB},application/vnd.kubernetes.protobuf;q=0.9,application/json;q=0.5`)?.encoding, 'protobuf');
  assert.equal(negotiateLegacyEndpoint('application/json;pretty=1')?.encoding, 'json');
  assert.equal(negotiateLegacyEndpoint('text/plain'), null);
});
