// npm run upgrade-scenario: the rolling upgrade (test/kube/upgrade/scenario.ts) once per way of
// stopping the apiservers (graceful; graceful with a shutdown delay and retry-after; SIGKILL; down
// for 60 s) and per way the clients reach them:
// straight to the apiservers (what the in-tree proxy offers: it lives inside the apiserver that
// restarts), through mvproxy with --local-failover=false (mvproxy before issue 30), and through
// mvproxy as shipped on both front ends. Prints each run as it goes, then the side-by-side table,
// and as its last line one JSON object with every run. A full run (no arguments, ~30 min) writes
// the table to docs/upgrade-scenario.md.
//
//   --stops=graceful,delayed,sigkill,down60   which stops (default all)
//   --runs=direct,off,node,uws        which runs (default all; off = mvproxy node --local-failover=false)
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../support/child-daemon';
import { KUBECTL } from '../support/control-plane';
import { runLabel, runUpgradeScenario, STOP_LABEL, upgradeReport, upgradeTable, WINDOW_GRACE_MS, type ScenarioOptions, type ScenarioResult, type Stop } from './scenario';

const RUNS: Record<string, Pick<ScenarioOptions, 'mode' | 'frontend' | 'localFailover'>> = {
  direct: { mode: 'direct' },
  off: { mode: 'mvproxy', frontend: 'node', localFailover: false },
  node: { mode: 'mvproxy', frontend: 'node' },
  uws: { mode: 'mvproxy', frontend: 'uws' },
};
const STOPS: Stop[] = ['graceful', 'delayed', 'sigkill', 'down60'];

function arg(name: string, all: string[]): string[] {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  const v = a ? a.slice(name.length + 3).split(',') : all;
  for (const x of v) if (!all.includes(x)) throw new Error(`--${name}: ${x} is not one of ${all.join(', ')}`);
  return v;
}

const EXPLAINED = `Each client is kube-controller-manager-like (\`test/kube/go/cmd/upgrade-client\`: leader election on a Lease with the controller-manager's 15 s / 10 s / 2 s and 5 s requests, informers on both kinds, a writer that creates, reads and updates with client-go's 5 s timeout) and runs on one node with two \`kubectl get -w\` (${KUBECTL.split('/').pop()}), all talking to that node's server. The apiserver stop: *graceful*, SIGTERM with kube-apiserver's shutdown flags at their defaults, as kubeadm leaves them; *shutdown delay 5 s + retry-after*, SIGTERM to an apiserver run with \`--shutdown-delay-duration=5s --shutdown-send-retry-after=true\`; a stop still running after 20 s is ended with SIGKILL, as a kubelet ends a static pod after its grace period; *SIGKILL*, then the new release started at once; *stopped for 60 s*, SIGTERM and the new release started 60 s after. Per client:
- *failed* (per kind, as the outage): no answer, 5xx, 429, 409, a 404 for an object that existed, or for a create of the v1.37-only kind once an apiserver serves it;
- *longest outage*: non-watch requests, per kind (ConfigMaps, which every release serves; ClusterTrustBundles, which only v1.37.2 serves, so only kube-a serves them while kube-b is old), from the start of a request that failed to the answer of the next that succeeded (or a successful request's own duration, when longer);
- *waited for the 5 s timeout*: requests that got no answer until client-go gave up;
- *informer watch errors*: the informers' error handler (a 404 for the v1.37-only kind before any apiserver serves it is not counted); *watches ended*: informer watches the server ended; *re-watch gap*: from a watch the server ended to the head of the next watch of that resource;
- *kubectl get -w restarts*: the two \`kubectl get -w\` ended and were started again (not counting "the server doesn't have a resource type" before any apiserver serves it);
- *failed over to a peer*: \`mvproxy_local_failover_requests_total\` of the client's mvproxy (every client on that node: informers and kubectl too);
- *leader lost*: the Lease not renewed within the 10 s renew deadline (kube-controller-manager exits then);
- *503/no answer outside window*: the window is while the apiserver beside the client's server is down, plus ${WINDOW_GRACE_MS / 1000} s after it is ready again;
- *run twice*: one Audit-ID (each HTTP request has its own) in more than one create, update or patch that ran (2xx or 409) in both apiservers' audit logs, or a create answered 409.`;

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
      console.log(`rolling upgrade v1.34.4 → v1.37.2, ${STOP_LABEL[stop]}, clients through ${runLabel(o)}:`);
      // One run that could not start (a port taken, a build missing) is reported; the others still run.
      try {
        results.push(await runUpgradeScenario({ ...o, stop, log: (l) => console.log(l) }));
      } catch (e) {
        failures.push(`${STOP_LABEL[stop]}, ${runLabel(o)}: ${(e as Error).message.split('\n')[0]}`);
        console.error(e);
      }
    }
  const minutes = Math.round((Date.now() - started) / 60_000);
  console.log('');
  console.log(upgradeReport(results));
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
