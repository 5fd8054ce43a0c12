// Micro-benchmark: peer-aggregated discovery build (parse + merge + encode JSON/protobuf + ETag +
// legacy documents) in the piscina worker vs inline on the main thread, and what each does to the
// main thread's event-loop delay. Not a test. Bounded: stops starting new runs after ~20 s.
//
//   node --import tsx native-bench/merge.ts [--budget-ms 20000] [--runs 3]
//
// Documents are synthetic but CRD-heavy: the v1.37 fixture (83 GVRs) or the v1.33 one (71 GVRs),
// plus CRD-like groups (two versions each, 4 resources per version with status/scale
// subresources, shortNames, categories) up to the target GVR count. Servers skew the way a
// rolling upgrade does: odd servers start from v1.33, every server lacks a few CRD groups the others
// have and adds a verb to some resources, so the merge takes its full path (topological order,
// verb unions) rather than the "nothing changed" shortcut. (Real peers' CRD GVs are excluded
// before the merge, spec §4.5; here they stand in for any large API set.)

import { monitorEventLoopDelay } from 'node:perf_hooks';
import { DiscoveryMerger, copyToArrayBuffer } from '../src/discovery/merger';
import { encodeJSON } from '../src/discovery/codec/json';
import type { APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery } from '../src/discovery/types';
import { aggregatedFixture } from '../test/support/fixtures';

const argv = process.argv.slice(2);
const arg = (name: string, dflt: number) => {
  const i = argv.indexOf(name);
  return i === -1 ? dflt : Number(argv[i + 1]);
};
const BUDGET_MS = arg('--budget-ms', 20_000);
const RUNS = arg('--runs', 3);
const SIZES = [80, 500, 2000, 5000];
const SERVERS = [2, 3, 5];

const started = performance.now();
const overBudget = () => performance.now() - started > BUDGET_MS;

const base = { v137: aggregatedFixture('v1.37'), v133: aggregatedFixture('v1.33') };

function gvrs(items: readonly APIGroupDiscovery[]): number {
  let n = 0;
  for (const g of items) for (const v of g.versions ?? []) n += v.resources?.length ?? 0;
  return n;
}

function crdResource(group: number, version: string, r: number, server: number): APIResourceDiscovery {
  const kind = `Widget${group}x${r}`;
  const verbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
  if (server % 2 === 1 && r === 0) verbs.push('proxy'); // a verb only some servers have → union
  return {
    resource: `widgets${r}`,
    responseKind: { group: '', version: '', kind },
    scope: r % 3 === 0 ? 'Cluster' : 'Namespaced',
    singularResource: `widget${r}`,
    verbs,
    shortNames: [`w${group}x${r}`],
    categories: ['all', `crd-${version}`],
    subresources: [
      { subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: ['get', 'patch', 'update'] },
      { subresource: 'status', responseKind: { group: '', version: '', kind }, verbs: ['get', 'patch', 'update'] },
    ],
  };
}

/** One server's `/apis`, about `target` GVRs. */
function syntheticServer(target: number, server: number): APIGroupDiscoveryList {
  const start = server % 2 === 0 ? base.v137 : base.v133;
  const items: APIGroupDiscovery[] = [...start.items];
  let total = gvrs(items);
  for (let g = 0; total < target; g++) {
    if ((g + server) % 11 === 0) continue; // each server lacks a different few CRD groups
    const versions = ['v1', 'v1beta1'].map((version) => ({
      version,
      freshness: 'Current',
      resources: [0, 1, 2, 3].map((r) => crdResource(g, version, r, server)),
    }));
    items.push({ metadata: { name: `crd${g}.example.com` }, versions });
    total += 8;
  }
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)]!;
}

const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(1).padStart(8) : '       -');

interface Docs {
  bytes: Buffer[];
  gvrs: number;
  merged?: number;
}

function docsFor(servers: number, size: number): Docs {
  const lists = Array.from({ length: servers }, (_, i) => syntheticServer(size, i));
  return { bytes: lists.map((l) => encodeJSON(l)), gvrs: gvrs(lists[0]!.items) };
}

function inputOf(d: Docs) {
  return {
    localID: 's0',
    localApis: copyToArrayBuffer(d.bytes[0]!),
    peers: d.bytes.slice(1).map((b, i) => ({ id: `s${i + 1}`, apis: copyToArrayBuffer(b) })),
    excludedGroupVersions: [] as string[],
  };
}

async function main(): Promise<void> {
  const worker = new DiscoveryMerger({ threads: 1 });
  const inline = new DiscoveryMerger({ inline: true });
  // Start the worker outside the measurements.
  await worker.build(inputOf(docsFor(2, 80)));
  if (worker.workerError) console.log(`worker unavailable, numbers below are inline: ${worker.workerError}`);

  console.log(`discovery snapshot build (parse+merge+encode+legacy), median of ${RUNS} runs; ms`);
  console.log('servers  GVRs/srv  merged-GVRs  body-KiB   inline  worker(in)  worker(wall)');
  let largest: Docs | undefined;
  outer: for (const servers of SERVERS) {
    for (const size of SIZES) {
      if (overBudget()) {
        console.log(`(budget of ${BUDGET_MS} ms reached; remaining sizes skipped)`);
        break outer;
      }
      const d = docsFor(servers, size);
      const inl: number[] = [];
      const win: number[] = [];
      const wwall: number[] = [];
      let mergedGVRs = 0;
      let kib = 0;
      for (let r = 0; r < RUNS; r++) {
        const t0 = performance.now();
        const s = await inline.build(inputOf(d));
        inl.push(performance.now() - t0);
        mergedGVRs = s.counts.resources;
        kib = s.merged.json.length / 1024;
        const t1 = performance.now();
        const w = await worker.build(inputOf(d));
        wwall.push(performance.now() - t1);
        win.push(w.build.ms);
      }
      console.log(
        `${String(servers).padStart(7)}  ${String(d.gvrs).padStart(8)}  ${String(mergedGVRs).padStart(11)}  ${kib.toFixed(0).padStart(8)} ${fmt(median(inl))}  ${fmt(median(win))}    ${fmt(median(wwall))}`,
      );
      largest = d;
    }
  }

  // Event-loop delay on the main thread while builds of the largest configuration run back to
  // back for ~1.5 s, with a 1 ms timer standing in for request handling.
  if (largest) {
    console.log('\nmain-thread event-loop delay while builds run (largest configuration above), ms');
    console.log('mode      builds   p50      p99      max');
    for (const [label, m] of [['worker', worker], ['inline', inline]] as const) {
      const h = monitorEventLoopDelay({ resolution: 1 });
      const tick = setInterval(() => undefined, 1);
      h.enable();
      const until = performance.now() + 1500;
      let n = 0;
      while (performance.now() < until) {
        await m.build(inputOf(largest));
        n++;
        await new Promise((r) => setImmediate(r));
      }
      h.disable();
      clearInterval(tick);
      console.log(`${label.padEnd(8)} ${String(n).padStart(6)} ${fmt(h.percentile(50) / 1e6)} ${fmt(h.percentile(99) / 1e6)} ${fmt(h.max / 1e6)}`);
    }
  }
  await worker.close();
  await inline.close();
  console.log(`\ntotal ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

void main();
