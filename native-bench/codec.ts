// Micro-benchmark: protobuf vs JSON, encode and decode, of the aggregated discovery document
// (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) — the codecs mvproxy uses (src/aggregation/codec)
// against JSON.stringify/JSON.parse. Not a test.
//
//   node --import tsx native-bench/codec.ts [--quick] [--ms 400]
//
// Documents: the v1.37 fixture (83 GVRs), and the merged document of 5 synthetic CRD-heavy servers
// of 2,000 GVRs each (built by the real merger, inline). Each operation runs in batches for
// --ms per batch, 3 batches (interleaved across operations); the table shows the median µs per op
// (wall time on an idle-ish core: compare rows, not machines).

import { encodeJSON } from '../src/aggregation/codec/json';
import { decodeDiscovery, encodeAPIGroupDiscoveryList } from '../src/aggregation/codec/protobuf';
import { DiscoveryMerger } from '../src/aggregation/merger';
import type { APIGroupDiscoveryList } from '../src/aggregation/types';
import { aggregatedFixture } from '../test/support/fixtures';
import { median, parseArgs, printTable } from './lib';
import { gvrCount, mergeInput } from './synthetic';

const args = parseArgs();
const BATCH_MS = args.num('--ms', args.quick ? 40 : 400);
const BATCHES = args.quick ? 1 : 3;

interface Op {
  name: string;
  run: () => unknown;
}

function timeOp(op: Op, ms: number): number {
  // One untimed call (JIT), then as many as fit in ms.
  op.run();
  let n = 0;
  const t0 = process.hrtime.bigint();
  const end = t0 + BigInt(Math.round(ms * 1e6));
  let t = t0;
  while (t < end) {
    op.run();
    n++;
    t = process.hrtime.bigint();
  }
  return Number(t - t0) / 1000 / n;
}

async function docs(): Promise<{ name: string; list: APIGroupDiscoveryList }[]> {
  const merger = new DiscoveryMerger({ inline: true });
  const snap = await merger.build(mergeInput(5, 2000)());
  await merger.close();
  const merged = JSON.parse(snap.merged.json.toString('utf8')) as APIGroupDiscoveryList;
  return [
    { name: 'v1.37 fixture', list: aggregatedFixture('v1.37') },
    { name: 'merged 5 × 2,000', list: merged },
  ];
}

async function main(): Promise<void> {
  const rows: (string | number)[][] = [];
  for (const d of await docs()) {
    const json = encodeJSON(d.list);
    const pb = encodeAPIGroupDiscoveryList(d.list, 'v2');
    const jsonStr = json.toString('utf8');
    const ops: Op[] = [
      { name: 'encode JSON (codec/json encodeJSON)', run: () => encodeJSON(d.list) },
      { name: 'encode JSON (JSON.stringify → Buffer)', run: () => Buffer.from(JSON.stringify(d.list)) },
      { name: 'encode protobuf (codec/protobuf)', run: () => encodeAPIGroupDiscoveryList(d.list, 'v2') },
      { name: 'decode JSON (JSON.parse(buf.toString()))', run: () => JSON.parse(json.toString('utf8')) },
      { name: 'decode JSON (JSON.parse(string))', run: () => JSON.parse(jsonStr) },
      { name: 'decode protobuf (codec/protobuf)', run: () => decodeDiscovery(pb) },
    ];
    const samples = ops.map(() => [] as number[]);
    for (let b = 0; b < BATCHES; b++) {
      // Interleave: every op once per batch, the order reversed every other batch.
      const order = b % 2 === 0 ? ops.map((_, i) => i) : ops.map((_, i) => ops.length - 1 - i);
      for (const i of order) samples[i]!.push(timeOp(ops[i]!, BATCH_MS));
    }
    ops.forEach((op, i) => {
      const isPb = op.name.includes('protobuf');
      rows.push([d.name, gvrCount(d.list.items), op.name, Math.round((isPb ? pb.length : json.length) / 1024), median(samples[i]!)]);
    });
  }
  printTable(`discovery document codecs: median µs/op of ${BATCHES} batch(es) × ${BATCH_MS} ms`, ['document', 'GVRs', 'operation', 'KiB', 'µs/op'], rows);
}

void main();
