// Synthetic, CRD-heavy aggregated discovery documents for merge.ts, codec.ts and merge-load.ts: the v1.37 fixture (83 GVRs) or the v1.33 one,
// plus CRD-like groups (two versions, 4 resources each with status/scale subresources, shortNames,
// categories) up to the target GVR count; odd servers start from v1.33, each server lacks a
// different few CRD groups and adds a verb, so a merge takes its full path.

import type { APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery } from '../src/aggregation/types';
import { encodeJSON } from '../src/aggregation/codec/json';
import { copyToArrayBuffer } from '../src/aggregation/merger';
import { aggregatedFixture } from '../test/support/fixtures';

const base = { v137: aggregatedFixture('v1.37'), v133: aggregatedFixture('v1.33') };

export function gvrCount(items: readonly APIGroupDiscovery[]): number {
  let n = 0;
  for (const g of items) for (const v of g.versions ?? []) n += v.resources?.length ?? 0;
  return n;
}

function crdResource(group: number, version: string, r: number, server: number): APIResourceDiscovery {
  const kind = `Widget${group}x${r}`;
  const verbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
  if (server % 2 === 1 && r === 0) verbs.push('proxy');
  return {
    resource: `widgets${r}`,
    responseKind: { group: '', version: '', kind },
    scope: r % 3 === 0 ? 'Cluster' : 'Namespaced',
    singularResource: `widget${r}`,
    verbs,
    shortNames: [`w${group}x${r}`],
    categories: ['all', `crd-${version}`],
    subresources: [
      { subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: ['get', 'patch', 'update'] },
      { subresource: 'status', responseKind: { group: '', version: '', kind }, verbs: ['get', 'patch', 'update'] },
    ],
  };
}

/** One server's `/apis`, about `target` GVRs; `variant` renames every CRD group (a different API set). */
export function syntheticServer(target: number, server: number, variant = 0): APIGroupDiscoveryList {
  const start = server % 2 === 0 ? base.v137 : base.v133;
  const items: APIGroupDiscovery[] = [...start.items];
  let total = gvrCount(items);
  for (let g = 0; total < target; g++) {
    if ((g + server) % 11 === 0) continue;
    const versions = ['v1', 'v1beta1'].map((version) => ({ version, freshness: 'Current', resources: [0, 1, 2, 3].map((r) => crdResource(g, version, r, server)) }));
    items.push({ metadata: { name: variant === 0 ? `crd${g}.example.com` : `crd${g}.v${variant}.example.com` }, versions });
    total += 8;
  }
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}

/**
 * The merger's input for `servers` servers of about `gvrs` GVRs each (fresh ArrayBuffers: they are
 * transferred). With `variants` > 1, successive calls rotate through API sets whose CRD groups all
 * differ: the merger caches what its last build parsed and merged (merge.worker.ts DocumentCache,
 * served-discovery.ts EncodingMemo), so identical inputs would measure the cache, not a merge.
 */
export function mergeInput(servers: number, gvrs: number, variants = 1): () => { localID: string; localApis: ArrayBuffer; peers: { id: string; apis: ArrayBuffer }[]; excludedGroupVersions: string[] } {
  const sets = Array.from({ length: variants }, (_, v) => Array.from({ length: servers }, (_, i) => encodeJSON(syntheticServer(gvrs, i, v))));
  let n = 0;
  return () => {
    const bytes = sets[n++ % sets.length]!;
    return {
      localID: 's0',
      localApis: copyToArrayBuffer(bytes[0]!),
      peers: bytes.slice(1).map((b, i) => ({ id: `s${i + 1}`, apis: copyToArrayBuffer(b) })),
      excludedGroupVersions: [],
    };
  };
}

/**
 * A variant of a document's JSON in which every resource is new (its singularResource gets the
 * prefix `tag`): the same shape and merge path, but nothing a cache could have seen. Applied with
 * the same tag to every server of a build, servers still agree where they agreed before.
 */
export function everyResourceChanged(json: Buffer, tag: string): Buffer {
  return Buffer.from(json.toString('utf8').replaceAll('"singularResource":"', `"singularResource":"${tag}`), 'utf8');
}

/**
 * A variant of a document's JSON in which one resource (the first past the middle of the
 * document) has a new singularResource: one group of one server changed, the rest byte-identical.
 */
export function oneResourceChanged(json: Buffer, tag: string): Buffer {
  const s = json.toString('utf8');
  const key = '"singularResource":"';
  const at = s.indexOf(key, s.length >> 1);
  if (at < 0) throw new Error('oneResourceChanged: no resource past the middle');
  const i = at + key.length;
  return Buffer.from(`${s.slice(0, i)}${tag}${s.slice(i)}`, 'utf8');
}
