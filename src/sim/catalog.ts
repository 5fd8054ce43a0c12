// What a simulated kube-apiserver serves: the API catalog built from the discovery fixtures
// (fixtures/kubernetes-discovery, see SOURCE.md) minus the GVs/resources disabled by --runtime-config,
// plus the core group "" v1 converted from the legacy /api/v1 APIResourceList fixture.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  GroupVersionKind,
} from '../aggregation/types';

export type SimKubernetesVersion = 'v1.33' | 'v1.37';

export const FIXTURE_FOLDERS: Record<SimKubernetesVersion, string> = {
  'v1.33': 'v1.33-0b1dcaba',
  'v1.37': 'v1.37.0-dev-6732d913',
};
const CORE_FIXTURE = join('commit-4d817e79', 'api__v1.json');

export interface SubresourceInfo {
  readonly name: string;
  /** Response kind with the parent GV filled in where discovery leaves group/version empty. */
  readonly kind: string;
  readonly group: string;
  readonly version: string;
  readonly verbs: ReadonlySet<string>;
}

export interface ResourceInfo {
  readonly group: string;
  readonly version: string;
  /** 'v1' for core, '<group>/<version>' otherwise: the apiVersion objects carry. */
  readonly apiVersion: string;
  readonly resource: string;
  readonly kind: string;
  readonly listKind: string;
  readonly namespaced: boolean;
  readonly singular: string;
  readonly verbs: ReadonlySet<string>;
  readonly subresources: ReadonlyMap<string, SubresourceInfo>;
  /** Objects of this resource are stored (it has `get`); create-only resources (reviews) are not. */
  readonly persisted: boolean;
  /** Discovery entry in Go struct field order. */
  readonly discovery: APIResourceDiscovery;
  /** Only the core fixture carries these. */
  readonly storageVersionHash?: string;
}

/**
 * A resource path resolved against the catalog (handlers.ts resolveResource); here rather than in
 * handlers.ts so that watch.ts, which handlers.ts imports, can take one without an import cycle.
 */
export interface ResourceRequest {
  readonly info: ResourceInfo;
  /** '' for cluster-scoped access or all-namespaces collection access. */
  readonly namespace: string;
  readonly name?: string;
  readonly subresource?: string;
  /** Path below the subresource (proxy). */
  readonly subpath: readonly string[];
  /** The /watch/ path form was used. */
  readonly watchPath: boolean;
}

export interface VersionInfo {
  readonly group: string;
  readonly version: string;
  readonly apiVersion: string;
  readonly resources: ReadonlyMap<string, ResourceInfo>;
  readonly discovery: APIVersionDiscovery;
}

export interface GroupInfo {
  readonly name: string;
  /** Preferred version first (discovery order). */
  readonly versions: readonly VersionInfo[];
}

export interface Catalog {
  readonly kubernetesVersion: SimKubernetesVersion;
  readonly core: VersionInfo;
  /** Non-core groups in discovery order. */
  readonly groups: readonly GroupInfo[];
  /** 'v1' and '<group>/<version>' → VersionInfo. */
  readonly byApiVersion: ReadonlyMap<string, VersionInfo>;
  readonly groupsByName: ReadonlyMap<string, GroupInfo>;
}

/** Finds fixtures/kubernetes-discovery upwards from this file (works from src/ and dist/src/). */
export function fixturesDir(): string {
  let dir = __dirname;
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'fixtures', 'kubernetes-discovery');
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`sim: fixtures/kubernetes-discovery not found above ${__dirname}`);
}

const rawCache = new Map<string, unknown>();
function readJson<T>(rel: string): T {
  let v = rawCache.get(rel);
  if (v === undefined) {
    v = JSON.parse(readFileSync(join(fixturesDir(), rel), 'utf8'));
    rawCache.set(rel, v);
  }
  // Callers never mutate what they get (they rebuild in Go field order), so sharing is fine.
  return v as T;
}

export function readAggregatedFixture(v: SimKubernetesVersion): APIGroupDiscoveryList {
  return readJson<APIGroupDiscoveryList>(join(FIXTURE_FOLDERS[v], 'aggregated_v2.json'));
}

interface LegacyAPIResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  group?: string;
  version?: string;
  kind: string;
  verbs: string[] | null;
  shortNames?: string[];
  categories?: string[];
  storageVersionHash?: string;
}
interface LegacyAPIResourceList {
  groupVersion: string;
  resources: LegacyAPIResource[];
}

// ---------------------------------------------------------------------------------------------
// --runtime-config

export interface RuntimeConfig {
  all?: boolean;
  ga?: boolean;
  beta?: boolean;
  alpha?: boolean;
  /** '<group>/<version>' → enabled */
  groupVersions: Map<string, boolean>;
  /** '<group>/<version>/<resource>' → enabled */
  resources: Map<string, boolean>;
}

/**
 * Parses kube-apiserver --runtime-config entries: `api/all`, `api/ga`, `api/beta`, `api/alpha`,
 * `<group>/<version>`, `<group>/<version>/<resource>`, each `=true|false` (bare key = true).
 * An entry may hold several comma-separated pairs, as the real map flag does. Precedence follows
 * the real server: api/all, then api/ga|beta|alpha, then group/version, then resource entries.
 */
export function parseRuntimeConfig(entries: readonly string[] | undefined): RuntimeConfig {
  const rc: RuntimeConfig = { groupVersions: new Map(), resources: new Map() };
  for (const entry of entries ?? []) {
    for (const part of entry.split(',')) {
      const item = part.trim();
      if (!item) continue;
      const eq = item.indexOf('=');
      const key = (eq < 0 ? item : item.slice(0, eq)).trim();
      const raw = eq < 0 ? 'true' : item.slice(eq + 1).trim().toLowerCase();
      if (raw !== 'true' && raw !== 'false') throw new Error(`sim: invalid value in --runtime-config ${item}: want true or false`);
      const value = raw === 'true';
      switch (key) {
        case 'api/all': rc.all = value; continue;
        case 'api/ga': rc.ga = value; continue;
        case 'api/beta': rc.beta = value; continue;
        case 'api/alpha': rc.alpha = value; continue;
        case 'v1':
        case 'api/v1':
        case 'api/legacy':
          if (!value) throw new Error(`sim: --runtime-config ${item}: the core API v1 cannot be disabled`);
          continue;
      }
      const parts = key.split('/');
      if (parts.length === 2 && parts[0] && parts[1]) rc.groupVersions.set(key, value);
      else if (parts.length === 3 && parts[0] && parts[1] && parts[2]) rc.resources.set(key, value);
      else throw new Error(`sim: invalid --runtime-config key ${JSON.stringify(key)}`);
    }
  }
  return rc;
}

function maturity(version: string): 'ga' | 'beta' | 'alpha' {
  if (/^v\d+$/.test(version)) return 'ga';
  if (/^v\d+beta\d+$/.test(version)) return 'beta';
  return 'alpha';
}

function gvEnabled(rc: RuntimeConfig, group: string, version: string): boolean {
  let on = true; // the fixture documents list everything enabled
  if (rc.all !== undefined) on = rc.all;
  const m = rc[maturity(version)];
  if (m !== undefined) on = m;
  const explicit = rc.groupVersions.get(`${group}/${version}`);
  if (explicit !== undefined) on = explicit;
  return on;
}

// ---------------------------------------------------------------------------------------------
// Go struct field order (k8s.io/api/apidiscovery/v2/types.go)

function gvk(k: GroupVersionKind | undefined): GroupVersionKind | undefined {
  return k ? { group: k.group ?? '', version: k.version ?? '', kind: k.kind ?? '' } : undefined;
}

function orderSubresource(s: APISubresourceDiscovery): APISubresourceDiscovery {
  const out: APISubresourceDiscovery = { subresource: s.subresource } as APISubresourceDiscovery;
  if (s.responseKind) out.responseKind = gvk(s.responseKind);
  if (s.acceptedTypes && s.acceptedTypes.length) out.acceptedTypes = s.acceptedTypes.map((t) => gvk(t)!);
  out.verbs = s.verbs && s.verbs.length ? [...s.verbs] : null;
  return out;
}

function orderResource(r: APIResourceDiscovery): APIResourceDiscovery {
  const out = { resource: r.resource } as APIResourceDiscovery;
  if (r.responseKind) out.responseKind = gvk(r.responseKind);
  out.scope = r.scope;
  out.singularResource = r.singularResource;
  out.verbs = r.verbs && r.verbs.length ? [...r.verbs] : null;
  if (r.shortNames && r.shortNames.length) out.shortNames = [...r.shortNames];
  if (r.categories && r.categories.length) out.categories = [...r.categories];
  if (r.subresources && r.subresources.length) out.subresources = r.subresources.map(orderSubresource);
  return out;
}

function resourceInfo(group: string, version: string, d: APIResourceDiscovery, storageVersionHash?: string): ResourceInfo {
  const apiVersion = group ? `${group}/${version}` : version;
  const kind = d.responseKind?.kind || '';
  const verbs = new Set(d.verbs ?? []);
  const subresources = new Map<string, SubresourceInfo>();
  for (const s of d.subresources ?? []) {
    subresources.set(s.subresource, {
      name: s.subresource,
      kind: s.responseKind?.kind || kind,
      group: s.responseKind?.group || (s.responseKind?.version ? '' : group),
      version: s.responseKind?.version || version,
      verbs: new Set(s.verbs ?? []),
    });
  }
  return {
    group,
    version,
    apiVersion,
    resource: d.resource,
    kind,
    listKind: `${kind}List`,
    namespaced: d.scope === 'Namespaced',
    singular: d.singularResource,
    verbs,
    subresources,
    persisted: verbs.has('get'),
    discovery: d,
    ...(storageVersionHash ? { storageVersionHash } : {}),
  };
}

function coreFromLegacy(): { discovery: APIResourceDiscovery[]; hashes: Map<string, string> } {
  const list = readJson<LegacyAPIResourceList>(CORE_FIXTURE);
  const top = new Map<string, APIResourceDiscovery>();
  const hashes = new Map<string, string>();
  for (const r of list.resources) {
    if (r.name.includes('/')) continue;
    const d: APIResourceDiscovery = {
      resource: r.name,
      responseKind: { group: r.group ?? '', version: r.version ?? '', kind: r.kind },
      scope: r.namespaced ? 'Namespaced' : 'Cluster',
      singularResource: r.singularName,
      verbs: r.verbs && r.verbs.length ? [...r.verbs] : null,
    };
    if (r.shortNames?.length) d.shortNames = [...r.shortNames];
    if (r.categories?.length) d.categories = [...r.categories];
    top.set(r.name, d);
    if (r.storageVersionHash) hashes.set(r.name, r.storageVersionHash);
  }
  for (const r of list.resources) {
    const slash = r.name.indexOf('/');
    if (slash < 0) continue;
    const parent = top.get(r.name.slice(0, slash));
    if (!parent) continue;
    (parent.subresources ??= []).push({
      subresource: r.name.slice(slash + 1),
      responseKind: { group: r.group ?? '', version: r.version ?? '', kind: r.kind },
      verbs: r.verbs && r.verbs.length ? [...r.verbs] : null,
    });
  }
  return { discovery: [...top.values()].map(orderResource), hashes };
}

function buildVersion(group: string, version: string, resources: APIResourceDiscovery[], rc: RuntimeConfig, hashes?: Map<string, string>): VersionInfo | undefined {
  const apiVersion = group ? `${group}/${version}` : version;
  const map = new Map<string, ResourceInfo>();
  const kept: APIResourceDiscovery[] = [];
  for (const r of resources) {
    const explicit = rc.resources.get(`${group}/${version}/${r.resource}`);
    if (explicit === false) continue;
    const d = orderResource(r);
    kept.push(d);
    map.set(d.resource, resourceInfo(group, version, d, hashes?.get(d.resource)));
  }
  if (!kept.length) return undefined;
  return { group, version, apiVersion, resources: map, discovery: { version, resources: kept, freshness: 'Current' } };
}

export function buildCatalog(kubernetesVersion: SimKubernetesVersion, runtimeConfig?: readonly string[]): Catalog {
  if (!(kubernetesVersion in FIXTURE_FOLDERS)) throw new Error(`sim: unknown kubernetesVersion ${String(kubernetesVersion)}`);
  const rc = parseRuntimeConfig(runtimeConfig);
  const doc = readAggregatedFixture(kubernetesVersion);

  const known = new Set<string>();
  const knownResources = new Set<string>();
  for (const g of doc.items) {
    for (const v of g.versions ?? []) {
      known.add(`${g.metadata.name ?? ''}/${v.version}`);
      for (const r of v.resources ?? []) knownResources.add(`${g.metadata.name ?? ''}/${v.version}/${r.resource}`);
    }
  }
  const core = coreFromLegacy();
  for (const r of core.discovery) knownResources.add(`/v1/${r.resource}`);
  for (const key of rc.groupVersions.keys()) {
    if (!known.has(key)) throw new Error(`sim: --runtime-config: unknown group/version ${key} (not served by ${kubernetesVersion})`);
  }
  for (const [key, on] of rc.resources) {
    const k = key.startsWith('api/v1/') ? key.slice(3) : key;
    if (!knownResources.has(k)) throw new Error(`sim: --runtime-config: unknown resource ${key} (not served by ${kubernetesVersion})`);
    if (k !== key) {
      rc.resources.delete(key);
      rc.resources.set(k, on);
    }
  }

  const coreVersion = buildVersion('', 'v1', core.discovery, rc, core.hashes);
  if (!coreVersion) throw new Error('sim: --runtime-config disabled every core resource');
  const byApiVersion = new Map<string, VersionInfo>([['v1', coreVersion]]);
  const groups: GroupInfo[] = [];
  const groupsByName = new Map<string, GroupInfo>();
  for (const g of doc.items as APIGroupDiscovery[]) {
    const name = g.metadata.name ?? '';
    const versions: VersionInfo[] = [];
    for (const v of g.versions ?? []) {
      const explicitResource = [...rc.resources.entries()].some(([k, on]) => on && k.startsWith(`${name}/${v.version}/`));
      if (!gvEnabled(rc, name, v.version) && !explicitResource) continue;
      let resources = v.resources ?? [];
      if (!gvEnabled(rc, name, v.version)) {
        // Group/version off but single resources explicitly on: serve only those.
        resources = resources.filter((r) => rc.resources.get(`${name}/${v.version}/${r.resource}`) === true);
      }
      const vi = buildVersion(name, v.version, resources, rc);
      if (!vi) continue;
      versions.push(vi);
      byApiVersion.set(vi.apiVersion, vi);
    }
    if (!versions.length) continue;
    const gi: GroupInfo = { name, versions };
    groups.push(gi);
    groupsByName.set(name, gi);
  }
  return { kubernetesVersion, core: coreVersion, groups, byApiVersion, groupsByName };
}

/** 'group/version/resource' keys of every served resource (core as '/v1/<resource>'). */
export function servedKeys(c: Catalog): Set<string> {
  const out = new Set<string>();
  for (const v of c.byApiVersion.values()) for (const r of v.resources.keys()) out.add(`${v.group}/${v.version}/${r}`);
  return out;
}

export interface VersionInfoDoc {
  major: string;
  minor: string;
  emulationMajor: string;
  emulationMinor: string;
  minCompatibilityMajor: string;
  minCompatibilityMinor: string;
  gitVersion: string;
  gitCommit: string;
  gitTreeState: string;
  buildDate: string;
  goVersion: string;
  compiler: string;
  platform: string;
}

/** /version body (k8s.io/apimachinery/pkg/version.Info, with the 1.33+ compatibility fields). */
export function versionDoc(v: SimKubernetesVersion): VersionInfoDoc {
  const platform = `linux/${process.arch === 'arm64' ? 'arm64' : 'amd64'}`;
  if (v === 'v1.33') {
    return {
      major: '1', minor: '33', emulationMajor: '1', emulationMinor: '33', minCompatibilityMajor: '1', minCompatibilityMinor: '32',
      gitVersion: 'v1.33.0', gitCommit: '0b1dcaba0a3f1fdcfe5fbb6516d68ffc8e625d81', gitTreeState: 'clean',
      buildDate: '2025-04-23T00:00:00Z', goVersion: 'go1.24.2', compiler: 'gc', platform,
    };
  }
  return {
    major: '1', minor: '37', emulationMajor: '1', emulationMinor: '37', minCompatibilityMajor: '1', minCompatibilityMinor: '36',
    gitVersion: 'v1.37.0-alpha.0', gitCommit: '6732d913237bd282d81fe99df860938c5d60480a', gitTreeState: 'clean',
    buildDate: '2026-05-01T00:00:00Z', goVersion: 'go1.26.2', compiler: 'gc', platform,
  };
}
