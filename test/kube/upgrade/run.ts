// npm run upgrade-scenario: the rolling upgrade (test/kube/upgrade/scenario.ts) with the clients
// through mvproxy, then with the same clients straight to the apiservers; prints the side-by-side
// table, and as its last line one JSON object with the counts of both runs.
import { runUpgradeScenario, upgradeTable, WINDOW_GRACE_MS, type ScenarioResult } from './scenario';

async function main(): Promise<void> {
  const results: ScenarioResult[] = [];
  for (const mode of ['mvproxy', 'direct'] as const) {
    console.log(`rolling upgrade v1.34.4 → v1.37.2, clients ${mode === 'mvproxy' ? 'through mvproxy (node front end)' : 'straight to the apiservers'}:`);
    results.push(await runUpgradeScenario({ mode, log: (l) => console.log(l) }));
  }
  console.log('');
  console.log(upgradeTable(results));
  console.log('');
  console.log(`Spurious 404: a GET or update of an object that existed. Window: while the apiserver beside the client's server was down, plus ${WINDOW_GRACE_MS / 1000} s after it was ready again.`);
  console.log(JSON.stringify(Object.fromEntries(results.map((r) => [r.mode, r]))));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
