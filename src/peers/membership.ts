// Who the peers are. Two sources behind one interface: a static list (flags and a watched peers
// file, src/peers/static.ts) and Kubernetes identity Leases (src/peers/lease.ts). SnapshotPublisher
// re-reads peers() on every refresh; the daemon calls sync.refresh() when onChange fires, so a new
// or restarted peer is fetched (and routed to) within a refresh, not a refresh interval.

export interface PeerEndpoint {
  /** Server ID (Kubernetes: the identity lease name). */
  readonly id: string;
  /** host:port of the peer's peer listener. */
  readonly address: string;
  /**
   * Changes when the peer restarts (lease mode: its Lease's holderIdentity). A new incarnation's
   * documents are fetched afresh (no If-None-Match), as Kubernetes re-reads a peer on a holder change.
   */
  readonly incarnation?: string;
}

export interface Membership {
  readonly mode: 'static' | 'lease';
  /** Current peers (never this node). */
  peers(): readonly PeerEndpoint[];
  /**
   * false when the peer is listed but known not to be a live member (its Lease expired: it is kept
   * for the discovery grace period so its GVRs answer 503, not a misleading 404, but never dialled).
   */
  live(id: string): boolean;
  /** Called after peers() changed (membership, an address, a restart, an expiry). */
  onChange(fn: () => void): void;
  start(): void;
  /** Graceful shutdown: leave the membership (lease mode: delete the own Lease), within `timeoutMs`, never longer. */
  release(timeoutMs: number): Promise<void>;
  /** Stops everything now (timers, watches, in-flight calls); does not leave the membership. */
  stop(): void;
}
