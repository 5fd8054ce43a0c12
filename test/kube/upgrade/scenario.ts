// The rolling upgrade KEP-4020 exists for, run for real (issue 14 §2, issue 30 §5): two
// kube-apiservers at v1.34.4 on one etcd, a controller-manager-like client per node
// (test/kube/go/cmd/upgrade-client: leader election on a Lease, informers plus writes on ConfigMaps,
// which every release serves, and ClusterTrustBundles certificates.k8s.io/v1, which only v1.37
// serves) and kubectl watches of both kinds per node; then apiserver a is replaced by v1.37.2
// (stopped, the new binary started on the same port and etcd), and later b. Each node's clients talk
// to their own node's server: an mvproxy beside its apiserver (with --local-failover, the default,
// or without), or the apiserver directly, which is what the in-tree proxy offers: it lives inside
// the apiserver that restarts. The apiserver is stopped gracefully (SIGTERM), killed (SIGKILL), or
// stopped and kept down for 60 s.
//
// What counts (the scenario knows what existed when):
// - a spurious 404: a GET or update of an object that exists (the client created it, a ConfigMap
//   seed, or a ClusterTrustBundle seed once the scenario created it after a's upgrade);
// - a failed request: no answer, a 5xx, a 429, a 409 (every create names a new object: a 409 means
//   it ran before), a spurious 404, or a 404 for a create of the v1.37-only kind once a serves it;
// - an outage (non-watch requests, per resource): from the start of a request that failed to the
//   answer of the next that succeeded, or a successful request's own duration when longer;
// - a 503 or no answer outside its documented window: the window is while the apiserver beside the
//   client's server is down, plus WINDOW_GRACE_MS after it is ready again;
// - a re-watch gap: from a watch the server ended (client-go's result channel closed) to the head
//   of the next watch of that resource (client-go re-watches from its last resourceVersion);
// - a request run twice: one Audit-ID (each HTTP request of the client has its own) in more than
//   one ResponseComplete audit event of a create, update, patch or delete that ran (2xx, or 409),
//   over both apiservers, plus creates answered 409;
// - failed over to a peer: mvproxy_local_failover_requests_total of the client's mvproxy (every
//   client of that node: informers and kubectl too).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binary, KUBECTL, NEW, OLD, startControlPlane, type KubeControlPlane } from '../support/control-plane';
import { KubeClient } from '../support/client';
import { startMvproxies, type Frontend, type Member } from '../support/mvproxy';
import { startProcess, type Proc } from '../support/processes';
import { startRoundRobin, type RoundRobin } from '../support/round-robin';
import { errorLines, startControllers, type Controllers } from '../support/controllers';
import { pcr, stubCSR } from '../controllers/scenario';
import { PROBE_INTERVAL_MS } from '../../../src/snapshot/local-apiserver';

export type Mode = 'mvproxy' | 'direct' | 'lb';
/**
 * How an apiserver is taken down for its upgrade: SIGTERM with kube-apiserver's shutdown flags at
 * their defaults (as kubeadm leaves them), SIGTERM with DELAYED_SHUTDOWN, SIGKILL, or SIGTERM and
 * the new release started 60 s later. A stop still running after 20 s is ended with SIGKILL (a
 * kubelet ends a static pod after its grace period).
 */
export type Stop = 'graceful' | 'delayed' | 'sigkill' | 'down60' | 'proxy-restart';
export const STOP_LABEL: Record<Stop, string> = { graceful: 'graceful stop (SIGTERM)', delayed: 'SIGTERM, shutdown delay 5 s + retry-after', sigkill: 'SIGKILL', down60: 'stopped for 60 s', 'proxy-restart': 'no apiserver stop: the mvproxy beside kube-a restarted (SIGTERM, then started again, as a kubelet restarts a static pod)' };
/** kube-apiserver keeps serving 5 s after SIGTERM with /readyz failing, then answers 429 "shutting down" while it drains instead of closing its listener. */
const DELAYED_SHUTDOWN = ['--shutdown-delay-duration=5s', '--shutdown-send-retry-after=true'];

/** After an apiserver is ready again, its mvproxy's peers see its new discovery within this (tests run --discovery-refresh-interval=2s, --peer-probe-interval=1s). */
export const WINDOW_GRACE_MS = 3000;
/** The writer's client-go timeout (upgrade-client): a request that failed after this long waited for it. */
const CLIENT_TIMEOUT_MS = 5000;
const DOWN_MS = 60_000;

export interface ScenarioOptions {
  mode: Mode;
  frontend?: Frontend;
  /** mvproxy --local-failover (default true, as mvproxy's default). */
  localFailover?: boolean;
  /** How kube-a and kube-b are stopped: one for both, or one each. */
  stop?: Stop | [Stop, Stop];
  /** Both at v1.34.4, before the first upgrade. */
  steadyMs?: number;
  /** a at v1.37.2, b at v1.34.4. */
  mixedMs?: number;
  /** Both at v1.37.2. */
  afterMs?: number;
  log?: (line: string) => void;
  /**
   * The real kube-controller-manager and kube-scheduler v1.34.4 run on node b (the node upgraded
   * last) through its server, all along (issue 39): their leader changes, errors, and the
   * namespace controller's and garbage collector's decisions on the v1.37-only kinds while mixed.
   */
  controllers?: boolean;
}

/** What the real controllers did over a run (ScenarioOptions.controllers). */
export interface ControllerCounts {
  /** Leader Lease acquisitions beyond each controller's first (a lost lease restarts a controller-manager). */
  leaderChanges: number;
  /** "leaderelection lost" in their logs. */
  leaderLost: number;
  /** klog error lines of both. */
  errors: number;
  /** The decisions while mixed; absent when the run has no mixed phase (proxy-restart). */
  decisions?: {
    /** PodCertificateRequests left in etcd of a namespace deleted while mixed, once it was finalized (of CONTROLLER_PCRS). */
    leaked: number;
    namespaceFinalized: boolean;
    /** ConfigMaps owned by a live ClusterTrustBundle that the garbage collector deleted (of the live ones), and owned by a deleted one that it deleted. */
    wrongDeletions: number;
    rightDeletions: number;
  };
}

export interface ClientCounts {
  client: string;
  /** The server it talked to: "mvproxy beside kube-a" or "kube-a directly". */
  via: string;
  /** How its own node's apiserver was stopped. */
  stop: Stop;
  requests: number;
  byCode: Record<string, number>;
  /** Non-watch requests that failed (see the header), per kind. */
  failed: Record<Kind, number>;
  /**
   * Of the ConfigMap failures, the requests in flight on the apiserver at its SIGKILL (sent before,
   * answered after), or in the first probe interval of a graceful stop (a kept-alive connection it
   * closed as idle): they may have run, so mvproxy answers them 503 without Retry-After and sends
   * them nowhere else (a client talking to the apiserver directly gets a reset for them).
   */
  killedInFlight: number;
  spurious404: number;
  /** Requests that got no answer until the client's own 5 s timeout. */
  clientTimeouts: number;
  /** Informer list/watch failures (client-go retries each), less a 404 for the v1.37-only kind before any apiserver serves it. */
  watchErrors: number;
  /** Informer watches the server ended. */
  watchesEnded: number;
  /** Longest gap from a watch the server ended to the next watch's head, same resource, ms. */
  longestRewatchMs: number;
  /** kubectl get -w processes that ended and were started again, less "no such resource type" before any apiserver serves it. */
  kubectlWatchRestarts: number;
  /** Longest outage of non-watch requests, ms, per kind: ConfigMaps (every release serves them) and the v1.37-only ClusterTrustBundles. */
  longestOutageMs: Record<Kind, number>;
  /** 503s and requests without an answer outside the documented window. */
  outsideWindow: number;
  /** Mutating requests run by more than one apiserver, or twice (see the header). */
  runTwice: number;
  /** mvproxy_local_failover_requests_total of the client's mvproxy, by reason (undefined: no mvproxy, or --local-failover=false). */
  failedOver?: Record<string, number>;
  /** Leader election: the Lease lost (a controller-manager exits then). */
  leaderLost: number;
  /** The first spurious 404s and failures, as the client logged them (s since start): for a failure's report. */
  samples: string[];
  /** ClusterTrustBundle (v1.37-only) requests while the apiservers ran mixed versions: answered 2xx / not. */
  newerOnlyWhileMixed: { ok: number; failed: number };
}

export interface ScenarioResult {
  mode: Mode;
  frontend?: Frontend;
  localFailover?: boolean;
  /** "kube-a directly", "mvproxy (node)", "mvproxy (node), --local-failover=false". */
  label: string;
  clients: ClientCounts[];
  /** ms since start: each apiserver's stop, exit and ready again, the ClusterTrustBundle seeds. */
  timeline: { event: string; atMs: number }[];
  controllers?: ControllerCounts;
}

const KINDS = ['configmaps', 'clustertrustbundles'] as const;
type Kind = (typeof KINDS)[number];

interface ReqLine {
  t: number;
  ev: 'req';
  verb: 'create' | 'get' | 'update';
  res: Kind;
  obj: string;
  code: number;
  own: boolean;
  ms: number;
  aid: string;
  err?: string;
}
type ClientLine = ReqLine | { t: number; ev: 'watch-error' | 'watch-fail'; res: string; code: number; err: string } | { t: number; ev: 'watch-open' | 'watch-end'; res: string } | { t: number; ev: 'leader'; state: 'started' | 'lost' } | { t: number; ev: 'done' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SEEDS = 3;
const MUTATING = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
/** The apiserver ran it: a success, or a create that met the object it made before (409). A 404 of a kind it does not serve ran nothing (the notFound route asks each peer so). */
const ran = (code: number) => (code >= 200 && code < 400) || code === 409;

interface WatchExit {
  t: number;
  err: string;
}

/** kubectl get -w, started again 500 ms after it ends, until stop(); each end with its stderr's last line. */
function kubectlWatchLoop(kubeconfig: string, server: string, args: string[], env: NodeJS.ProcessEnv = {}): { exits: WatchExit[]; stop(): void } {
  const home = mkdtempSync(join(tmpdir(), 'mvproxy-kubectl-'));
  let child: ChildProcess | undefined;
  let stopped = false;
  const exits: WatchExit[] = [];
  const start = () => {
    if (stopped) return;
    child = spawn(KUBECTL, [`--kubeconfig=${kubeconfig}`, `--server=${server}`, `--cache-dir=${join(home, 'cache')}`, 'get', ...args, '-w', '-o', 'name'], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env, HOME: home } });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => void (err = (err + d.toString('utf8')).slice(-2000)));
    child.once('exit', () => {
      if (stopped) return;
      exits.push({ t: Date.now(), err: err.trim().split('\n').pop() ?? '' });
      setTimeout(start, 500);
    });
  };
  start();
  return {
    exits,
    stop() {
      stopped = true;
      child?.kill('SIGKILL');
      rmSync(home, { recursive: true, force: true });
    },
  };
}

async function failoverCounts(m: Member): Promise<Record<string, number>> {
  const text = await fetch(`${m.metricsURL}/metrics`).then((r) => r.text(), () => '');
  const out: Record<string, number> = {};
  for (const [, reason, n] of text.matchAll(/^mvproxy_local_failover_requests_total\{reason="(\w+)"\} (\d+)$/gm)) out[reason!] = Number(n);
  return out;
}

export function runLabel(o: Pick<ScenarioOptions, 'mode' | 'frontend' | 'localFailover'>): string {
  if (o.mode === 'direct') return 'apiservers directly (in-tree)';
  if (o.mode === 'lb') return 'a round-robin load balancer over both (HTTP/1.1)';
  return `mvproxy (${o.frontend ?? 'node'})${o.localFailover === false ? ', --local-failover=false' : ''}`;
}

export async function runUpgradeScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => undefined);
  const steadyMs = o.steadyMs ?? 5000;
  const mixedMs = o.mixedMs ?? 15_000;
  const afterMs = o.afterMs ?? 8000;
  const stops: [Stop, Stop] = Array.isArray(o.stop) ? o.stop : [o.stop ?? 'graceful', o.stop ?? 'graceful'];
  const failover = o.mode === 'mvproxy' ? (o.localFailover ?? true) : undefined;
  if (stops.includes('proxy-restart') && o.mode !== 'mvproxy') throw new Error('proxy-restart restarts an mvproxy: mode mvproxy only');
  const plane: KubeControlPlane = await startControlPlane(
    ['kube-a', 'kube-b'].map((name, i) => ({ name, version: OLD, releaseDefaults: true, ...(stops[i] === 'delayed' ? { args: DELAYED_SHUTDOWN } : {}) })),
  );
  let members: Member[] = [];
  const clients: Proc[] = [];
  const watches: ReturnType<typeof kubectlWatchLoop>[][] = [];
  let lb: RoundRobin | undefined;
  let ctl: Controllers | undefined;
  try {
    if (o.mode === 'mvproxy') members = await startMvproxies(plane, { frontend: o.frontend ?? 'node', extraArgs: [`--local-failover=${failover}`] });
    if (o.mode === 'lb') lb = await startRoundRobin(plane.apiservers.map((a) => a.port));
    // Through the load balancer every client speaks HTTP/1.1 (client-go's DISABLE_HTTP2), so each
    // connection, not each client, picks a release.
    const env: NodeJS.ProcessEnv = o.mode === 'lb' ? { DISABLE_HTTP2: 'true' } : {};
    const admin = new KubeClient(plane.apiservers[0]!.url, plane.pki.caFile, { cert: plane.admin });
    await admin.json('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'upgrade' } } });
    for (let k = 0; k < SEEDS; k++) await admin.json('POST', '/api/v1/namespaces/upgrade/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `seed-cm-${k}` } } });
    const kubeconfig = plane.kubeconfig('admin', { cert: plane.admin });
    const servers = plane.apiservers.map((a, i) => (o.mode === 'mvproxy' ? members[i]!.url : lb ? `https://127.0.0.1:${lb.port}` : a.url));
    const via = plane.apiservers.map((a) => (o.mode === 'mvproxy' ? `mvproxy beside ${a.name}` : lb ? `the load balancer (node ${a.name})` : `${a.name} directly`));

    const t0 = Date.now();
    const timeline: ScenarioResult['timeline'] = [];
    const mark = (event: string) => {
      timeline.push({ event, atMs: Date.now() - t0 });
      log(`  ${((Date.now() - t0) / 1000).toFixed(1)} s  ${event}`);
    };
    for (const [i, server] of servers.entries()) {
      clients.push(startProcess(`upgrade-client-${i}`, binary('upgrade-client'), ['-kubeconfig', kubeconfig, '-server', server, '-name', `c${i}`, '-trust-bundle', plane.pki.caFile, '-seeds', String(SEEDS)], plane.dir, env));
      watches.push([
        kubectlWatchLoop(kubeconfig, server, ['configmaps', '-n', 'upgrade'], env),
        kubectlWatchLoop(kubeconfig, server, ['clustertrustbundles.v1.certificates.k8s.io'], env),
      ]);
    }
    // The real controllers on node b (upgraded last: the old release on the old node), through its server.
    if (o.controllers) ctl = await startControllers(plane, servers[1]!, `upgrade-${o.mode}-${o.frontend ?? ''}-${stops.join('-')}`, env);
    mark(`clients started (both apiservers v1.34.4)${ctl ? ', the real controllers on node b' : ''}`);
    await sleep(steadyMs);
    const down: [number, number][] = [];
    /**
     * From an apiserver's SIGKILL to its exit: a request outstanding there in that time (killedInFlight)
     * may have run, or was written to a process already dying, whose kernel resets the connection
     * at its exit (CI, 599d4b4: a create sent 26 ms after the SIGKILL, reset 14 ms later, 10 ms
     * before the exit was seen). Neither mvproxy nor a client can tell it from one that ran.
     *
     * A graceful stop with kube-apiserver's defaults (no shutdown delay) closes its idle keep-alive
     * connections at once (Go's Server.Shutdown): a request written on one as it closed gets no answer.
     * The apiserver never read it, but over HTTP/1.1 nothing tells that from one that ran (RFC 9112
     * §9.3.1: no automatic retry of a write), so mvproxy answers it 503 without Retry-After; the
     * round-robin load balancer's row fails such a request too (docs/upgrade-scenario.md). CI met it
     * once (an update written 10 ms after the SIGTERM). Counted so only for the first /readyz probe
     * interval after the SIGTERM: after that mvproxy knows of the stop and a failure is its own.
     */
    const killedAt: [number, number][] = [];
    let decisions: ControllerObjects | undefined;
    for (const [i, a] of plane.apiservers.entries()) {
      const t = Date.now();
      const stop = stops[i]!;
      if (stop === 'proxy-restart') {
        // No apiserver restarts: the mvproxy beside kube-a is restarted, as a kubelet restarts its static pod.
        if (i === 0) {
          mark('mvproxy beside kube-a: SIGTERM');
          const r = await members[0]!.restart!();
          mark(`mvproxy beside kube-a: listening again (exited ${r.exitedMs} ms after its SIGTERM, listening ${r.listeningMs} ms after that)`);
          down[i] = [t, Date.now()];
          await sleep(mixedMs);
        } else down[i] = [t, t];
        continue;
      }
      mark(`${a.name}: ${stop === 'sigkill' ? 'SIGKILL to' : 'SIGTERM to'} v1.34.4${stop === 'down60' ? ', v1.37.2 started 60 s later' : ''}`);
      const killed: [number, number] = [Date.now(), Infinity];
      if (stop === 'sigkill') killedAt.push(killed);
      else if (stop === 'graceful') killedAt.push([killed[0], killed[0] + PROBE_INTERVAL_MS]);
      await a.restart(NEW, { kill: stop === 'sigkill', downMs: stop === 'down60' ? DOWN_MS : 0, exited: () => { killed[1] = Date.now(); mark(`${a.name}: v1.34.4 exited`); } });
      down[i] = [t, Date.now()];
      mark(`${a.name}: v1.37.2 ready`);
      if (i === 0) {
        const ctb = new KubeClient(a.url, plane.pki.caFile, { cert: plane.admin });
        for (let k = 0; k < SEEDS; k++) await ctb.json('POST', '/apis/certificates.k8s.io/v1/clustertrustbundles', { body: { apiVersion: 'certificates.k8s.io/v1', kind: 'ClusterTrustBundle', metadata: { name: `seed-ctb-${k}` }, spec: { trustBundle: readFileSync(plane.pki.caFile, 'utf8') } } });
        mark('ClusterTrustBundle seeds created (through kube-a)');
        if (ctl) {
          decisions = await controllerObjects(plane);
          mark('while mixed: a namespace of PodCertificateRequests deleted, two ClusterTrustBundle owners of ConfigMaps deleted (through kube-a)');
        }
        await sleep(mixedMs);
      }
    }
    await sleep(afterMs);
    // The controllers' decisions on the v1.37-only kinds, once both run v1.37.2 (a namespace left
    // Terminating while mixed is finalized now; the garbage collector maps the owners at its next
    // discovery sync, every 30 s: waited for, bounded).
    const controllers = ctl ? await controllerOutcome(plane, ctl, decisions) : undefined;
    mark('stopping the clients');
    await Promise.all(clients.map((c) => c.stop(5000)));
    await ctl?.stop();
    for (const w of watches.flat()) w.stop();
    const failedOver = failover ? await Promise.all(members.map(failoverCounts)) : undefined;
    const seeded = timeline.find((e) => e.event.startsWith('ClusterTrustBundle seeds'));
    const seedsAt = seeded ? t0 + seeded.atMs : Infinity;
    const bStops = down[1]![0];
    const aReady = down[0]![1];
    // Before any apiserver serves ClusterTrustBundles (and its peers' discovery has it), a 404 for one is the truth.
    const servedNowhere = (t: number) => t < aReady + WINDOW_GRACE_MS || t < seedsAt;
    // Mutating requests by audit ID, over both apiservers (the restarted one's log goes on in the same file).
    const runs = new Map<string, number>();
    for (const a of plane.apiservers)
      for (const e of a.audit()) if (e.stage === 'ResponseComplete' && MUTATING.has(e.verb) && ran(e.responseStatus?.code ?? 0)) runs.set(e.auditID, (runs.get(e.auditID) ?? 0) + 1);

    const counts: ClientCounts[] = clients.map((c, i) => {
      const lines = c.log().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as ClientLine);
      const reqs = lines.filter((l): l is ReqLine => l.ev === 'req');
      const doneAt = lines.find((l) => l.ev === 'done')?.t ?? Date.now();
      const byCode: Record<string, number> = {};
      const [dStart, dEnd] = down[i]!;
      const inWindow = (t: number) => t >= dStart && t <= dEnd + WINDOW_GRACE_MS;
      const exists = (r: ReqLine) => r.verb !== 'create' && (r.own || r.obj.startsWith('seed-cm-') || (r.obj.startsWith('seed-ctb-') && r.t > seedsAt));
      const spurious = (r: ReqLine) => r.code === 404 && exists(r);
      const failed = (r: ReqLine) => r.code === 0 || r.code >= 500 || r.code === 429 || r.code === 409 || spurious(r) || (r.code === 404 && r.res === 'clustertrustbundles' && r.verb === 'create' && !servedNowhere(r.t));
      // In flight while an apiserver was being killed (SIGKILL to exit; on the local route, or the peer route to it), or
      // as a graceful stop closed its idle connections (killedAt): it may have run, so mvproxy answers it 503 without
      // Retry-After and sends it nowhere else; a client talking to the apiserver directly gets a reset. What no
      // HTTP/1.1 proxy could have prevented, counted apart.
      const killedInFlight = (r: ReqLine) => (r.code === 0 || r.code >= 500) && killedAt.some(([k, exit]) => r.t - r.ms <= exit && r.t >= k);
      const longest: Record<Kind, number> = { configmaps: 0, clustertrustbundles: 0 };
      for (const res of KINDS) {
        let since: number | undefined;
        for (const r of reqs.filter((x) => x.res === res)) {
          if (failed(r)) since ??= r.t - r.ms;
          else {
            longest[res] = Math.max(longest[res], r.t - (since ?? r.t - r.ms));
            since = undefined;
          }
        }
        if (since !== undefined) longest[res] = Math.max(longest[res], doneAt - since);
      }
      for (const r of reqs) {
        const k = r.code === 0 ? 'no answer' : String(r.code);
        byCode[k] = (byCode[k] ?? 0) + 1;
      }
      // Re-watch gaps: each watch the server ended, to the next watch head of that resource.
      let longestRewatch = 0;
      const ends = lines.filter((l) => l.ev === 'watch-end');
      for (const e of ends) {
        const next = lines.find((l) => l.ev === 'watch-open' && l.res === (e as { res: string }).res && l.t >= e.t);
        longestRewatch = Math.max(longestRewatch, (next?.t ?? doneAt) - e.t);
      }
      // This client's audit IDs: "c0-w17.42" (the writer's request c0-w17, HTTP request 42), "c0.43" (leader election, informers).
      const ranTwice = [...runs].filter(([id, n]) => n > 1 && (id.startsWith(`c${i}-`) || id.startsWith(`c${i}.`))).map(([id]) => id.replace(/\.\d+$/, ''));
      const conflicts = reqs.filter((r) => r.verb === 'create' && r.code === 409 && !ranTwice.includes(r.aid)).length;
      const mixed = reqs.filter((r) => r.res === 'clustertrustbundles' && r.t > seedsAt && r.t < bStops);
      const samples = reqs.filter((r) => failed(r) || (mixed.includes(r) && (r.code < 200 || r.code >= 300))).slice(0, 8).map((r) => `${((r.t - t0) / 1000).toFixed(2)} s ${r.verb} ${r.res}/${r.obj} ${r.code}${r.own ? ' (own)' : ''} ${r.ms} ms${r.err ? ` ${r.err}` : ''}`);
      return {
        client: `c${i}`,
        via: via[i]!,
        stop: stops[i]!,
        requests: reqs.length,
        byCode,
        failed: { configmaps: reqs.filter((r) => r.res === 'configmaps' && failed(r)).length, clustertrustbundles: reqs.filter((r) => r.res === 'clustertrustbundles' && failed(r)).length },
        killedInFlight: reqs.filter((r) => killedInFlight(r)).length,
        spurious404: reqs.filter(spurious).length,
        clientTimeouts: reqs.filter((r) => r.code === 0 && (r.ms >= CLIENT_TIMEOUT_MS - 100 || /Timeout|deadline/.test(r.err ?? ''))).length,
        watchErrors: lines.filter((l) => l.ev === 'watch-error' && !(l.res === 'clustertrustbundles' && l.code === 404 && servedNowhere(l.t))).length,
        watchesEnded: ends.length,
        longestRewatchMs: longestRewatch,
        kubectlWatchRestarts: watches[i]!.reduce((s, w) => s + w.exits.filter((x) => !(/doesn't have a resource type/.test(x.err) && servedNowhere(x.t))).length, 0),
        longestOutageMs: longest,
        outsideWindow: reqs.filter((r) => (r.code === 503 || r.code === 0) && !inWindow(r.t) && !killedInFlight(r)).length,
        runTwice: ranTwice.length + conflicts,
        ...(failedOver ? { failedOver: failedOver[i]! } : {}),
        leaderLost: lines.filter((l) => l.ev === 'leader' && l.state === 'lost').length,
        samples,
        newerOnlyWhileMixed: { ok: mixed.filter((r) => r.code >= 200 && r.code < 300).length, failed: mixed.filter((r) => r.code < 200 || r.code >= 300).length },
      };
    });
    return { mode: o.mode, ...(o.mode === 'mvproxy' ? { frontend: o.frontend ?? 'node', localFailover: failover } : {}), label: runLabel(o), clients: counts, timeline, ...(controllers ? { controllers } : {}) };
  } finally {
    for (const w of watches.flat()) w.stop();
    await Promise.all(clients.map((c) => c.stop(2000)));
    await ctl?.stop();
    await Promise.all(members.map((m) => m.stop()));
    await lb?.close();
    await plane.stop();
  }
}

/** Objects of the controllers' decisions, made while mixed (controllerObjects). */
interface ControllerObjects {
  ns: string;
  owners: string[];
  dead: Set<string>;
}

/** PodCertificateRequests in the namespace deleted while mixed. */
const CONTROLLER_PCRS = 20;
const CONTROLLER_OWNERS = 6;
const CONTROLLER_DEPENDENTS = 4;
const CONTROLLER_DEAD = 2;

/** While mixed, through kube-a (v1.37.2: it serves both kinds): the namespace and the owners the controllers must act on. */
async function controllerObjects(plane: KubeControlPlane): Promise<ControllerObjects> {
  const a = new KubeClient(plane.apiservers[0]!.url, plane.pki.caFile, { cert: plane.admin });
  const ns = 'upgrade-pcr';
  await a.json('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } });
  const csr = await stubCSR();
  for (let i = 0; i < CONTROLLER_PCRS; i++) await a.json('POST', `/apis/certificates.k8s.io/v1/namespaces/${ns}/podcertificaterequests`, { body: pcr(ns, i, csr) });
  const owners: string[] = [];
  for (let o = 0; o < CONTROLLER_OWNERS; o++) {
    const ctb = await a.json<{ metadata: { name: string; uid: string } }>('POST', '/apis/certificates.k8s.io/v1/clustertrustbundles', { body: { apiVersion: 'certificates.k8s.io/v1', kind: 'ClusterTrustBundle', metadata: { name: `owner-${o}` }, spec: { trustBundle: readFileSync(plane.pki.caFile, 'utf8') } } });
    owners.push(ctb.metadata.name);
    for (let d = 0; d < CONTROLLER_DEPENDENTS; d++) {
      await a.json('POST', '/api/v1/namespaces/upgrade/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `dep-${o}-${d}`, namespace: 'upgrade', ownerReferences: [{ apiVersion: 'certificates.k8s.io/v1', kind: 'ClusterTrustBundle', name: ctb.metadata.name, uid: ctb.metadata.uid }] }, data: { owner: ctb.metadata.name } } });
    }
  }
  await a.json('DELETE', `/api/v1/namespaces/${ns}`);
  const dead = new Set(owners.slice(0, CONTROLLER_DEAD));
  for (const o of dead) await a.json('DELETE', `/apis/certificates.k8s.io/v1/clustertrustbundles/${o}`);
  return { ns, owners, dead };
}

/** What the controllers decided (ControllerCounts): waits up to 45 s for the namespace and the right deletions. */
async function controllerOutcome(plane: KubeControlPlane, ctl: Controllers, d: ControllerObjects | undefined): Promise<ControllerCounts> {
  const decisions = d ? await controllerDecisions(plane, d) : undefined;
  const logs = ctl.kcm.log() + ctl.scheduler.log();
  const acquired = (log: string) => Math.max(0, (log.match(/successfully acquired lease/g) ?? []).length - 1);
  return {
    leaderChanges: acquired(ctl.kcm.log()) + acquired(ctl.scheduler.log()),
    leaderLost: (logs.match(/leaderelection lost|leader election lost/g) ?? []).length,
    errors: errorLines(logs).length,
    ...(decisions ? { decisions } : {}),
  };
}

/** The namespace controller's and garbage collector's decisions on the objects made while mixed. */
async function controllerDecisions(plane: KubeControlPlane, d: ControllerObjects): Promise<NonNullable<ControllerCounts['decisions']>> {
  const a = new KubeClient(plane.apiservers[0]!.url, plane.pki.caFile, { cert: plane.admin });
  const tally = async () => {
    const left = (await a.json<{ items: { data?: { owner?: string } }[] }>('GET', '/api/v1/namespaces/upgrade/configmaps')).items.filter((c) => c.data?.owner);
    const live = (CONTROLLER_OWNERS - CONTROLLER_DEAD) * CONTROLLER_DEPENDENTS;
    return { right: CONTROLLER_DEAD * CONTROLLER_DEPENDENTS - left.filter((c) => d.dead.has(c.data!.owner!)).length, wrong: live - left.filter((c) => !d.dead.has(c.data!.owner!)).length };
  };
  let finalized = false;
  let t = await tally();
  for (let i = 0; i < 90 && (!finalized || t.right < CONTROLLER_DEAD * CONTROLLER_DEPENDENTS); i++) {
    finalized = (await a.get(`/api/v1/namespaces/${d.ns}`)).status === 404;
    t = await tally();
    if (!finalized || t.right < CONTROLLER_DEAD * CONTROLLER_DEPENDENTS) await sleep(500);
  }
  const leaked = ((await a.json<{ items: unknown[] }>('GET', `/apis/certificates.k8s.io/v1/namespaces/${d.ns}/podcertificaterequests`)).items ?? []).length;
  return { leaked, namespaceFinalized: finalized, wrongDeletions: t.wrong, rightDeletions: t.right };
}

const sec = (ms: number) => (ms / 1000).toFixed(1);

/** The side-by-side table: one row per run and client (node). */
export function upgradeTable(results: ScenarioResult[]): string {
  const L = [
    '| apiserver stop | clients through | client (node) | requests | failed: ConfigMaps / v1.37-only kind | of them killed in flight | longest outage s: ConfigMaps / v1.37-only kind | waited for the 5 s timeout | informer watch errors | watches ended | longest re-watch gap s | kubectl get -w restarts | failed over to a peer | leader lost | spurious 404s | 503/no answer outside window | run twice | v1.37-only kind while mixed: ok / failed |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of results)
    for (const c of r.clients) {
      const fo = c.failedOver === undefined ? '–' : String(Object.values(c.failedOver).reduce((s, n) => s + n, 0));
      L.push(`| ${STOP_LABEL[c.stop]} | ${r.label} | ${c.client} (${c.via.replace(/^mvproxy beside |(?: directly)$/g, '')}) | ${c.requests} | ${c.failed.configmaps} / ${c.failed.clustertrustbundles} | ${c.killedInFlight} | **${sec(c.longestOutageMs.configmaps)}** / ${sec(c.longestOutageMs.clustertrustbundles)} | ${c.clientTimeouts} | ${c.watchErrors} | ${c.watchesEnded} | ${sec(c.longestRewatchMs)} | ${c.kubectlWatchRestarts} | ${fo} | ${c.leaderLost} | ${c.spurious404} | ${c.outsideWindow} | ${c.runTwice} | ${c.newerOnlyWhileMixed.ok} / ${c.newerOnlyWhileMixed.failed} |`);
    }
  return L.join('\n');
}

/** The real controllers' table: one row per run that ran them (ScenarioOptions.controllers). */
export function controllersTable(results: ScenarioResult[]): string {
  const live = (CONTROLLER_OWNERS - CONTROLLER_DEAD) * CONTROLLER_DEPENDENTS;
  const L = [
    `| apiserver stop | controllers through (node b) | leader changes | leader lost | controller error lines | namespace finalized | PodCertificateRequests leaked | wrong GC deletions | right GC deletions |`,
    '|---|---|---:|---:|---:|---|---:|---:|---:|',
  ];
  for (const r of results) {
    const c = r.controllers;
    if (!c) continue;
    const x = c.decisions;
    const decided = x ? `${x.namespaceFinalized ? 'yes' : 'no'} | ${x.leaked} / ${CONTROLLER_PCRS} | ${x.wrongDeletions} / ${live} | ${x.rightDeletions} / ${CONTROLLER_DEAD * CONTROLLER_DEPENDENTS}` : '– | – | – | –';
    L.push(`| ${STOP_LABEL[r.clients[0]!.stop]} | ${r.label} | ${c.leaderChanges} | ${c.leaderLost} | ${c.errors} | ${decided} |`);
  }
  return L.join('\n');
}

/** The table, the clients' first failures and each run's timeline: what a failed assertion prints. */
export function upgradeReport(results: ScenarioResult[]): string {
  const L = [upgradeTable(results)];
  for (const r of results) {
    L.push(`${r.label}:`);
    for (const c of r.clients) L.push(`  ${c.via}: codes ${JSON.stringify(c.byCode)}${c.failedOver ? ` failed over ${JSON.stringify(c.failedOver)}` : ''}; ${c.samples.join('; ')}`);
    for (const e of r.timeline) L.push(`  ${(e.atMs / 1000).toFixed(2)} s ${e.event}`);
  }
  return L.join('\n');
}
