// The rolling upgrade KEP-4020 exists for, run for real (issue 14 §2): two kube-apiservers at
// v1.34.4 on one etcd, a client-go controller per apiserver (test/kube/go/cmd/upgrade-client:
// informers plus writes on ConfigMaps, which every release serves, and ClusterTrustBundles
// certificates.k8s.io/v1, which only v1.37 serves) and kubectl watches of both; then apiserver a is
// replaced by v1.37.2 (stopped, the new binary started on the same port and etcd), and later b.
// Run with clients through an mvproxy beside each apiserver, or straight to the apiservers.
//
// What counts (the scenario knows what existed when):
// - a spurious 404: a GET or update of an object that exists (the client created it, a ConfigMap
//   seed, or a ClusterTrustBundle seed once the scenario created it after a's upgrade);
// - an outage window: from a client's first failed request (5xx, no answer, or a spurious 404) to
//   its next success, per resource (the longest is "time to recover");
// - a 503 or no answer outside its documented window: the window is while the apiserver beside the
//   client's server is down, plus WINDOW_GRACE_MS after it is ready again.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binary, KUBECTL, NEW, OLD, startControlPlane, type KubeControlPlane } from '../support/control-plane';
import { KubeClient } from '../support/client';
import { startMvproxies, type Frontend, type Member } from '../support/mvproxy';
import { startProcess, type Proc } from '../support/processes';

export type Mode = 'mvproxy' | 'direct';

/** After an apiserver is ready again, its mvproxy's peers see its new discovery within this (tests run --discovery-refresh-interval=2s, --peer-probe-interval=1s). */
export const WINDOW_GRACE_MS = 3000;

export interface ScenarioOptions {
  mode: Mode;
  frontend?: Frontend;
  /** Both at v1.34.4, before the first upgrade. */
  steadyMs?: number;
  /** a at v1.37.2, b at v1.34.4. */
  mixedMs?: number;
  /** Both at v1.37.2. */
  afterMs?: number;
  log?: (line: string) => void;
}

export interface ClientCounts {
  client: string;
  /** The server it talked to: "mvproxy beside kube-a" or "kube-a directly". */
  via: string;
  requests: number;
  byCode: Record<string, number>;
  spurious404: number;
  /** Informer list/watch failures (client-go retries each). */
  watchErrors: number;
  /** kubectl get -w processes that ended and were started again. */
  kubectlWatchRestarts: number;
  /** Longest outage for this client, ms (time to recover). */
  longestOutageMs: number;
  /** 503s and requests without an answer outside the documented window. */
  outsideWindow: number;
  /** The first spurious 404s and failures while mixed, as the client logged them (ms since start): for a failure's report. */
  samples: string[];
  /** ClusterTrustBundle (v1.37-only) requests while the apiservers ran mixed versions: answered 2xx / not. */
  newerOnlyWhileMixed: { ok: number; failed: number };
}

export interface ScenarioResult {
  mode: Mode;
  frontend?: Frontend;
  clients: ClientCounts[];
  /** ms since start: each apiserver's stop and ready again, the ClusterTrustBundle seeds. */
  timeline: { event: string; atMs: number }[];
}

interface ReqLine {
  t: number;
  ev: 'req';
  verb: 'create' | 'get' | 'update';
  res: 'configmaps' | 'clustertrustbundles';
  obj: string;
  code: number;
  own: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SEEDS = 3;

/** kubectl get -w, started again whenever it ends, until stop(). */
function kubectlWatchLoop(kubeconfig: string, server: string, args: string[]): { restarts(): number; stop(): void } {
  const home = mkdtempSync(join(tmpdir(), 'mvproxy-kubectl-'));
  let child: ChildProcess | undefined;
  let starts = 0;
  let stopped = false;
  const start = () => {
    if (stopped) return;
    starts++;
    child = spawn(KUBECTL, [`--kubeconfig=${kubeconfig}`, `--server=${server}`, `--cache-dir=${join(home, 'cache')}`, 'get', ...args, '-w', '-o', 'name'], { stdio: 'ignore', env: { ...process.env, HOME: home } });
    child.once('exit', () => void setTimeout(start, 500));
  };
  start();
  return {
    restarts: () => starts - 1,
    stop() {
      stopped = true;
      child?.kill('SIGKILL');
      rmSync(home, { recursive: true, force: true });
    },
  };
}

export async function runUpgradeScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => undefined);
  const steadyMs = o.steadyMs ?? 5000;
  const mixedMs = o.mixedMs ?? 15_000;
  const afterMs = o.afterMs ?? 8000;
  const plane: KubeControlPlane = await startControlPlane([
    { name: 'kube-a', version: OLD, releaseDefaults: true },
    { name: 'kube-b', version: OLD, releaseDefaults: true },
  ]);
  let members: Member[] = [];
  const clients: Proc[] = [];
  const watches: ReturnType<typeof kubectlWatchLoop>[][] = [];
  try {
    if (o.mode === 'mvproxy') members = await startMvproxies(plane, { frontend: o.frontend ?? 'node' });
    const admin = new KubeClient(plane.apiservers[0]!.url, plane.pki.caFile, { cert: plane.admin });
    await admin.json('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'upgrade' } } });
    for (let k = 0; k < SEEDS; k++) await admin.json('POST', '/api/v1/namespaces/upgrade/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `seed-cm-${k}` } } });
    const kubeconfig = plane.kubeconfig('admin', { cert: plane.admin });
    const servers = plane.apiservers.map((a, i) => (o.mode === 'mvproxy' ? members[i]!.url : a.url));
    const via = plane.apiservers.map((a) => (o.mode === 'mvproxy' ? `mvproxy beside ${a.name}` : `${a.name} directly`));

    const t0 = Date.now();
    const timeline: ScenarioResult['timeline'] = [];
    const mark = (event: string) => {
      timeline.push({ event, atMs: Date.now() - t0 });
      log(`  ${((Date.now() - t0) / 1000).toFixed(1)} s  ${event}`);
    };
    for (const [i, server] of servers.entries()) {
      clients.push(startProcess(`upgrade-client-${i}`, binary('upgrade-client'), ['-kubeconfig', kubeconfig, '-server', server, '-name', `c${i}`, '-trust-bundle', plane.pki.caFile, '-seeds', String(SEEDS)], plane.dir));
      watches.push([
        kubectlWatchLoop(kubeconfig, server, ['configmaps', '-n', 'upgrade']),
        kubectlWatchLoop(kubeconfig, server, ['clustertrustbundles.v1.certificates.k8s.io']),
      ]);
    }
    mark('clients started (both apiservers v1.34.4)');
    await sleep(steadyMs);
    const down: [number, number][] = [];
    for (const [i, a] of plane.apiservers.entries()) {
      const t = Date.now();
      mark(`${a.name}: stopping v1.34.4`);
      await a.restart(NEW);
      down[i] = [t, Date.now()];
      mark(`${a.name}: v1.37.2 ready`);
      if (i === 0) {
        const ctb = new KubeClient(a.url, plane.pki.caFile, { cert: plane.admin });
        for (let k = 0; k < SEEDS; k++) await ctb.json('POST', '/apis/certificates.k8s.io/v1/clustertrustbundles', { body: { apiVersion: 'certificates.k8s.io/v1', kind: 'ClusterTrustBundle', metadata: { name: `seed-ctb-${k}` }, spec: { trustBundle: readFileSync(plane.pki.caFile, 'utf8') } } });
        mark('ClusterTrustBundle seeds created (through kube-a)');
        await sleep(mixedMs);
      }
    }
    await sleep(afterMs);
    mark('stopping the clients');
    await Promise.all(clients.map((c) => c.stop(5000)));
    for (const w of watches.flat()) w.stop();
    const seedsAt = t0 + timeline.find((e) => e.event.startsWith('ClusterTrustBundle seeds'))!.atMs;
    const bStops = down[1]![0];
    const aReady = down[0]![1];

    const counts: ClientCounts[] = clients.map((c, i) => {
      const lines = c.log().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as ReqLine | { t: number; ev: 'watch-error' | 'done' });
      const reqs = lines.filter((l): l is ReqLine => l.ev === 'req');
      const byCode: Record<string, number> = {};
      let spurious404 = 0;
      let outsideWindow = 0;
      const [dStart, dEnd] = down[i]!;
      const inWindow = (t: number) => t >= dStart && t <= dEnd + WINDOW_GRACE_MS;
      const exists = (r: ReqLine) => r.verb !== 'create' && (r.own || r.obj.startsWith('seed-cm-') || (r.obj.startsWith('seed-ctb-') && r.t > seedsAt));
      // Before any apiserver serves ClusterTrustBundles, their 404 is the truth, not an outage.
      const expected404 = (r: ReqLine) => r.code === 404 && r.res === 'clustertrustbundles' && r.t < aReady && !exists(r);
      const failed = (r: ReqLine) => r.code === 0 || r.code >= 500 || (r.code === 404 && exists(r)) || (r.code === 404 && r.res === 'clustertrustbundles' && !expected404(r) && r.verb === 'create');
      let longest = 0;
      for (const res of ['configmaps', 'clustertrustbundles'] as const) {
        let since: number | undefined;
        for (const r of reqs.filter((x) => x.res === res)) {
          if (failed(r)) since ??= r.t;
          else if (r.code >= 200 && r.code < 300 && since !== undefined) {
            longest = Math.max(longest, r.t - since);
            since = undefined;
          }
        }
      }
      for (const r of reqs) {
        byCode[r.code === 0 ? 'no answer' : String(r.code)] = (byCode[r.code === 0 ? 'no answer' : String(r.code)] ?? 0) + 1;
        if (r.code === 404 && exists(r)) spurious404++;
        if ((r.code === 503 || r.code === 0) && !inWindow(r.t)) outsideWindow++;
      }
      const mixed = reqs.filter((r) => r.res === 'clustertrustbundles' && r.t > seedsAt && r.t < bStops);
      const samples = reqs.filter((r) => (r.code === 404 && exists(r)) || ((r.code === 503 || r.code === 0) && !inWindow(r.t)) || (mixed.includes(r) && (r.code < 200 || r.code >= 300))).slice(0, 8).map((r) => `${((r.t - t0) / 1000).toFixed(2)} s ${r.verb} ${r.res}/${r.obj} ${r.code}${r.own ? ' (own)' : ''}`);
      return {
        samples,
        client: `c${i}`,
        newerOnlyWhileMixed: { ok: mixed.filter((r) => r.code >= 200 && r.code < 300).length, failed: mixed.filter((r) => r.code < 200 || r.code >= 300).length },
        via: via[i]!,
        requests: reqs.length,
        byCode,
        spurious404,
        watchErrors: lines.filter((l) => l.ev === 'watch-error').length,
        kubectlWatchRestarts: watches[i]!.reduce((s, w) => s + w.restarts(), 0),
        longestOutageMs: longest,
        outsideWindow,
      };
    });
    return { mode: o.mode, ...(o.mode === 'mvproxy' ? { frontend: o.frontend ?? 'node' } : {}), clients: counts, timeline };
  } finally {
    for (const w of watches.flat()) w.stop();
    await Promise.all(clients.map((c) => c.stop(2000)));
    await Promise.all(members.map((m) => m.stop()));
    await plane.stop();
  }
}

/** The side-by-side table: one row per client and mode. */
export function upgradeTable(results: ScenarioResult[]): string {
  const codes = [...new Set(results.flatMap((r) => r.clients.flatMap((c) => Object.keys(c.byCode))))].sort();
  const L = [
    `| clients through | client | requests | ${codes.map((c) => `${c}`).join(' | ')} | spurious 404s | v1.37-only kind while mixed: ok / failed | informer watch errors | kubectl watch restarts | longest outage s | 503/no answer outside window |`,
    `|---|---|---:|${codes.map(() => '---:').join('|')}|---:|---:|---:|---:|---:|---:|`,
  ];
  for (const r of results) for (const c of r.clients) L.push(`| ${c.via} | ${c.client} | ${c.requests} | ${codes.map((k) => c.byCode[k] ?? 0).join(' | ')} | **${c.spurious404}** | ${c.newerOnlyWhileMixed.ok} / ${c.newerOnlyWhileMixed.failed} | ${c.watchErrors} | ${c.kubectlWatchRestarts} | ${(c.longestOutageMs / 1000).toFixed(1)} | ${c.outsideWindow} |`);
  return L.join('\n');
}
