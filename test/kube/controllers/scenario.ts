// The decisions KEP-4020 exists to prevent (kubernetes/kubernetes#96486), counted with the real
// controllers of the old release (issue 39): kube-controller-manager and kube-scheduler v1.34.4
// connected to one server (the old apiserver, a load balancer over both, or the mvproxy beside the
// old apiserver), while v1.37.2 serves what v1.34.4 does not (at both releases' defaults):
// PodCertificateRequest (certificates.k8s.io/v1, namespaced) and ClusterTrustBundle (cluster-scoped).
// - namespace controller: 50 PodCertificateRequests in a namespace, then the namespace deleted: how
//   many stay behind in etcd once the namespace is finalized;
// - garbage collector: 12 ClusterTrustBundles own 5 ConfigMaps each, two owners are deleted: the
//   dependents of deleted owners deleted (right), of live owners deleted (wrong);
// - scheduler: a Deployment created through the same server gets its Pods bound to a Node object.
// Used by test/kube/controllers.test.ts (asserts the mvproxy rows) and generate.ts (docs/real-controllers.md).
import 'reflect-metadata'; // @peculiar/x509 needs it (as src/pki/throwaway.ts)
import { randomUUID, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { KubeControlPlane } from '../support/control-plane';
import { KubeClient } from '../support/client';
import { errorLines, startControllers } from '../support/controllers';
import { startMvproxies } from '../support/mvproxy';

export const PCR = 50;
export const OWNERS = 12;
export const PER_OWNER = 5;
export const DELETED_OWNERS = 2;
/** Dependents whose owner lives, and whose owner is deleted. */
export const LIVE_DEPENDENTS = (OWNERS - DELETED_OWNERS) * PER_OWNER;
export const DEAD_DEPENDENTS = DELETED_OWNERS * PER_OWNER;
export const REPLICAS = 2;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What one connection of the controllers did to the cluster. */
export interface Outcome {
  namespaceFinalized: boolean;
  /** PodCertificateRequests left in etcd once the namespace was finalized (or at the bound). */
  leaked: number;
  wrongDeletions: number;
  rightDeletions: number;
  scheduled: number;
  /** klog error lines of both controllers over the run. */
  errors: string[];
  /** Leader Lease acquisitions over the run beyond the first of each (a lost lease restarts a controller-manager). */
  leaderChanges: number;
}

/** The stub CSR a kubelet sends with a PodCertificateRequest (its contents are not checked, its signature is). */
export async function stubCSR(): Promise<string> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  type Create = typeof x509.Pkcs10CertificateRequestGenerator.create;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: 'CN=mvproxy-test', keys, signingAlgorithm: alg } as unknown as Parameters<Create>[0], webcrypto as unknown as Parameters<Create>[1]);
  return Buffer.from(csr.rawData).toString('base64');
}

export function pcr(ns: string, i: number, csr: string): Record<string, unknown> {
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'PodCertificateRequest',
    metadata: { name: `pcr-${i}`, namespace: ns },
    spec: {
      signerName: 'example.com/mvproxy-test',
      podName: `pod-${i}`,
      podUID: randomUUID(),
      serviceAccountName: 'default',
      serviceAccountUID: randomUUID(),
      nodeName: 'node-a',
      nodeUID: randomUUID(),
      maxExpirationSeconds: 86400,
      stubPKCS10Request: csr,
    },
  };
}

/** A Ready node with room for the pods (a status as a kubelet would write it). */
function nodeStatus(): Record<string, unknown> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    capacity: { cpu: '4', memory: '8Gi', pods: '110' },
    allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
    conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'test node', lastHeartbeatTime: now, lastTransitionTime: now }],
  };
}

function deployment(ns: string, node: string): Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: ns },
    spec: {
      replicas: REPLICAS,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { nodeSelector: { 'kubernetes.io/hostname': node }, containers: [{ name: 'web', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '10m', memory: '16Mi' } } }] },
      },
    },
  };
}

/**
 * The whole scenario with the controllers connected to `server` (kubeconfig server) and the
 * Deployment created through `server` too; `tag` keeps each run's objects and logs apart; `env`
 * reaches the controllers (DISABLE_HTTP2 for the load-balancer row). Objects are made, and every
 * outcome read, straight on the new apiserver (it serves every kind).
 */
export async function runScenario(plane: KubeControlPlane, server: string, tag: string, env: NodeJS.ProcessEnv = {}): Promise<Outcome> {
  const admin = new KubeClient(plane.apiservers[1]!.url, plane.pki.caFile, { cert: plane.admin });
  const writer = new KubeClient(server, plane.pki.caFile, { cert: plane.admin });
  const csr = await stubCSR();
  const ctl = await startControllers(plane, server, tag, env);
  try {
    const ns = `pcr-${tag}`;
    await admin.json('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } });
    for (let i = 0; i < PCR; i++) await admin.json('POST', `/apis/certificates.k8s.io/v1/namespaces/${ns}/podcertificaterequests`, { body: pcr(ns, i, csr) });
    const gcns = `gc-${tag}`;
    await admin.json('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: gcns } } });
    const owners: string[] = [];
    for (let o = 0; o < OWNERS; o++) {
      const ctb = await admin.json<{ metadata: { name: string; uid: string } }>('POST', '/apis/certificates.k8s.io/v1/clustertrustbundles', { body: { apiVersion: 'certificates.k8s.io/v1', kind: 'ClusterTrustBundle', metadata: { name: `ctb-${tag}-${o}` }, spec: { trustBundle: plane.pki.cluster.clusterCA.cert } } });
      owners.push(ctb.metadata.name);
      for (let d = 0; d < PER_OWNER; d++) {
        await admin.json('POST', `/api/v1/namespaces/${gcns}/configmaps`, {
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `dep-${o}-${d}`, namespace: gcns, ownerReferences: [{ apiVersion: 'certificates.k8s.io/v1', kind: 'ClusterTrustBundle', name: ctb.metadata.name, uid: ctb.metadata.uid }] }, data: { owner: ctb.metadata.name } },
        });
      }
    }
    await admin.json('DELETE', `/api/v1/namespaces/${ns}`);
    for (let o = 0; o < DELETED_OWNERS; o++) await admin.json('DELETE', `/apis/certificates.k8s.io/v1/clustertrustbundles/${owners[o]}`);

    const node = `node-${tag}`;
    await admin.json('POST', '/api/v1/nodes', { body: { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { 'kubernetes.io/hostname': node, 'kubernetes.io/os': 'linux' } } } });
    await admin.json('PATCH', `/api/v1/nodes/${node}/status`, { contentType: 'application/merge-patch+json', body: JSON.stringify({ status: nodeStatus() }) });
    const dns = `web-${tag}`;
    await writer.json('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: dns } } });
    await writer.json('POST', `/apis/apps/v1/namespaces/${dns}/deployments`, { body: deployment(dns, node) });

    // Each outcome waits at most a bound for the controllers to act; what they never do within it
    // is what a connection costs.
    let namespaceFinalized = false;
    for (let i = 0; i < 120 && !namespaceFinalized; i++) {
      namespaceFinalized = (await admin.get(`/api/v1/namespaces/${ns}`)).status === 404;
      if (!namespaceFinalized) await sleep(500);
    }
    const leaked = ((await admin.json<{ items: unknown[] }>('GET', `/apis/certificates.k8s.io/v1/namespaces/${ns}/podcertificaterequests`)).items ?? []).length;
    const dead = new Set(owners.slice(0, DELETED_OWNERS));
    const tally = async () => {
      const left = (await admin.json<{ items: { data?: { owner?: string } }[] }>('GET', `/api/v1/namespaces/${gcns}/configmaps`)).items.filter((c) => c.data?.owner);
      return { right: DEAD_DEPENDENTS - left.filter((c) => dead.has(c.data!.owner!)).length, wrong: LIVE_DEPENDENTS - left.filter((c) => !dead.has(c.data!.owner!)).length };
    };
    let t = await tally();
    for (let i = 0; i < 60 && t.right < DEAD_DEPENDENTS; i++) {
      await sleep(500);
      t = await tally();
    }
    let scheduled = 0;
    for (let i = 0; i < 120 && scheduled < REPLICAS; i++) {
      const pods = await admin.json<{ items: { spec: { nodeName?: string } }[] }>('GET', `/api/v1/namespaces/${dns}/pods`);
      scheduled = pods.items.filter((p) => p.spec.nodeName === node).length;
      if (scheduled < REPLICAS) await sleep(500);
    }
    t = await tally(); // a late wrong deletion counts too
    const acquired = (log: string) => (log.match(/successfully acquired lease/g) ?? []).length;
    return {
      namespaceFinalized,
      leaked,
      wrongDeletions: t.wrong,
      rightDeletions: t.right,
      scheduled,
      errors: [...errorLines(ctl.kcm.log()), ...errorLines(ctl.scheduler.log())],
      leaderChanges: Math.max(0, acquired(ctl.kcm.log()) - 1) + Math.max(0, acquired(ctl.scheduler.log()) - 1),
    };
  } finally {
    await ctl.stop();
    // The next pair takes the leader Leases at once instead of waiting out the old holder's.
    for (const l of ['kube-controller-manager', 'kube-scheduler']) await admin.request('DELETE', `/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/${l}`);
  }
}

/** An error line that names what mvproxy answers (its Status codes, a 503 for a peer-served kind, a failed discovery group). */
export function causedByMvproxy(line: string): boolean {
  return /MVP_ERR_|mvproxy|the server is currently unable to handle the request|unable to retrieve the complete list of server APIs|the server could not find the requested resource/.test(line);
}

/** What the startup race cost: the namespace deleted while the controllers and mvproxy start. */
export interface StartupOutcome {
  namespaceFinalized: boolean;
  leaked: number;
}

/**
 * Issue 39 item 3, with the real namespace controller: a namespace holding 50 PodCertificateRequests
 * is deleted while nothing runs a namespace controller; then the mvproxy beside the old apiserver
 * and the controller-manager start at the same moment, the controller-manager connected through
 * that mvproxy, and its peer (beside v1.37.2) only `peerDelayMs` later. Until that peer is merged,
 * mvproxy's view is the old apiserver's alone: answered from it, the namespace controller finalizes
 * the namespace and the requests stay in etcd. `args` go to the first mvproxy
 * (`--peer-discovery-startup-timeout=0s` is the behaviour before the fix).
 */
export async function runStartupRace(plane: KubeControlPlane, frontend: 'node' | 'uws', tag: string, args: string[], peerDelayMs = 8000): Promise<StartupOutcome> {
  const admin = new KubeClient(plane.apiservers[1]!.url, plane.pki.caFile, { cert: plane.admin });
  const csr = await stubCSR();
  const ns = `race-${tag}`;
  await admin.json('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } });
  for (let i = 0; i < PCR; i++) await admin.json('POST', `/apis/certificates.k8s.io/v1/namespaces/${ns}/podcertificaterequests`, { body: pcr(ns, i, csr) });
  await admin.json('DELETE', `/api/v1/namespaces/${ns}`);
  let ctl: Promise<Awaited<ReturnType<typeof startControllers>>> | undefined;
  const members = await startMvproxies(plane, {
    frontend,
    member: (i) => (i === 0 ? { extraArgs: args } : { startAfterMs: peerDelayMs }),
    // The controller-manager starts the moment the mvproxy it talks to listens.
    onStarted: (m, i) => {
      if (i === 0) ctl = startControllers(plane, m.url, tag);
    },
  });
  try {
    let namespaceFinalized = false;
    for (let i = 0; i < 120 && !namespaceFinalized; i++) {
      namespaceFinalized = (await admin.get(`/api/v1/namespaces/${ns}`)).status === 404;
      if (!namespaceFinalized) await sleep(500);
    }
    const leaked = ((await admin.json<{ items: unknown[] }>('GET', `/apis/certificates.k8s.io/v1/namespaces/${ns}/podcertificaterequests`)).items ?? []).length;
    return { namespaceFinalized, leaked };
  } finally {
    await (await ctl)?.stop();
    await Promise.all(members.map((m) => m.stop()));
    for (const l of ['kube-controller-manager', 'kube-scheduler']) await admin.request('DELETE', `/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/${l}`);
  }
}
