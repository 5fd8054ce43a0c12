// The one published snapshot: everything the request path reads about the cluster, replaced whole
// by a single assignment (Kubernetes keeps its peer discovery the same way, in an atomic.Value:
// staging/src/k8s.io/apiserver/pkg/util/peerproxy/peer_discovery.go). A request takes
// `holder.current` once and reads only that object, so the route table it routes with, the
// discovery documents it serves, the exclusions and the peer addresses always come from one
// publication; a request that started with an older snapshot finishes with it.
//
// Built off the request path by the publisher (snapshot/publisher.ts); nothing here awaits.

import { RouteTable } from '../routing/routetable';
import type { ServedDiscovery } from '../aggregation/served-discovery';

export interface Snapshot {
  /** 1, 2, 3, ... per publication; 0 = the empty snapshot a daemon starts with. */
  readonly generation: number;
  /** When it was published (Date.now()); 0 = never. */
  readonly publishedAt: number;
  /** Who serves each group/version/resource, and every peer's address (routing/routetable.ts). */
  readonly table: RouteTable;
  /**
   * The encoded /apis documents (merged, nopeer, legacy) built from the same views as `table`;
   * undefined until the first merge finished (discovery then passes through to the apiserver).
   */
  readonly discovery: ServedDiscovery | undefined;
  /** The /openapi/v3 index with peer-only group/versions added; undefined = pass the local one through. */
  readonly openAPIIndex: Buffer | undefined;
  /**
   * Group/versions never routed to peers: this cluster's CRDs and aggregated APIServices
   * (docs/kubernetes-mvp.md §4.5), as "group/version" (core: "/v1"). Already applied to `table`
   * and `discovery`; kept for /debug/routes.
   */
  readonly exclusions: ReadonlySet<string>;
  /**
   * Whether this node's apiserver serves now (snapshot/local-apiserver.ts): `draining` once its
   * /readyz fails or it answers "shutting down"; `down` while it refuses connections. While it is
   * not `serving`, requests a peer can answer go to a peer (--local-failover, proxy/handler.ts).
   */
  readonly local: LocalState;
  /**
   * The discovery documents include every peer this node knows of (its first merge with all of
   * them, or --peer-discovery-startup-timeout passed): until then /apis and legacy discovery are
   * not answered from a partial view (proxy/handler.ts). Stays true once set.
   */
  readonly complete: boolean;
}

export type LocalState = 'serving' | 'draining' | 'down';

/** The parts a publication supplies; a part left out keeps its value from the current snapshot. */
export type SnapshotParts = Partial<Pick<Snapshot, 'table' | 'discovery' | 'openAPIIndex' | 'exclusions' | 'local' | 'complete'>>;

const EMPTY: Snapshot = Object.freeze({ generation: 0, publishedAt: 0, table: RouteTable.empty(), discovery: undefined, openAPIIndex: undefined, exclusions: new Set<string>(), local: 'serving', complete: false });

export class SnapshotHolder {
  private snapshot: Snapshot = EMPTY;

  /** The snapshot in force: take it once per request. */
  get current(): Snapshot {
    return this.snapshot;
  }

  /** Publishes a new snapshot (the current one with `parts` replaced) in one assignment; returns it. */
  publish(parts: SnapshotParts): Snapshot {
    const prev = this.snapshot;
    const next: Snapshot = Object.freeze({
      generation: prev.generation + 1,
      publishedAt: Date.now(),
      table: parts.table ?? prev.table,
      discovery: 'discovery' in parts ? parts.discovery : prev.discovery,
      openAPIIndex: 'openAPIIndex' in parts ? parts.openAPIIndex : prev.openAPIIndex,
      exclusions: parts.exclusions ?? prev.exclusions,
      local: parts.local ?? prev.local,
      complete: prev.complete || (parts.complete ?? false),
    });
    this.snapshot = next;
    return next;
  }
}
