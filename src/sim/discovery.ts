// Discovery documents of a simulated apiserver, all computed once at start
// (docs/kubernetes-mvp.md §5.1–5.2, §7.1):
// aggregated apidiscovery.k8s.io/v2 for /api and /apis (ETag = quoted uppercase hex SHA-512 of
// the compact JSON body), and the legacy APIVersions / APIGroupList / APIGroup / APIResourceList.
import { createHash } from 'node:crypto';
import type { APIGroupDiscovery, APIGroupDiscoveryList } from '../aggregation/types';
import type { Catalog, VersionInfo } from './catalog';

export const AGGREGATED_V2_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
export const AGGREGATED_V2BETA1_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

export interface AggregatedBody {
  readonly body: Buffer;
  /** Quoted, e.g. "\"ABC…\"". */
  readonly etag: string;
  readonly contentType: string;
  readonly document: APIGroupDiscoveryList;
}

export interface DiscoveryDocuments {
  readonly apisV2: AggregatedBody;
  readonly apiV2: AggregatedBody;
  readonly apisV2beta1: AggregatedBody;
  readonly apiV2beta1: AggregatedBody;
  /** Legacy /api APIVersions (set once the listen address is known, see `legacyApiBody`). */
  legacyApi: Buffer;
  /** Legacy /apis APIGroupList. */
  readonly legacyApis: Buffer;
  /** '/apis/<group>' → APIGroup. */
  readonly groups: ReadonlyMap<string, Buffer>;
  /** 'v1' and '<group>/<version>' → APIResourceList. */
  readonly resourceLists: ReadonlyMap<string, Buffer>;
  /** Root paths document (GET /). */
  readonly rootPaths: Buffer;
}

export function etagOf(body: Buffer | string): string {
  return `"${createHash('sha512').update(body).digest('hex').toUpperCase()}"`;
}

function aggregated(items: APIGroupDiscovery[], apiVersion: 'v2' | 'v2beta1', etag?: string): AggregatedBody {
  const document: APIGroupDiscoveryList = {
    kind: 'APIGroupDiscoveryList',
    apiVersion: `apidiscovery.k8s.io/${apiVersion}`,
    metadata: {},
    items,
  };
  const body = Buffer.from(JSON.stringify(document));
  return {
    body,
    etag: etag ?? etagOf(body),
    contentType: apiVersion === 'v2' ? AGGREGATED_V2_CONTENT_TYPE : AGGREGATED_V2BETA1_CONTENT_TYPE,
    document,
  };
}

function versionItem(v: VersionInfo) {
  return v.discovery;
}

function resourceList(v: VersionInfo): Buffer {
  const resources: Record<string, unknown>[] = [];
  for (const r of v.resources.values()) {
    // Go APIResource field order: name, singularName, namespaced, group, version, kind, verbs,
    // shortNames, categories, storageVersionHash.
    const top: Record<string, unknown> = {
      name: r.resource,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.discovery.verbs ?? [],
    };
    if (r.discovery.shortNames?.length) top['shortNames'] = r.discovery.shortNames;
    if (r.discovery.categories?.length) top['categories'] = r.discovery.categories;
    if (r.storageVersionHash) top['storageVersionHash'] = r.storageVersionHash;
    resources.push(top);
    for (const s of r.discovery.subresources ?? []) {
      const sub: Record<string, unknown> = { name: `${r.resource}/${s.subresource}`, singularName: '', namespaced: r.namespaced };
      if (s.responseKind?.group) sub['group'] = s.responseKind.group;
      if (s.responseKind?.version) sub['version'] = s.responseKind.version;
      sub['kind'] = s.responseKind?.kind || r.kind;
      sub['verbs'] = s.verbs ?? [];
      resources.push(sub);
    }
  }
  const doc = v.group
    ? { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: v.apiVersion, resources }
    : { kind: 'APIResourceList', groupVersion: 'v1', resources };
  return Buffer.from(JSON.stringify(doc));
}

/** Legacy /api APIVersions; `serverAddress` is the host:port it advertises. */
export function legacyApiBody(serverAddress: string): Buffer {
  return Buffer.from(JSON.stringify({
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  }));
}

/** Every discovery document, built once at start. */
export function buildDiscovery(c: Catalog, serverAddress: string): DiscoveryDocuments {
  const coreItem: APIGroupDiscovery = { metadata: {}, versions: [versionItem(c.core)] };
  const groupItems: APIGroupDiscovery[] = c.groups.map((g) => ({ metadata: { name: g.name }, versions: g.versions.map(versionItem) }));

  const groupDocs = c.groups.map((g) => {
    const versions = g.versions.map((v) => ({ groupVersion: v.apiVersion, version: v.version }));
    return { name: g.name, versions, preferredVersion: versions[0]! };
  });
  const groups = new Map<string, Buffer>();
  for (const g of groupDocs) groups.set(g.name, Buffer.from(JSON.stringify({ kind: 'APIGroup', apiVersion: 'v1', ...g })));
  const resourceLists = new Map<string, Buffer>();
  for (const v of c.byApiVersion.values()) resourceLists.set(v.apiVersion, resourceList(v));

  const paths = ['/api', '/api/v1', '/apis', '/apis/'];
  for (const g of c.groups) {
    paths.push(`/apis/${g.name}`);
    for (const v of g.versions) paths.push(`/apis/${v.apiVersion}`);
  }
  paths.push('/healthz', '/livez', '/readyz', '/version');

  // The real server hashes the v2 document for both encodings/versions, so v2beta1 shares the ETag.
  const apisV2 = aggregated(groupItems, 'v2');
  const apiV2 = aggregated([coreItem], 'v2');
  return {
    apisV2,
    apiV2,
    apisV2beta1: aggregated(groupItems, 'v2beta1', apisV2.etag),
    apiV2beta1: aggregated([coreItem], 'v2beta1', apiV2.etag),
    legacyApi: legacyApiBody(serverAddress),
    legacyApis: Buffer.from(JSON.stringify({ kind: 'APIGroupList', apiVersion: 'v1', groups: groupDocs })),
    groups,
    resourceLists,
    rootPaths: Buffer.from(JSON.stringify({ paths: paths.sort() })),
  };
}
