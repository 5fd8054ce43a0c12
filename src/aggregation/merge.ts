// Peer-aggregated discovery: merging the local aggregated document with the peers' documents.
//
// Port of kubernetes/apiserver pkg/endpoints/discovery/aggregated/peer_aggregated_handler.go
// `mergeResources`, `processServerGroups`, `mergeVersionsAcrossGroup`,
// `mergeResourcesAcrossVersion` and `mergeResourceCapabilities` (read in kubernetes/kubernetes
// staging at 7dbde21cc771, the shipped shape: server IDs sorted, numbered fast paths, verb and
// subresource unions; docs/kubernetes-mvp.md §5.4 and §5.4.1). The never-shipped draft (local first, peers in map
// order, no unions, `SortDiscoveryGroupsTopo`) is deliberately not followed.
//
// Inputs are treated as immutable. Anything the merge changes is a new object; unchanged groups,
// versions and resources are shared with the inputs, as Go shares them by value.

import type {
  APIGroupDiscovery,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  GroupVersionKind,
} from './types';
import { compareByteOrder } from '../gocompat/strings';
import { mergePreservingRelativeOrder } from './order';

/** The name of the core group ("" in aggregated discovery); it never appears in `/apis`. */
const coreGroupName = '';

/**
 * Merges the local server's `/apis` groups with every peer's, as the peer-aggregated handler does.
 *
 * - `localID` is this server's identity-lease name. It takes part in the sort of server IDs like
 *   any other: the first server by ID (byte order) is "a" in every pairwise merge, so its group
 *   metadata, version freshness and resource fields win.
 * - `peers` maps peer server ID → that peer's groups. Per peer, the core group `""` and repeated
 *   group names (first kept) are dropped, as the peer-discovery cache does upstream
 *   (`peer_discovery.go`, docs/kubernetes-mvp.md §4.4). An entry under `localID` is ignored: upstream never passes
 *   its own ID (`GetPeerResources` excludes it), and the local document must win.
 *
 * Returns `local` itself (same reference) when there is nothing to merge (one server) or when no
 * server adds or changes anything and every server lists the same group names in the same order.
 */
export function mergeResources(
  localID: string,
  local: APIGroupDiscovery[],
  peers: ReadonlyMap<string, APIGroupDiscovery[]>,
  memo?: GroupMergeMemo,
): APIGroupDiscovery[] {
  // combineServerDiscoveryLists: own ID plus every peer.
  const discoveryByServerID = new Map<string, readonly APIGroupDiscovery[]>();
  discoveryByServerID.set(localID, local);
  for (const [peerID, peerGroups] of peers) {
    if (peerID === localID) continue;
    discoveryByServerID.set(peerID, peerGroupDiscovery(peerGroups));
  }
  if (discoveryByServerID.size <= 1) {
    // No merging or sorting needed.
    return local;
  }

  const mergedGroupMap = new Map<string, APIGroupDiscovery>();
  const allGroupNames: string[][] = [];
  const sortedServerIDs = Array.from(discoveryByServerID.keys()).sort(compareByteOrder);

  // contentChanged: some server added or changed a group, version or resource.
  let contentChanged = false;
  // groupNameListsAreIdentical: every server lists exactly the local group names, in local order.
  let groupNameListsAreIdentical = true;
  const localGroupNames = local.map(groupName);
  for (const serverID of sortedServerIDs) {
    const [names, didThisServerMerge] = processServerGroups(discoveryByServerID.get(serverID)!, mergedGroupMap, memo);
    if (didThisServerMerge) contentChanged = true;
    allGroupNames.push(names);
    // A re-ordering (["g1","g2"] vs ["g2","g1"]) or an added or missing group both make the
    // lists differ, and either needs the full merge for a deterministic result.
    if (!stringListsEqual(localGroupNames, names)) groupNameListsAreIdentical = false;
  }

  // Case 1: total short-circuit. Nothing new and no order change: the local document itself.
  if (!contentChanged && groupNameListsAreIdentical) return local;

  let finalGroupOrder: readonly string[];
  if (contentChanged && groupNameListsAreIdentical) {
    // Case 2: content changed, group order did not. Skip the sort.
    finalGroupOrder = localGroupNames;
  } else {
    // Case 3: group lists differ (new groups, another order, or both): topological merge.
    finalGroupOrder = mergePreservingRelativeOrder(allGroupNames);
  }
  return assemble(mergedGroupMap, finalGroupOrder);
}

/**
 * Folds one server's groups into the merged map, in that server's order. Returns the server's
 * group names and whether merging changed any group already in the map.
 */
function processServerGroups(
  discoveryGroups: readonly APIGroupDiscovery[],
  mergedGroupMap: Map<string, APIGroupDiscovery>,
  memo: GroupMergeMemo | undefined,
): [string[], boolean] {
  const names: string[] = [];
  let contentMerged = false;
  for (const group of discoveryGroups) {
    const name = groupName(group);
    const existing = mergedGroupMap.get(name);
    if (existing !== undefined) {
      const [merged, didMerge] = memo === undefined ? mergeVersionsAcrossGroup(existing, group) : memoMergeVersionsAcrossGroup(memo, existing, group);
      mergedGroupMap.set(name, merged);
      if (didMerge) contentMerged = true;
    } else {
      mergedGroupMap.set(name, group);
    }
    names.push(name);
  }
  return [names, contentMerged];
}

/**
 * Results of mergeVersionsAcrossGroup by the identity of its two arguments. A pure function of
 * immutable inputs gives the same answer for the same objects, so a builder that keeps its parsed
 * documents between builds (merge.worker.ts) passes one of these and an unchanged pair of groups
 * is not merged again; and because the result is then the same object as last time, everything
 * keyed by it downstream (the encoded group, the next pairwise merge) is found again too.
 */
export type GroupMergeMemo = WeakMap<APIGroupDiscovery, WeakMap<APIGroupDiscovery, readonly [APIGroupDiscovery, boolean]>>;

function memoMergeVersionsAcrossGroup(memo: GroupMergeMemo, a: APIGroupDiscovery, b: APIGroupDiscovery): readonly [APIGroupDiscovery, boolean] {
  let byB = memo.get(a);
  if (byB === undefined) {
    byB = new WeakMap();
    memo.set(a, byB);
  }
  let r = byB.get(b);
  if (r === undefined) {
    r = mergeVersionsAcrossGroup(a, b);
    byB.set(b, r);
  }
  return r;
}

/**
 * Merges group b into group a. Returns the result and whether it differs from a (new versions
 * or resources, changed resources, or another version order). Metadata always comes from a.
 */
export function mergeVersionsAcrossGroup(a: APIGroupDiscovery, b: APIGroupDiscovery): [APIGroupDiscovery, boolean] {
  const mergedVersionMap = new Map<string, APIVersionDiscovery>();
  const aVersions = a.versions ?? [];
  const bVersions = b.versions ?? [];
  const aVersionNames: string[] = [];
  const bVersionNames: string[] = [];
  // Set when b changed a version both have. A version only in b shows up as a name difference.
  let contentMerged = false;

  for (const v of aVersions) {
    aVersionNames.push(v.version);
    mergedVersionMap.set(v.version, v);
  }
  for (const v of bVersions) {
    bVersionNames.push(v.version);
    const existing = mergedVersionMap.get(v.version);
    if (existing === undefined) {
      mergedVersionMap.set(v.version, v);
    } else {
      const [mergedV, didMerge] = mergeResourcesAcrossVersion(existing, v);
      mergedVersionMap.set(v.version, mergedV);
      if (didMerge) contentMerged = true;
    }
  }

  // Case 1: total short-circuit. Nothing added or changed, same order.
  const versionNamesAreIdentical = stringListsEqual(aVersionNames, bVersionNames);
  if (!contentMerged && versionNamesAreIdentical) return [a, false];

  // Case 2: content changed, same order → a's order. Case 3: otherwise, topological merge.
  const finalVersionOrder = versionNamesAreIdentical
    ? aVersionNames
    : mergePreservingRelativeOrder([aVersionNames, bVersionNames]);

  // Go: ObjectMeta deep-copied from a, TypeMeta from a. Inputs are immutable here, so sharing
  // a's metadata object is equivalent.
  return [{ ...a, versions: assemble(mergedVersionMap, finalVersionOrder) }, true];
}

/**
 * Merges version b into version a (same version name). Returns the result and whether it
 * differs from a. The version name and `freshness` come from a: a `Stale` b is lost when it
 * merges into a `Current` a (docs/kubernetes-mvp.md §5.4).
 */
export function mergeResourcesAcrossVersion(
  a: APIVersionDiscovery,
  b: APIVersionDiscovery,
): [APIVersionDiscovery, boolean] {
  const mergedResourceMap = new Map<string, APIResourceDiscovery>();
  const aResourceNames: string[] = [];
  const bResourceNames: string[] = [];
  // Set when b changed a resource both have (any field that is not DeepEqual).
  let contentChanged = false;

  for (const r of a.resources ?? []) {
    aResourceNames.push(r.resource);
    mergedResourceMap.set(r.resource, r);
  }
  for (const r of b.resources ?? []) {
    bResourceNames.push(r.resource);
    const existing = mergedResourceMap.get(r.resource);
    if (existing === undefined) {
      mergedResourceMap.set(r.resource, r);
    } else {
      if (resourcesDeepEqual(existing, r)) continue;
      contentChanged = true;
      mergedResourceMap.set(r.resource, mergeResourceCapabilities(existing, r));
    }
  }

  // Case 1: total short-circuit. b added nothing, changed nothing, same order.
  const resourceNameListIsIdentical = stringListsEqual(aResourceNames, bResourceNames);
  if (!contentChanged && resourceNameListIsIdentical) return [a, false];

  // Case 2: content changed, same order → a's order. Case 3: otherwise, topological merge.
  const finalResourceOrder = resourceNameListIsIdentical
    ? aResourceNames
    : mergePreservingRelativeOrder([aResourceNames, bResourceNames]);

  const merged: APIVersionDiscovery = {
    version: a.version,
    resources: assemble(mergedResourceMap, finalResourceOrder),
  };
  if (a.freshness !== undefined) merged.freshness = a.freshness;
  return [merged, true];
}

/**
 * Two definitions of the same resource: the union of their verbs (sorted; empty → null) and of
 * their subresources (keyed by name, b's entry replaces a's whole; sorted by name; empty →
 * absent). Every other field comes from a, or from b when a's `resource` is empty.
 */
export function mergeResourceCapabilities(a: APIResourceDiscovery, b: APIResourceDiscovery): APIResourceDiscovery {
  // 1. Verbs.
  const verbSet = new Set<string>();
  for (const v of a.verbs ?? []) verbSet.add(v);
  for (const v of b.verbs ?? []) verbSet.add(v);
  const newVerbs = verbSet.size > 0 ? Array.from(verbSet).sort(compareByteOrder) : null;

  // 2. Subresources.
  const subresourceSet = new Map<string, APISubresourceDiscovery>();
  for (const s of a.subresources ?? []) subresourceSet.set(s.subresource, s);
  for (const s of b.subresources ?? []) subresourceSet.set(s.subresource, s);
  const newSubresources = Array.from(subresourceSet.values()).sort((x, y) =>
    compareByteOrder(x.subresource, y.subresource),
  );

  // 3. The merged object: a's fields (b's if a has no resource name), new verbs and subresources.
  const base = str(a.resource).length === 0 ? b : a;
  const { subresources: _dropped, ...rest } = base;
  const merged: APIResourceDiscovery = { ...rest, verbs: newVerbs };
  if (newSubresources.length > 0) merged.subresources = newSubresources;
  return merged;
}

/** The group/version/resource keys ("group/version/resource") a list of groups serves. */
export function gvrKeysOf(groups: readonly APIGroupDiscovery[]): Set<string> {
  const keys = new Set<string>();
  for (const g of groups) {
    const group = groupName(g);
    for (const v of g.versions ?? []) {
      for (const r of v.resources ?? []) keys.add(`${group}/${v.version}/${r.resource}`);
    }
  }
  return keys;
}

function groupName(g: APIGroupDiscovery): string {
  return g.metadata.name ?? '';
}

/**
 * A peer's groups as the peer-discovery cache keeps them: the core group dropped, and each group
 * name once (the first kept). Returns the input itself when nothing is dropped.
 */
function peerGroupDiscovery(groups: readonly APIGroupDiscovery[]): readonly APIGroupDiscovery[] {
  const seen = new Set<string>();
  let kept: APIGroupDiscovery[] | undefined;
  for (let i = 0; i < groups.length; i++) {
    const g = groups[i]!;
    const name = groupName(g);
    const drop = name === coreGroupName || seen.has(name);
    seen.add(name);
    if (drop && kept === undefined) kept = groups.slice(0, i);
    else if (!drop && kept !== undefined) kept.push(g);
  }
  return kept ?? groups;
}

/**
 * Builds the final list from the merged map in the given order, each name once. Go's
 * `orderedAPIVersionList`/`orderedAPIResourceList` drop repeats the same way; `assembleGroups`
 * does not, which matters only in case 2 when the local list itself repeats a group name (an
 * invalid document); here that group is listed once.
 */
function assemble<T>(byName: Map<string, T>, order: readonly string[]): T[] {
  const out: T[] = [];
  const used = new Set<string>();
  for (const name of order) {
    const item = byName.get(name);
    if (item !== undefined && !used.has(name)) {
      out.push(item);
      used.add(name);
    }
  }
  return out;
}

function stringListsEqual(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// ---- reflect.DeepEqual over the Go structs --------------------------------------------------
// Field by field, with Go's zero values: an absent string equals "", an absent pointer equals
// null, an absent slice equals a null one; but a nil slice is not equal to an empty one
// (`"verbs": null` vs `"verbs": []`), as in Go. Keys Go does not know are ignored, since Go's
// JSON decoder drops them.

function resourcesDeepEqual(a: APIResourceDiscovery, b: APIResourceDiscovery): boolean {
  if (a === b) return true; // the same object (documents that share parsed parts): DeepEqual to itself
  return (
    str(a.resource) === str(b.resource) &&
    gvkPtrEqual(a.responseKind, b.responseKind) &&
    str(a.scope) === str(b.scope) &&
    str(a.singularResource) === str(b.singularResource) &&
    goSliceEqual(a.verbs, b.verbs, strEq) &&
    goSliceEqual(a.shortNames, b.shortNames, strEq) &&
    goSliceEqual(a.categories, b.categories, strEq) &&
    goSliceEqual(a.subresources, b.subresources, subresourcesDeepEqual)
  );
}

function subresourcesDeepEqual(a: APISubresourceDiscovery, b: APISubresourceDiscovery): boolean {
  return (
    str(a.subresource) === str(b.subresource) &&
    gvkPtrEqual(a.responseKind, b.responseKind) &&
    goSliceEqual(a.acceptedTypes, b.acceptedTypes, gvkEqual) &&
    goSliceEqual(a.verbs, b.verbs, strEq)
  );
}

function gvkPtrEqual(a: GroupVersionKind | null | undefined, b: GroupVersionKind | null | undefined): boolean {
  if (a == null || b == null) return a == null && b == null;
  return gvkEqual(a, b);
}

function gvkEqual(a: GroupVersionKind, b: GroupVersionKind): boolean {
  return str(a.group) === str(b.group) && str(a.version) === str(b.version) && str(a.kind) === str(b.kind);
}

function goSliceEqual<T>(
  a: readonly T[] | null | undefined,
  b: readonly T[] | null | undefined,
  eq: (x: T, y: T) => boolean,
): boolean {
  if (a == null || b == null) return a == null && b == null;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!eq(a[i]!, b[i]!)) return false;
  return true;
}

function strEq(a: string, b: string): boolean {
  return a === b;
}

function str(s: string | null | undefined): string {
  return s ?? '';
}
