// npm run upgrade-scenario: the rolling upgrade (test/kube/upgrade/scenario.ts) once per way of
// stopping the apiservers (graceful; graceful with a shutdown delay and retry-after; SIGKILL; down
// for 60 s) and per way the clients reach them:
// straight to the apiservers (what the in-tree proxy offers: it lives inside the apiserver that
// restarts), through mvproxy with --local-failover=false (mvproxy before issue 30), and through
// mvproxy as shipped on both front ends. Prints each run as it goes, then the side-by-side table,
// and as its last line one JSON object with every run. A full run (no arguments, ~30 min) writes
// the table to docs/upgrade-scenario.md.
//
// The real kube-controller-manager and kube-scheduler v1.34.4 run on node b through every run
// (issue 39): their table follows the clients'. The proxy-restart stop restarts the mvproxy beside
// kube-a instead of an apiserver (mvproxy runs only).
//
//   --stops=graceful,delayed,sigkill,down60,proxy-restart   which stops (default all)
//   --runs=direct,lb,off,node,uws     which runs (default all; lb = a round-robin load balancer over
//                                     both, HTTP/1.1; off = mvproxy node --local-failover=false)
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../support/child-daemon';
import { KUBECTL } from '../support/control-plane';
import { controllersTable, runLabel, runUpgradeScenario, STOP_LABEL, upgradeReport, upgradeTable, WINDOW_GRACE_MS, type ScenarioOptions, type ScenarioResult, type Stop } from './scenario';

const RUNS: Record<string, Pick<ScenarioOptions, 'mode' | 'frontend' | 'localFailover'>> = {
  direct: { mode: 'direct' },
  lb: { mode: 'lb' },
  off: { mode: 'mvproxy', frontend: 'node', localFailover: false },
  node: { mode: 'mvproxy', frontend: 'node' },
  uws: { mode: 'mvproxy', frontend: 'uws' },
};
const STOPS: Stop[] = ['graceful', 'delayed', 'sigkill', 'down60', 'proxy-restart'];

function arg(name: string, all: string[]): string[] {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  const v = a ? a.slice(name.length + 3).split(',') : all;
  for (const x of v) if (!all.includes(x)) throw new Error(`--${name}: ${x} is not one of ${all.join(', ')}`);
  return v;
}

const EXPLAINED = `Each client is kube-controller-manager-like (\`test/kube/go/cmd/upgrade-client\`: leader election on a Lease with the controller-manager's 15 s / 10 s / 2 s and 5 s requests, informers on both kinds, a writer that creates, reads and updates with client-go's 5 s timeout) and runs on one node with two \`kubectl get -w\` (${KUBECTL.split('/').pop()}), all talking to that node's server. The apiserver stop: *graceful*, SIGTERM with kube-apiserver's shutdown flags at their defaults, as kubeadm leaves them; *shutdown delay 5 s + retry-after*, SIGTERM to an apiserver run with \`--shutdown-delay-duration=5s --shutdown-send-retry-after=true\`; a stop still running after 20 s is ended with SIGKILL, as a kubelet ends a static pod after its grace period; *SIGKILL*, then the new release started at once; *stopped for 60 s*, SIGTERM and the new release started 60 s after. Per client:
- *failed* (per kind, as the outage): no answer, 5xx, 429, 409, a 404 for an object that existed, or for a create of the v1.37-only kind once an apiserver serves it; *of them killed in flight*: in flight at an apiserver's SIGKILL, on the local route or the peer route to it (it may have run: mvproxy answers 503 without Retry-After and sends it nowhere else; directly, a reset), or written on a kept-alive connection a graceful stop closed as idle within the first second after its SIGTERM (Go's Server.Shutdown; over HTTP/1.1 nothing tells it from one that ran): what no HTTP/1.1 proxy could prevent;
- *longest outage*: non-watch requests, per kind (ConfigMaps, which every release serves; ClusterTrustBundles, which only v1.37.2 serves, so only kube-a serves them while kube-b is old), from the start of a request that failed to the answer of the next that succeeded (or a successful request's own duration, when longer);
- *waited for the 5 s timeout*: requests that got no answer until client-go gave up;
- *informer watch errors*: the informers' error handler (a 404 for the v1.37-only kind before any apiserver serves it is not counted); *watches ended*: informer watches the server ended; *re-watch gap*: from a watch the server ended to the head of the next watch of that resource;
- *kubectl get -w restarts*: the two \`kubectl get -w\` ended and were started again (not counting "the server doesn't have a resource type" before any apiserver serves it);
- *failed over to a peer*: \`mvproxy_local_failover_requests_total\` of the client's mvproxy (every client on that node: informers and kubectl too);
- *leader lost*: the Lease not renewed within the 10 s renew deadline (kube-controller-manager exits then);
- *503/no answer outside window*: the window is while the apiserver beside the client's server is down, plus ${WINDOW_GRACE_MS / 1000} s after it is ready again;
- *run twice*: one Audit-ID (each HTTP request has its own) in more than one create, update or patch that ran (2xx or 409) in both apiservers' audit logs, or a create answered 409.

Through *a round-robin load balancer* every client and controller speaks HTTP/1.1 (\`DISABLE_HTTP2\`), so each new connection lands on either apiserver. The *mvproxy restarted* stop restarts no apiserver: the mvproxy beside kube-a gets SIGTERM and is started again on the same ports the moment it exited, as a kubelet restarts a static pod.

The real controllers: kube-controller-manager (every default controller, leader election, \`--use-service-account-credentials\`) and kube-scheduler v1.34.4 run on node b, through its server, the whole run. While mixed (kube-a at v1.37.2, kube-b at v1.34.4) a namespace of 20 PodCertificateRequests (\`certificates.k8s.io/v1\`, v1.37-only) is deleted, and 2 of 6 ClusterTrustBundles (v1.37-only) that own 4 ConfigMaps each; counted once both run v1.37.2 (45 s at most for the garbage collector's 30 s discovery sync): *leaked*, requests left in etcd once the namespace was finalized; *wrong GC deletions*, ConfigMaps of a live owner deleted; *right*, of a deleted owner deleted; *leader changes*, Lease acquisitions beyond each controller's first; *controller error lines*, klog \`E\` lines of both.`;

async function main(): Promise<void> {
  const runs = arg('runs', Object.keys(RUNS));
  const stops = arg('stops', STOPS) as Stop[];
  const full = runs.length === Object.keys(RUNS).length && stops.length === STOPS.length;
  const started = Date.now();
  const results: ScenarioResult[] = [];
  const failures: string[] = [];
  for (const stop of stops)
    for (const run of runs) {
      const o = RUNS[run]!;
      if (stop === 'proxy-restart' && (o.mode !== 'mvproxy' || o.localFailover === false)) continue;
      console.log(`rolling upgrade v1.34.4 → v1.37.2, ${STOP_LABEL[stop]}, clients through ${runLabel(o)}:`);
      // One run that could not start (a port taken, a build missing) is reported; the others still run.
      try {
        results.push(await runUpgradeScenario({ ...o, stop, controllers: true, log: (l) => console.log(l) }));
      } catch (e) {
        failures.push(`${STOP_LABEL[stop]}, ${runLabel(o)}: ${(e as Error).message.split('\n')[0]}`);
        console.error(e);
      }
    }
  const minutes = Math.round((Date.now() - started) / 60_000);
  console.log('');
  console.log(upgradeReport(results));
  console.log('');
  console.log(controllersTable(results));
  console.log('');
  console.log(EXPLAINED);
  for (const f of failures) console.log(`run failed: ${f}`);
  if (full && failures.length === 0) {
    const file = join(ROOT, 'docs', 'upgrade-scenario.md');
    writeFileSync(file, [
      '# The rolling upgrade, measured',
      '',
      `Written by \`npm run upgrade-scenario\` (${minutes} min, ${new Date().toISOString().slice(0, 10)}): kube-apiserver v1.34.4 → v1.37.2, two apiservers on one etcd, kube-a upgraded first, then the three v1.37-only ClusterTrustBundle seeds, 15 s mixed, then kube-b. Each apiserver is stopped the way the first column says and started as v1.37.2 on the same port. What the table means and how the clients behave: [README](../README.md#the-rolling-upgrade-npm-run-upgrade-scenario); what mvproxy does while its own apiserver is down: [deploy.md](deploy.md#while-this-nodes-apiserver-restarts).`,
      '',
      upgradeTable(results),
      '',
      '## The real controllers',
      '',
      controllersTable(results),
      '',
      EXPLAINED,
      '',
    ].join('\n'));
    console.log(`wrote docs/upgrade-scenario.md`);
  }
  console.log(JSON.stringify(results));
  if (failures.length > 0) process.exitCode = 1;
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
