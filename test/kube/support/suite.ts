// What the real-Kubernetes test files share: the front ends to run on, and the peer-only kinds of
// the v1.34.4 / v1.37.2 pair (control-plane.ts RUNTIME_CONFIG says why each is peer-only).
import { readFileSync } from 'node:fs';
import { after, before, describe } from 'node:test';
import type { KubeControlPlane } from './control-plane';
import { startMvproxies, uwsNode, type Frontend, type Member } from './mvproxy';

/** node always; uws where a Node that loads it exists (here: scripts/node-glibc.sh). CI requires both. */
export function frontends(): { frontend: Frontend; skip?: string }[] {
  const uws = uwsNode();
  const required = process.env.MVPROXY_REQUIRE_UWS_LANE === '1';
  if (!uws && required) throw new Error('MVPROXY_REQUIRE_UWS_LANE=1 but no Node that loads uWebSockets.js could be prepared (scripts/node-glibc.sh)');
  return [{ frontend: 'node' }, { frontend: 'uws', skip: uws ? undefined : 'no Node that loads uWebSockets.js here (scripts/node-glibc.sh failed)' }];
}

/** A describe per front end with an mvproxy pair of that front end beside the plane's apiservers. */
export function forEachFrontend(plane: () => KubeControlPlane, body: (frontend: Frontend, members: () => Member[]) => void): void {
  for (const { frontend, skip } of frontends()) {
    describe(`front end ${frontend}`, { skip }, () => {
      let members: Member[] = [];
      before(async () => {
        members = await startMvproxies(plane(), { frontend });
      });
      after(async () => Promise.all(members.map((m) => m.stop())));
      body(frontend, () => members);
    });
  }
}

export interface PeerOnlyKind {
  /** Index of the apiserver that serves it (the other one does not). */
  servedBy: number;
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  /** A valid object of the kind. */
  object(plane: KubeControlPlane, name: string): Record<string, unknown>;
}

export const PEER_ONLY: PeerOnlyKind[] = [
  {
    // v1.37.2 runs with autoscaling/v1 off (RUNTIME_CONFIG): only the old member serves it.
    servedBy: 0,
    group: 'autoscaling',
    version: 'v1',
    resource: 'horizontalpodautoscalers',
    kind: 'HorizontalPodAutoscaler',
    namespaced: true,
    object: (_p, name) => ({
      apiVersion: 'autoscaling/v1',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name, namespace: 'default' },
      spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 1, maxReplicas: 3 },
    }),
  },
  {
    // GA after v1.34: only the new member serves it.
    servedBy: 1,
    group: 'certificates.k8s.io',
    version: 'v1',
    resource: 'clustertrustbundles',
    kind: 'ClusterTrustBundle',
    namespaced: false,
    object: (p, name) => ({
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'ClusterTrustBundle',
      metadata: { name },
      spec: { trustBundle: readFileSync(p.pki.caFile, 'utf8') },
    }),
  },
  {
    // storagemigration.k8s.io is GA after v1.34 (alpha and off there): a whole group only the new
    // member serves, so legacy-discovery clients (kubectl <= 1.29, python) see it too.
    servedBy: 1,
    group: 'storagemigration.k8s.io',
    version: 'v1',
    resource: 'storageversionmigrations',
    kind: 'StorageVersionMigration',
    namespaced: false,
    object: (_p, name) => ({
      apiVersion: 'storagemigration.k8s.io/v1',
      kind: 'StorageVersionMigration',
      metadata: { name },
      spec: { resource: { group: 'apps', resource: 'deployments' } },
    }),
  },
];

export function collectionPath(k: Pick<PeerOnlyKind, 'group' | 'version' | 'resource' | 'namespaced'>, namespace = 'default'): string {
  const gv = k.group ? `/apis/${k.group}/${k.version}` : `/api/${k.version}`;
  return `${gv}${k.namespaced ? `/namespaces/${namespace}` : ''}/${k.resource}`;
}
