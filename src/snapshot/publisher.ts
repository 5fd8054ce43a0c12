// The snapshot publisher (never on the request path): fetch the local view and each peer's view,
// keep a failing peer's last good view for a grace period, build the route table and the merged
// discovery documents from the same views, and publish them as one snapshot (holder.ts).
// Kubernetes fetches peers only on lease events and its local view every 30 min (docs/kubernetes-mvp.md §4.3–4.4);
// mvproxy refreshes every --discovery-refresh-interval (30 s default) with If-None-Match, so a
// peer that changes its API set is seen within one interval, and an unchanged one costs a 304.

import type { OwnDispatcher } from '../api/own-requests';
import { ERRORS, ErrorCode, hasCode } from '../api/errors';
import { fetchDiscoveryDocument, type FetchedDocument } from './fetch';
import { DiscoveryFetchError } from '../aggregation/errors';
import type { PeerEndpoint } from '../peers/membership';
import { isHostPort } from '../gocompat/net';
import { RouteTable, type PeerDiscovery } from '../routing/routetable';
import type { SnapshotHolder, SnapshotParts } from './holder';
import type { ServedDiscovery } from '../aggregation/served-discovery';
import type { PeerPools } from '../upstream/pools';
import type { Metrics, RefusedLimit } from '../telemetry/metrics';
import { DiscoveryLimitError, PEER_DISCOVERY_LIMITS, type DiscoveryLimit, type RoutingView } from '../aggregation/decode';
import type { Logger } from '../telemetry/log';
import { DiscoveryMerger, discoveryMergeInput, documentKey, type DiscoveryMergeInput } from '../aggregation/merger';
import { GVExclusions, listExtensionGroupVersions } from '../aggregation/exclusion';
import { fetchOpenAPIIndex, mergeOpenAPIIndex, type OpenAPIIndex } from '../aggregation/openapi-index';

export interface SnapshotPublisherOptions {
  local: OwnDispatcher;
  peerPools: PeerPools;
  /** Identity headers sent with peer fetches (ownPeerIdentityHeaders). */
  peerIdentityHeaders?: Record<string, string>;
  snapshots: SnapshotHolder;
  /** This server's ID (takes part in the merge order, docs/kubernetes-mvp.md §5.4). */
  localID: string;
  /** Current peers; re-read on every refresh (src/peers: a static list or identity Leases). */
  peers(): readonly PeerEndpoint[];
  /**
   * false = do not route to this peer now (failed its health probe, or its Lease expired): it is
   * published without an address, so its GVRs go to other serving peers or get a 503, while its
   * discovery view follows the grace rule. Call republish() when an answer changes.
   */
  peerReachable?(id: string): boolean;
  /** Merge in a worker thread (default) or inline. */
  merger?: DiscoveryMerger;
  refreshIntervalMs: number;
  /** How long a peer whose fetch fails keeps its last good view before it leaves routing. */
  peerGraceMs: number;
  /**
   * After start(), the longest the first snapshot waits to be complete (holder.ts Snapshot.complete)
   * for a peer that does not answer (--peer-discovery-startup-timeout); 0 = complete at once.
   */
  startupTimeoutMs?: number;
  /** Whether the membership is known (lease mode: the first list of the identity Leases is in). */
  membershipKnown?(): boolean;
  fetchTimeoutMs: number;
  metrics: Metrics;
  log: Logger;
  now?: () => number;
}

interface ServerView {
  api?: FetchedDocument;
  apis?: FetchedDocument;
  /** When both documents were last fetched successfully (ms). */
  lastGood: number;
  up: boolean;
  address: string;
  incarnation?: string;
  /** When it left the membership (its view kept, unaddressed, for the grace period). */
  leftAt?: number;
}

export class SnapshotPublisher {
  private local: ServerView | undefined;
  private readonly peerViews = new Map<string, ServerView>();
  private timer: NodeJS.Timeout | undefined;
  /** The republish at the end of each departed peer's grace period (cleared by stop()). */
  private readonly graceTimers = new Set<NodeJS.Timeout>();
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private readonly now: () => number;
  private readonly exclusions: GVExclusions;
  private readonly merger: DiscoveryMerger;
  /** The newest merge that finished: its input key and documents. */
  private built: { key: string; snapshot: ServedDiscovery | undefined } = { key: '', snapshot: undefined };
  /** Incremented by every publish(): a merge that finishes after a newer publish() was asked for does not publish. */
  private publishSeq = 0;
  /**
   * Every fetched body is decoded in the merge worker (merger.decode): see merge.worker.ts
   * decodeTask. A peer's is refused there past PEER_DISCOVERY_LIMITS (decode.ts says why); the
   * local apiserver's is this cluster's own and is not.
   */
  private readonly decodeLocal = (body: Buffer, what: string) => this.merger.decode(body, what, { transfer: true });
  private readonly decodePeer = (body: Buffer, what: string) => this.merger.decode(body, what, { limits: PEER_DISCOVERY_LIMITS, transfer: true });
  /** The membership of the last refresh (memberKey, joined): a change makes its fetches count as upstream's would. */
  private lastMembership: string | undefined;
  private openAPI: OpenAPIIndex | undefined;
  private merging: Promise<void> = Promise.resolve();

  constructor(private readonly o: SnapshotPublisherOptions) {
    this.now = o.now ?? Date.now;
    this.exclusions = new GVExclusions(this.now);
    this.merger = o.merger ?? new DiscoveryMerger();
  }

  /** Whether the peer answered its last discovery fetch (undefined: not fetched yet). */
  peerUp(id: string): boolean | undefined {
    return this.peerViews.get(id)?.up;
  }

  /** Whether the local apiserver's discovery was ever fetched. */
  get localSynced(): boolean {
    return this.local !== undefined;
  }

  /** Resolves once the snapshot of the latest refresh, with its discovery documents, is published. */
  mergesDone(): Promise<void> {
    return this.merging;
  }

  /** Runs the first refresh and schedules the next ones. Resolves after the first publish. */
  async start(): Promise<void> {
    const wait = this.o.startupTimeoutMs ?? 0;
    this.startupDeadline = this.now() + wait;
    // Past the bound the snapshot is complete with the views in hand: published then, not at the next refresh.
    if (wait > 0) {
      this.startupTimer = setTimeout(() => this.republish(), wait + 10);
      this.startupTimer.unref();
    }
    await this.refresh();
    this.schedule();
  }

  /** When the first snapshot is complete at the latest (start()). */
  private startupDeadline = 0;
  private startupTimer: NodeJS.Timeout | undefined;
  /** A complete snapshot was published: every later one is complete too. */
  private completed = false;

  /**
   * Whether documents merged from the views in hand make a complete snapshot: the local view and
   * every known peer's (a peer fetched at least once; the membership itself known), or the startup
   * bound passed (a peer that does not answer is merged in when it does, as any peer).
   */
  private completeNow(): boolean {
    if (this.completed) return true;
    if (this.now() >= this.startupDeadline) return true;
    if (this.local?.apis === undefined || !(this.o.membershipKnown?.() ?? true)) return false;
    return this.o.peers().every((p) => this.peerViews.get(p.id)?.apis !== undefined);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.startupTimer) clearTimeout(this.startupTimer);
    for (const t of this.graceTimers) clearTimeout(t);
    this.graceTimers.clear();
    await this.merging.catch(() => undefined);
    await this.merger.close();
  }

  /** The local view's raw documents (null until fetched once). */
  get localView(): { api?: FetchedDocument; apis?: FetchedDocument } | undefined {
    return this.local;
  }

  /** Publishes a new route table from the views in hand, without fetching (peer reachability changed). */
  republish(): void {
    if (!this.stopped) this.publish();
  }

  /** Refreshes now; concurrent calls coalesce into one extra run. */
  refresh(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.refreshOnce();
        } catch (e) {
          // Every fetch's failure is handled in it; this is a bug's, and the daemon keeps serving the
          // last snapshot (a refresh started by a timer or a membership change has no caller to throw to).
          this.o.log.error('discovery refresh failed', e);
        }
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = undefined;
      // Whoever asked (the timer, a membership change, a test), the next run is timed from now:
      // soon while a fetch fails (nextDelay), else a refresh interval later.
      if (this.scheduled) this.schedule();
    });
    return this.running;
  }

  /** start() ran: refreshes are timed (schedule). */
  private scheduled = false;

  private schedule(): void {
    if (this.stopped) return;
    this.scheduled = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refresh(), this.nextDelay());
    this.timer.unref();
  }

  /** Refreshes in a row in which some view failed (a peer, or the local apiserver, not answering). */
  private failedStreak = 0;

  /**
   * The wait before the next refresh: the interval, or while a fetch fails a backoff from 1 s
   * doubling up to it — as upstream retries a failed peer fetch in a rate-limited queue
   * (docs/kubernetes-mvp.md §4.4). A peer whose first fetch failed (it was still starting) used to
   * wait the whole interval (30 s by default) before it was asked again.
   */
  private nextDelay(): number {
    const failing = this.local === undefined || [...this.peerViews.values()].some((v) => !v.up && v.leftAt === undefined); // a departed peer is not retried
    if (!failing) {
      this.failedStreak = 0;
      return this.o.refreshIntervalMs;
    }
    return Math.min(this.o.refreshIntervalMs, 1000 * 2 ** Math.min(this.failedStreak++, 10));
  }

  /** When each member peer's discovery was last fetched (Unix seconds), for mvproxy_peer_discovery_last_success_timestamp_seconds; a peer that left takes its series with it. */
  *lastSuccess(): Iterable<readonly [peer: string, seconds: number]> {
    for (const [id, v] of this.peerViews) if (v.leftAt === undefined && Number.isFinite(v.lastGood)) yield [id, v.lastGood / 1000];
  }

  private async refreshOnce(): Promise<void> {
    const peers = this.o.peers();
    try {
      this.exclusions.update(await listExtensionGroupVersions(this.o.local, this.o.fetchTimeoutMs));
    } catch (e) {
      // Keep the last known set: dropping exclusions would route this cluster's CRDs to peers.
      this.o.log.info(2, 'listing CRDs and APIServices failed; keeping the last exclusion set', { err: (e as Error).message });
    }
    try {
      this.openAPI = await fetchOpenAPIIndex(this.o.local, this.openAPI, this.o.fetchTimeoutMs);
    } catch (e) {
      this.o.log.info(2, 'fetching the local /openapi/v3 index failed; keeping the last one', { err: (e as Error).message });
    }
    // Upstream fetches every peer's discovery when the membership changes (a lease added, deleted
    // or taken over) and retries a failed one; it has no periodic refresh (docs/kubernetes-mvp.md §4.4). Its fetches
    // count in apiserver_rerouted_request_total; mvproxy's periodic refresh of an unchanged, healthy
    // peer does not, so the series means what it means in-tree.
    const membership = peers.map(memberKey).sort().join(',');
    const membershipChanged = membership !== this.lastMembership;
    this.lastMembership = membership;
    const live = new Set(peers.map((p) => p.id));
    const now = this.now();
    for (const [id, v] of this.peerViews) {
      if (live.has(id)) continue;
      if (v.leftAt === undefined) {
        // Left the membership (Lease deleted or expired, or gone from the peers file): its view
        // stays for the grace period without an address, so what only it served gets a 503 Status
        // instead of the local apiserver's 404, which controllers read as "deleted" (the whole
        // point of the proxy). A restart within the grace period is the common case: its new
        // incarnation is fetched afresh and routed to at once.
        this.peerViews.set(id, { ...v, up: false, address: '', leftAt: now });
        this.o.metrics.peersUp.remove({ peer: id });
        // Out of routing when the grace period ends, not at the next refresh (30 s later).
        const grace = setTimeout(() => {
          this.graceTimers.delete(grace);
          this.republish();
        }, this.o.peerGraceMs + 10);
        grace.unref();
        this.graceTimers.add(grace);
      } else if (now - v.leftAt > this.o.peerGraceMs) this.peerViews.delete(id);
    }
    // Every view is fetched at once. The local one is published without waiting more than
    // PEER_WAIT_MS for the peers: a peer slow to answer (fetchTimeoutMs, 10 s, at most) used to hold
    // back every change of the local apiserver's own API set (a CRD it now serves) for as long, and
    // every refresh asked meanwhile (the local apiserver serving again, a membership change) behind it.
    // A peer still answering is published when it answers, and not asked again until then.
    const fetchingPeers = Promise.all(peers.map((p) => this.fetchPeer(p, membershipChanged)));
    const local = await this.fetchView(undefined, this.local, this.o.local, false);
    if (local) this.local = local;
    if ((await within(fetchingPeers, PEER_WAIT_MS)) === LATE) {
      void fetchingPeers.then((changed) => {
        // Only a late answer that changed a view publishes again: an unchanged one (the common 304)
        // would publish the same snapshot under a new generation, and merge again an input whose
        // merge failed (counting its error twice).
        if (changed.includes(true)) this.republish();
        // Timed again from the late answers: a peer that failed then is retried soon (nextDelay), not an interval later.
        if (this.scheduled && this.running === undefined) this.schedule();
      });
    }
    this.o.peerPools.retain(peers.map((p) => p.address));
    this.publish();
    // A refresh resolves once its snapshot is out (or a newer one superseded it): callers such as
    // setStaticPeers() and the tests route with the result right after.
    await this.merging;
  }

  /** Each peer's discovery fetch in flight, by memberKey: one at a time. */
  private readonly peerFetches = new Map<string, Promise<boolean>>();

  /**
   * Fetches one peer's view, or joins its fetch in flight; never rejects. A view that arrives after
   * the peer changed address or incarnation, or left, is dropped: the member's new fetch decides.
   * Resolves to whether the peer's view changed (what routing or the merged document would see).
   */
  private fetchPeer(p: PeerEndpoint, membershipChanged: boolean): Promise<boolean> {
    const key = memberKey(p);
    const inFlight = this.peerFetches.get(key);
    if (inFlight) return inFlight;
    const fetched = (async () => {
      const prev = this.peerViews.get(p.id);
      const same = prev && prev.address === p.address && prev.incarnation === p.incarnation;
      const countRerouted = membershipChanged || !same || !prev.up;
      const view = await this.fetchView(p, same ? prev : undefined, this.o.peerPools.get(p.address), true, countRerouted);
      const member = this.o.peers().find((m) => m.id === p.id);
      if (!view || this.stopped || member?.address !== p.address || member.incarnation !== p.incarnation) return false;
      const stored = this.peerViews.get(p.id);
      this.peerViews.set(p.id, { ...view, incarnation: p.incarnation });
      return stored === undefined || stored.up !== view.up || stored.address !== view.address || stored.incarnation !== p.incarnation || stored.leftAt !== undefined || !sameDocument(stored.api, view.api) || !sameDocument(stored.apis, view.apis);
    })()
      // Each failure is handled in fetchView; this is for a bug's (a throw must not end the refresh, nor go unhandled).
      .catch((e: unknown) => {
        this.o.log.error('peer discovery refresh failed', e, { peer: p.id });
        return true;
      })
      .finally(() => this.peerFetches.delete(key));
    this.peerFetches.set(key, fetched);
    return fetched;
  }

  /** Fetches /api and /apis of one server; returns the new view, or the kept one on failure (undefined = nothing yet). */
  private async fetchView(peer: PeerEndpoint | undefined, prev: ServerView | undefined, upstream: OwnDispatcher, peerHop: boolean, countRerouted = false): Promise<ServerView | undefined> {
    const fetch = (path: '/api' | '/apis', previous: FetchedDocument | undefined) =>
      fetchDiscoveryDocument(upstream, path, { peerHop, identityHeaders: this.o.peerIdentityHeaders, previous, timeoutMs: this.o.fetchTimeoutMs, decode: peer ? this.decodePeer : this.decodeLocal });
    const paths = await Promise.allSettled([fetch('/api', prev?.api), fetch('/apis', prev?.apis)]);
    if (peer) {
      // As upstream, per path: a rerouted request with the status the server answered (503 when
      // none, as its proxy responder writes), and one fetch_discovery error per failed path.
      for (const r of paths) {
        if (countRerouted) this.o.metrics.reroutedRequests.inc({ code: String(r.status === 'fulfilled' ? 200 : answeredStatus(r.reason)), group: '', version: '', resource: '' });
        if (r.status === 'rejected') {
          this.o.metrics.peerDiscoverySyncErrors.inc({ type: 'fetch_discovery' });
          this.refused(peer, r.reason);
        }
      }
    }
    try {
      const [api, apis] = paths.map((r) => {
        if (r.status === 'rejected') throw r.reason;
        return r.value;
      });
      if (peer) {
        if (!prev?.up) this.o.log.info(2, 'peer discovery fetched', { peer: peer.id, address: peer.address });
        this.o.metrics.peersUp.set({ peer: peer.id }, 1);
      }
      return { api, apis, lastGood: this.now(), up: true, address: peer?.address ?? '' };
    } catch (e) {
      const err = e as Error;
      if (peer) {
        this.o.metrics.peersUp.set({ peer: peer.id }, 0);
        if (prev?.up !== false) this.o.log.info(2, 'peer discovery failed', { peer: peer.id, address: peer.address, err: err.message });
        if (!prev) return { lastGood: -Infinity, up: false, address: peer.address };
        return { ...prev, up: false };
      }
      this.o.log.error('local discovery failed', err);
      return prev;
    }
  }

  /**
   * A peer's document over a bound (its bytes, or PEER_DISCOVERY_LIMITS): counted by the bound and
   * logged at every refusal, not only when the peer goes down, since the peer looks healthy
   * otherwise and keeps sending it (its last good view stays for the grace period).
   */
  private refused(peer: PeerEndpoint, e: unknown): void {
    const limit = e instanceof DiscoveryLimitError ? e.limit : e instanceof DiscoveryFetchError && hasCode(e, ErrorCode.MVP_ERR_DISCOVERY_TOO_LARGE) ? 'bytes' : undefined;
    if (limit === undefined) return;
    this.o.metrics.peerDiscoveryRefused.inc({ limit: REFUSED_LIMIT_LABEL[limit] });
    this.o.log.info(0, "peer discovery document refused: over a bound of what one peer may list; keeping the peer's last good view", { peer: peer.id, address: peer.address, limit: REFUSED_LIMIT_LABEL[limit], err: (e as Error).message });
  }

  /**
   * Builds the next snapshot from the views in hand and publishes it. When the merge input changed,
   * the route table and the discovery documents are published together, once the merge worker is
   * done (a few ms; MERGE_WAIT_MS at most, then the table goes out with the previous documents and
   * the new ones follow), so a snapshot's documents and table come from the same views. An
   * unchanged input (a refresh of all 304s, a peer's reachability) publishes at once.
   */
  private publish(): void {
    const seq = ++this.publishSeq;
    const now = this.now();
    const peers = new Map<string, PeerDiscovery>();
    const peerApis: [string, FetchedDocument][] = [];
    // Every member's peer listener, reachable right now or not: the lagging-table fallback asks
    // them (a peer whose apiserver just restarted is probed back into routing a second later).
    const members = new Map<string, string>();
    const memberIDs = new Set<string>();
    for (const p of this.o.peers()) {
      memberIDs.add(p.id);
      if (isHostPort(p.address)) members.set(p.id, p.address);
    }
    void this.o.metrics.retainPeers(memberIDs).catch((e: unknown) => this.o.log.error('dropping the metric series of departed peers failed', e));
    for (const [id, v] of this.peerViews) {
      if (!v.apis && !v.api) continue;
      if (!v.up && now - (v.leftAt ?? v.lastGood) > this.o.peerGraceMs) continue; // past the grace period: out of routing and of the merged document
      const reachable = v.leftAt === undefined && (this.o.peerReachable?.(id) ?? true);
      peers.set(id, { address: reachable ? v.address : '', routes: routesOf(v) });
      if (v.apis) peerApis.push([id, v.apis]);
    }
    const exclusions = this.exclusions.excluded;
    const openAPI = this.openAPI;
    // Built a slice at a time (routing/routetable.ts buildSliced): a small table at once, a large
    // one between requests. Abandoned when a newer publication supersedes this one.
    const building = RouteTable.buildSliced(
      {
        synced: this.local !== undefined,
        local: { routes: this.local ? routesOf(this.local) : [] },
        peers,
        memberAddresses: members,
        excludedGroupVersions: exclusions,
      },
      TABLE_SLICE_MS,
      () => seq !== this.publishSeq || this.stopped,
    );
    if (!(building instanceof RouteTable)) building.catch(() => undefined); // awaited below, maybe only after a merge: never an unhandled rejection meanwhile
    // Complete only with documents merged from these views (not the previous ones a late merge leaves).
    const complete = this.completeNow();
    const parts = (table: RouteTable) => ({ table, exclusions, openAPIIndex: openAPI ? mergeOpenAPIIndex(openAPI, table) : undefined });
    const merge = this.local?.apis ? discoveryMergeInput(this.o.localID, this.local.apis, peerApis, exclusions) : undefined;
    if (merge === undefined || merge.key === this.built.key) {
      const discovery = this.built.snapshot;
      if (building instanceof RouteTable) return this.commit({ ...parts(building), discovery, complete });
      const built = building.then((table) => {
        if (table !== undefined && seq === this.publishSeq && !this.stopped) this.commit({ ...parts(table), discovery, complete });
      });
      // Not queued behind a merge under way (a reachability change publishes as soon as its table is
      // built), but mergesDone() waits for it too.
      this.merging = Promise.all([this.merging, built]).then(
        () => undefined,
        (e: unknown) => this.o.log.error('publishing the snapshot failed', e),
      );
      return;
    }
    this.merging = this.merging.then(async () => {
      if (seq !== this.publishSeq || this.stopped) return; // a newer publication supersedes this one
      const docs = await this.merged(merge.input, merge.key);
      const table = await building;
      if (table === undefined || seq !== this.publishSeq || this.stopped) return; // superseded while merging: the newer one publishes (reusing this merge if its input is the same)
      this.commit({ ...parts(table), discovery: docs ?? this.built.snapshot, complete: complete && docs !== undefined });
    }).catch((e: unknown) => this.o.log.error('publishing the snapshot failed', e)); // the chain must never stay rejected
  }

  private commit(parts: SnapshotParts & { table: RouteTable }): void {
    this.o.metrics.routeTableGVRs.set(parts.table.size);
    const docs = parts.discovery;
    const newDocs = docs !== undefined && docs !== this.o.snapshots.current.discovery;
    const published = this.o.snapshots.publish(parts);
    if (published.complete && !this.completed) {
      this.completed = true;
      this.o.log.info(2, 'discovery complete: every known peer merged, or the startup timeout passed', { peers: this.o.peers().length, merged: docs?.counts.servers });
    }
    if (newDocs) this.o.log.info(2, 'discovery snapshot published', { generation: published.generation, servers: docs.counts.servers, groups: docs.counts.groups, resources: docs.counts.resources, mergeMs: Math.round(docs.build.ms * 10) / 10, thread: docs.build.thread });
  }

  /**
   * The documents for one merge input: built in the merge worker (merge.worker.ts), or undefined
   * when the merge failed or is still running after MERGE_WAIT_MS (it then publishes itself when it ends).
   */
  private async merged(input: DiscoveryMergeInput, key: string): Promise<ServedDiscovery | undefined> {
    if (this.built.key === key) return this.built.snapshot; // an earlier queued publication merged the same input
    const build = this.merger.build(input).then(
      (snap) => {
        this.built = { key, snapshot: snap };
        this.o.metrics.discoveryMergeDuration.observe(snap.build.ms / 1000);
        return snap;
      },
      (e: unknown) => {
        this.o.log.error('discovery merge failed; the previous documents stay published until the next refresh', e);
        this.o.metrics.discoveryMergeErrors.inc();
        return undefined;
      },
    );
    const first = await within(build, MERGE_WAIT_MS);
    if (first !== LATE) return first;
    this.o.log.info(0, `the discovery merge is taking longer than ${MERGE_WAIT_MS} ms: the route table is published with the previous documents`, { key });
    void build.then((snap) => {
      if (snap && !this.stopped) this.republish(); // same input now built: publishes at once
    });
    return undefined;
  }
}

/** mvproxy_peer_discovery_refused_total's `limit` label for each bound (telemetry/metrics.ts REFUSED_LIMITS). */
const REFUSED_LIMIT_LABEL: Record<DiscoveryLimit | 'bytes', RefusedLimit> = {
  bytes: 'bytes',
  groups: 'groups',
  versionsPerGroup: 'versions_per_group',
  versions: 'versions',
  resourcesPerVersion: 'resources_per_version',
  resources: 'resources',
};

/** What routing reads of a server's /api and /apis. */
function routesOf(v: ServerView): RoutingView[] {
  const out: RoutingView[] = [];
  if (v.api) out.push(v.api.routes);
  if (v.apis) out.push(v.apis.routes);
  return out;
}

/** The longest the event loop spends building a route table at a time (routing/routetable.ts buildSliced). */
const TABLE_SLICE_MS = 5;

/** The longest a route table waits for its discovery documents (a merge takes ~10–100 ms on the fixtures). */
const MERGE_WAIT_MS = 5_000;

/**
 * How long a refresh waits for its peers' views once the local one is in before it publishes what
 * it has and ends (the rest publish when they answer). Peers on a LAN answer a 304 in a few ms.
 */
const PEER_WAIT_MS = 1_000;

const LATE = Symbol('late');

/** What `p` resolves to, or LATE if it has not settled within `ms` (it goes on; the caller may chain on it). */
async function within<T>(p: Promise<T>, ms: number): Promise<T | typeof LATE> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof LATE>((resolve) => {
    timer = setTimeout(() => resolve(LATE), ms);
    timer.unref();
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The same document, as the merge input's key tells them apart (merger.ts documentKey): the one a 304 kept, or the same bytes again. */
function sameDocument(a: FetchedDocument | undefined, b: FetchedDocument | undefined): boolean {
  return a === b || (a !== undefined && b !== undefined && documentKey(a) === documentKey(b));
}

/** One member as the publisher tells members apart: a new address or incarnation is a new member. */
function memberKey(p: PeerEndpoint): string {
  return `${p.id}=${p.address}#${p.incarnation ?? ''}`;
}

/** The HTTP status behind a failed discovery fetch: the server's answer, or 503 when there was none (upstream's proxy responder). */
function answeredStatus(e: unknown): number {
  if (!(e instanceof DiscoveryFetchError)) return 503;
  return e.status ?? (hasCode(e, ErrorCode.MVP_ERR_DISCOVERY_TRANSPORT) ? ERRORS.MVP_ERR_DISCOVERY_TRANSPORT.status : 200);
}
