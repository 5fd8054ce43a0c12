// A node for the real control plane whose kubelet is test/kube/go/cmd/kubelet: Kubernetes' own
// streaming server (k8s.io/cri-streaming) on 127.0.0.1, so kube-apiserver forwards exec, attach,
// port-forward and logs to it exactly as to a kubelet. The Node reports that address and port
// (status.addresses InternalIP, status.daemonEndpoints.kubeletEndpoint), and pods are bound to it
// with a Running status written as a kubelet would (nothing here runs a kubelet's sync loop).
import { join } from 'node:path';
import { binary, type KubeControlPlane } from './control-plane';
import { KubeClient } from './client';
import { freePort, startProcess, waitFor, type Proc } from './processes';

export interface FakeKubelet {
  nodeName: string;
  port: number;
  proc: Proc;
  /** Followed container logs end (as the container exited) once this file exists. */
  logStopFile: string;
  /** Creates a Running pod on this node (container "main"); ports are its containerPorts. */
  pod(name: string, ports?: number[]): Promise<void>;
  stop(): Promise<void>;
}

export async function startFakeKubelet(plane: KubeControlPlane, o: { nodeName?: string; logLines?: number; logIntervalMs?: number } = {}): Promise<FakeKubelet> {
  const nodeName = o.nodeName ?? 'fake-node';
  const port = await freePort();
  const logStopFile = join(plane.dir, `kubelet-${nodeName}.log-stop`);
  const pki = plane.pki;
  const proc = startProcess(`kubelet-${nodeName}`, binary('kubelet'), [
    `--listen=127.0.0.1:${port}`,
    `--tls-cert-file=${pki.kubeletServingCert}`,
    `--tls-private-key-file=${pki.kubeletServingKey}`,
    `--client-ca-file=${pki.caFile}`,
    `--log-lines=${o.logLines ?? 20}`,
    `--log-interval=${o.logIntervalMs ?? 100}ms`,
    `--log-stop-file=${logStopFile}`,
  ], plane.dir);
  try {
    await waitFor(() => `fake kubelet on ${port}`, async () => /fake kubelet serving/.test(proc.log()), 10_000, proc);
    const admin = new KubeClient(plane.apiservers[0]!.url, pki.caFile, { cert: plane.admin });
    await admin.json('POST', '/api/v1/nodes', { body: { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName, labels: { 'kubernetes.io/hostname': nodeName } } } });
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await admin.json('PATCH', `/api/v1/nodes/${nodeName}/status`, {
      contentType: 'application/merge-patch+json',
      body: JSON.stringify({
        status: {
          addresses: [{ type: 'InternalIP', address: '127.0.0.1' }, { type: 'Hostname', address: nodeName }],
          daemonEndpoints: { kubeletEndpoint: { Port: port } },
          conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'fake kubelet', lastHeartbeatTime: now, lastTransitionTime: now }],
        },
      }),
    });
    // The ServiceAccount admission plugin wants the namespace's default ServiceAccount, which the
    // controller-manager (not run here) would create.
    const sa = await admin.request('POST', '/api/v1/namespaces/default/serviceaccounts', { body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } } });
    if (sa.status !== 201 && sa.status !== 409) throw new Error(`default ServiceAccount: ${sa.status} ${sa.body}`);
    return {
      nodeName,
      port,
      proc,
      logStopFile,
      async pod(name, ports = []) {
        await admin.json('POST', '/api/v1/namespaces/default/pods', {
          body: {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name, namespace: 'default' },
            spec: {
              nodeName,
              automountServiceAccountToken: false,
              containers: [{ name: 'main', image: 'registry.invalid/fake:1', ports: ports.map((p) => ({ containerPort: p })) }],
            },
          },
        });
        const t = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
        await admin.json('PATCH', `/api/v1/namespaces/default/pods/${name}/status`, {
          contentType: 'application/merge-patch+json',
          body: JSON.stringify({
            status: {
              phase: 'Running',
              podIP: '127.0.0.1',
              podIPs: [{ ip: '127.0.0.1' }],
              hostIP: '127.0.0.1',
              startTime: t,
              conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: t }],
              containerStatuses: [{ name: 'main', ready: true, started: true, restartCount: 0, image: 'registry.invalid/fake:1', imageID: '', state: { running: { startedAt: t } } }],
            },
          }),
        });
      },
      async stop() {
        await proc.stop(5_000);
      },
    };
  } catch (e) {
    await proc.stop(2_000);
    throw e;
  }
}

/** Where a test may put files "in the container" (the fake kubelet's exec runs on this host). */
export function containerDir(plane: KubeControlPlane): string {
  return join(plane.dir, 'container');
}
