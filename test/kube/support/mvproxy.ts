// One mvproxy beside each real apiserver, run as the real CLI (tsx), peered over mutual TLS with the
// kubeadm-style PKI of the plane. The uWS front end runs on the glibc 2.41 Node of
// scripts/node-glibc.sh when this machine's glibc cannot load it (as npm test's lane 2).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../support/child-daemon';
import type { Apiserver, KubeControlPlane } from './control-plane';
import { freePort, httpsGet, startProcess, waitFor, type Proc } from './processes';

export type Frontend = 'node' | 'uws';

export interface Member {
  name: string;
  /** The client listener, https://127.0.0.1:port. */
  url: string;
  metricsURL: string;
  peerPort: number;
  proc: Proc;
  stop(): Promise<void>;
  /**
   * As a kubelet restarts a static pod: SIGTERM, and the same command started again the moment the
   * process exited (same ports); resolves once it listens. `proc` is the new process then.
   */
  restart?(): Promise<{ exitedMs: number; listeningMs: number }>;
}

export interface MvproxyOptions {
  frontend: Frontend;
  /**
   * Per member (by apiserver index): another front end than `frontend`, flags of its own, and a
   * pause before it starts (members start in order: its peers run without it meanwhile).
   */
  member?: (index: number) => { frontend?: Frontend; extraArgs?: string[]; startAfterMs?: number };
  /** Told of each member as soon as it listens (before the others start, and before discovery is merged). */
  onStarted?: (m: Member, index: number) => void;
  peerDiscovery?: 'static' | 'lease';
  extraArgs?: string[];
  /**
   * Start each member from a configuration file instead of flags (the deploy/config.yaml test): it
   * gets this member's node-specific values and returns the file. Only --secure-port is still given
   * as a flag (it may change on a retry) and --frontend is the file's.
   */
  configFile?: (m: { index: number; id: string; ports: Ports; apiserver: Apiserver; peers: { id: string; address: string }[] }) => string;
  /**
   * How each member runs: the node arguments before mvproxy's flags (default: tsx on src/main.ts)
   * and environment over NODE_OPTIONS=''. bench/rate.ts runs the compiled build with the image's
   * environment, as the saturation bench does.
   */
  command?: { entry: string[]; env?: NodeJS.ProcessEnv };
}

interface Ports {
  client: number;
  peer: number;
  metrics: number;
}

let glibcNode: string | null | undefined;
/** The Node that loads uWS here (this one on glibc >= 2.38), or null with the reason logged once. */
export function uwsNode(): string | null {
  if (glibcNode !== undefined) return glibcNode;
  const glibc = execFileSync('ldd', ['--version'], { encoding: 'utf8' }).split('\n')[0]!.match(/(\d+\.\d+)$/)?.[1] ?? '0';
  const [maj, min] = glibc.split('.').map(Number) as [number, number];
  if (maj > 2 || (maj === 2 && min >= 38)) return (glibcNode = process.execPath);
  try {
    glibcNode = execFileSync(join(ROOT, 'scripts', 'node-glibc.sh'), { encoding: 'utf8' }).trim() || null;
  } catch {
    glibcNode = null;
  }
  return glibcNode;
}

export async function startMvproxies(plane: KubeControlPlane, o: MvproxyOptions): Promise<Member[]> {
  const nodeFor = (f: Frontend) => {
    const n = f === 'uws' ? uwsNode() : process.execPath;
    if (!n) throw new Error('no Node that loads uWebSockets.js here (scripts/node-glibc.sh failed)');
    return n;
  };
  nodeFor(o.frontend);
  const ports = await Promise.all(plane.apiservers.map(async () => ({ client: await freePort(), peer: await freePort(), metrics: await freePort() })));
  const ids = plane.apiservers.map((a) => `mvproxy-${a.name}`);
  const pki = plane.pki;
  const members: Member[] = [];
  try {
    for (const [i, a] of plane.apiservers.entries()) {
      const p = ports[i]!;
      const own = o.member?.(i) ?? {};
      if (own.startAfterMs) await new Promise((r) => setTimeout(r, own.startAfterMs));
      const frontend = own.frontend ?? o.frontend;
      const node = nodeFor(frontend);
      const peers = o.peerDiscovery === 'lease' ? ['--peer-discovery=lease', '--identity-lease-duration-seconds=10'] : ids.flatMap((id, j) => (j === i ? [] : [`--static-peers=${id}=127.0.0.1:${ports[j]!.peer}`]));
      const fromFile = o.configFile?.({ index: i, id: ids[i]!, ports: p, apiserver: a, peers: ids.flatMap((id, j) => (j === i ? [] : [{ id, address: `127.0.0.1:${ports[j]!.peer}` }])) });
      const entry = o.command?.entry ?? ['--import', 'tsx', join(ROOT, 'src', 'main.ts')];
      const args = fromFile !== undefined ? [...entry, `--config=${fromFile}`, `--secure-port=${p.client}`, ...(o.extraArgs ?? [])] : [
        ...entry,
        `--frontend=${frontend}`,
        `--server-id=${ids[i]}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${p.client}`,
        `--tls-cert-file=${pki.apiserverCert}`,
        `--tls-private-key-file=${pki.apiserverKey}`,
        `--client-ca-file=${pki.caFile}`,
        '--peer-bind-address=127.0.0.1',
        `--peer-port=${p.peer}`,
        '--advertise-address=127.0.0.1',
        `--local-apiserver=${a.url}`,
        `--local-apiserver-ca-file=${pki.caFile}`,
        `--local-apiserver-token-file=${pki.mvproxyTokenFile}`,
        `--peer-ca-file=${pki.caFile}`,
        `--proxy-client-cert-file=${pki.proxyClientCert}`,
        `--proxy-client-key-file=${pki.proxyClientKey}`,
        `--requestheader-client-ca-file=${pki.frontProxyCAFile}`,
        '--requestheader-allowed-names=front-proxy-client',
        '--requestheader-uid-headers=X-Remote-Uid', // as the apiservers (control-plane.ts)
        `--metrics-bind-address=127.0.0.1:${p.metrics}`,
        // Discovery changes (a CRD, a restarted peer) show within seconds in tests.
        '--discovery-refresh-interval=2s',
        '--peer-probe-interval=1s',
        '--shutdown-drain-timeout=2s',
        ...peers,
        ...(o.extraArgs ?? []),
        ...(own.extraArgs ?? []),
      ];
      // uWS binds without SO_REUSEADDR: a free port that a closed connection left in TIME_WAIT
      // cannot be taken (one CI run in ten); then the member starts again on another client port.
      for (let attempt = 1; ; attempt++) {
        const proc = startProcess(`${ids[i]}-${frontend}`, node, args, plane.dir, { NODE_OPTIONS: '', ...o.command?.env });
        const member: Member = {
          name: ids[i]!,
          url: `https://127.0.0.1:${p.client}`,
          metricsURL: `http://127.0.0.1:${p.metrics}`,
          peerPort: p.peer,
          proc,
          stop: async () => void (await member.proc.stop(10_000)),
          async restart() {
            const t = Date.now();
            await member.proc.stop(30_000);
            const exitedMs = Date.now() - t;
            const next = startProcess(`${ids[i]}-${frontend}`, node, args, plane.dir, { NODE_OPTIONS: '', ...o.command?.env });
            member.proc = next;
            await waitFor(() => `${ids[i]} started again`, async () => /"msg":"mvproxy started"/.test(next.log()), 30_000, next);
            return { exitedMs, listeningMs: Date.now() - t - exitedMs };
          },
        };
        try {
          await waitFor(() => `${ids[i]} started`, async () => /"msg":"mvproxy started"/.test(proc.log()), 30_000, proc);
          members.push(member);
          o.onStarted?.(member, i);
          break;
        } catch (e) {
          await proc.stop(2000);
          if (attempt >= 3 || !/could not listen on 127\.0\.0\.1:\d+/.test(proc.log())) throw e;
          p.client = await freePort();
          args[args.findIndex((x) => x.startsWith('--secure-port='))] = `--secure-port=${p.client}`;
        }
      }
    }
    await waitMerged(members);
    return members;
  } catch (e) {
    await Promise.all(members.map((m) => m.stop()));
    throw e;
  }
}

/**
 * Ready means: every member has published a discovery snapshot merged from all members (its log
 * says so at the default verbosity); before that a peer-only kind would be the local 404. When
 * the members serve the same APIs (one release on both) the merged view does not change and no
 * snapshot follows: then every peer's discovery fetched is the signal.
 */
export async function waitMerged(members: Member[]): Promise<void> {
  for (const m of members) {
    const others = members.filter((x) => x !== m).map((x) => x.name);
    await waitFor(() => `${m.name} merged the discovery of all ${members.length} members`, async () => {
      const log = m.proc.log();
      return new RegExp(`"msg":"discovery snapshot published".*"servers":${members.length},`).test(log) || others.every((id) => log.includes(`"msg":"peer discovery fetched","peer":"${id}"`));
    }, 30_000, m.proc);
  }
}

/** GET through a member as the plane's admin. */
export function adminGet(plane: KubeControlPlane, base: string, path: string, headers: Record<string, string> = {}) {
  return httpsGet(base + path, { ca: readFileSync(plane.pki.caFile, 'utf8'), cert: plane.admin.cert, key: plane.admin.key }, headers);
}
