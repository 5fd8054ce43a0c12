// The request decides (src/proxy/proxied.ts), case by case, in-process, in the shape of Kubernetes'
// TestPeerProxy (peerproxy_handler_test.go): one table of cases, each a request, a route table, a
// scripted upstream per pool (what each attempt reports: head, body, end, failure), and what the
// client must get, which pools were asked in which order, and the metrics as exposition text.
// Nothing listens; each case runs in milliseconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProxyHandler } from '../../src/proxy/handler';
import { SnapshotHolder } from '../../src/snapshot/holder';
import { RouteTable } from '../../src/routing/routetable';
import { Lifecycle } from '../../src/lifecycle/state';
import { Metrics } from '../../src/telemetry/metrics';
import { silentLogger } from '../../src/telemetry/log';
import { UpstreamHead } from '../../src/upstream/h1/response-parser';
import type { Attempt, AttemptReport, AttemptRequest } from '../../src/upstream/h1/attempt';
import type { OriginPool } from '../../src/upstream/h1/origin';
import type { PeerPools } from '../../src/upstream/pools';
import type { ClientResponse, Exchange, ResponseHead } from '../../src/listener/exchange';
import { buildServedDiscovery } from '../../src/aggregation/served-discovery';
import { aggregatedFixture } from '../support/fixtures';

/** One step a scripted upstream reports. */
type Step = { head: number; headers?: string } | { body: string } | { end: true } | { fail: string; notSent?: boolean } | 'never';

/** A parsed head, as the relay's reader would hand it over. */
function head(status: number, headers = 'Content-Type: application/json'): UpstreamHead {
  let h: UpstreamHead | undefined;
  const { ResponseParser } = require('../../src/upstream/h1/response-parser') as typeof import('../../src/upstream/h1/response-parser');
  const p = new ResponseParser();
  // As a peer's answer is read (fromAPIServer false: its "not sent" header is kept).
  p.reset({ onHead: (x) => (h = x), onBody: () => undefined, onEnd: () => undefined }, true, false);
  p.execute(Buffer.from(`HTTP/1.1 ${status} X\r\n${headers ? headers + '\r\n' : ''}\r\n`, 'latin1'));
  return h!;
}

class FakeAttempt implements Attempt {
  bodyTouched = false;
  sentAt = 0;
  headAt = 0;
  aborted = false;
  constructor(
    private readonly report: AttemptReport,
    private readonly steps: Step[],
  ) {}
  start(): void {
    let gotHead = false;
    for (const s of this.steps) {
      if (this.aborted || s === 'never') return;
      if ('head' in s) {
        gotHead = true;
        this.report.upstreamHead(head(s.head, s.headers));
      }
      else if ('body' in s) this.report.upstreamBody(Buffer.from(s.body));
      else if ('end' in s) this.report.upstreamEnd();
      else this.report.upstreamFailed(Object.assign(new Error(s.fail), { code: s.fail }), s.notSent ?? false, gotHead);
    }
  }
  resume(): void {}
  abort(): void {
    this.aborted = true;
  }
}

class FakeResponse implements ClientResponse {
  onDrain: (() => void) | null = null;
  status = 0;
  head: ResponseHead | undefined;
  body = '';
  ended = false;
  destroyed = false;
  /** As uWS: the head reaches the client with the first body byte. */
  get headersSent(): boolean {
    return this.body.length > 0 || this.ended;
  }
  writeHead(status: number, h: ResponseHead): void {
    this.status = status;
    this.head = h;
  }
  write(chunk: Buffer): boolean {
    this.body += chunk.toString();
    return true;
  }
  end(): void {
    this.ended = true;
  }
  destroy(): void {
    this.destroyed = true;
  }
}

function exchange(method: string, path: string, query = '', headers: string[] = []): Exchange & { res: FakeResponse } {
  return { method, target: query ? path + '?' + query : path, path, query, headers: ['user-agent', 'test', ...headers], contentLength: -1, peerProxied: undefined, remoteAddress: '10.0.0.9', body: null, res: new FakeResponse(), onClientClose: null, clientClosed: false, refusal: undefined };
}

const G = 'example.com';
const V = 'v1';
const R = 'widgets';
const GVR = `group="${G}",version="${V}",resource="${R}"`;
const WIDGETS = `/apis/${G}/${V}/namespaces/default/${R}`;
const res = (g: string, r: string) => ({ metadata: { name: g }, versions: [{ version: V, resources: [{ resource: r, responseKind: { group: g, version: V, kind: 'X' }, scope: 'Namespaced', singularResource: r, verbs: ['get', 'list', 'create', 'watch'] }] }] });

interface Case {
  desc: string;
  method?: string;
  path: string;
  query?: string;
  /** Who serves widgets: the local apiserver, peers (by ID), or nobody; 'local+p1': the local apiserver and p1. */
  servedBy: 'local' | 'local+p1' | string[] | 'nobody';
  /** --local-failover on, and the local apiserver's state in the snapshot. */
  localFailover?: 'serving' | 'draining' | 'down';
  /** Per pool name (local, or a peer's address 10.0.0.N:6443): the steps of its attempts, in order. */
  upstream: Record<string, Step[][]>;
  wantStatus: number;
  wantBody?: RegExp;
  /** The pools asked, in order. */
  wantAsked: string[];
  wantMetrics?: string[];
  wantDestroyed?: boolean;
  /** The Content-Length the client's head says. */
  wantLength?: number;
  /** Peer start index (pickStart). */
  first?: number;
  /** What the local apiserver's monitor was told (refused, shuttingDown), in order. */
  wantHealth?: string[];
  /** The Retry-After the client gets (null: none). client-go resends any request answered 5xx/429 with one. */
  wantRetryAfter?: string | null;
  /** The snapshot has merged discovery (the local apiserver v1.33's, peer p1 v1.37's), complete. */
  discovery?: boolean;
  /** Request headers, flat [name, value, ...]. */
  headers?: string[];
  /** --discovery-access-ttl (0 by default). */
  accessTTLMs?: number;
  /** The same request sent this many times, one after the other (1 by default); the last answer is checked. */
  times?: number;
  /** After the last request: the first `times - 1` answers had this status too. */
  wantEveryStatus?: boolean;
}

const DISCOVERY = buildServedDiscovery({ localID: 'local', localApis: aggregatedFixture('v1.33'), peers: [{ id: 'p1', apis: aggregatedFixture('v1.37') }], excludedGroupVersions: [] });
const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
/** The merged /apis lists this v1.37-only group; the local apiserver's own does not. */
const PEER_ONLY = /"lifecycle\.k8s\.io"/;
const FORBIDDEN: Step[] = [{ head: 403 }, { body: '{"kind":"Status","reason":"Forbidden","code":403}' }, { end: true }];
const UNAUTHORIZED: Step[] = [{ head: 401 }, { body: '{"kind":"Status","reason":"Unauthorized","code":401}' }, { end: true }];

const OK = (body: string): Step[] => [{ head: 200 }, { body }, { end: true }];
/** The local apiserver's own /apis: dropped once it showed the client may read the merged one. */
const LOCAL_APIS = OK('{"kind":"APIGroupDiscoveryList","local":true}');
const NOT_FOUND: Step[] = [{ head: 404 }, { body: '{"kind":"Status","code":404}' }, { end: true }];

const SHUTTING_DOWN: Step[] = [{ head: 429, headers: 'Retry-After: 5\r\nContent-Type: application/json' }, { body: '{"kind":"Status","message":"The apiserver is shutting down, please try again later.","reason":"TooManyRequests","code":429}' }, { end: true }];

/** An answer of 80 KiB in 16 KiB chunks: past what is held (64 KiB), so it must be relayed whole, never cut short. */
const LARGE = Array.from({ length: 5 }, (_, i) => ({ body: String(i).repeat(16 * 1024) }));
const LARGE_BODY = new RegExp(`^${[0, 1, 2, 3, 4].map((i) => `${i}{16384}`).join('')}$`);

const CASES: Case[] = [
  // Issue 38 (the adversarial probe): /apis, legacy discovery and the /openapi/v3 index were
  // answered from the snapshot to anyone; kube-apiserver answers them behind its authentication
  // and authorization. The client's own request goes to the apiserver first (discovery-access.ts).
  { desc: 'discovery, anonymous: the apiserver\'s 403 is the answer, not the merged /apis', path: '/apis', headers: ['accept', V2], discovery: true, servedBy: 'local', upstream: { local: [FORBIDDEN] }, wantStatus: 403, wantBody: /Forbidden/, wantAsked: ['local'] },
  { desc: 'discovery, a bad token: the apiserver\'s 401', path: '/apis', headers: ['accept', V2, 'authorization', 'Bearer nope'], discovery: true, servedBy: 'local', upstream: { local: [UNAUTHORIZED] }, wantStatus: 401, wantAsked: ['local'] },
  { desc: 'discovery, a client the apiserver lets read /apis: its answer dropped, the merged document served', path: '/apis', headers: ['accept', V2, 'authorization', 'Bearer good'], discovery: true, servedBy: 'local', upstream: { local: [LOCAL_APIS] }, wantStatus: 200, wantBody: PEER_ONLY, wantAsked: ['local'] },
  { desc: 'discovery, the local answer cut after its head: the client was let through, the merged document served', path: '/apis', headers: ['accept', V2], discovery: true, servedBy: 'local', upstream: { local: [[{ head: 200 }, { body: '{"kind"' }, { fail: 'ECONNRESET' }]] }, wantStatus: 200, wantBody: PEER_ONLY, wantAsked: ['local'] },
  { desc: 'legacy discovery of a group only peers serve, anonymous: 403, the peer-only APIResourceList not served', path: '/apis/lifecycle.k8s.io/v1alpha1', headers: ['accept', 'application/json'], discovery: true, servedBy: 'local', upstream: { local: [FORBIDDEN] }, wantStatus: 403, wantAsked: ['local'] },
  { desc: 'legacy discovery of a group only peers serve, a client the apiserver lets through (its 404: it does not serve the group): the derived APIResourceList', path: '/apis/lifecycle.k8s.io/v1alpha1', headers: ['accept', 'application/json'], discovery: true, servedBy: 'local', upstream: { local: [NOT_FOUND] }, wantStatus: 200, wantBody: /"APIResourceList"/, wantAsked: ['local'] },
  { desc: 'discovery, the local apiserver refuses the connection (--local-failover): a peer\'s apiserver decides', path: '/apis', headers: ['accept', V2], discovery: true, servedBy: 'local', localFailover: 'serving', upstream: { local: [[{ fail: 'ECONNREFUSED', notSent: true }]], '10.0.0.1:6443': [OK('{}')] }, wantStatus: 200, wantBody: PEER_ONLY, wantAsked: ['local', '10.0.0.1:6443'] },
  { desc: 'discovery, priority and fairness throttles the client (429, before authorization): the 429 is the answer', path: '/apis', headers: ['accept', V2], discovery: true, servedBy: 'local', upstream: { local: [[{ head: 429, headers: 'Retry-After: 1' }, { body: '{"kind":"Status","code":429}' }, { end: true }]] }, wantStatus: 429, wantAsked: ['local'] },
  { desc: 'discovery, a credential granted is remembered (--discovery-access-ttl): three requests, one asked', path: '/apis', headers: ['accept', V2, 'authorization', 'Bearer good'], accessTTLMs: 10_000, times: 3, wantEveryStatus: true, discovery: true, servedBy: 'local', upstream: { local: [LOCAL_APIS] }, wantStatus: 200, wantBody: PEER_ONLY, wantAsked: ['local'] },
  { desc: 'discovery, a refusal is never remembered: each request asked, each refused', path: '/apis', headers: ['accept', V2], accessTTLMs: 10_000, times: 2, wantEveryStatus: true, discovery: true, servedBy: 'local', upstream: { local: [FORBIDDEN, FORBIDDEN] }, wantStatus: 403, wantAsked: ['local', 'local'] },
  { desc: 'discovery, with --discovery-access-ttl=0 every request is asked', path: '/apis', headers: ['accept', V2, 'authorization', 'Bearer good'], times: 2, wantEveryStatus: true, discovery: true, servedBy: 'local', upstream: { local: [LOCAL_APIS, LOCAL_APIS] }, wantStatus: 200, wantBody: PEER_ONLY, wantAsked: ['local', 'local'] },
  { desc: 'no file descriptor for the local connection (EMFILE): 503 naming RLIMIT_NOFILE, the local apiserver not reported down, no peer asked', path: `${WIDGETS}/a`, servedBy: 'local+p1', localFailover: 'serving', upstream: { local: [[{ fail: 'EMFILE', notSent: true }]] }, wantStatus: 503, wantBody: /RLIMIT_NOFILE.*MVP_ERR_FD_LIMIT/, wantAsked: ['local'], wantHealth: [], wantMetrics: [] },
  { desc: 'no file descriptor for a peer connection (EMFILE): 503 naming RLIMIT_NOFILE, no other peer tried, no upstream error counted', path: `${WIDGETS}/a`, servedBy: ['p1', 'p2'], upstream: { '10.0.0.1:6443': [[{ fail: 'EMFILE', notSent: true }]] }, wantStatus: 503, wantBody: /RLIMIT_NOFILE.*MVP_ERR_FD_LIMIT/, wantAsked: ['10.0.0.1:6443'], wantMetrics: [`apiserver_rerouted_request_total{code="503",${GVR}} 1`] },
  { desc: 'the system is out of file descriptors (ENFILE): 503 naming the system limit', path: `${WIDGETS}/a`, servedBy: 'local', upstream: { local: [[{ fail: 'ENFILE', notSent: true }]] }, wantStatus: 503, wantBody: /fs\.file-max.*MVP_ERR_FD_LIMIT/, wantAsked: ['local'] },
  { desc: 'local failover: a 429 with an 80 KiB body (a proxied backend\'s, no Status): relayed whole, not cut to the 64 KiB held', path: `${WIDGETS}/a`, servedBy: 'local+p1', localFailover: 'serving', upstream: { local: [[{ head: 429 }, ...LARGE, { end: true }]] }, wantStatus: 429, wantBody: LARGE_BODY, wantAsked: ['local'] },
  { desc: 'HEAD, nobody serves it, no peer reachable: the held local 404 keeps the length the apiserver gave of the body it did not send', method: 'HEAD', path: `${WIDGETS}/a`, servedBy: 'nobody', upstream: { local: [[{ head: 404, headers: 'Content-Type: application/json\r\nContent-Length: 120' }, { end: true }]], '10.0.0.1:6443': [[{ fail: 'ECONNREFUSED', notSent: true }]], '10.0.0.2:6443': [[{ fail: 'ECONNREFUSED', notSent: true }]] }, wantStatus: 404, wantLength: 120, wantAsked: ['local', '10.0.0.1:6443', '10.0.0.2:6443'] },
  { desc: 'nobody serves it by the snapshot: a local 404 with an 80 KiB body is no Status: relayed whole as the answer, the peers not asked', path: `${WIDGETS}/a`, servedBy: 'nobody', upstream: { local: [[{ head: 404 }, ...LARGE, { end: true }]] }, wantStatus: 404, wantBody: LARGE_BODY, wantAsked: ['local'] },
  { desc: 'local failover: the local apiserver is down: a GET goes to a peer that serves it, without asking local', path: `${WIDGETS}/a`, servedBy: 'local+p1', localFailover: 'down', upstream: { '10.0.0.1:6443': [OK('P1')] }, wantStatus: 200, wantAsked: ['10.0.0.1:6443'], wantMetrics: [`apiserver_rerouted_request_total{code="200",${GVR}} 1`] },
  { desc: 'local failover: serving, but this request\'s connection is refused: the peer answers, even a create', method: 'POST', path: WIDGETS, servedBy: 'local+p1', localFailover: 'serving', upstream: { local: [[{ fail: 'ECONNREFUSED', notSent: true }]], '10.0.0.1:6443': [OK('P1')] }, wantStatus: 200, wantAsked: ['local', '10.0.0.1:6443'] },
  { desc: 'local failover: the local apiserver answers 429 "shutting down": the peer answers', method: 'POST', path: WIDGETS, servedBy: 'local+p1', localFailover: 'serving', upstream: { local: [SHUTTING_DOWN], '10.0.0.1:6443': [OK('P1')] }, wantStatus: 200, wantAsked: ['local', '10.0.0.1:6443'] },
  { desc: 'local failover: a 429 of priority and fairness is the client\'s answer', path: `${WIDGETS}/a`, servedBy: 'local+p1', localFailover: 'serving', upstream: { local: [[{ head: 429 }, { body: 'too many requests' }, { end: true }]] }, wantStatus: 429, wantAsked: ['local'] },
  { desc: 'local failover: a create reset after it was sent never goes to a peer', method: 'POST', path: WIDGETS, servedBy: 'local+p1', localFailover: 'serving', upstream: { local: [[{ fail: 'ECONNRESET' }]] }, wantStatus: 503, wantBody: /MVP_ERR_LOCAL_FAILED/, wantAsked: ['local'], wantRetryAfter: null },
  { desc: 'local failover: down, and no peer serves the resource: the local answer (503)', path: `${WIDGETS}/a`, servedBy: 'local', localFailover: 'down', upstream: { local: [[{ fail: 'ECONNREFUSED', notSent: true }]] }, wantStatus: 503, wantAsked: ['local'] },
  { desc: 'local failover: nobody serves it by the snapshot, the local apiserver refuses the connection: the peers are asked, the last one\'s 404 is the answer', path: `${WIDGETS}/a`, servedBy: 'nobody', localFailover: 'down', upstream: { local: [[{ fail: 'ECONNREFUSED', notSent: true }]], '10.0.0.1:6443': [NOT_FOUND], '10.0.0.2:6443': [NOT_FOUND] }, wantStatus: 404, wantAsked: ['local', '10.0.0.1:6443', '10.0.0.2:6443'] },
  { desc: 'local failover: nobody serves it by the snapshot, a create the local apiserver refuses: a peer that has it (its discovery lags) answers', method: 'POST', path: WIDGETS, servedBy: 'nobody', localFailover: 'serving', upstream: { local: [[{ fail: 'ECONNREFUSED', notSent: true }]], '10.0.0.1:6443': [NOT_FOUND], '10.0.0.2:6443': [OK('P2')] }, wantStatus: 200, wantBody: /^P2$/, wantAsked: ['local', '10.0.0.1:6443', '10.0.0.2:6443'] },
  { desc: 'local failover: nobody serves it by the snapshot, the local apiserver answers 429 "shutting down": the peers are asked', path: `${WIDGETS}/a`, servedBy: 'nobody', localFailover: 'serving', upstream: { local: [SHUTTING_DOWN], '10.0.0.1:6443': [OK('P1')] }, wantStatus: 200, wantBody: /^P1$/, wantAsked: ['local', '10.0.0.1:6443'] },
  { desc: 'local failover: down by the snapshot, nobody serves it by it, but the local apiserver answers (back as a newer release, not probed yet): its answer, never the peers\' 404', path: `${WIDGETS}/a`, servedBy: 'nobody', localFailover: 'down', upstream: { local: [OK('L')] }, wantStatus: 200, wantBody: /^L$/, wantAsked: ['local'] },
  { desc: 'local failover: nobody serves it, the local apiserver refuses, no peer can answer: 503, the local apiserver\'s outage (never a 404 nobody said)', path: `${WIDGETS}/a`, servedBy: 'nobody', localFailover: 'down', upstream: { local: [[{ fail: 'ECONNREFUSED', notSent: true }]], '10.0.0.1:6443': [[{ head: 503 }, { end: true }]], '10.0.0.2:6443': [[{ fail: 'ECONNREFUSED', notSent: true }]] }, wantStatus: 503, wantBody: /MVP_ERR_LOCAL_UNAVAILABLE/, wantAsked: ['local', '10.0.0.1:6443', '10.0.0.2:6443'] },
  { desc: 'served locally: the local apiserver answers', path: `${WIDGETS}/a`, servedBy: 'local', upstream: { local: [OK('L')] }, wantStatus: 200, wantBody: /^L$/, wantAsked: ['local'], wantMetrics: [] },
  { desc: 'served by a peer: proxied, rerouted counted with its status', path: `${WIDGETS}/a`, servedBy: ['p1'], upstream: { '10.0.0.1:6443': [OK('P1')] }, wantStatus: 200, wantBody: /^P1$/, wantAsked: ['10.0.0.1:6443'], wantMetrics: [`apiserver_rerouted_request_total{code="200",${GVR}} 1`] },
  {
    desc: 'first peer refuses the connection (not sent): the next one answers, even a create',
    method: 'POST',
    path: WIDGETS,
    servedBy: ['p1', 'p2'],
    upstream: { '10.0.0.1:6443': [[{ fail: 'ECONNREFUSED', notSent: true }]], '10.0.0.2:6443': [OK('P2')] },
    wantStatus: 200,
    wantAsked: ['10.0.0.1:6443', '10.0.0.2:6443'],
    wantMetrics: [`apiserver_rerouted_request_total{code="200",${GVR}} 1`, 'mvproxy_upstream_errors_total{route="peer",peer="p1"} 1'],
  },
  {
    desc: 'a create reset on an established connection is not sent again: 503',
    method: 'POST',
    path: WIDGETS,
    servedBy: ['p1', 'p2'],
    upstream: { '10.0.0.1:6443': [[{ fail: 'ECONNRESET' }]], '10.0.0.2:6443': [OK('P2')] },
    wantStatus: 503,
    wantBody: /MVP_ERR_PEER_UNAVAILABLE/,
    wantAsked: ['10.0.0.1:6443'],
    wantMetrics: [`apiserver_rerouted_request_total{code="503",${GVR}} 1`, 'mvproxy_upstream_errors_total{route="peer",peer="p1"} 1'],
  },
  { desc: 'a GET reset on an established connection fails over', path: `${WIDGETS}/a`, servedBy: ['p1', 'p2'], upstream: { '10.0.0.1:6443': [[{ fail: 'ECONNRESET' }]], '10.0.0.2:6443': [OK('P2')] }, wantStatus: 200, wantAsked: ['10.0.0.1:6443', '10.0.0.2:6443'] },
  {
    desc: 'every peer unreachable: 503 Status with Retry-After, rerouted 503',
    path: `${WIDGETS}/a`,
    servedBy: ['p1', 'p2'],
    upstream: { '10.0.0.1:6443': [[{ fail: 'ECONNREFUSED', notSent: true }]], '10.0.0.2:6443': [[{ fail: 'MVP_ERR_CONNECT_TIMEOUT', notSent: true }]] },
    wantStatus: 503,
    wantBody: /no peer apiserver that serves this resource could be reached/,
    wantAsked: ['10.0.0.1:6443', '10.0.0.2:6443'],
    wantMetrics: [`apiserver_rerouted_request_total{code="503",${GVR}} 1`, 'mvproxy_upstream_errors_total{route="peer",peer="p1"} 1', 'mvproxy_upstream_errors_total{route="peer",peer="p2"} 1'],
  },
  { desc: 'the random start is honoured: from the second peer', path: `${WIDGETS}/a`, servedBy: ['p1', 'p2'], first: 1, upstream: { '10.0.0.2:6443': [OK('P2')] }, wantStatus: 200, wantAsked: ['10.0.0.2:6443'] },
  { desc: 'a framing violation from a peer: 502 Status, no failover (the answer may be the peer\'s)', path: `${WIDGETS}/a`, servedBy: ['p1', 'p2'], upstream: { '10.0.0.1:6443': [[{ fail: 'MVP_ERR_UPSTREAM_PROTOCOL' }]] }, wantStatus: 502, wantAsked: ['10.0.0.1:6443'] },
  { desc: 'the local apiserver refuses the connection: 503 "could not be reached"', path: `${WIDGETS}/a`, servedBy: 'local', upstream: { local: [[{ fail: 'ECONNREFUSED', notSent: true }]] }, wantStatus: 503, wantBody: /MVP_ERR_LOCAL_UNAVAILABLE/, wantAsked: ['local'] },
  { desc: 'the local apiserver drops a sent request: 503 "failed before it answered", with Retry-After for a GET', path: `${WIDGETS}/a`, servedBy: 'local', upstream: { local: [[{ fail: 'ECONNRESET' }]] }, wantStatus: 503, wantBody: /MVP_ERR_LOCAL_FAILED/, wantAsked: ['local'], wantRetryAfter: '1' },
  { desc: 'the local apiserver drops a sent create: 503 without Retry-After (client-go would send it again: twice created)', method: 'POST', path: WIDGETS, servedBy: 'local', upstream: { local: [[{ fail: 'ECONNRESET' }]] }, wantStatus: 503, wantBody: /MVP_ERR_LOCAL_FAILED/, wantAsked: ['local'], wantRetryAfter: null },
  { desc: 'a create the local apiserver refused (not sent): 503 with Retry-After', method: 'POST', path: WIDGETS, servedBy: 'local', upstream: { local: [[{ fail: 'ECONNREFUSED', notSent: true }]] }, wantStatus: 503, wantBody: /MVP_ERR_LOCAL_UNAVAILABLE/, wantAsked: ['local'], wantRetryAfter: '1' },
  { desc: 'an upstream that fails after its head but before any byte reached the client: a Status, not a bare close', path: `${WIDGETS}/a`, servedBy: 'local', upstream: { local: [[{ head: 200 }, { fail: 'ECONNRESET' }]] }, wantStatus: 503, wantBody: /MVP_ERR_LOCAL_FAILED/, wantAsked: ['local'] },
  { desc: 'an upstream that fails mid-body: the client connection is cut, not ended', path: `${WIDGETS}/a`, servedBy: 'local', upstream: { local: [[{ head: 200 }, { body: 'par' }, { fail: 'ECONNRESET' }]] }, wantStatus: 200, wantAsked: ['local'], wantDestroyed: true },
  {
    desc: 'nobody serves it: the local 404 is held and each peer asked; a peer has it',
    path: `${WIDGETS}/a`,
    servedBy: 'nobody',
    upstream: { local: [NOT_FOUND], '10.0.0.1:6443': [NOT_FOUND], '10.0.0.2:6443': [OK('P2')] },
    wantStatus: 200,
    wantBody: /^P2$/,
    wantAsked: ['local', '10.0.0.1:6443', '10.0.0.2:6443'],
  },
  { desc: 'nobody serves it and no peer has it: the last peer\'s 404', path: `${WIDGETS}/a`, servedBy: 'nobody', upstream: { local: [NOT_FOUND], '10.0.0.1:6443': [NOT_FOUND], '10.0.0.2:6443': [NOT_FOUND] }, wantStatus: 404, wantAsked: ['local', '10.0.0.1:6443', '10.0.0.2:6443'] },
  {
    desc: 'nobody serves it, peers cannot answer (503): the local 404 stands',
    path: `${WIDGETS}/a`,
    servedBy: 'nobody',
    upstream: { local: [NOT_FOUND], '10.0.0.1:6443': [[{ head: 503 }, { end: true }]], '10.0.0.2:6443': [[{ fail: 'ECONNREFUSED', notSent: true }]] },
    wantStatus: 404,
    wantAsked: ['local', '10.0.0.1:6443', '10.0.0.2:6443'],
  },
  {
    desc: 'nobody serves it, a create a peer answers 504: that is the answer, the next peer is not asked',
    method: 'POST',
    path: WIDGETS,
    servedBy: 'nobody',
    upstream: { local: [NOT_FOUND], '10.0.0.1:6443': [[{ head: 504 }, { body: 'timeout' }, { end: true }]], '10.0.0.2:6443': [OK('P2')] },
    wantStatus: 504,
    wantAsked: ['local', '10.0.0.1:6443'],
  },
  {
    desc: 'nobody serves it, a create a peer answers 503 "not sent": the next peer is asked',
    method: 'POST',
    path: WIDGETS,
    servedBy: 'nobody',
    upstream: { local: [NOT_FOUND], '10.0.0.1:6443': [[{ head: 503, headers: 'X-Mvproxy-Not-Sent: true' }, { end: true }]], '10.0.0.2:6443': [OK('P2')] },
    wantStatus: 200,
    wantAsked: ['local', '10.0.0.1:6443', '10.0.0.2:6443'],
  },
  { desc: 'served by two peers, the first a peer mvproxy shutting down (503 "not sent"): the next one answers, even a create', method: 'POST', path: WIDGETS, servedBy: ['p1', 'p2'], upstream: { '10.0.0.1:6443': [[{ head: 503, headers: 'X-Mvproxy-Not-Sent: true' }, { end: true }]], '10.0.0.2:6443': [OK('P2')] }, wantStatus: 200, wantBody: /^P2$/, wantAsked: ['10.0.0.1:6443', '10.0.0.2:6443'] },
  { desc: 'served by two peers, the first answers a 503 of its apiserver (may have run): the client\'s answer, the next not asked', method: 'POST', path: WIDGETS, servedBy: ['p1', 'p2'], upstream: { '10.0.0.1:6443': [[{ head: 503 }, { body: 'busy' }, { end: true }]] }, wantStatus: 503, wantBody: /^busy$/, wantAsked: ['10.0.0.1:6443'] },
];

for (const c of CASES) {
  test(`ProxiedRequest: ${c.desc}`, () => {
    const metrics = new Metrics();
    const asked: string[] = [];
    const remaining: Record<string, Step[][]> = Object.fromEntries(Object.entries(c.upstream).map(([k, v]) => [k, [...v]]));
    const pool = (name: string) => ({ name }) as OriginPool;
    const peers = { relay: (address: string) => pool(address) } as unknown as PeerPools;
    const snapshots = new SnapshotHolder();
    const localGroups = c.servedBy === 'local' || c.servedBy === 'local+p1' ? [res(G, R)] : [res('other.io', 'things')];
    const peerServes = (id: string) => (Array.isArray(c.servedBy) && c.servedBy.includes(id)) || (c.servedBy === 'local+p1' && id === 'p1');
    const peerIDs = ['p1', 'p2'];
    snapshots.publish({
      ...(c.discovery ? { discovery: DISCOVERY, complete: true } : {}),
      table: RouteTable.build({
        local: { groups: localGroups as never },
        peers: new Map(peerIDs.map((id, i) => [id, { address: `10.0.0.${i + 1}:6443`, groups: (peerServes(id) ? [res(G, R)] : []) as never }])),
        synced: true,
      }),
      local: c.localFailover ?? 'serving',
    });
    const health: string[] = [];
    const handler = new ProxyHandler({
      local: pool('local'),
      localPlain: pool('local'),
      peers,
      snapshots,
      lifecycle: new Lifecycle(),
      proxyEnabled: true,
      legacyDiscoveryFix: true,
      requestTimeoutMs: 60_000,
      heldRequestBodyBytes: 1024 * 1024,
      metrics,
      log: silentLogger,
      pickStart: () => c.first ?? 0,
      discoveryAccessTTLMs: c.accessTTLMs,
      localFailover: c.localFailover !== undefined,
      localHealth: { refused: () => void health.push('refused'), shuttingDown: () => void health.push('shuttingDown') },
      newAttempt: (report: AttemptReport, p: OriginPool, _req: AttemptRequest) => {
        asked.push(p.name);
        const steps = remaining[p.name]?.shift();
        assert.ok(steps, `${p.name} was asked once more than the case scripts`);
        return new FakeAttempt(report, steps);
      },
    });
    let ex = exchange(c.method ?? 'GET', c.path, c.query, c.headers);
    for (let i = 0; i < (c.times ?? 1); i++) {
      if (i > 0) {
        if (c.wantEveryStatus) assert.equal(ex.res.status, c.wantStatus, `answer ${i}: ${ex.res.body}`);
        ex = exchange(c.method ?? 'GET', c.path, c.query, c.headers);
      }
      handler.handleClient(ex);
    }
    handler.close();
    assert.deepEqual(asked, c.wantAsked, 'pools asked, in order');
    assert.equal(ex.res.status, c.wantStatus, ex.res.body);
    if (c.wantBody) assert.match(ex.res.body, c.wantBody);
    if (c.wantHealth) assert.deepEqual(health, c.wantHealth, 'told the local apiserver monitor');
    if (c.wantLength !== undefined) assert.equal(ex.res.head?.contentLength, c.wantLength, 'Content-Length');
    if (c.wantRetryAfter !== undefined) {
      const h = ex.res.head?.headers ?? [];
      const i = h.findIndex((n, j) => j % 2 === 0 && n.toLowerCase() === 'retry-after');
      assert.equal(i === -1 ? null : h[i + 1], c.wantRetryAfter, 'Retry-After');
    }
    assert.equal(ex.res.destroyed, c.wantDestroyed ?? false, 'cut');
    if (!c.wantDestroyed) assert.ok(ex.res.ended, 'ended');
    if (c.wantMetrics) {
      const text = metricLines(metrics);
      assert.deepEqual(text, [...c.wantMetrics].sort());
    }
  });
}

/** The sample lines of the families TestPeerProxy compares, from the registry's exposition. */
function metricLines(m: Metrics): string[] {
  const out: string[] = [];
  for (const metric of m.registry.getMetricsAsArray()) {
    if (!['apiserver_rerouted_request_total', 'apiserver_peer_proxy_errors_total', 'mvproxy_upstream_errors_total'].includes(metric.name)) continue;
    const values = (metric as unknown as { hashMap: Record<string, { labels: Record<string, string>; value: number }> }).hashMap;
    for (const v of Object.values(values)) {
      const labels = Object.entries(v.labels).map(([k, x]) => `${k}="${x}"`).join(',');
      out.push(`${metric.name}{${labels}} ${v.value}`);
    }
  }
  return out.sort();
}
