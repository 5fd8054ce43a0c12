// Legacy (unaggregated) discovery documents derived from aggregated data: the `/apis`
// APIGroupList, `/apis/<group>` APIGroup and `/apis/<group>/<version>` APIResourceList.
//
// Beyond in-tree (docs/kubernetes-mvp.md §5.1 step 3, §8 item 4): upstream never peer-aggregates legacy discovery,
// so kubectl 1.27–1.29 and clients on legacy discovery (python) never see a group/version that
// only a peer serves. mvproxy can answer these from the merged aggregated document instead.
//
// Wire format: compact JSON in Go struct field order, as kube-apiserver writes it (metav1
// APIGroupList / APIGroup / APIResourceList / APIResource; compare the sorted-key fixtures
// commit-4d817e79/api__v1.json and v1.31-0260c7d0/apis.json):
//   APIGroupList     {"kind":"APIGroupList","apiVersion":"v1","groups":[APIGroup without TypeMeta]}
//   APIGroup         {"kind":"APIGroup","apiVersion":"v1","name","versions":[{"groupVersion","version"}],"preferredVersion":{…}}
//   APIResourceList  {"kind":"APIResourceList","apiVersion":"v1","groupVersion":"g/v","resources":[APIResource]}
//   APIResource      {"name","singularName","namespaced","group"?,"version"?,"kind","verbs","shortNames"?,"categories"?}
// Subresources are entries named `<resource>/<subresource>` with singularName "" and the parent's
// namespaced flag, right after their parent. This is the inverse of apiserver's conversion to
// aggregated discovery (responseKind is nil exactly when the legacy kind is empty; group/version
// are set only for a kind of another group/version, e.g. deployments/scale → autoscaling/v1 Scale).
// Not derivable from aggregated data, so omitted: storageVersionHash, and the
// serverAddressByClientCIDRs of each group (kube-apiserver leaves it empty for /apis groups).
// The preferred version is the first version of the (merged) group, which is what clients of
// aggregated discovery take as preferred too.

import type { APIGroupDiscovery, APIResourceDiscovery, APIVersionDiscovery, GroupVersionKind } from './types';

export interface LegacyGroupVersionForDiscovery {
  groupVersion: string;
  version: string;
}

export interface LegacyAPIGroup {
  name: string;
  versions: LegacyGroupVersionForDiscovery[];
  preferredVersion: LegacyGroupVersionForDiscovery;
}

export interface LegacyAPIResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  group?: string;
  version?: string;
  kind: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
}

/** The legacy documents of one snapshot, pre-encoded. */
export interface LegacyDiscovery {
  /** `/apis` APIGroupList listing every group of the merged document. */
  readonly apis: Buffer;
  /** "group" → APIGroup, for every group a peer contributes to (buildLegacyDiscovery). */
  readonly groups: ReadonlyMap<string, Buffer>;
  /** "group/version" → APIResourceList, for every version of those groups (the union of what the servers list). */
  readonly resourceLists: ReadonlyMap<string, Buffer>;
}

/** One group's legacy description, or undefined for a group without versions (not listable). */
export function legacyAPIGroup(g: APIGroupDiscovery): LegacyAPIGroup | undefined {
  const name = g.metadata?.name ?? '';
  const versions = (g.versions ?? []).map((v) => ({ groupVersion: groupVersionString(name, v.version), version: v.version }));
  if (versions.length === 0) return undefined;
  return { name, versions, preferredVersion: versions[0]! };
}

/** The `/apis` APIGroupList body (groups in document order; groups without versions left out). */
export function encodeLegacyAPIGroupList(groups: readonly APIGroupDiscovery[], memo?: LegacyMemo): Buffer {
  if (memo === undefined) {
    const out: LegacyAPIGroup[] = [];
    for (const g of groups) {
      const lg = legacyAPIGroup(g);
      if (lg !== undefined) out.push(lg);
    }
    return Buffer.from(JSON.stringify({ kind: 'APIGroupList', apiVersion: 'v1', groups: out }), 'utf8');
  }
  // The same bytes from each group's JSON (JSON.stringify writes an array as its elements'
  // JSON.stringify, comma-separated): a group already seen is not described again.
  let out = '{"kind":"APIGroupList","apiVersion":"v1","groups":[';
  let first = true;
  for (const g of groups) {
    let j = memo.groupJSON.get(g);
    if (j === undefined) {
      const lg = legacyAPIGroup(g);
      j = lg === undefined ? null : JSON.stringify(lg);
      memo.groupJSON.set(g, j);
    }
    if (j === null) continue;
    out += first ? j : `,${j}`;
    first = false;
  }
  return Buffer.from(`${out}]}`, 'utf8');
}

/**
 * What buildLegacyDiscovery may keep between builds of unmodified groups (served-discovery.ts
 * EncodingMemo): each group's APIGroup JSON (null: no versions) and each version's
 * APIResourceList, by object identity.
 */
export interface LegacyMemo {
  readonly groupJSON: WeakMap<APIGroupDiscovery, string | null>;
  readonly resourceLists: WeakMap<APIVersionDiscovery, Map<string, Buffer>>;
}

export function newLegacyMemo(): LegacyMemo {
  return { groupJSON: new WeakMap(), resourceLists: new WeakMap() };
}

/** The `/apis/<group>` APIGroup body, or undefined for a group without versions. */
export function encodeLegacyAPIGroup(g: APIGroupDiscovery): Buffer | undefined {
  const lg = legacyAPIGroup(g);
  if (lg === undefined) return undefined;
  return Buffer.from(JSON.stringify({ kind: 'APIGroup', apiVersion: 'v1', ...lg }), 'utf8');
}

/** The legacy resource entries of one aggregated version: each resource, then its subresources. */
export function legacyAPIResources(group: string, v: APIVersionDiscovery): LegacyAPIResource[] {
  const out: LegacyAPIResource[] = [];
  for (const r of v.resources ?? []) {
    const namespaced = r.scope === 'Namespaced';
    out.push(legacyEntry(r.resource, r.singularResource ?? '', namespaced, r.responseKind, group, v.version, r));
    for (const s of r.subresources ?? []) {
      const e = legacyEntry(`${r.resource}/${s.subresource}`, '', namespaced, s.responseKind, group, v.version, undefined);
      e.verbs = s.verbs ?? [];
      out.push(e);
    }
  }
  return out;
}

/** The `/apis/<group>/<version>` APIResourceList body. */
export function encodeLegacyAPIResourceList(group: string, v: APIVersionDiscovery): Buffer {
  const doc = {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: groupVersionString(group, v.version),
    resources: legacyAPIResources(group, v),
  };
  return Buffer.from(JSON.stringify(doc), 'utf8');
}

/**
 * The legacy documents for a merged document: the full APIGroupList, plus the APIGroup and every
 * APIResourceList of each group a peer contributes to: one the local apiserver does not serve, or
 * serves differently (fewer versions, fewer resources or subresources, another preferred version).
 * Those answer from the union, as a kube-apiserver serving the union would. A group the merge left
 * as the local apiserver has it is left to the local apiserver (its own answer also carries
 * storageVersionHash, which aggregated discovery does not).
 */
export function buildLegacyDiscovery(merged: readonly APIGroupDiscovery[], local: readonly APIGroupDiscovery[], memo?: LegacyMemo): LegacyDiscovery {
  const localGroups = new Map<string, APIGroupDiscovery>();
  for (const g of local) localGroups.set(g.metadata?.name ?? '', g);
  const groups = new Map<string, Buffer>();
  const resourceLists = new Map<string, Buffer>();
  for (const g of merged) {
    const name = g.metadata?.name ?? '';
    if (name === '' || groups.has(name)) continue; // the core group is never under /apis
    const l = localGroups.get(name);
    if (l !== undefined && sameLegacyShape(g, l)) continue;
    const body = encodeLegacyAPIGroup(g);
    if (body === undefined) continue;
    groups.set(name, body);
    for (const v of g.versions ?? []) {
      const key = `${name}/${v.version}`;
      if (!resourceLists.has(key)) resourceLists.set(key, memo === undefined ? encodeLegacyAPIResourceList(name, v) : memoResourceList(memo, name, v));
    }
  }
  return { apis: encodeLegacyAPIGroupList(merged, memo), groups, resourceLists };
}

/** Whether two descriptions of a group give the same legacy documents: versions in order, resources and subresources by name. */
function sameLegacyShape(a: APIGroupDiscovery, b: APIGroupDiscovery): boolean {
  const av = a.versions ?? [];
  const bv = b.versions ?? [];
  if (av.length !== bv.length) return false;
  for (let i = 0; i < av.length; i++) {
    if (av[i]!.version !== bv[i]!.version) return false;
    if (resourceNames(av[i]!) !== resourceNames(bv[i]!)) return false;
  }
  return true;
}

function resourceNames(v: APIVersionDiscovery): string {
  const names: string[] = [];
  for (const r of v.resources ?? []) {
    names.push(r.resource);
    for (const s of r.subresources ?? []) names.push(`${r.resource}/${s.subresource}`);
  }
  return names.sort().join(',');
}

function memoResourceList(memo: LegacyMemo, group: string, v: APIVersionDiscovery): Buffer {
  let byGroup = memo.resourceLists.get(v);
  if (byGroup === undefined) {
    byGroup = new Map();
    memo.resourceLists.set(v, byGroup);
  }
  let b = byGroup.get(group);
  if (b === undefined) {
    b = encodeLegacyAPIResourceList(group, v);
    byGroup.set(group, b);
  }
  return b;
}

function legacyEntry(
  name: string,
  singularName: string,
  namespaced: boolean,
  responseKind: GroupVersionKind | undefined,
  group: string,
  version: string,
  r: APIResourceDiscovery | undefined,
): LegacyAPIResource {
  // Key order is Go's APIResource field order.
  const e: LegacyAPIResource = { name, singularName, namespaced } as LegacyAPIResource;
  const kg = responseKind?.group ?? '';
  const kv = responseKind?.version ?? '';
  if ((kg !== '' || kv !== '') && !(kg === group && kv === version)) {
    if (kg !== '') e.group = kg;
    if (kv !== '') e.version = kv;
  }
  e.kind = responseKind?.kind ?? '';
  e.verbs = r?.verbs ?? [];
  if (r?.shortNames != null && r.shortNames.length > 0) e.shortNames = r.shortNames;
  if (r?.categories != null && r.categories.length > 0) e.categories = r.categories;
  return e;
}

function groupVersionString(group: string, version: string): string {
  return group === '' ? version : `${group}/${version}`;
}
