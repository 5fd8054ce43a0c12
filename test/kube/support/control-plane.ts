// A real mixed-version control plane on 127.0.0.1: one etcd shared by kube-apiserver v1.34.4 and
// v1.37.2 (as in an HA control plane during a rolling upgrade), a per-run PKI, and one mvproxy
// beside each apiserver, peered over mutual TLS. Binaries come from scripts/kube-build.sh.
// Startup is bounded (etcd 20 s, each apiserver 120 s on 2 busy cores, each mvproxy 30 s) and waits on
// /readyz; stop() tears everything down, and processes.ts kills what is left if the test process dies.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../support/child-daemon';
import { kubectlPath } from '../../support/kubectl';
import { createKubePKI, type KubePKI, type UserCert } from './pki';
import { freePort, httpsGet, startProcess, waitFor, type Proc } from './processes';

export const BIN_DIR = process.env.MVPROXY_KUBE_BIN ?? join(ROOT, '.cache', 'kube', 'bin');
export type KubeVersion = 'v1.34.4' | 'v1.37.2';
export const OLD: KubeVersion = 'v1.34.4';
export const NEW: KubeVersion = 'v1.37.2';

/**
 * What each apiserver serves beyond the other, so routing is exercised both ways:
 * - v1.34.4 keeps autoscaling/v1 (HorizontalPodAutoscaler); v1.37.2 runs with it turned off, as a
 *   release that dropped a version would: autoscaling/v1 requests to the new member go to the old one.
 * - v1.37.2 serves what v1.34.4 does not have at all (its new APIs, read off discovery in the
 *   suite), and SelfSubjectReview, which v1.34.4 runs without: `kubectl auth whoami` through the old
 *   member is then answered by the new apiserver over the peer route, so the real authenticator
 *   judges the identity mvproxy carried across the hop.
 */
export const RUNTIME_CONFIG: Record<KubeVersion, string> = {
  'v1.34.4': 'authentication.k8s.io/v1/selfsubjectreviews=false',
  'v1.37.2': 'autoscaling/v1=false',
};

/** One audit event (audit.k8s.io/v1, level Metadata): who the apiserver believed made a request. */
export interface AuditEvent {
  /** The request's Audit-ID header when the client sent one (the scenario's clients do), else the apiserver's own UUID. */
  auditID: string;
  stage: string;
  requestURI: string;
  verb: string;
  user: { username: string; groups?: string[]; extra?: Record<string, string[]> };
  impersonatedUser?: { username: string; groups?: string[]; extra?: Record<string, string[]> };
  responseStatus?: { code: number };
  objectRef?: { resource?: string; apiGroup?: string; apiVersion?: string; name?: string };
}

export function binary(name: string): string {
  const p = join(BIN_DIR, name);
  if (!existsSync(p)) throw new Error(`${p} is missing: run scripts/kube-build.sh (npm run test:kube does)`);
  return p;
}

export interface Apiserver {
  name: string;
  version: KubeVersion;
  port: number;
  url: string;
  proc: Proc;
  /** The audit events this apiserver logged so far (every request, level Metadata). */
  audit(): AuditEvent[];
  /** Stops the process (SIGTERM, bounded) and starts it again, optionally as another release, on the same port and etcd. */
  restart(version?: KubeVersion, how?: RestartHow): Promise<void>;
  stop(): Promise<void>;
}

export interface RestartHow {
  /** SIGKILL instead of a graceful stop (a crash, an OOM kill). */
  kill?: boolean;
  /** The new process starts no sooner than this long after the stop began (an apiserver that stays down). */
  downMs?: number;
  /** Called once the old process has exited. */
  exited?: () => void;
}

export interface KubeControlPlane {
  dir: string;
  pki: KubePKI;
  etcdURL: string;
  apiservers: Apiserver[];
  admin: UserCert;
  /** Kubeconfig of a certificate user, a bearer token or nobody, optionally impersonating (server taken from --server at each call). */
  kubeconfig(name: string, cred: { cert: UserCert } | { token: string } | { anonymous: true }, impersonate?: Impersonation): string;
  stop(): Promise<void>;
}

export interface Impersonation {
  as: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface ApiserverSpec {
  name: string;
  version: KubeVersion;
  /** Extra flags (e.g. feature gates). */
  args?: string[];
  /** Kubernetes' own peer proxy: --peer-ca-file and --peer-advertise-ip/-port (the gate goes in args). */
  inTreePeerProxy?: boolean;
  /** Serve what the release serves by default (no RUNTIME_CONFIG), as in a real rolling upgrade. */
  releaseDefaults?: boolean;
}

async function startEtcd(dir: string): Promise<{ proc: Proc; url: string }> {
  const [client, peer] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${client}`;
  const proc = startProcess('etcd', binary('etcd'), [
    '--name=mvproxy-test',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=${url}`,
    `--advertise-client-urls=${url}`,
    `--listen-peer-urls=http://127.0.0.1:${peer}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
    `--initial-cluster=mvproxy-test=http://127.0.0.1:${peer}`,
    // Test data only: fsync costs seconds per apiserver start on shared disks.
    '--unsafe-no-fsync',
    '--log-level=warn',
  ], dir);
  await waitFor(() => `etcd ${url}/health`, async () => (await fetch(`${url}/health`).then((r) => r.ok).catch(() => false)), 20_000, proc);
  return { proc, url };
}

function apiserverArgs(pki: KubePKI, etcdURL: string, port: number, version: KubeVersion, auditLog: string, extra: string[], releaseDefaults = false): string[] {
  const runtimeConfig = releaseDefaults ? undefined : RUNTIME_CONFIG[version];
  return [
    `--audit-policy-file=${join(pki.dir, 'audit-policy.yaml')}`,
    `--audit-log-path=${auditLog}`,
    '--audit-log-mode=blocking',
    `--etcd-servers=${etcdURL}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${port}`,
    '--advertise-address=127.0.0.1',
    // Both members advertise 127.0.0.1: the endpoints reconciler would fight over the kubernetes Service's port.
    '--endpoint-reconciler-type=none',
    `--tls-cert-file=${pki.apiserverCert}`,
    `--tls-private-key-file=${pki.apiserverKey}`,
    `--client-ca-file=${pki.caFile}`,
    `--token-auth-file=${pki.tokenAuthFile}`,
    '--authorization-mode=Node,RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${pki.serviceAccountPub}`,
    `--service-account-signing-key-file=${pki.serviceAccountKey}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    // The front-proxy trust kubeadm sets up; mvproxy presents front-proxy-client like the aggregator.
    `--requestheader-client-ca-file=${pki.frontProxyCAFile}`,
    '--requestheader-allowed-names=front-proxy-client',
    '--requestheader-username-headers=X-Remote-User',
    '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    // A client certificate's UID (kube 1.33+) reaches the apiserver through mvproxy in this header (identity-certs.test.ts).
    '--requestheader-uid-headers=X-Remote-Uid',
    `--proxy-client-cert-file=${pki.proxyClientCert}`,
    `--proxy-client-key-file=${pki.proxyClientKey}`,
    `--cert-dir=${join(pki.dir, 'cert-dir')}`,
    // Pod streams (exec, attach, port-forward, logs) go to the fake kubelet (support/kubelet.ts) at
    // the address and port its Node reports, verified against the cluster CA, as kubeadm sets up.
    `--kubelet-client-certificate=${pki.kubeletClientCert}`,
    `--kubelet-client-key=${pki.kubeletClientKey}`,
    `--kubelet-certificate-authority=${pki.caFile}`,
    '--kubelet-preferred-address-types=InternalIP',
    '--profiling=false',
    ...(runtimeConfig ? [`--runtime-config=${runtimeConfig}`] : []),
    ...extra,
  ];
}

/**
 * Runs bin under a hostname of its own (a UTS namespace, `unshare -u`; needs root): kube-apiserver
 * derives its identity Lease name from the hostname, so two on one machine would share one identity
 * and never see each other as peers (the in-tree peer proxy then has no peer). On separate hosts,
 * as in production, they differ anyway. unshare and sh exec, so the PID is the apiserver's.
 */
function ownHostname(hostname: string, bin: string): [string, string[]] {
  return process.getuid?.() === 0 && existsSync('/usr/bin/unshare') ? ['/usr/bin/unshare', ['-u', 'sh', '-c', 'hostname "$0" && exec "$@"', hostname, bin]] : [bin, []];
}

export async function startControlPlane(specs: ApiserverSpec[] = [{ name: 'kube-old', version: OLD }, { name: 'kube-new', version: NEW }]): Promise<KubeControlPlane> {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-kube-'));
  const procs: Proc[] = [];
  try {
    const pki = await createKubePKI(join(dir, 'pki'));
    const admin = await pki.user('kubernetes-admin', ['system:masters']);
    const etcd = await startEtcd(dir);
    procs.push(etcd.proc);
    const ca = readFileSync(pki.caFile, 'utf8');
    writeFileSync(join(pki.dir, 'audit-policy.yaml'), 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n');
    const apiservers: Apiserver[] = [];
    for (const spec of specs) {
      const port = await freePort();
      const url = `https://127.0.0.1:${port}`;
      const auditLog = join(dir, `audit-${spec.name}.log`);
      const a: Apiserver = {
        name: spec.name,
        version: spec.version,
        port,
        url,
        proc: undefined as unknown as Proc,
        audit: () => (existsSync(auditLog) ? readFileSync(auditLog, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as AuditEvent) : []),
        async restart(version = a.version, how: RestartHow = {}) {
          const t = Date.now();
          if (how.kill) a.proc.child.kill('SIGKILL');
          await a.proc.stop(20_000);
          how.exited?.();
          const rest = (how.downMs ?? 0) - (Date.now() - t);
          if (rest > 0) await new Promise((r) => setTimeout(r, rest));
          a.version = version;
          await launch();
        },
        async stop() {
          await a.proc.stop(20_000);
        },
      };
      const launch = async () => {
        const inTree = spec.inTreePeerProxy ? [`--peer-ca-file=${pki.caFile}`, '--peer-advertise-ip=127.0.0.1', `--peer-advertise-port=${port}`] : [];
        const [bin, prefix] = ownHostname(spec.name, binary(`kube-apiserver-${a.version}`));
        a.proc = startProcess(`${spec.name}-${a.version}`, bin, [...prefix, ...apiserverArgs(pki, etcd.url, port, a.version, auditLog, [...inTree, ...(spec.args ?? [])], spec.releaseDefaults)], dir);
        procs.push(a.proc);
        await waitFor(() => `${a.name} ${url}/readyz`, async () => (await httpsGet(`${url}/readyz`, { ca, cert: admin.cert, key: admin.key })).status === 200, 120_000, a.proc);
      };
      await launch();
      apiservers.push(a);
    }
    const plane: KubeControlPlane = {
      dir,
      pki,
      etcdURL: etcd.url,
      apiservers,
      admin,
      kubeconfig(name, cred, impersonate) {
        const file = join(dir, `kubeconfig-${name}`);
        const user = {
          ...('cert' in cred ? { 'client-certificate': cred.cert.certFile, 'client-key': cred.cert.keyFile } : 'token' in cred ? { token: cred.token } : {}),
          ...(impersonate ? { as: impersonate.as, 'as-groups': impersonate.groups, 'as-user-extra': impersonate.extra } : {}),
        };
        writeFileSync(file, JSON.stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'c', cluster: { server: apiservers[0]!.url, 'certificate-authority': pki.caFile } }],
          users: [{ name, user }],
          contexts: [{ name: 'c', context: { cluster: 'c', user: name } }],
          'current-context': 'c',
        }), { mode: 0o600 });
        return file;
      },
      async stop() {
        await Promise.all([...procs].reverse().filter((p) => p.name !== 'etcd').map((p) => p.stop(10_000)));
        await etcd.proc.stop(5_000);
        if (!process.env.MVPROXY_KUBE_KEEP) rmSync(dir, { recursive: true, force: true });
      },
    };
    // mvproxy's own identity may read what it needs (deploy/rbac.yaml, applied as an operator would).
    await kubectlAs(plane.kubeconfig('admin', { cert: admin }), apiservers[0]!.url, ['apply', '-f', join(ROOT, 'deploy', 'rbac.yaml')]);
    return plane;
  } catch (e) {
    await Promise.all(procs.map((p) => p.stop(2_000)));
    if (!process.env.MVPROXY_KUBE_KEEP) rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/** The newest kubectl the machine has (1.33), or the one asked for. */
export const KUBECTL = kubectlPath(Number(process.env.MVPROXY_KUBECTL_MINOR ?? 33));

/** Runs kubectl with a kubeconfig against server; rejects with stdout, stderr and exitCode on a non-zero exit. */
export function kubectlAs(kubeconfig: string, server: string, args: string[], opts: { input?: string; bin?: string; timeoutMs?: number } = {}): Promise<{ stdout: string; stderr: string }> {
  const home = mkdtempSync(join(tmpdir(), 'mvproxy-kubectl-'));
  return new Promise((resolve, reject) => {
    const child = execFile(opts.bin ?? KUBECTL, [`--kubeconfig=${kubeconfig}`, `--server=${server}`, `--cache-dir=${join(home, 'cache')}`, ...args], { timeout: opts.timeoutMs ?? 60_000, env: { ...process.env, HOME: home } }, (err, stdout, stderr) => {
      rmSync(home, { recursive: true, force: true });
      if (err) reject(Object.assign(new Error(`kubectl ${args.join(' ')}: ${err.message}\n${stderr}`), { stdout, stderr, exitCode: typeof err.code === 'number' ? err.code : null }));
      else resolve({ stdout, stderr });
    });
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}
