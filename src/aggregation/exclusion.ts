// Group/versions that are never routed to, or merged from, peers: the CRDs and aggregated
// APIServices of this cluster (Kubernetes gv_exclusion_manager.go, docs/kubernetes-mvp.md §4.5). Every apiserver
// shares them through etcd, so a peer's view of them is at best ours and at worst stale. A GV that
// disappears stays excluded for 5 minutes, so peers have time to see the deletion too.

import type { OwnDispatcher } from '../api/own-requests';

/** Kubernetes defaultExclusionGracePeriod. */
export const EXCLUSION_GRACE_MS = 5 * 60_000;

interface CRD {
  spec?: { group?: string; versions?: { name?: string }[] };
}
interface APIService {
  spec?: { group?: string; version?: string; service?: unknown };
}

/** crdExtractor: every version of spec.versions, served or not. */
export function crdGroupVersions(items: readonly CRD[]): string[] {
  const out: string[] = [];
  for (const c of items) for (const v of c.spec?.versions ?? []) if (c.spec?.group && v.name) out.push(`${c.spec.group}/${v.name}`);
  return out;
}

/** apiServiceExtractor: only APIServices backed by a service (local built-in ones are not excluded). */
export function apiServiceGroupVersions(items: readonly APIService[]): string[] {
  const out: string[] = [];
  for (const a of items) if (a.spec?.service != null && a.spec.group && a.spec.version) out.push(`${a.spec.group}/${a.spec.version}`);
  return out;
}

export class GVExclusions {
  private active = new Set<string>();
  private readonly recentlyDeleted = new Map<string, number>();
  private current: ReadonlySet<string> = new Set();

  constructor(private readonly now: () => number = Date.now) {}

  /** Replaces the active set (from a fresh list of CRDs and APIServices). */
  update(activeGVs: Iterable<string>): void {
    const next = new Set(activeGVs);
    const t = this.now();
    for (const gv of this.active) if (!next.has(gv)) this.recentlyDeleted.set(gv, t);
    for (const gv of next) this.recentlyDeleted.delete(gv);
    this.active = next;
    this.recompute();
  }

  /** active ∪ recently deleted (within the grace period). */
  get excluded(): ReadonlySet<string> {
    this.recompute();
    return this.current;
  }

  private recompute(): void {
    const t = this.now();
    for (const [gv, at] of this.recentlyDeleted) if (t - at > EXCLUSION_GRACE_MS) this.recentlyDeleted.delete(gv);
    const s = new Set(this.active);
    for (const gv of this.recentlyDeleted.keys()) s.add(gv);
    this.current = s;
  }
}

/**
 * Lists CRDs and APIServices through the local apiserver. A 404 (the API is not served) counts as
 * an empty list; other failures throw and the caller keeps the last known set.
 */
export async function listExtensionGroupVersions(local: OwnDispatcher, timeoutMs: number): Promise<string[]> {
  const get = async (path: string): Promise<unknown[]> => {
    const res = await local.request({ path, method: 'GET', headers: { accept: 'application/json', 'user-agent': 'mvproxy-exclusions' }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const text = await res.body.text();
    if (res.statusCode === 404) return [];
    if (res.statusCode !== 200) throw new Error(`GET ${path}: status ${res.statusCode}`);
    const list = JSON.parse(text) as { items?: unknown[] };
    return list.items ?? [];
  };
  const [crds, apiServices] = await Promise.all([get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions'), get('/apis/apiregistration.k8s.io/v1/apiservices')]);
  return [...crdGroupVersions(crds as CRD[]), ...apiServiceGroupVersions(apiServices as APIService[])];
}
