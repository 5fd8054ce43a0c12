// Micro-benchmark: peer-aggregated discovery build (parse + merge + encode JSON/protobuf + ETag +
// legacy documents) in the piscina worker vs inline on the main thread, cold and warm, and what
// each does to the main thread's event-loop delay. Not a test. Bounded: stops starting new
// configurations after --budget-ms.
//
//   node --import tsx native-bench/merge.ts [--budget-ms 20000] [--runs 3]
//        [--servers 2,3,5] [--sizes 80,500,2000,5000] [--no-eld] [--no-keys] [--impl <dir>]
//
// Documents are synthetic but CRD-heavy (synthetic.ts): the v1.37 fixture (83 GVRs) or the v1.33
// one (71 GVRs), plus CRD-like groups (two versions each, 4 resources per version with
// status/scale subresources, shortNames, categories) up to the target GVR count. Servers skew
// the way a rolling upgrade does: odd servers start from v1.33, every server lacks a few CRD
// groups the others have and adds a verb to some resources, so the merge takes its full path
// (topological order, verb unions) rather than the "nothing changed" shortcut. (Real peers' CRD
// GVs are excluded before the merge, docs/kubernetes-mvp.md §4.5; here they stand in for any large API set.)
//
// Two builds per run, as SnapshotPublisher sees them (it builds only when an input changed):
// - cold: every resource of every server is new (everyResourceChanged), so no cache holds any of it;
// - warm: right after the cold build, one peer (s2, or s1 with two servers) changed one resource
//   (oneResourceChanged); the local document and the other peers are byte-identical.
// Columns: inline = build on the main thread (wall); worker = time inside the worker (build.ms);
// wall = submit → snapshot on the main thread (transfer and queueing included). Medians.
// --impl <dir>: load src/aggregation/merger from another checkout (e.g. the previous commit's
// files, for before/after numbers), with its own node_modules resolution.

import { monitorEventLoopDelay } from 'node:perf_hooks';
import { resolve } from 'node:path';
import type { DiscoveryMerger as Merger, DiscoveryMergeInput } from '../src/aggregation/merger';
import { encodeJSON } from '../src/aggregation/codec/json';
import { gvrCount, syntheticServer, everyResourceChanged, oneResourceChanged } from './synthetic';
import { median, parseArgs } from './lib';

const args = parseArgs();
if (args.has('--help') || args.has('-h')) {
  console.log(`usage: node --import tsx native-bench/merge.ts [options]
  --budget-ms N      stop starting new configurations after N ms (default 20000)
  --runs N           cold+warm build pairs per configuration and mode (default 3)
  --servers LIST     server counts, comma-separated (default 2,3,5)
  --sizes LIST       GVRs per server, comma-separated (default 80,500,2000,5000)
  --no-eld           skip the event-loop delay section
  --no-keys          inputs without content keys (every document copied to the worker every build)
  --impl DIR         use DIR/src/aggregation/merger (another checkout) instead of this one
Prints, per configuration, median ms of cold builds (every document new) and warm builds (one
peer changed one resource) inline, inside the worker, and worker wall time.`);
  process.exit(0);
}
const BUDGET_MS = args.num('--budget-ms', 20_000);
const RUNS = args.num('--runs', 3);
const list = (name: string, dflt: number[]) => args.str(name, dflt.join(',')).split(',').map(Number).filter((n) => n > 0);
const SIZES = list('--sizes', [80, 500, 2000, 5000]);
const SERVERS = list('--servers', [2, 3, 5]);
const IMPL = args.str('--impl', '');

const started = performance.now();
const overBudget = () => performance.now() - started > BUDGET_MS;
const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(1).padStart(7) : '      -');

interface Docs {
  bytes: Buffer[];
  gvrs: number;
}

function docsFor(servers: number, size: number): Docs {
  const lists = Array.from({ length: servers }, (_, i) => syntheticServer(size, i));
  return { bytes: lists.map((l) => encodeJSON(l)), gvrs: gvrCount(lists[0]!.items) };
}

let nonce = 0;
const docKeys = new WeakMap<Buffer, string>();
/** A content key per document, as discoveryMergeInput derives from the ETag (the same bytes, the same key). */
const keyOf = (b: Buffer): string => {
  let k = docKeys.get(b);
  if (k === undefined) docKeys.set(b, (k = `"etag-${++nonce}"`));
  return k;
};

/**
 * The cold and the warm input of one run. Views, as SnapshotPublisher passes FetchedDocument.raw
 * (build() copies what it sends); with a key per document, as discoveryMergeInput sets them
 * (--no-keys: without, every document copied and sent every build).
 */
function runInputs(d: Docs): { cold: () => DiscoveryMergeInput; warm: () => DiscoveryMergeInput } {
  const tag = `c${++nonce}-`;
  const cold = d.bytes.map((b) => everyResourceChanged(b, tag));
  const changed = Math.min(2, cold.length - 1);
  const warm = cold.map((b, i) => (i === changed ? oneResourceChanged(b, `w${nonce}-`) : b));
  const keys = !args.has('--no-keys');
  const input = (bytes: Buffer[]) => (): DiscoveryMergeInput => ({
    localID: 's0',
    localApis: bytes[0]!,
    ...(keys ? { localKey: keyOf(bytes[0]!) } : {}),
    peers: bytes.slice(1).map((b, i) => ({ id: `s${i + 1}`, apis: b, ...(keys ? { key: keyOf(b) } : {}) })),
    excludedGroupVersions: [] as string[],
  });
  return { cold: input(cold), warm: input(warm) };
}

async function main(): Promise<void> {
  const mod = require(IMPL ? resolve(IMPL, 'src/aggregation/merger') : '../src/aggregation/merger') as typeof import('../src/aggregation/merger');
  const worker: Merger = new mod.DiscoveryMerger({ threads: 1 });
  const inline: Merger = new mod.DiscoveryMerger({ inline: true });
  // Start the worker and warm both JITs outside the measurements.
  for (const m of [worker, inline]) for (let i = 0; i < 3; i++) await m.build(runInputs(docsFor(2, 500)).warm());
  if (worker.workerError) console.log(`worker unavailable, numbers below are inline: ${worker.workerError}`);

  console.log(`discovery snapshot build (parse+merge+encode+legacy)${IMPL ? ` [${IMPL}]` : ''}, median of ${RUNS} runs; ms`);
  console.log('                                       cold (all new)            warm (one peer changed)');
  console.log('servers  GVRs/srv  merged-GVRs  KiB    inline  worker    wall     inline  worker    wall');
  let largest: Docs | undefined;
  outer: for (const servers of SERVERS) {
    for (const size of SIZES) {
      if (overBudget()) {
        console.log(`(budget of ${BUDGET_MS} ms reached; remaining configurations skipped)`);
        break outer;
      }
      const d = docsFor(servers, size);
      const t = { ci: [] as number[], cw: [] as number[], cwall: [] as number[], wi: [] as number[], ww: [] as number[], wwall: [] as number[] };
      let mergedGVRs = 0;
      let kib = 0;
      for (let r = 0; r < RUNS; r++) {
        // Inline and worker get the same inputs; the order alternates per run.
        const inp = runInputs(d);
        const modes = r % 2 === 0 ? (['inline', 'worker'] as const) : (['worker', 'inline'] as const);
        for (const mode of modes) {
          const m = mode === 'inline' ? inline : worker;
          const t0 = performance.now();
          const c = await m.build(inp.cold());
          const t1 = performance.now();
          const w = await m.build(inp.warm());
          const t2 = performance.now();
          if (mode === 'inline') {
            t.ci.push(t1 - t0);
            t.wi.push(t2 - t1);
            mergedGVRs = w.counts.resources;
            kib = w.merged.json.length / 1024;
          } else {
            t.cw.push(c.build.ms);
            t.cwall.push(t1 - t0);
            t.ww.push(w.build.ms);
            t.wwall.push(t2 - t1);
          }
        }
      }
      console.log(
        `${String(servers).padStart(7)}  ${String(d.gvrs).padStart(8)}  ${String(mergedGVRs).padStart(11)}  ${kib.toFixed(0).padStart(4)}  ${fmt(median(t.ci))} ${fmt(median(t.cw))} ${fmt(median(t.cwall))}    ${fmt(median(t.wi))} ${fmt(median(t.ww))} ${fmt(median(t.wwall))}`,
      );
      largest = d;
    }
  }

  // Event-loop delay on the main thread while warm builds of the largest configuration run back
  // to back for ~1.5 s, with a 1 ms timer standing in for request handling.
  if (largest && !args.has('--no-eld')) {
    console.log('\nmain-thread event-loop delay while warm builds run (largest configuration above), ms');
    console.log('mode      builds   p50      p99      max');
    for (const [label, m] of [['worker', worker], ['inline', inline]] as const) {
      const inputs = Array.from({ length: 2 }, () => runInputs(largest!));
      await m.build(inputs[0]!.cold());
      const h = monitorEventLoopDelay({ resolution: 1 });
      const tick = setInterval(() => undefined, 1);
      h.enable();
      const until = performance.now() + 1500;
      let n = 0;
      while (performance.now() < until) {
        // Alternate between two documents for the changed peer: every build is a warm one.
        await m.build(n % 2 === 0 ? inputs[0]!.warm() : inputs[0]!.cold());
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
