// What an open watch costs mvproxy's V8 heap, by constructor (issue 40 §2: per-watch state counted
// before it is cut). mvproxy runs as a child (the CLI through tsx, jemalloc as the image) in front of
// the TLS "apiserver" of test/support/watch-load.ts (h2, as kube-apiserver); N watches are opened
// (HTTP/2 clients on the node front end, HTTP/1.1 on uWS), each gets an event; a heap snapshot is
// taken with none open (after a warm-up round) and with N open, and the difference of the retained
// objects' self sizes is printed per watch, largest first, beside RSS per watch.
//
//   node --import tsx bench/watch-heap.ts [node|uws] [N=2000] [--owners]
// (uws under scripts/node-glibc.sh's node). Prints a table and one JSON line.
//
// --rest: no snapshots; the N watches stay open and quiet until the daemon's collection at rest
// (src/lifecycle/memory.ts), and the JSON line gives its pause and the RSS before and after (~2 min).
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startChildDaemon, type ChildDaemon } from '../test/support/child-daemon';
import { apiserver, h1Watches, h2Watches } from '../test/support/watch-load';
import { createCA } from '../src/pki/throwaway';
import { jemalloc } from '../test/support/jemalloc';
import { REST_MS } from '../src/lifecycle/memory';
import { IMAGE_ENV } from './targets';
import { residentMiB, restCollectedLine } from './lib';

const frontend = process.argv[2] ?? 'node';
const N = Number(process.argv[3] ?? 2000);
const OWNERS = process.argv.includes('--owners');
const REST = process.argv.includes('--rest');
/** --owners-of REGEX: named kinds split by retainer too (e.g. 'H2Head|Buffer'). */
const OWNERS_OF = process.argv.includes('--owners-of') ? new RegExp(process.argv[process.argv.indexOf('--owners-of') + 1]!) : undefined;

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/**
 * Self sizes summed by "type name" (object constructors, closures' names, native kinds). With --owners,
 * the kinds no constructor names (plain objects and arrays, property and element stores, closures,
 * contexts, strings) are split by their first retainer too: "<kind> <- <owner> .<edge>".
 */
function bySite(file: string): Map<string, { bytes: number; count: number }> {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const f = s.snapshot.meta.node_fields;
  const types = s.snapshot.meta.node_types[0];
  const [iType, iName, iSize, iEdges] = [f.indexOf('type'), f.indexOf('name'), f.indexOf('self_size'), f.indexOf('edge_count')];
  const label = (i: number) => {
    const type = types[s.nodes[i + iType]!]!;
    let name = s.strings[s.nodes[i + iName]!]!;
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') name = '';
    if (type === 'code' || type === 'hidden') name = name.slice(0, 40);
    return `${type} ${name}`.slice(0, 90);
  };
  /** Each node's first retainer (not by a weak edge) and the edge's name. */
  const owner = new Map<number, [number, string]>();
  if (OWNERS) {
    const ef = s.snapshot.meta.edge_fields;
    const etypes = s.snapshot.meta.edge_types[0];
    const [eType, eName, eTo] = [ef.indexOf('type'), ef.indexOf('name_or_index'), ef.indexOf('to_node')];
    let e = 0;
    for (let i = 0; i < s.nodes.length; i += f.length) {
      for (let k = 0; k < s.nodes[i + iEdges]!; k++, e += ef.length) {
        const t = etypes[s.edges[e + eType]!]!;
        const to = s.edges[e + eTo]!;
        if (t === 'weak' || owner.has(to)) continue;
        const edge = t === 'element' || t === 'hidden' ? '[]' : s.strings[s.edges[e + eName]!]!;
        owner.set(to, [i, edge]);
      }
    }
  }
  const generic = /^(object Object|object Array|array |closure|object system \/ Context|hidden system \/ PropertyArray|string|concatenated string|sliced string)/;
  // Up the retainers while they are generic too (a property store of a plain object of …), three at most.
  const chain = (i: number) => {
    let out = '';
    for (let depth = 0, at = owner.get(i); at && depth < 3; depth++, at = owner.get(at[0])) {
      out += ` <- ${label(at[0])} .${at[1]}`;
      if (!generic.test(label(at[0]))) break;
    }
    return out.slice(0, 160) || ' <- ?';
  };
  const out = new Map<string, { bytes: number; count: number }>();
  for (let i = 0; i < s.nodes.length; i += f.length) {
    let key = label(i);
    if (OWNERS && (generic.test(key) || OWNERS_OF?.test(key))) key += chain(i);
    const e = out.get(key) ?? { bytes: 0, count: 0 };
    e.bytes += s.nodes[i + iSize]!;
    e.count++;
    out.set(key, e);
  }
  return out;
}

async function snapshot(d: ChildDaemon, dir: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  d.proc.kill('SIGUSR2');
  for (let i = 0; i < 600; i++) {
    await sleep(200);
    const f = readdirSync(dir).find((x) => x.endsWith('.heapsnapshot') && !before.has(x));
    if (f) {
      // Written when its size stops changing.
      let size = -1;
      for (;;) {
        const now = statSync(join(dir, f)).size;
        if (now === size && now > 0) return join(dir, f);
        size = now;
        await sleep(500);
      }
    }
  }
  throw new Error('no heap snapshot');
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-heap-'));
  const up = await apiserver(dir);
  const serving = await createCA('serving-ca');
  const leaf = await serving.issue({ commonName: 'mvproxy', usage: 'server', ipAddresses: ['127.0.0.1'], dnsNames: ['localhost'] });
  writeFileSync(join(dir, 'tls.crt'), leaf.cert);
  writeFileSync(join(dir, 'tls.key'), leaf.key);
  const d = await startChildDaemon([`--frontend=${frontend}`, '--secure-port=0', '--bind-address=127.0.0.1', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${up.url}`, `--local-apiserver-ca-file=${up.caFile}`, '--local-apiserver-server-name=localhost', `--tls-cert-file=${join(dir, 'tls.crt')}`, `--tls-private-key-file=${join(dir, 'tls.key')}`, REST ? '--v=1' : '--v=0'], { ...jemalloc(), NODE_OPTIONS: REST ? IMAGE_ENV.NODE_OPTIONS : `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}` });
  const open = frontend === 'uws' ? h1Watches : h2Watches;
  const wait = async (what: string, fn: () => boolean) => {
    for (let i = 0; i < 600 && !fn(); i++) await sleep(200);
    if (!fn()) throw new Error(`not within 120 s: ${what}`);
  };
  const round = async (n: number) => {
    const c = open(d.clientPort, serving.cert, n);
    await wait(`${n} watches open`, () => up.watchers() === n);
    up.broadcast();
    await wait('every event', () => c.events() === n);
    return c;
  };
  if (REST) {
    const rssMiB = () => residentMiB(d.proc.pid!).rssMiB;
    const idle = rssMiB();
    const c = await round(N);
    const open = rssMiB();
    await sleep(REST_MS + 20_000);
    console.log(JSON.stringify({ frontend, watches: N, rssMiB: { idle, open, atRest: rssMiB() }, collected: restCollectedLine(d.stderr()) }));
    c.close();
    await d.stop('SIGKILL');
    await up.close();
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  const warm = await round(200);
  warm.close();
  await wait('released', () => up.watchers() === 0);
  await sleep(3000);
  const rss0 = d.memory().rss;
  const s0 = bySite(await snapshot(d, dir));
  const c = await round(N);
  await sleep(2000);
  const rss1 = d.memory().rss;
  const s1 = bySite(await snapshot(d, dir));
  c.close();
  await d.stop('SIGKILL');
  await up.close();
  rmSync(dir, { recursive: true, force: true });

  const rows: [string, number, number][] = [];
  let heap = 0;
  for (const [k, v] of s1) {
    const b = s0.get(k) ?? { bytes: 0, count: 0 };
    const db = v.bytes - b.bytes;
    heap += db;
    if (Math.abs(db) / N >= 16) rows.push([k, db / N, (v.count - b.count) / N]);
  }
  rows.sort((a, b) => b[1] - a[1]);
  console.log(`${frontend}: ${N} watches; RSS ${((rss1 - rss0) / N / 1024).toFixed(1)} KiB per watch, V8 heap (snapshot self sizes) ${(heap / N / 1024).toFixed(2)} KiB per watch`);
  console.log('bytes/watch  objects/watch  type name');
  for (const [k, b, n] of rows.slice(0, 45)) console.log(`${b.toFixed(0).padStart(10)}  ${n.toFixed(2).padStart(12)}  ${k}`);
  console.log(JSON.stringify({ frontend, watches: N, rssKiBPerWatch: +((rss1 - rss0) / N / 1024).toFixed(2), heapKiBPerWatch: +(heap / N / 1024).toFixed(2), top: rows.slice(0, 20).map(([k, b, n]) => ({ site: k, bytes: Math.round(b), objects: +n.toFixed(2) })) }));
}
void main().catch((e) => {
  console.error(e);
  process.exit(1);
});
