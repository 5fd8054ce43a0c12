// Peers, wired: membership (static list or identity Leases) + health probes, behind the three
// questions the daemon and SnapshotPublisher ask — who are the peers, may I route to this one, what is
// wrong with it — and the lifecycle hooks (start after the peer listener is up, leave the membership
// on graceful shutdown, stop).

import type { OwnDispatcher } from '../api/own-requests';
import type { DaemonConfig } from '../config/types';
import type { PeerPools } from '../upstream/pools';
import type { Metrics } from '../telemetry/metrics';
import type { Logger } from '../telemetry/log';
import { peerAdvertiseAddress } from './advertise';
import { PeerHealth } from './health';
import { LeaseMembership } from './lease';
import type { Membership, PeerEndpoint } from './membership';
import { StaticMembership } from './static';

export interface PeeringOptions {
  config: DaemonConfig;
  /** The local apiserver for mvproxy's own calls (with --local-apiserver-token-file's token). */
  local: OwnDispatcher;
  peerPools: PeerPools;
  /** Identity headers of the health probes (ownPeerIdentityHeaders). */
  peerIdentityHeaders?: Record<string, string>;
  metrics: Metrics;
  log: Logger;
  /** The peer list changed (a peer came, left, restarted, moved, expired). */
  onMembershipChange(peers: readonly PeerEndpoint[]): void;
  /** A peer's reachability changed (health probe): republish the route table. */
  onReachabilityChange(): void;
  /** Tests: options of the lease machinery. */
  lease?: { backoff?: { initialMs: number; maxMs: number }; watchTimeoutSeconds?: () => number };
}

export class Peering {
  private membership: Membership | undefined;
  private health: PeerHealth | undefined;
  /** What this node advertises to peers (lease mode), for logs and tests. */
  advertisedAddress = '';

  constructor(private readonly o: PeeringOptions) {
    if (o.config.peerDiscovery === 'static') {
      this.membership = new StaticMembership({ serverID: o.config.serverID, flagPeers: o.config.staticPeers, peersFile: o.config.peersFile, log: o.log });
    }
  }

  /** Reads what can be checked before anything listens (the peers file: a bad one throws a configuration error). */
  load(): void {
    if (this.membership instanceof StaticMembership) this.membership.start();
  }

  /** Starts membership (lease mode needs the peer listener's actual port) and health probes. */
  start(peerPort: number): void {
    const c = this.o.config;
    if (c.peerDiscovery === 'lease') {
      const adv = peerAdvertiseAddress({ peerAdvertiseIP: c.peerAdvertiseIP, peerAdvertisePort: c.peerAdvertisePort, advertiseAddress: c.advertiseAddress, peerBindAddress: c.peerBindAddress, peerPort });
      if (adv.warning) this.o.log.info(0, adv.warning);
      if (!adv.address) this.o.log.error('no address to advertise to peers: set --advertise-address or --peer-advertise-ip/--peer-advertise-port', new Error('no non-loopback interface address found'));
      else this.o.log.info(2, 'advertising the peer address', { address: adv.address, source: adv.source });
      this.advertisedAddress = adv.address;
      const durationSeconds = c.identityLeaseDurationSeconds;
      this.membership = new LeaseMembership({
        local: this.o.local,
        namespace: c.leaseNamespace,
        serverID: c.serverID,
        advertiseAddress: adv.address,
        durationSeconds,
        renewIntervalMs: (c.identityLeaseRenewIntervalSeconds ?? durationSeconds / 3) * 1000,
        expiredGraceMs: c.peerDiscoveryGraceMs,
        timeoutMs: Math.min(c.requestTimeoutMs, 10_000, (durationSeconds * 1000) / 2),
        log: this.o.log,
        ...(this.o.lease?.backoff ? { backoff: this.o.lease.backoff } : {}),
        ...(this.o.lease?.watchTimeoutSeconds ? { watchTimeoutSeconds: this.o.lease.watchTimeoutSeconds } : {}),
      });
    }
    const m = this.membership!;
    this.health = new PeerHealth({
      peers: () => m.peers().filter((p) => m.live(p.id)),
      pools: this.o.peerPools,
      identityHeaders: this.o.peerIdentityHeaders,
      intervalMs: c.peerProbeIntervalMs,
      metrics: this.o.metrics,
      log: this.o.log,
      onChange: () => this.o.onReachabilityChange(),
    });
    m.onChange(() => {
      this.o.onMembershipChange(m.peers());
      void this.health?.probeAll();
    });
    if (!(m instanceof StaticMembership)) m.start();
    this.health.start();
  }

  get mode(): 'static' | 'lease' {
    return this.o.config.peerDiscovery;
  }

  /** Whether the membership is known: static, or the first list of the identity Leases is in. */
  get membershipKnown(): boolean {
    return this.membership instanceof LeaseMembership ? this.membership.synced : this.membership !== undefined;
  }

  peers(): readonly PeerEndpoint[] {
    return this.membership?.peers() ?? [];
  }

  /** Whether requests may be routed to the peer now: a live member that passes its health probe. */
  reachable(id: string): boolean {
    return (this.membership?.live(id) ?? true) && (this.health?.reachable(id) ?? true);
  }

  /**
   * Requests waiting on the peer will not be answered: its identity Lease expired, or its probe got
   * no HTTP answer at all (PeerHealth.unresponsive). Those are failed at once (daemon); a peer whose
   * probe got an answer is only taken out of routing.
   */
  unresponsive(id: string): boolean {
    return (this.membership !== undefined && !this.membership.live(id)) || (this.health?.unresponsive(id) ?? false);
  }

  /** Why the peer is not routed to, if it is not (the /readyz informational check). */
  problem(id: string): string | undefined {
    if (this.membership && !this.membership.live(id)) return `the identity lease of peer ${id} expired`;
    const why = this.health?.problem(id);
    return why ? `peer ${id} failed its health probe: ${why}` : undefined;
  }

  /** Lease mode: null when the own Lease is current, else why not. */
  ownLeaseProblem(): Error | null {
    return this.membership instanceof LeaseMembership ? this.membership.ownLeaseProblem() : null;
  }

  /** Replaces the --static-peers part of a static membership. */
  setStaticPeers(peers: readonly PeerEndpoint[]): void {
    if (!(this.membership instanceof StaticMembership)) throw new Error('setStaticPeers: peers come from identity Leases (--peer-discovery=lease)');
    this.membership.setFlagPeers(peers);
  }

  /** Graceful shutdown: leave the membership within `timeoutMs`. */
  release(timeoutMs: number): Promise<void> {
    return this.membership?.release(timeoutMs) ?? Promise.resolve();
  }

  stop(): void {
    this.health?.stop();
    this.membership?.stop();
  }
}
