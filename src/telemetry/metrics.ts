// All of mvproxy's metrics, in one registry. Names and labels of the in-tree feature are mirrored
// exactly (docs/kubernetes-mvp.md §6; kubernetes/apiserver pkg/util/peerproxy/metrics/metrics.go and
// pkg/endpoints/discovery/aggregated/metrics.go) so dashboards and alerts written for
// kube-apiserver work unchanged; mvproxy_* metrics add what in-tree does not export: latency (one
// histogram by route: local, peer, discovery), per-peer health and certificate expiry.
// HELP starts with [ALPHA] as component-base does.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { FixedHistogram, type FixedHistogramConfig, type HistogramSeries } from './fixed-histogram';
import { ErrorCode } from '../api/errors';
import { readOpenFilesLimit } from '../api/fd-limit';

/** kube-apiserver's request latency buckets (pkg/endpoints/metrics requestLatencies), seconds. */
export const KUBE_LATENCY_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];

/**
 * mvproxy's latency histograms: Kubernetes' buckets and three below its first (5 ms). A GET on the
 * local route takes ~1.5 ms at p50 against a real kube-apiserver, of which mvproxy adds 0.1–0.2 ms
 * on the uWS front end and 0.2–0.7 on the node one (bench/README "500 GET/s on the real
 * apiserver"); a discovery answer mvproxy serves itself is sub-millisecond. In Kubernetes' buckets
 * all of these fell in the first one, so neither what the peer hop adds over the local route
 * (docs/deploy.md) nor a slower mvproxy showed.
 */
export const MVPROXY_LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, ...KUBE_LATENCY_BUCKETS];

/**
 * The error type of apiserver_peer_proxy_errors_total that mvproxy counts (Kubernetes
 * ProxyErrorEndpointResolution). Its other type, proxy_transport, upstream counts only when it
 * cannot build a round tripper for the request's user, which has no counterpart here.
 */
export const PROXY_ERROR_ENDPOINT_RESOLUTION = 'endpoint_resolution';

export type Route = 'local' | 'peer' | 'discovery';

// Every label value below comes from a bounded set: fixed words, the peers of the membership (their
// series are dropped when they leave: retainPeers), and the group/version/resources the published
// route table lists. Nothing a client puts in a request becomes a label value of its own: any
// client could otherwise add series without end (issue 27: 500 requests for unknown resources
// grew apiserver_rerouted_request_total from 1 to 501 series).

/**
 * The group, version and resource label of a request for a GVR no member's discovery lists (the
 * local 404 asked of the peers, in case a table lags): one series for all of them. In-tree labels
 * discovery requests with all three empty, so this value is distinct from that, and it cannot be
 * a Kubernetes name (an underscore is in no group, version or resource name).
 */
export const UNLISTED = '_unlisted';

/**
 * The verb label of mvproxy_request_duration_seconds: RequestInfo's verbs, and the lowercased HTTP
 * methods a non-resource request has, as in kube-apiserver's metrics (pkg/endpoints/metrics
 * validRequestMethods, lowercased, plus head and options); `unknown` when RequestInfo failed. Any
 * other method a client sends is `other` (Kubernetes' OtherRequestMethod).
 */
export const METRIC_VERBS: ReadonlySet<string> = new Set(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection', 'proxy', 'apply', 'connect', 'post', 'put', 'head', 'options', 'watchlist', 'unknown']);
export const OTHER_VERB = 'other';

/** The bounds of what one peer's discovery document may hold (aggregation/decode.ts PEER_DISCOVERY_LIMITS, and its byte cap). */
export const REFUSED_LIMITS = ['bytes', 'groups', 'versions_per_group', 'versions', 'resources_per_version', 'resources'] as const;
export type RefusedLimit = (typeof REFUSED_LIMITS)[number];

const ROUTES: readonly Route[] = ['local', 'peer', 'discovery'];
const CODE_CLASSES = ['0', '2xx', '3xx', '4xx', '5xx'] as const;

/** 2xx/3xx/4xx/5xx: bounded label values whatever the upstream sends (index into CODE_CLASSES). */
function codeClassIndex(status: number): number {
  return status >= 500 ? 4 : status >= 400 ? 3 : status >= 300 ? 2 : status >= 200 ? 1 : 0;
}

/**
 * mvproxy_request_duration_seconds by route, verb and code class: every request observes it, so its
 * series are found in a table (verb → route × code class), not by labels: no allocation per request
 * (fixed-histogram.ts). Any verb outside METRIC_VERBS is labelled OTHER_VERB.
 */
export class RequestDurations extends FixedHistogram {
  private readonly rows = new Map<string, (HistogramSeries | undefined)[]>();
  private readonly other: (HistogramSeries | undefined)[] = [];

  constructor(c: Omit<FixedHistogramConfig, 'labelNames'>) {
    super({ ...c, labelNames: ['route', 'verb', 'code'] });
    for (const v of METRIC_VERBS) this.rows.set(v, []);
  }

  observe(route: Route, verb: string, status: number, seconds: number): void {
    const row = this.rows.get(verb);
    const r = row ?? this.other;
    const i = ROUTES.indexOf(route) * CODE_CLASSES.length + codeClassIndex(status);
    (r[i] ??= this.of(route, row !== undefined ? verb : OTHER_VERB, CODE_CLASSES[codeClassIndex(status)]!)).observe(seconds);
  }

  override reset(): void {
    super.reset();
    for (const row of this.rows.values()) row.length = 0;
    this.other.length = 0;
  }
}

/** Requests in flight by upstream route, counted at scrape time (nothing on the request path). */
export interface InFlight {
  route: 'local' | 'peer';
  longRunning: boolean;
}

/** Open upstream connections of one route and protocol, and (h2) the streams on them. */
export interface UpstreamConnections {
  route: 'local' | 'peer';
  protocol: 'http/1.1' | 'h2';
  connections: number;
  streams?: number;
}

/** A certificate in use, by the name mvproxy's logs give it (serving, peer-serving, proxy-client). */
export interface CertificateInUse {
  certificate: string;
  notAfterSeconds: number;
}

/**
 * What the gauges counted at scrape time read from the daemon's components. The registry can be
 * made before them and outlive them (tests and the demo give a daemon their own), so the daemon
 * attaches them once, when they exist (readFrom, daemon/run.ts); until then every gauge reads none.
 */
export interface MetricsSources {
  /** What is in flight now. */
  inFlight(): Iterable<InFlight>;
  /** Request bodies held for the retry after a local 404 (proxy/held-bodies.ts): bytes held now, and requests that streamed because the budget was spent. */
  heldBodies(): { held: number; refused: number };
  /** The local apiserver's state (snapshot/local-apiserver.ts). */
  localState(): string;
  /** When each peer's discovery was last fetched (snapshot/publisher.ts). */
  peerDiscoverySuccess(): Iterable<readonly [peer: string, seconds: number]>;
  /** The relay's open upstream connections. */
  upstreamConnections(): Iterable<UpstreamConnections>;
  /** The certificates mvproxy presents. */
  certificates(): Iterable<CertificateInUse>;
  /** The serving certificate each peer address presented last. */
  peerCertificates(): Iterable<readonly [peerAddress: string, notAfterSeconds: number]>;
}

const NO_SOURCES: MetricsSources = {
  inFlight: () => [],
  heldBodies: () => ({ held: 0, refused: 0 }),
  localState: () => 'serving',
  peerDiscoverySuccess: () => [],
  upstreamConnections: () => [],
  certificates: () => [],
  peerCertificates: () => [],
};

export class Metrics {
  readonly registry = new Registry();
  readonly reroutedRequests: Counter<'code' | 'group' | 'version' | 'resource'>;
  readonly peerProxyErrors: Counter<'type' | 'group' | 'version' | 'resource'>;
  readonly peerDiscoverySyncErrors: Counter<'type'>;
  readonly peerDiscoveryRefused: Counter<'limit'>;
  readonly peerAggregatedCacheHits: Counter;
  readonly peerAggregatedCacheMisses: Counter;
  readonly nopeerRequests: Counter;
  readonly requestDuration: RequestDurations;
  readonly upstreamConnectErrors: Counter<'route' | 'peer'>;
  /** Requests the one writer of upstream heads refused to write (upstream/request-head.ts), by the part it refused. */
  readonly upstreamWritesRefused: Counter<'part'>;
  readonly reroutedDuration: FixedHistogram;
  /** What the scrape-time gauges read (readFrom). */
  private sources: MetricsSources = NO_SOURCES;
  readonly localFailovers: Counter<'reason'>;
  readonly discoveryAccessChecks: Counter<'answer'>;
  readonly discoveryMergeErrors: Counter;
  readonly discoveryMergeDuration: Histogram;
  readonly peersUp: Gauge<'peer'>;
  readonly routeTableGVRs: Gauge;
  readonly buildInfo: Gauge<'version' | 'node_version' | 'frontend'>;

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.reroutedRequests = new Counter({
      name: 'apiserver_rerouted_request_total',
      help: `[ALPHA] Total number of requests that were proxied to a peer kube apiserver because the local apiserver was not capable of serving it. If all three of group, version and resource are empty, the request is a discovery request. If all three are ${UNLISTED}, no member's discovery listed the group/version/resource (the local 404 asked of the peers).`,
      labelNames: ['code', 'group', 'version', 'resource'],
      registers,
    });
    this.peerProxyErrors = new Counter({
      name: 'apiserver_peer_proxy_errors_total',
      help: '[ALPHA] Total number of errors encountered while proxying requests to a peer kube apiserver',
      labelNames: ['type', 'group', 'version', 'resource'],
      registers,
    });
    this.peerDiscoverySyncErrors = new Counter({
      name: 'apiserver_peer_discovery_sync_errors_total',
      help: '[ALPHA] Total number of errors encountered while syncing discovery information from peer kube-apiservers',
      labelNames: ['type'],
      registers,
    });
    this.peerDiscoveryRefused = new Counter({
      name: 'mvproxy_peer_discovery_refused_total',
      help: "[ALPHA] Peer discovery documents refused for listing more than one peer may (limit: bytes, groups, versions_per_group, versions, resources_per_version, resources; docs/operating.md §5). The peer keeps its last good view for --peer-discovery-grace",
      labelNames: ['limit'],
      registers,
    });
    for (const limit of REFUSED_LIMITS) this.peerDiscoveryRefused.inc({ limit }, 0);
    this.peerAggregatedCacheHits = new Counter({ name: 'aggregator_discovery_peer_aggregated_cache_hits_total', help: '[ALPHA] Counter of number of times discovery was served from peer-aggregated cache', registers });
    this.peerAggregatedCacheMisses = new Counter({ name: 'aggregator_discovery_peer_aggregated_cache_misses_total', help: '[ALPHA] Counter of number of times discovery was aggregated across all API servers', registers });
    this.nopeerRequests = new Counter({ name: 'aggregator_discovery_nopeer_requests_total', help: '[ALPHA] Counter of number of times no-peer discovery was served', registers });
    this.requestDuration = new RequestDurations({
      name: 'mvproxy_request_duration_seconds',
      help: `[ALPHA] Time from receiving a request to the end of its response, by route (local: this node's apiserver; peer: proxied to a peer; discovery: answered by mvproxy). Long-running requests (watch, exec, logs...) are not observed. verb: RequestInfo's verb, or ${OTHER_VERB} for a method outside Kubernetes' own.`,
      buckets: MVPROXY_LATENCY_BUCKETS,
      registers,
    });
    this.discoveryMergeDuration = new Histogram({
      name: 'mvproxy_discovery_merge_duration_seconds',
      help: '[ALPHA] Time to merge and encode the peer-aggregated discovery documents (in the worker thread)',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.upstreamConnectErrors = new Counter({ name: 'mvproxy_upstream_errors_total', help: '[ALPHA] Requests whose upstream failed before answering (no connection, reset, timeout), by route, and for the peer route by peer', labelNames: ['route', 'peer'], registers });
    this.upstreamWritesRefused = new Counter({
      name: 'mvproxy_upstream_writes_refused_total',
      help: '[ALPHA] Requests not sent because a method, target, Host, header name or value carried a byte no request line or field may carry (the front ends refuse these first: any count here is a front-end gap), by part',
      labelNames: ['part'],
      registers,
    });
    this.reroutedDuration = new FixedHistogram({
      name: 'mvproxy_rerouted_request_duration_seconds',
      help: '[ALPHA] Time from receiving a request proxied to a peer to the end of its response, by peer (long-running requests are not observed)',
      labelNames: ['peer'],
      buckets: MVPROXY_LATENCY_BUCKETS,
      registers,
    });
    /** The sources at scrape time (readFrom may come after the gauges are made). */
    const sources = () => this.sources;
    new Gauge({
      name: 'mvproxy_inflight_requests',
      help: '[ALPHA] Requests being proxied now, by route (local: this node\'s apiserver; peer: a peer) and whether they are long-running (watch, exec, logs...)',
      labelNames: ['route', 'long_running'],
      registers,
      collect() {
        const n = { local: [0, 0], peer: [0, 0] };
        for (const f of sources().inFlight()) n[f.route][f.longRunning ? 1 : 0]++;
        for (const route of ['local', 'peer'] as const) {
          this.set({ route, long_running: 'false' }, n[route][0]);
          this.set({ route, long_running: 'true' }, n[route][1]);
        }
      },
    });
    this.discoveryMergeErrors = new Counter({ name: 'mvproxy_discovery_merge_errors_total', help: '[ALPHA] Merges of the peer-aggregated discovery documents that failed (the previous documents stay published)', registers });
    new Gauge({
      name: 'mvproxy_peer_discovery_last_success_timestamp_seconds',
      help: '[ALPHA] When each peer\'s discovery (/api and /apis) was last fetched successfully (Unix seconds): its age is how stale routing to it may be',
      labelNames: ['peer'],
      registers,
      collect() {
        this.reset();
        for (const [peer, t] of sources().peerDiscoverySuccess()) this.set({ peer }, t);
      },
    });
    this.discoveryAccessChecks = new Counter({
      name: 'mvproxy_discovery_access_checks_total',
      help: `[ALPHA] Discovery documents mvproxy answered from its snapshot, by how the client's access was known: granted (the apiserver let the client's own request past its authentication and authorization just now), remembered (granted within --discovery-access-ttl); a refused client gets the apiserver's answer and is not counted here`,
      labelNames: ['answer'],
      registers,
    });
    this.localFailovers = new Counter({
      name: 'mvproxy_local_failover_requests_total',
      help: '[ALPHA] Requests served by a peer because the local apiserver was not serving (--local-failover), by reason: draining (its /readyz failed or it answered "shutting down"), down (it refused connections), refused (this request\'s connection was refused), shutting_down (it answered this request 429 "shutting down")',
      labelNames: ['reason'],
      registers,
    });
    new Gauge({
      name: 'mvproxy_local_apiserver_state',
      help: '[ALPHA] 1 for the state the local apiserver is in (serving, draining, down), 0 for the others',
      labelNames: ['state'],
      registers,
      collect() {
        const now = sources().localState();
        for (const state of ['serving', 'draining', 'down']) this.set({ state }, state === now ? 1 : 0);
      },
    });
    new Gauge({
      name: 'mvproxy_upstream_connections',
      help: '[ALPHA] Connections the relay holds open now, by route (local: this node\'s apiserver; peer: peer listeners) and protocol (http/1.1: one request at a time, one per watch; h2: shared by the long-running requests as streams)',
      labelNames: ['route', 'protocol'],
      registers,
      collect() {
        this.reset();
        for (const c of sources().upstreamConnections()) this.set({ route: c.route, protocol: c.protocol }, c.connections);
      },
    });
    new Gauge({
      name: 'mvproxy_upstream_streams',
      help: '[ALPHA] Long-running requests open now as streams of shared HTTP/2 connections, by route',
      labelNames: ['route'],
      registers,
      collect() {
        this.reset();
        for (const c of sources().upstreamConnections()) if (c.protocol === 'h2') this.inc({ route: c.route }, c.streams ?? 0);
      },
    });
    new Gauge({
      name: 'mvproxy_held_request_body_bytes',
      help: '[ALPHA] Bytes of request bodies held in memory now so that a request the local apiserver answers 404 can be sent again to a peer (bounded by --held-request-body-bytes)',
      registers,
      collect() {
        this.set(sources().heldBodies().held);
      },
    });
    new Counter({
      name: 'mvproxy_held_request_body_refused_total',
      help: '[ALPHA] Requests whose body was not held for peers because --held-request-body-bytes was spent: they streamed to the local apiserver and got its answer',
      registers,
      collect() {
        this.reset();
        this.inc(sources().heldBodies().refused);
      },
    });
    new Gauge({
      name: 'mvproxy_certificate_expiration_timestamp_seconds',
      help: '[ALPHA] Expiry (notAfter, Unix seconds) of each certificate mvproxy presents: serving (client listener), peer-serving (peer listener), proxy-client (to peers and, with identity, to the local apiserver)',
      labelNames: ['certificate'],
      registers,
      collect() {
        this.reset();
        for (const c of sources().certificates()) this.set({ certificate: c.certificate }, c.notAfterSeconds);
      },
    });
    new Gauge({
      name: 'mvproxy_peer_certificate_expiration_timestamp_seconds',
      help: '[ALPHA] Expiry (notAfter, Unix seconds) of the serving certificate each peer presented on the latest new connection to it, by peer address',
      labelNames: ['peer'],
      registers,
      collect() {
        this.reset();
        for (const [peer, t] of sources().peerCertificates()) this.set({ peer }, t);
      },
    });
    new Gauge({
      name: 'mvproxy_open_files_limit',
      help: `[ALPHA] RLIMIT_NOFILE of the mvproxy process, soft (enforced; Node.js raises it to the hard limit at start) and hard (-1: unlimited); at the soft limit new requests that need an upstream connection get a 503 (${ErrorCode.MVP_ERR_FD_LIMIT}). process_open_fds is the use`,
      labelNames: ['limit'],
      registers,
      collect() {
        this.reset();
        const l = readOpenFilesLimit();
        if (l === undefined) return;
        this.set({ limit: 'soft' }, Number.isFinite(l.soft) ? l.soft : -1);
        this.set({ limit: 'hard' }, Number.isFinite(l.hard) ? l.hard : -1);
      },
    });
    this.peersUp = new Gauge({ name: 'mvproxy_peer_up', help: '[ALPHA] 1 when the peer answered its last discovery fetch or probe, else 0', labelNames: ['peer'], registers });
    this.routeTableGVRs = new Gauge({ name: 'mvproxy_route_table_gvrs', help: '[ALPHA] Distinct group/version/resources in the published route table', registers });
    this.buildInfo = new Gauge({ name: 'mvproxy_build_info', help: '[ALPHA] A metric with a constant value of 1 labelled by the build and the front end in use', labelNames: ['version', 'node_version', 'frontend'], registers });
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 10 });
  }

  /** The daemon's components, read by the gauges counted at scrape time (MetricsSources). */
  readFrom(sources: MetricsSources): void {
    this.sources = sources;
  }

  /**
   * Drops the series of peers no longer in the membership (called at every publication): their IDs
   * are gone for good (a Lease-based peer's ID is new after each restart), so each would otherwise
   * stay in every scrape. A request that ends after its peer left may add one back; the next
   * publication drops it again.
   */
  async retainPeers(members: ReadonlySet<string>): Promise<void> {
    const drop = async (m: Counter<'route' | 'peer'> | FixedHistogram | Gauge<'peer'>, labels: (peer: string) => Record<string, string>) => {
      const stale = new Set<string>();
      for (const v of (await m.get()).values) {
        const peer = v.labels['peer'];
        if (typeof peer === 'string' && peer !== '' && !members.has(peer)) stale.add(peer);
      }
      for (const peer of stale) (m as Counter<string>).remove(labels(peer));
    };
    await drop(this.peersUp, (peer) => ({ peer }));
    await drop(this.reroutedDuration, (peer) => ({ peer }));
    await drop(this.upstreamConnectErrors, (peer) => ({ route: 'peer', peer }));
  }

  private scrapes: Promise<unknown> = Promise.resolve();

  /**
   * One exposition of the registry, Prometheus text or OpenMetrics. prom-client renames every
   * counter for good during an OpenMetrics scrape (it strips `_total` from the metric's name and
   * never puts it back, so each later plain scrape lacked `_total`), and it keeps the format on the
   * registry: scrapes run one at a time, and the names are restored after each.
   */
  scrape(openMetrics: boolean): Promise<{ contentType: string; text: string }> {
    const run = async () => {
      const names = this.registry.getMetricsAsArray().map((m) => [m, m.name] as const);
      // prom-client's typings know only the Prometheus text type; the OpenMetrics one is supported at runtime.
      this.registry.setContentType((openMetrics ? 'application/openmetrics-text; version=1.0.0; charset=utf-8' : 'text/plain; version=0.0.4; charset=utf-8') as 'text/plain; version=0.0.4; charset=utf-8');
      try {
        return { contentType: this.registry.contentType, text: await this.registry.metrics() };
      } finally {
        for (const [m, name] of names) (m as { name: string }).name = name;
      }
    };
    const p = this.scrapes.then(run, run);
    this.scrapes = p.catch(() => undefined);
    return p;
  }
}
