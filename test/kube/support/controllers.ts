// The real controllers of the old release (issue 39): kube-controller-manager and kube-scheduler
// v1.34.4, connected as kubeadm connects them on a control-plane node (a kubeconfig with their own
// client certificate, CN system:kube-controller-manager / system:kube-scheduler), to whatever
// server a test names: the old apiserver directly (kubeadm's default, the comparison), or the
// mvproxy beside it. Every default controller, leader election on, and
// --use-service-account-credentials (kubeadm's default: each controller talks with its own
// ServiceAccount token, so bearer tokens cross the peer hop). Their secure ports are not served
// (--secure-port=0): nothing here scrapes them.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binary, type KubeControlPlane } from './control-plane';
import { startProcess, waitFor, type Proc } from './processes';

export interface Controllers {
  kcm: Proc;
  scheduler: Proc;
  stop(): Promise<void>;
}

/** klog error lines (`E1206 …`) of a log, for the comparison of what each connection costs the controllers. */
export function errorLines(log: string): string[] {
  return log.split('\n').filter((l) => /^E\d{4} /.test(l));
}

async function kubeconfig(plane: KubeControlPlane, server: string, user: string, tag: string): Promise<string> {
  const cert = await plane.pki.user(user);
  const file = join(plane.dir, `kubeconfig-${tag}-${user.replace(/[^a-z0-9-]/g, '_')}`);
  writeFileSync(file, JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server, 'certificate-authority': plane.pki.caFile } }],
    users: [{ name: user, user: { 'client-certificate': cert.certFile, 'client-key': cert.keyFile } }],
    contexts: [{ name: 'c', context: { cluster: 'c', user } }],
    'current-context': 'c',
  }), { mode: 0o600 });
  return file;
}

/**
 * Starts both against `server` and waits until each holds its leader Lease. `tag` names their
 * logs (one pair per connection under test); `env` reaches both (DISABLE_HTTP2: client-go's HTTP/1.1).
 */
export async function startControllers(plane: KubeControlPlane, server: string, tag: string, env: NodeJS.ProcessEnv = {}): Promise<Controllers> {
  const kc = await kubeconfig(plane, server, 'system:kube-controller-manager', tag);
  const sc = await kubeconfig(plane, server, 'system:kube-scheduler', tag);
  const caKey = join(plane.pki.dir, 'ca.key');
  writeFileSync(caKey, plane.pki.cluster.clusterCA.key, { mode: 0o600 });
  const kcm = startProcess(`kube-controller-manager-${tag}`, binary('kube-controller-manager-v1.34.4'), [
    `--kubeconfig=${kc}`,
    '--secure-port=0',
    '--leader-elect=true',
    '--use-service-account-credentials=true',
    '--controllers=*,bootstrapsigner,tokencleaner',
    `--root-ca-file=${plane.pki.caFile}`,
    `--service-account-private-key-file=${plane.pki.serviceAccountKey}`,
    `--cluster-signing-cert-file=${plane.pki.caFile}`,
    `--cluster-signing-key-file=${caKey}`,
    '--cluster-name=kubernetes',
    '--v=2',
  ], plane.dir, env);
  const scheduler = startProcess(`kube-scheduler-${tag}`, binary('kube-scheduler-v1.34.4'), [
    `--kubeconfig=${sc}`,
    '--secure-port=0',
    '--leader-elect=true',
    '--v=2',
  ], plane.dir, env);
  const stop = async () => {
    await Promise.all([kcm.stop(10_000), scheduler.stop(10_000)]);
  };
  try {
    await waitFor(() => `kube-controller-manager (${tag}) acquired its lease`, async () => /successfully acquired lease kube-system\/kube-controller-manager/.test(kcm.log()), 90_000, kcm);
    await waitFor(() => `kube-scheduler (${tag}) acquired its lease`, async () => /successfully acquired lease kube-system\/kube-scheduler/.test(scheduler.log()), 90_000, scheduler);
  } catch (e) {
    await stop();
    throw e;
  }
  return { kcm, scheduler, stop };
}
