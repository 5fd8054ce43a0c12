// The route table: an immutable snapshot of which server serves each group/version/resource (GVR).
//
// Built off the request path from aggregated discovery documents (one per server), read on the
// request path by decide(). Shape: group → version → resource → RouteEntry, three nested Maps keyed
// by the URL's own segments (entries(), the GV routes), and for lookup() the same entries by resource
// name first. A lookup builds no key string: it takes the request's names, which newRequestInfo took
// from this table's `names` (request/names.ts), so the Map meets its own key with its hash cached,
// and group and version compare as identical strings. Kubernetes keeps the same facts in two caches
// (local_discovery.go, peer_discovery.go); merging them once here means one lookup per request
// instead of one per peer.

import type { APIGroupDiscovery, APIGroupDiscoveryList } from '../discovery/types';
import { type Decision, DECISION_SERVED_LOCALLY, DECISION_UNAVAILABLE, peerDecision } from './decision';
import { isHostPort } from '../gocompat/net';
import { Names } from '../request/names';

/** What the cluster knows about one GVR. Frozen; shared by every request that reads it. */
export interface RouteEntry {
  /** The local apiserver serves it (Kubernetes: shouldServeLocally). */
  readonly servedLocally: boolean;
  /** Peer server IDs that serve it and have an address, sorted (Kubernetes: serviceableBy + resolveServingLocation). */
  readonly peers: readonly string[];
  /** Peers serve it, but some have no usable address (counted, they can never be dialled). */
  readonly unresolvedPeers: readonly string[];
  /** What decide() answers for this GVR once every earlier check passed; built once, so decide() allocates nothing. */
  readonly decision: Decision;
}

/** One server's discovery: `/api` (core group "") and `/apis`, aggregated v2 items. */
export interface ServerDiscovery {
  readonly groups: readonly APIGroupDiscovery[];
}

export interface PeerDiscovery extends ServerDiscovery {
  /** host:port the peer listener is reached on; empty when the peer advertises none. */
  readonly address: string;
}

export interface RouteTableInput {
  readonly local: ServerDiscovery;
  /** Peers by server ID (never includes this server). */
  readonly peers: ReadonlyMap<string, PeerDiscovery>;
  /**
   * Group/versions ("group/version", core "v1" as "/v1") never routed to peers: CRDs and
   * aggregated APIServices of this cluster (docs/kubernetes-mvp.md §4.5). Peers share our etcd, so their view of
   * these is at best the same and at worst stale.
   */
  readonly excludedGroupVersions?: ReadonlySet<string>;
  /** False until the first local discovery is in: decide() then serves everything locally (docs/kubernetes-mvp.md §2 step 4). */
  readonly synced: boolean;
  /**
   * Peer listener addresses of every current member by server ID, including peers out of routing
   * right now (failing their probe): whom to ask when the local apiserver does not know a resource
   * no snapshot lists (handler.ts askPeersAfter404). Default: the routed peers' addresses.
   */
  readonly memberAddresses?: ReadonlyMap<string, string>;
}

/** What the cluster serves of one group/version, for GV-scoped non-resource paths (/openapi/v3/apis/<g>/<v>). */
export interface GroupVersionRoute {
  /** The local apiserver serves at least one resource of it. */
  readonly servedLocally: boolean;
  /** Peers (with an address) serving at least one resource of it, sorted. */
  readonly peers: readonly string[];
}

type ResourceMap = Map<string, RouteEntry>;
type VersionMap = Map<string, ResourceMap>;

/** One GVR of the lookup index: the group/versions serving a resource name share one list. */
interface ResourceRoute {
  readonly group: string;
  readonly version: string;
  readonly entry: RouteEntry;
}

export class RouteTable {
  readonly synced: boolean;
  /** Number of distinct GVRs known anywhere in the cluster. */
  readonly size: number;
  private readonly groups: Map<string, VersionMap>;
  /**
   * The same entries indexed by resource name first: one Map probe instead of three, then group and
   * version compared in a short list (the native-bench table, v1.33 and v1.37 plus core: 112 GVRs
   * under 78 resource names, at most 4 per name). decide() on parsed requests: 55 → 18 ns with the
   * request's names taken from `names` (npm run native-bench, row (a-), 2026-12-04).
   */
  private readonly byResource: Map<string, readonly ResourceRoute[]>;
  /**
   * Every group, version and resource name above, the same string objects: newRequestInfo takes a
   * request's names from here (request/names.ts), so lookup() meets its own keys, hashes cached.
   */
  readonly names: Names;
  private readonly groupVersions: Map<string, Map<string, GroupVersionRoute>>;
  /** Peer addresses by server ID, from the same input (one place for the fact). */
  readonly peerAddresses: ReadonlyMap<string, string>;
  /** Every member's peer listener, routed to or not (RouteTableInput.memberAddresses). */
  readonly memberAddresses: ReadonlyMap<string, string>;
  /**
   * The members to ask after a local 404 (proxy/handler.ts notFound): one server ID per distinct
   * peer listener address (two IDs behind one listener would be asked twice), built once per table.
   */
  readonly distinctMembers: readonly string[];

  private constructor(groups: Map<string, VersionMap>, groupVersions: Map<string, Map<string, GroupVersionRoute>>, synced: boolean, size: number, peerAddresses: ReadonlyMap<string, string>, memberAddresses: ReadonlyMap<string, string>) {
    this.groups = groups;
    const index = lookupIndex(groups);
    this.byResource = index.byResource;
    this.names = index.names;
    this.groupVersions = groupVersions;
    this.synced = synced;
    this.size = size;
    this.peerAddresses = peerAddresses;
    this.memberAddresses = memberAddresses;
    this.distinctMembers = distinctMembers(memberAddresses);
    Object.freeze(this);
  }

  /** The GVR's entry, or undefined when no server in the cluster serves it. O(1) in the number of GVRs. */
  lookup(group: string, version: string, resource: string): RouteEntry | undefined {
    const routes = this.byResource.get(resource);
    if (routes === undefined) return undefined;
    for (let i = 0; i < routes.length; i++) {
      const r = routes[i];
      if (r.version === version && r.group === group) return r.entry;
    }
    return undefined;
  }

  /** The group/version's route, or undefined when nobody serves it. */
  lookupGroupVersion(group: string, version: string): GroupVersionRoute | undefined {
    return this.groupVersions.get(group)?.get(version);
  }

  /** Every GVR the table knows, in insertion order (introspection: /debug/routes). */
  *entries(): Iterable<[group: string, version: string, resource: string, entry: RouteEntry]> {
    for (const [g, vm] of this.groups) for (const [v, rm] of vm) for (const [r, e] of rm) yield [g, v, r, e];
  }

  /** Group/versions that only peers serve ("group/version", core as "/v1"), for merged GV indexes. */
  *peerOnlyGroupVersions(): Iterable<[group: string, version: string]> {
    for (const [g, vm] of this.groupVersions) for (const [v, r] of vm) if (!r.servedLocally && r.peers.length > 0) yield [g, v];
  }

  /** An empty, unsynced table: everything is served locally until discovery arrives. */
  static empty(): RouteTable {
    return new RouteTable(new Map(), new Map(), false, 0, new Map(), new Map());
  }

  static build(input: RouteTableInput): RouteTable {
    const excluded = input.excludedGroupVersions ?? EMPTY_SET;
    // Collect first into mutable sets, then freeze into entries, so every entry is built once.
    const acc = new Map<string, Map<string, Map<string, { local: boolean; peers: string[]; unresolved: string[] }>>>();
    // One string object per distinct name (a resource named in two groups, "v1" in many), so that
    // names, the Maps and their keys all share it, and comparing two of them is comparing pointers.
    const canon = new Map<string, string>();
    const one = (x: string): string => {
      const c = canon.get(x);
      if (c !== undefined) return c;
      canon.set(x, x);
      return x;
    };
    const slot = (g0: string, v0: string, r0: string) => {
      const g = one(g0);
      const v = one(v0);
      const r = one(r0);
      let vm = acc.get(g);
      if (!vm) acc.set(g, (vm = new Map()));
      let rm = vm.get(v);
      if (!rm) vm.set(v, (rm = new Map()));
      let e = rm.get(r);
      if (!e) rm.set(r, (e = { local: false, peers: [], unresolved: [] }));
      return e;
    };
    forEachServedGVR(input.local.groups, (g, v, r) => {
      slot(g, v, r).local = true;
    });
    const peerAddresses = new Map<string, string>();
    const peerIDs = [...input.peers.keys()].sort();
    for (const id of peerIDs) {
      const peer = input.peers.get(id)!;
      const resolvable = isHostPort(peer.address);
      if (resolvable) peerAddresses.set(id, peer.address);
      forEachServedGVR(peer.groups, (g, v, r) => {
        if (excluded.has(g + '/' + v)) return;
        const e = slot(g, v, r);
        const list = resolvable ? e.peers : e.unresolved;
        if (list[list.length - 1] !== id) list.push(id); // a peer listing a GVR twice counts once
      });
    }
    const groups = new Map<string, VersionMap>();
    const groupVersions = new Map<string, Map<string, GroupVersionRoute>>();
    let size = 0;
    for (const [g, vm] of acc) {
      const versions: VersionMap = new Map();
      const gvs = new Map<string, GroupVersionRoute>();
      for (const [v, rm] of vm) {
        const resources: ResourceMap = new Map();
        let gvLocal = false;
        const gvPeers = new Set<string>();
        for (const e of rm.values()) {
          gvLocal ||= e.local;
          for (const id of e.peers) gvPeers.add(id);
        }
        gvs.set(v, Object.freeze({ servedLocally: gvLocal, peers: Object.freeze([...gvPeers].sort()) }));
        for (const [r, e] of rm) {
          const peers = Object.freeze(e.peers);
          const decision = e.local ? DECISION_SERVED_LOCALLY : peers.length > 0 ? peerDecision(peers) : DECISION_UNAVAILABLE;
          resources.set(r, Object.freeze({ servedLocally: e.local, peers, unresolvedPeers: Object.freeze(e.unresolved), decision }));
          size++;
        }
        versions.set(v, resources);
      }
      groups.set(g, versions);
      groupVersions.set(g, gvs);
    }
    return new RouteTable(groups, groupVersions, input.synced, size, peerAddresses, input.memberAddresses ?? peerAddresses);
  }
}

const EMPTY_SET: ReadonlySet<string> = new Set();

/** lookup()'s index by resource name, and every name in the table (the same string objects). */
function lookupIndex(groups: Map<string, VersionMap>): { byResource: Map<string, readonly ResourceRoute[]>; names: Names } {
  const byResource = new Map<string, ResourceRoute[]>();
  const names: string[] = [];
  for (const [group, vm] of groups) {
    names.push(group);
    for (const [version, rm] of vm) {
      names.push(version);
      for (const [resource, entry] of rm) {
        names.push(resource);
        let list = byResource.get(resource);
        if (list === undefined) byResource.set(resource, (list = []));
        list.push(Object.freeze({ group, version, entry }));
      }
    }
  }
  return { byResource, names: new Names(names) };
}

/**
 * Calls fn for every GVR a document says its server serves. Versions marked `freshness: Stale`
 * are skipped: client-go treats a stale GV as failed, so Kubernetes' local cache never holds it
 * (docs/kubernetes-mvp.md §4.3), and a stale peer GV would be routed to a server that cannot answer for it.
 * Subresources are not keys: routing ignores them (docs/kubernetes-mvp.md §2 step 5).
 */
export function forEachServedGVR(groups: readonly APIGroupDiscovery[], fn: (group: string, version: string, resource: string) => void): void {
  for (const group of groups) {
    const g = group.metadata?.name ?? '';
    for (const version of group.versions ?? []) {
      if (version.freshness === 'Stale') continue;
      for (const res of version.resources ?? []) fn(g, version.version, res.resource);
    }
  }
}

/** The groups of an `/api` plus an `/apis` aggregated document, as one server's discovery. */
export function serverDiscoveryOf(api: APIGroupDiscoveryList | undefined, apis: APIGroupDiscoveryList | undefined): ServerDiscovery {
  return { groups: [...(api?.items ?? []), ...(apis?.items ?? [])] };
}

function distinctMembers(addresses: ReadonlyMap<string, string>): readonly string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const [id, address] of addresses) {
    if (seen.has(address)) continue;
    seen.add(address);
    out.push(id);
  }
  return Object.freeze(out);
}
