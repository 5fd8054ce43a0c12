// Peer health: every --peer-probe-interval each peer's peer listener gets a cheap request, over the
// same mTLS pool requests use (so a probe proves what a request needs: TCP, TLS both ways, the
// peer's CN allow-list, and its apiserver behind it):
//
//   GET /readyz  with x-kubernetes-peer-proxied: true
//
// The peer serves it from its own apiserver (one hop): 200 = up. Anything else (refused, TLS
// rejected, a 401 from its allow-list, its apiserver not ready or shutting down, no answer within
// the timeout) = down. A down peer is published without an address (SnapshotPublisher.peerReachable),
// so the request path skips it: its GVRs go to another peer serving them, or get a 503 when none is
// left, until a probe succeeds again; the request path itself stays a pure read of the route table.
// Its discovery view follows the grace rule (snapshot/publisher.ts), independently.
//
// A peer that failed is probed again every DOWN_REPROBE_MS (1 s, or the interval if shorter) until it
// answers, not only at the next interval: a restarted peer is routed to again within about a second
// of answering, instead of up to --peer-probe-interval (5 s) later.
//
// A peer not probed yet counts as reachable (its discovery fetch is what brings it into routing).
// The gauge mvproxy_peer_up follows each probe; /readyz has an informational check per peer.
//
// A probe that could not open a connection because mvproxy is out of file descriptors (EMFILE,
// ENFILE) says nothing about the peer: no verdict, logged (api/fd-limit.ts). At 10,000 watches it
// marked every peer down and back each interval, taking their GVRs out of routing each time.

import type { PeerEndpoint } from './membership';
import type { PeerPools } from '../upstream/pools';
import type { Metrics } from '../telemetry/metrics';
import type { Logger } from '../telemetry/log';
import { PeerProxiedHeader } from '../api/headers';
import { isOutOfFileDescriptors, reportFdShortage } from '../api/fd-limit';

export const PROBE_PATH = '/readyz';

export interface PeerHealthOptions {
  peers(): readonly PeerEndpoint[];
  pools: PeerPools;
  /** Identity headers sent with each probe (ownPeerIdentityHeaders). */
  identityHeaders?: Record<string, string>;
  intervalMs: number;
  /** Per probe; default: the interval, at least 1 s, at most 5 s. */
  timeoutMs?: number;
  metrics: Metrics;
  log: Logger;
  /** Called after any peer's reachability changed. */
  onChange(): void;
}

interface State {
  up: boolean | undefined;
  address: string;
  /** Why the last probe failed. */
  why?: string;
  /** The last probe got an HTTP answer (any status): the peer mvproxy itself is alive and answering. */
  answered?: boolean;
  probing: boolean;
  /** The quick re-probe of a down peer, when one is scheduled. */
  retry?: NodeJS.Timeout;
}

/** How soon a peer that failed its probe is probed again (capped by the interval). */
const DOWN_REPROBE_MS = 1_000;

export class PeerHealth {
  private readonly state = new Map<string, State>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly timeoutMs: number;

  constructor(private readonly o: PeerHealthOptions) {
    this.timeoutMs = o.timeoutMs ?? Math.min(5_000, Math.max(1_000, o.intervalMs));
  }

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      void this.probeAll();
      this.timer = setTimeout(tick, this.o.intervalMs);
      this.timer.unref();
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const st of this.state.values()) if (st.retry) clearTimeout(st.retry);
  }

  /** false only after a failed probe (until one succeeds). */
  reachable(id: string): boolean {
    return this.state.get(id)?.up !== false;
  }

  /** The last probe's result (undefined: not probed yet). */
  up(id: string): boolean | undefined {
    return this.state.get(id)?.up;
  }

  /**
   * The last probe failed without any HTTP answer (refused, TLS, timeout): the peer mvproxy itself
   * may be stalled, so requests waiting on it will not be answered. A probe answered with a status
   * (its apiserver not ready: 403 or 500 while it starts, 503 while it stops) says the peer mvproxy
   * answers; what it already took it will answer too.
   */
  unresponsive(id: string): boolean {
    const s = this.state.get(id);
    return s?.up === false && s.answered !== true;
  }

  /** Why the last probe failed, if it did. */
  problem(id: string): string | undefined {
    const s = this.state.get(id);
    return s?.up === false ? s.why : undefined;
  }

  /** Probes every current peer now (membership changed); resolves when all answered or timed out. */
  async probeAll(): Promise<void> {
    const peers = this.o.peers();
    const live = new Set(peers.map((p) => p.id));
    for (const [id, st] of [...this.state]) {
      if (live.has(id)) continue;
      if (st.retry) clearTimeout(st.retry);
      this.state.delete(id);
    }
    await Promise.all(peers.map((p) => this.probe(p)));
  }

  private async probe(p: PeerEndpoint): Promise<void> {
    let s = this.state.get(p.id);
    if (!s || s.address !== p.address) {
      if (s?.retry) clearTimeout(s.retry);
      s = { up: undefined, address: p.address, probing: false };
      this.state.set(p.id, s);
    }
    if (s.probing || this.stopped) return;
    s.probing = true;
    let why: string | undefined;
    let answered = false;
    let noVerdict = false;
    // AbortSignal.timeout()'s own timer outlives the probe (up to timeoutMs after stop()); this one is cleared when it ends.
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), this.timeoutMs);
    timer.unref();
    try {
      const res = await this.o.pools.get(p.address).request({
        path: PROBE_PATH,
        method: 'GET',
        headers: { ...this.o.identityHeaders, [PeerProxiedHeader]: 'true', accept: 'text/plain', 'user-agent': 'mvproxy-peer-probe' },
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        signal: timeout.signal,
      });
      answered = true;
      await res.body.dump();
      if (res.statusCode !== 200) why = `GET ${PROBE_PATH}: status ${res.statusCode}`;
    } catch (e) {
      const err = e as Error & { code?: string };
      why = `GET ${PROBE_PATH}: ${err.code ? err.code + ': ' : ''}${err.message}`;
      noVerdict = isOutOfFileDescriptors(e);
    } finally {
      clearTimeout(timer);
      s.probing = false;
    }
    if (this.stopped || this.state.get(p.id) !== s) return; // left meanwhile
    if (noVerdict) {
      if (reportFdShortage('peer-probe')) this.o.log.info(0, 'peer probe not made: mvproxy is out of file descriptors; the peer keeps its last state (logged once per 10 s)', { peer: p.id, address: p.address, err: why });
      return;
    }
    const up = why === undefined;
    const was = s.up;
    s.up = up;
    s.why = why;
    s.answered = answered;
    this.o.metrics.peersUp.set({ peer: p.id }, up ? 1 : 0);
    if (!up && !s.retry) {
      const st = s;
      st.retry = setTimeout(() => {
        st.retry = undefined;
        if (this.state.get(p.id) === st) void this.probe(p);
      }, Math.min(DOWN_REPROBE_MS, this.o.intervalMs));
      st.retry.unref();
    }
    if (was === up) return;
    if (up) {
      if (was === false) this.o.log.info(0, 'peer answers its health probe again; routing to it', { peer: p.id, address: p.address });
    } else this.o.log.info(0, 'peer failed its health probe; not routing to it until it answers', { peer: p.id, address: p.address, err: why });
    if (was !== undefined || !up) this.o.onChange();
  }
}
