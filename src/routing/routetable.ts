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

import type { APIGroupDiscovery, APIGroupDiscoveryList } from '../aggregation/types';
import type { RoutingView } from '../aggregation/decode';
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

/**
 * One server's discovery: `/api` (core group "") and `/apis`, as aggregated v2 items (`groups`) or
 * as what routing reads of them (`routes`, aggregation/decode.ts routingView: what the publisher
 * keeps), or both.
 */
export interface ServerDiscovery {
  readonly groups?: readonly APIGroupDiscovery[];
  readonly routes?: readonly RoutingView[];
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

export class RouteTable {
  readonly synced: boolean;
  /** Number of distinct GVRs known anywhere in the cluster. */
  readonly size: number;
  private readonly groups: Map<string, VersionMap>;
  /**
   * The same entries indexed by resource name first: one Map probe instead of three, then group and
   * version compared in a short run (the native-bench table, v1.33 and v1.37 plus core: 112 GVRs
   * under 78 resource names, at most 4 per name). decide() on parsed requests: 55 → 18 ns with the
   * request's names taken from `names` (npm run native-bench, row (a-), 2026-12-04).
   *
   * The runs are laid out one after the other in three flat arrays (group, version, entry), each
   * run ended by an undefined group, and byResource gives where a name's run starts: no object per
   * GVR for the GC (the table is built on the event loop, buildSliced). A name listed under more than
   * LONG_RUN group/versions (a peer may list one name in thousands) is looked up through the nested
   * Maps instead (LONG), so no lookup walks a long run.
   */
  private readonly byResource: Map<string, number>;
  private readonly runGroups: readonly (string | undefined)[];
  private readonly runVersions: readonly string[];
  private readonly runEntries: readonly RouteEntry[];
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

  private constructor(groups: Map<string, VersionMap>, groupVersions: Map<string, Map<string, GroupVersionRoute>>, synced: boolean, size: number, peerAddresses: ReadonlyMap<string, string>, memberAddresses: ReadonlyMap<string, string>, index: LookupIndex) {
    this.groups = groups;
    this.byResource = index.byResource;
    this.runGroups = index.runGroups;
    this.runVersions = index.runVersions;
    this.runEntries = index.runEntries;
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
    const at = this.byResource.get(resource);
    if (at === undefined) return undefined;
    if (at === LONG) return this.groups.get(group)?.get(version)?.get(resource);
    const groups = this.runGroups;
    for (let i = at; ; i++) {
      const g = groups[i];
      if (g === undefined) return undefined;
      if (this.runVersions[i] === version && g === group) return this.runEntries[i];
    }
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
    return new RouteTable(new Map(), new Map(), false, 0, new Map(), new Map(), { byResource: new Map(), runGroups: [], runVersions: [], runEntries: [], names: Names.EMPTY });
  }

  static build(input: RouteTableInput): RouteTable {
    return drain(RouteTable.steps(input));
  }

  /**
   * build() on the event loop a slice at a time: at most `sliceMs` of it per turn, then the rest
   * after a setImmediate, so requests are served in between. A table of a few thousand GVRs is
   * built in its first slice and returned as it is, not as a promise (published at once). A peer
   * may list up to 20,000 resources (aggregation/decode.ts PEER_DISCOVERY_LIMITS), a table holds
   * every member's: built in one go, 60,000 GVRs blocked the event loop for 322 ms (issue 27), about
   * 3.5 µs each, most of it allocation and its GC. Resolves undefined when `cancelled()` turns true
   * between slices (a newer publication supersedes this one).
   */
  static buildSliced(input: RouteTableInput, sliceMs: number, cancelled: () => boolean = () => false): RouteTable | Promise<RouteTable | undefined> {
    const steps = RouteTable.steps(input);
    const first = runSlice(steps, sliceMs);
    if (first !== undefined) return first;
    return new Promise((resolve, reject) => {
      const next = () => {
        if (cancelled()) return resolve(undefined);
        try {
          const t = runSlice(steps, sliceMs);
          if (t !== undefined) resolve(t);
          else setImmediate(next);
        } catch (e) {
          reject(e);
        }
      };
      setImmediate(next);
    });
  }

  /** build() as a generator that yields every STEP GVRs (or names), for buildSliced. */
  private static *steps(input: RouteTableInput): Generator<void, RouteTable> {
    const excluded = input.excludedGroupVersions ?? EMPTY_SET;
    // group → version → resource → entry: the table's own Maps, filled as the servers are read. An
    // entry is shared by every GVR with the same servers (entries.next): the usual table has a
    // handful of distinct ones, so its GVRs cost Map slots, not objects.
    const groups = new Map<string, VersionMap>();
    // One string object per distinct name (a resource named in two groups, "v1" in many), so that
    // names, the Maps and their keys all share it, and comparing two of them is comparing pointers.
    const canon = new Map<string, string>();
    const one = (x: string): string => {
      const c = canon.get(x);
      if (c !== undefined) return c;
      canon.set(x, x);
      return x;
    };
    const entries = new Entries();
    let size = 0;
    const add = (g0: string, v0: string, r0: string, serve: (e: RouteEntry | undefined) => RouteEntry) => {
      const g = one(g0);
      const v = one(v0);
      const r = one(r0);
      let vm = groups.get(g);
      if (!vm) groups.set(g, (vm = new Map()));
      let rm = vm.get(v);
      if (!rm) vm.set(v, (rm = new Map()));
      const e = rm.get(r);
      if (e === undefined) size++;
      rm.set(r, serve(e));
    };
    const local = (e: RouteEntry | undefined) => entries.local(e);
    let n = 0;
    for (const [g, v, r] of servedGVRs(input.local)) {
      add(g, v, r, local);
      if (++n % STEP === 0) yield;
    }
    const peerAddresses = new Map<string, string>();
    const peerIDs = [...input.peers.keys()].sort();
    for (const id of peerIDs) {
      const peer = input.peers.get(id)!;
      const resolvable = isHostPort(peer.address);
      if (resolvable) peerAddresses.set(id, peer.address);
      const serve = (e: RouteEntry | undefined) => entries.peer(e, id, resolvable);
      for (const [g, v, r] of servedGVRs(peer, excluded)) {
        add(g, v, r, serve);
        if (++n % STEP === 0) yield;
      }
    }
    // What each group/version is served by: the same few objects shared too.
    const groupVersions = new Map<string, Map<string, GroupVersionRoute>>();
    const gvRoutes = new Map<string, GroupVersionRoute>();
    for (const [g, vm] of groups) {
      const gvs = new Map<string, GroupVersionRoute>();
      for (const [v, rm] of vm) {
        let gvLocal = false;
        let gvPeers: readonly string[] = NO_PEERS;
        let seen: RouteEntry | undefined;
        for (const e of rm.values()) {
          if (e === seen) continue;
          seen = e;
          gvLocal ||= e.servedLocally;
          if (e.peers.length > 0 && e.peers !== gvPeers) gvPeers = gvPeers.length === 0 ? e.peers : union(gvPeers, e.peers);
        }
        const key = `${gvLocal ? 1 : 0}${gvPeers.join('\n')}`;
        let route = gvRoutes.get(key);
        if (route === undefined) gvRoutes.set(key, (route = Object.freeze({ servedLocally: gvLocal, peers: Object.freeze(gvPeers) })));
        gvs.set(v, route);
        if (++n % STEP === 0) yield;
      }
      groupVersions.set(g, gvs);
    }
    const index = yield* lookupIndex(groups, canon);
    return new RouteTable(groups, groupVersions, input.synced, size, peerAddresses, input.memberAddresses ?? peerAddresses, index);
  }
}

const EMPTY_SET: ReadonlySet<string> = new Set();
const NO_PEERS: readonly string[] = Object.freeze([]);

/** GVRs (or names) a sliced build handles between two looks at the clock: ~1 ms of work. */
const STEP = 256;

/** The longest run of group/versions lookup() walks for one resource name; past it: the nested Maps. */
const LONG_RUN = 8;
/** byResource's value for a name with a run longer than LONG_RUN. */
const LONG = -1;

/**
 * The table's entries, one object per distinct set of servers: an entry with one more server is
 * found again from the entry it grows from (servers are added in one order: the local apiserver,
 * then the peers by ID, so equal sets meet on the same path).
 */
class Entries {
  private readonly start = new Map<string, RouteEntry>();
  private readonly next = new Map<RouteEntry, Map<string, RouteEntry>>();
  private localEntry: RouteEntry | undefined;

  local(e: RouteEntry | undefined): RouteEntry {
    if (e !== undefined) return e; // the local view lists the GVR twice
    return (this.localEntry ??= entry(true, NO_PEERS, NO_PEERS));
  }

  peer(e: RouteEntry | undefined, id: string, resolvable: boolean): RouteEntry {
    if (e !== undefined) {
      const list = resolvable ? e.peers : e.unresolvedPeers;
      if (list[list.length - 1] === id) return e; // a peer listing a GVR twice counts once
    }
    const key = (resolvable ? 'p' : 'u') + id;
    let byKey: Map<string, RouteEntry> | undefined = this.start;
    if (e !== undefined) {
      byKey = this.next.get(e);
      if (byKey === undefined) this.next.set(e, (byKey = new Map()));
    }
    let grown = byKey.get(key);
    if (grown === undefined) {
      const local = e?.servedLocally ?? false;
      const peers = e?.peers ?? NO_PEERS;
      const unresolved = e?.unresolvedPeers ?? NO_PEERS;
      grown = resolvable ? entry(local, Object.freeze([...peers, id]), unresolved) : entry(local, peers, Object.freeze([...unresolved, id]));
      byKey.set(key, grown);
    }
    return grown;
  }
}

function entry(servedLocally: boolean, peers: readonly string[], unresolvedPeers: readonly string[]): RouteEntry {
  const decision = servedLocally ? DECISION_SERVED_LOCALLY : peers.length > 0 ? peerDecision(peers) : DECISION_UNAVAILABLE;
  return Object.freeze({ servedLocally, peers, unresolvedPeers, decision });
}

/** Two sorted lists of peer IDs as one, sorted, each once. */
function union(a: readonly string[], b: readonly string[]): readonly string[] {
  return [...new Set([...a, ...b])].sort();
}

/** Runs steps for up to sliceMs: the result when they are done, else undefined (more to do). */
function runSlice<T>(steps: Generator<void, T>, sliceMs: number): T | undefined {
  const end = performance.now() + sliceMs;
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    if (performance.now() >= end) return undefined;
  }
}

function drain<T>(steps: Generator<void, T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

interface LookupIndex {
  readonly byResource: Map<string, number>;
  readonly runGroups: readonly (string | undefined)[];
  readonly runVersions: readonly string[];
  readonly runEntries: readonly RouteEntry[];
  readonly names: Names;
}

/** lookup()'s index by resource name (RouteTable.byResource says how), and the table's names. */
function* lookupIndex(groups: Map<string, VersionMap>, names: ReadonlyMap<string, string>): Generator<void, LookupIndex> {
  // How many group/versions list each name, then where its run starts.
  const byResource = new Map<string, number>();
  let n = 0;
  for (const vm of groups.values()) {
    for (const rm of vm.values()) {
      for (const r of rm.keys()) {
        byResource.set(r, (byResource.get(r) ?? 0) + 1);
        if (++n % STEP === 0) yield;
      }
    }
  }
  let runs = 0;
  for (const [r, count] of byResource) {
    if (count > LONG_RUN) byResource.set(r, LONG);
    else {
      byResource.set(r, runs);
      runs += count + 1;
    }
  }
  const runGroups: (string | undefined)[] = new Array(runs).fill(undefined);
  const runVersions: string[] = new Array(runs).fill('');
  const runEntries: RouteEntry[] = new Array(runs).fill(EMPTY_ENTRY);
  const next = new Map<string, number>();
  for (const [g, vm] of groups) {
    for (const [v, rm] of vm) {
      for (const [r, e] of rm) {
        const start = byResource.get(r)!;
        if (start !== LONG) {
          const i = next.get(r) ?? start;
          runGroups[i] = g;
          runVersions[i] = v;
          runEntries[i] = e;
          next.set(r, i + 1);
        }
        if (++n % STEP === 0) yield;
      }
    }
  }
  return { byResource, runGroups, runVersions, runEntries, names: yield* Names.steps([], STEP, names) };
}

const EMPTY_ENTRY: RouteEntry = entry(false, NO_PEERS, NO_PEERS);

/**
 * Calls fn for every GVR a document says its server serves. Versions marked `freshness: Stale`
 * are skipped: client-go treats a stale GV as failed, so Kubernetes' local cache never holds it
 * (docs/kubernetes-mvp.md §4.3), and a stale peer GV would be routed to a server that cannot answer for it.
 * Subresources are not keys: routing ignores them (docs/kubernetes-mvp.md §2 step 5).
 */
export function forEachServedGVR(groups: readonly APIGroupDiscovery[], fn: (group: string, version: string, resource: string) => void): void {
  for (const [g, v, r] of servedGVRs({ groups })) fn(g, v, r);
}

/** forEachServedGVR's GVRs of a server, one at a time, without the group/versions in `excluded` ("group/version"). */
function* servedGVRs(server: ServerDiscovery, excluded: ReadonlySet<string> = EMPTY_SET): Generator<[group: string, version: string, resource: string]> {
  for (const group of server.groups ?? []) {
    const g = group.metadata?.name ?? '';
    for (const version of group.versions ?? []) {
      if (version.freshness === 'Stale') continue;
      if (excluded.size > 0 && excluded.has(g + '/' + version.version)) continue;
      for (const res of version.resources ?? []) yield [g, version.version, res.resource];
    }
  }
  for (const view of server.routes ?? []) {
    // aggregation/decode.ts routingView: name, version count; per version: name, stale, resource count, names.
    let i = 0;
    while (i < view.length) {
      const g = view[i] as string;
      const versions = view[i + 1] as number;
      i += 2;
      for (let k = 0; k < versions; k++) {
        const v = view[i] as string;
        const stale = view[i + 1] === 1;
        const resources = view[i + 2] as number;
        i += 3;
        if (!stale && !(excluded.size > 0 && excluded.has(g + '/' + v))) for (let j = 0; j < resources; j++) yield [g, v, view[i + j] as string];
        i += resources;
      }
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
