// The route table the native benchmarks run against: this node serves Kubernetes v1.33 plus the
// core group, one peer serves v1.37 plus the core group (fixtures/kubernetes-discovery, SOURCE.md).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RouteTable } from '../src/routing/routetable';
import type { APIGroupDiscovery, APIResourceDiscovery, APISubresourceDiscovery } from '../src/aggregation/types';
import { aggregatedFixture, FIXTURES_DIR } from '../test/support/fixtures';

interface LegacyResource {
  name: string;
  namespaced: boolean;
  verbs: string[];
  singularName?: string;
}

/** The core group "" v1 in aggregated form, from the legacy /api/v1 APIResourceList fixture (commit-4d817e79). */
export function coreGroup(): APIGroupDiscovery {
  const list = JSON.parse(readFileSync(join(FIXTURES_DIR, 'commit-4d817e79', 'api__v1.json'), 'utf8')) as { resources: LegacyResource[] };
  const top = new Map<string, APIResourceDiscovery & { subresources: APISubresourceDiscovery[] }>();
  for (const r of list.resources) {
    if (r.name.includes('/')) continue;
    top.set(r.name, { resource: r.name, scope: r.namespaced ? 'Namespaced' : 'Cluster', singularResource: r.singularName ?? '', verbs: r.verbs, subresources: [] });
  }
  for (const r of list.resources) {
    const slash = r.name.indexOf('/');
    if (slash !== -1) top.get(r.name.slice(0, slash))?.subresources.push({ subresource: r.name.slice(slash + 1), verbs: r.verbs });
  }
  return { metadata: { name: '' }, versions: [{ version: 'v1', resources: [...top.values()], freshness: 'Current' }] };
}

export interface BenchTopology {
  local: APIGroupDiscovery[];
  peer: APIGroupDiscovery[];
  table: RouteTable;
}

/** @param peerAddress where the v1.37 peer is reached (never dialled by the benchmarks' local routes) */
export function benchTopology(peerAddress = '10.0.0.2:6443'): BenchTopology {
  const core = coreGroup();
  const local = [core, ...aggregatedFixture('v1.33').items];
  const peer = [core, ...aggregatedFixture('v1.37').items];
  const table = RouteTable.build({
    synced: true,
    local: { groups: local },
    peers: new Map([['apiserver-v137', { address: peerAddress, groups: peer }]]),
  });
  return { local, peer, table };
}
