// Route introspection (issue 15 §5): what this mvproxy would do with a request for each
// group/version/resource right now, read from the published route table, plus the peers and
// whether they are routed to. Served as JSON at /debug/routes on the ops listener; `mvproxy
// routes` prints it as a table.
import type { Snapshot } from '../snapshot/holder';

export interface PeerStatus {
  id: string;
  address: string;
  /** Routed to (member and answering its health probe). */
  up: boolean;
  /** Why not, when not. */
  problem?: string;
}

export interface RoutesReport {
  generation: number;
  /** RFC 3339, or null before the first publish. */
  publishedAt: string | null;
  ageSeconds: number | null;
  /** False until the local apiserver's discovery is in (everything is served locally until then). */
  synced: boolean;
  /** Whether the local apiserver serves (issue 30): while it does not, what a peer can answer goes to one. */
  local: Snapshot['local'];
  peers: PeerStatus[];
  resources: { group: string; version: string; resource: string; local: boolean; peers: string[]; unresolvedPeers: string[] }[];
}

export function routesReport(snap: Snapshot, peers: () => PeerStatus[], now = Date.now()): RoutesReport {
  const t = snap.table;
  const resources: RoutesReport['resources'] = [];
  for (const [group, version, resource, e] of t.entries()) resources.push({ group, version, resource, local: e.servedLocally, peers: [...e.peers], unresolvedPeers: [...e.unresolvedPeers] });
  resources.sort((a, b) => a.group.localeCompare(b.group) || a.version.localeCompare(b.version) || a.resource.localeCompare(b.resource));
  return {
    generation: snap.generation,
    publishedAt: snap.publishedAt ? new Date(snap.publishedAt).toISOString() : null,
    ageSeconds: snap.publishedAt ? Math.round((now - snap.publishedAt) / 100) / 10 : null,
    synced: t.synced,
    local: snap.local,
    peers: peers(),
    resources,
  };
}

/** The report as `mvproxy routes` prints it: a header, the peers, then one row per GVR. */
export function formatRoutes(r: RoutesReport): string {
  const L: string[] = [];
  L.push(`route table generation ${r.generation}, published ${r.publishedAt ?? 'never'}${r.ageSeconds !== null ? ` (${r.ageSeconds} s ago)` : ''}${r.synced ? '' : ', NOT SYNCED: everything is served locally'}`);
  L.push(`local apiserver: ${r.local}${r.local === 'serving' ? '' : ' (requests a peer can answer go to a peer)'}`);
  L.push(r.peers.length ? `peers: ${r.peers.map((p) => `${p.id} ${p.address || '(no address)'} ${p.up ? 'up' : `DOWN${p.problem ? ` (${p.problem})` : ''}`}`).join('; ')}` : 'peers: none');
  const rows = r.resources.map((x) => [x.group ? `${x.group}/${x.version}` : x.version, x.resource, x.local ? 'local' : x.peers.length ? `peer: ${x.peers.join(',')}` : 'unavailable (503)', x.local && x.peers.length ? x.peers.join(',') : x.unresolvedPeers.length ? `unresolved: ${x.unresolvedPeers.join(',')}` : '']);
  const head = ['GROUP/VERSION', 'RESOURCE', 'ROUTE', 'ALSO SERVED BY'];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  for (const row of [head, ...rows]) L.push(row.map((c, i) => c.padEnd(w[i]!)).join('  ').trimEnd());
  return L.join('\n') + '\n';
}
