// Micro-benchmark: the per-request routing hot path (docs/kubernetes-mvp.md §2), one micro-bench per hot function.
//
//   node --expose-gc --import tsx native-bench/hotpath.ts [--quick] [--runs 7] [--iters 300000]
//
// Requests: ≥1,000 real request targets built from the discovery fixtures: this node serves v1.33
// plus the core group (fixtures commit-4d817e79/api__v1.json), one peer serves v1.37 plus core. All
// verbs (get, list, watch via ?watch= and /watch/ paths, create, update, patch, delete,
// deletecollection), namespaced and cluster-scoped, subresources, field/label selectors, trailing
// slashes, GVRs nobody serves, and non-resource paths (/api, /apis, /healthz, /version, ...).
// Shuffled with a fixed seed so consecutive calls do not repeat the same shape.
//
// Per request, ns (median of ≥7 interleaved runs A B C … A B C …, each a few hundred thousand calls):
//   (a) newRequestInfo(method, path, query, table.names, false) + decide(info, undefined, table)   ← what handleClient does
//   (b) new URL(path?query, 'http://x') alone                                  ← the target: (a) ≤ (b)
//   (c) newRequestInfo + a flat Map keyed by `${group}/${version}/${resource}` (key build + Map.get)
//   (a0) newRequestInfo alone
//   (a-) / (c-) the lookup alone on pre-parsed RequestInfos (route table vs flat string key)
//   (a~) (a) with every query dropped: (a) − (a~) is what the list/watch query rules cost
//   (f) a floor for (a) in JavaScript: path and query read once (the control-byte check), an object of
//       RequestInfo's shape with its substrings, one Map.get; what no port of NewRequestInfo can skip
//   (e) negotiateDiscovery(Accept) on six client Accept headers (the discovery path's extra step)
//   (d) find-my-way: not installed, skipped.
// Allocation: bytes per call from V8 heap-used deltas over batches of 1,000 calls, each batch
// started right after a minor GC (so no scavenge runs inside it), 1e6 calls in all; the median
// batch is reported. Compared with an object of RequestInfo's shape built from existing strings.
// Numbers are for comparing rows on this machine, never capacity (docs/dependencies.md §9: noisy 2-core VM).

import v8 from 'node:v8';
import vm from 'node:vm';
import { newRequestInfo, type RequestInfo, type RequestInfoError } from '../src/request/requestinfo';
import { forEachServedGVR } from '../src/routing/routetable';
import { decide } from '../src/routing/decide';
import { type Decision, DECISION_NON_RESOURCE, DECISION_NOT_FOUND, DECISION_PEER_PROXIED, DECISION_REQUESTINFO_ERROR } from '../src/routing/decision';
import { negotiateDiscovery } from '../src/request/accept';
import type { APIResourceDiscovery } from '../src/aggregation/types';
import { benchTopology } from './fixtures';
import { median, parseArgs, printTable } from './lib';

const args = parseArgs();
const QUICK = args.quick;
const RUNS = Math.max(1, args.num('--runs', QUICK ? 3 : 7));
const ITERS = Math.max(1, args.num('--iters', QUICK ? 20_000 : 300_000));
const ALLOC_CALLS = Math.max(1000, args.num('--alloc-calls', QUICK ? 20_000 : 1_000_000));
const ALLOC_BATCH = 1000;

// ---------------------------------------------------------------------------------------------
// Discovery: v1.33 + core locally, v1.37 + core on one peer.

const { local, peer, table } = benchTopology();

// The same facts as one flat Map keyed by "group/version/resource" (variant c).
const flat = new Map<string, Decision>();
for (const groups of [local, peer]) {
  forEachServedGVR(groups, (g, v, r) => {
    flat.set(g + '/' + v + '/' + r, table.lookup(g, v, r)!.decision);
  });
}

function decideFlat(info: RequestInfo | Error, peerProxied: string | undefined, t: Map<string, Decision>): Decision {
  if (info instanceof Error) return DECISION_REQUESTINFO_ERROR;
  if (!info.isResourceRequest) return DECISION_NON_RESOURCE;
  if (peerProxied === 'true') return DECISION_PEER_PROXIED;
  return t.get(info.apiGroup + '/' + info.apiVersion + '/' + info.resource) ?? DECISION_NOT_FOUND;
}

// ---------------------------------------------------------------------------------------------
// Request targets

interface Req {
  method: string;
  path: string;
  query: string;
  /** path?query, what a node:http front end or new URL() sees */
  full: string;
}

const NAMESPACES = ['default', 'kube-system', 'team-a-prod', 'ns-42'];
const NAMES = ['foo', 'web-7d9f8c6b5-x2x9k', 'my.dotted.name', 'a', 'coredns-5dd5756b68-abcde'];
const LIST_QUERIES = [
  '',
  'limit=500',
  'limit=500&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDV9',
  'fieldSelector=metadata.name%3Dfoo',
  'fieldSelector=spec.nodeName%3Dnode-1%2Cstatus.phase%21%3DSucceeded',
  'labelSelector=app%3Dweb%2Ctier%20in%20(frontend%2Cbackend)',
  'resourceVersion=0&resourceVersionMatch=NotOlderThan',
];
const WATCH_QUERIES = [
  'watch=true&resourceVersion=12345&allowWatchBookmarks=true',
  'watch=1&fieldSelector=metadata.name%3Dfoo&timeoutSeconds=300',
  'allowWatchBookmarks=true&resourceVersion=98765&timeoutSeconds=540&watch=true',
  'watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan',
];
const NON_RESOURCE = [
  '/api', '/api/', '/apis', '/apis/', '/api/v1', '/apis/apps', '/apis/apps/v1', '/apis/batch/v1/',
  '/healthz', '/healthz/etcd', '/livez', '/readyz', '/readyz?verbose', '/version', '/version/',
  '/openapi/v2', '/openapi/v3', '/openapi/v3/apis/apps/v1?hash=ABCDEF0123', '/metrics',
  '/.well-known/openid-configuration', '/openid/v1/jwks', '/logs/',
];

function buildRequests(): Req[] {
  const out: Req[] = [];
  let k = 0; // rotates namespaces, names, queries, trailing slashes
  const add = (method: string, path: string, query = '') => {
    k++;
    if (k % 7 === 0 && !path.endsWith('/')) path += '/'; // trailing slash now and then
    out.push({ method, path, query, full: query ? path + '?' + query : path });
  };
  const pick = <T>(xs: readonly T[], salt = 0): T => xs[(k + salt) % xs.length];

  const seen = new Set<string>();
  const resources: { g: string; v: string; r: APIResourceDiscovery }[] = [];
  for (const groups of [local, peer]) {
    for (const group of groups) {
      const g = group.metadata.name ?? '';
      for (const ver of group.versions ?? []) {
        for (const r of ver.resources ?? []) {
          const key = g + '/' + ver.version + '/' + r.resource;
          if (seen.has(key)) continue;
          seen.add(key);
          resources.push({ g, v: ver.version, r });
        }
      }
    }
  }
  // A few GVRs nobody serves (a CRD newer than the snapshot, a typo): decide → notFound.
  for (const [g, v, r] of [['example.com', 'v1', 'widgets'], ['apps', 'v9', 'deployments'], ['', 'v1', 'nosuchthings']] as const) {
    resources.push({ g, v, r: { resource: r, scope: 'Namespaced', singularResource: '', verbs: ['get', 'list', 'watch', 'create'] } });
  }

  for (const { g, v, r } of resources) {
    const prefix = g === '' ? `/api/${v}` : `/apis/${g}/${v}`;
    const namespaced = r.scope === 'Namespaced';
    const ns = () => (namespaced ? `/namespaces/${pick(NAMESPACES)}` : '');
    const coll = () => `${prefix}${ns()}/${r.resource}`;
    const item = () => `${coll()}/${pick(NAMES, 3)}`;
    for (const verb of r.verbs ?? []) {
      switch (verb) {
        case 'get':
          add('GET', item());
          break;
        case 'list':
          add('GET', coll(), pick(LIST_QUERIES));
          add('GET', coll(), pick(LIST_QUERIES, 2));
          if (namespaced) add('GET', `${prefix}/${r.resource}`, pick(LIST_QUERIES, 4)); // all namespaces
          break;
        case 'watch':
          add('GET', coll(), pick(WATCH_QUERIES));
          add('GET', `${prefix}/watch${ns()}/${r.resource}`, 'resourceVersion=12345');
          add('GET', `${prefix}/watch${ns()}/${r.resource}/${pick(NAMES)}`);
          break;
        case 'create':
          add('POST', coll(), k % 3 === 0 ? 'fieldManager=kubectl-client-side-apply&fieldValidation=Strict' : '');
          break;
        case 'update':
          add('PUT', item());
          break;
        case 'patch':
          add('PATCH', item(), k % 2 === 0 ? 'fieldManager=kubectl&force=true' : '');
          break;
        case 'delete':
          add('DELETE', item());
          break;
        case 'deletecollection':
          add('DELETE', coll(), 'labelSelector=app%3Dold');
          break;
      }
    }
    for (const sub of r.subresources ?? []) {
      for (const verb of sub.verbs ?? []) {
        const method = verb === 'get' ? 'GET' : verb === 'update' ? 'PUT' : verb === 'patch' ? 'PATCH' : verb === 'create' ? 'POST' : verb === 'delete' ? 'DELETE' : '';
        if (method === '') continue;
        const q = sub.subresource === 'log' ? 'container=app&follow=true&tailLines=100' : sub.subresource === 'exec' ? 'command=sh&stdin=true&tty=true' : '';
        add(method, `${item()}/${sub.subresource}`, q);
      }
    }
  }
  for (let i = 0; i < 3; i++) {
    for (const p of NON_RESOURCE) {
      const q = p.indexOf('?');
      add(i === 2 ? 'HEAD' : 'GET', q === -1 ? p : p.slice(0, q), q === -1 ? '' : p.slice(q + 1));
    }
  }
  // Fixed-seed shuffle (mulberry32).
  let seed = 0x9e3779b9;
  const rnd = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

const REQS = buildRequests();
const N = REQS.length;
if (N < 1000) throw new Error(`only ${N} request targets built; want ≥ 1000`);
const PARSED: (RequestInfo | RequestInfoError)[] = REQS.map((q) => newRequestInfo(q.method, q.path, q.query, table.names, false));

const ACCEPTS = [
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json',
  'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json',
  'application/json, */*',
  'application/json',
  '*/*',
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer',
];

// ---------------------------------------------------------------------------------------------
// Variants: one function each, so each gets its own optimized loop; each returns a sink value.

function runA(reps: number): number {
  let s = 0;
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < N; i++) {
      const q = REQS[i];
      s += decide(newRequestInfo(q.method, q.path, q.query, table.names, false), undefined, table).kind.length;
    }
  }
  return s;
}

function runParse(reps: number): number {
  let s = 0;
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < N; i++) {
      const q = REQS[i];
      const info = newRequestInfo(q.method, q.path, q.query, table.names, false);
      s += info instanceof Error ? 1 : info.verb.length;
    }
  }
  return s;
}

function runB(reps: number): number {
  let s = 0;
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < N; i++) s += new URL(REQS[i].full, 'http://x').pathname.length;
  }
  return s;
}

function runC(reps: number): number {
  let s = 0;
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < N; i++) {
      const q = REQS[i];
      s += decideFlat(newRequestInfo(q.method, q.path, q.query, table.names, false), undefined, flat).kind.length;
    }
  }
  return s;
}

function runLookupNested(reps: number): number {
  let s = 0;
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < N; i++) s += decide(PARSED[i] as RequestInfo, undefined, table).kind.length;
  }
  return s;
}

function runLookupFlat(reps: number): number {
  let s = 0;
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < N; i++) s += decideFlat(PARSED[i], undefined, flat).kind.length;
  }
  return s;
}

// (a~): the same as (a) with every query dropped, so (a) − (a~) is what list/watch queries cost
// (url.ParseQuery and DecodeParameters' validation, requestinfo.ts listOrWatch).
const NO_QUERY = REQS.map((q) => ({ ...q, query: '' }));

function runNoQuery(reps: number): number {
  let s = 0;
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < N; i++) {
      const q = NO_QUERY[i];
      s += decide(newRequestInfo(q.method, q.path, q.query, table.names, false), undefined, table).kind.length;
    }
  }
  return s;
}

// (f): a floor for (a) in JavaScript, the work no RequestInfo can skip. Every character of path and
// query read once with charCodeAt (the control-byte check Go's url.parse makes on the whole target),
// an object of RequestInfo's shape with substrings as long as the request's group, version,
// namespace, resource and name, and one Map.get on the resource. Parsing decides nothing here: the
// lengths come from PARSED.
const FLOOR_RESOURCES = new Map<string, number>();
for (const p of PARSED) if (!(p instanceof Error) && p.resource !== '') FLOOR_RESOURCES.set(p.resource, p.resource.length);

function hasCTL(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

function runFloor(reps: number): number {
  let s = 0;
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < N; i++) {
      const q = REQS[i];
      const p = PARSED[i] as RequestInfo;
      if (hasCTL(q.path) || hasCTL(q.query)) s++;
      const path = q.path;
      const o: RequestInfo = {
        isResourceRequest: p.isResourceRequest,
        path,
        verb: p.verb,
        apiPrefix: p.apiPrefix,
        apiGroup: path.substring(1, 1 + p.apiGroup.length),
        apiVersion: path.substring(2, 2 + p.apiVersion.length),
        namespace: path.substring(3, 3 + p.namespace.length),
        resource: path.substring(4, 4 + p.resource.length),
        subresource: p.subresource,
        name: path.substring(5, 5 + p.name.length),
      };
      kept = o;
      s += FLOOR_RESOURCES.get(o.resource) ?? 0;
    }
  }
  return s;
}

function runAccept(reps: number): number {
  let s = 0;
  const n = ACCEPTS.length;
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < N; i++) s += negotiateDiscovery(ACCEPTS[i % n])?.encoding.length ?? 0;
  }
  return s;
}

type AllocRow = 'a' | 'b' | 'c' | 'lookup' | 'flatlookup' | 'shape';

/** Same loops over a slice of the requests, for allocation batches. */
// Results are stored here so that escape analysis cannot remove an allocation that, in the real
// handler, outlives the call (handleClient hands the RequestInfo to the upstream callbacks).
let kept: unknown = null;

function sliceOf(fn: AllocRow, start: number, count: number): number {
  let s = 0;
  for (let j = 0; j < count; j++) {
    const i = (start + j) % N;
    const q = REQS[i];
    switch (fn) {
      case 'a': {
        const info = newRequestInfo(q.method, q.path, q.query, table.names, false);
        kept = info;
        s += decide(info, undefined, table).kind.length;
        break;
      }
      case 'b': {
        const u = new URL(q.full, 'http://x');
        kept = u;
        s += u.pathname.length;
        break;
      }
      case 'c': {
        const info = newRequestInfo(q.method, q.path, q.query, table.names, false);
        kept = info;
        s += decideFlat(info, undefined, flat).kind.length;
        break;
      }
      case 'lookup':
        s += decide(PARSED[i] as RequestInfo, undefined, table).kind.length;
        break;
      case 'flatlookup':
        s += decideFlat(PARSED[i], undefined, flat).kind.length;
        break;
      case 'shape': {
        // An object of RequestInfo's shape made from strings that already exist: the floor for (a).
        const o: RequestInfo = { isResourceRequest: true, path: q.path, verb: q.method, apiPrefix: 'apis', apiGroup: q.query, apiVersion: 'v1', namespace: '', resource: q.path, subresource: '', name: '' };
        kept = o;
        s += o.path.length;
        break;
      }
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Timing

let sink = 0;
const reps = Math.max(1, Math.round(ITERS / N));
const calls = reps * N;

interface Row {
  id: string;
  label: string;
  fn: (reps: number) => number;
  ns: number[];
  bytes?: number;
}

const rows: Row[] = [
  { id: '(a)', label: 'newRequestInfo + decide (route table)', fn: runA, ns: [] },
  { id: '(b)', label: "new URL(path?query, 'http://x')", fn: runB, ns: [] },
  { id: '(c)', label: 'newRequestInfo + flat Map "g/v/r" key', fn: runC, ns: [] },
  { id: '(a0)', label: 'newRequestInfo only', fn: runParse, ns: [] },
  { id: '(a-)', label: 'decide only (pre-parsed)', fn: runLookupNested, ns: [] },
  { id: '(c-)', label: 'flat key build + Map.get only (pre-parsed)', fn: runLookupFlat, ns: [] },
  { id: '(a~)', label: '(a) with every query dropped', fn: runNoQuery, ns: [] },
  { id: '(f)', label: 'floor: read path+query once, object, 1 Map.get', fn: runFloor, ns: [] },
  { id: '(e)', label: 'negotiateDiscovery(Accept), 6 headers', fn: runAccept, ns: [] },
];

function timeOnce(fn: (reps: number) => number): number {
  const t0 = process.hrtime.bigint();
  sink += fn(reps);
  return Number(process.hrtime.bigint() - t0) / calls;
}

// ---------------------------------------------------------------------------------------------
// Allocation

type GC = (opts?: { type?: 'minor' | 'major' }) => void;

function getGC(): GC | undefined {
  const g = (globalThis as { gc?: GC }).gc;
  if (typeof g === 'function') return g;
  try {
    v8.setFlagsFromString('--expose-gc');
    return vm.runInNewContext('gc') as GC;
  } catch {
    return undefined;
  }
}

const heapUsed = () => v8.getHeapStatistics().used_heap_size;

/** Median bytes per call over batches of ALLOC_BATCH calls, each started after a minor GC. */
function bytesPerCall(gc: GC | undefined, fn: AllocRow | 'empty', totalCalls: number): number {
  const batches = Math.max(5, Math.round(totalCalls / ALLOC_BATCH));
  const per: number[] = [];
  let start = 0;
  for (let b = 0; b < batches; b++) {
    if (gc) gc({ type: 'minor' });
    const before = heapUsed();
    if (fn !== 'empty') sink += sliceOf(fn, start, ALLOC_BATCH);
    const after = heapUsed();
    start = (start + ALLOC_BATCH) % N;
    const d = after - before;
    if (d >= 0) per.push(d); // a negative delta means a GC ran inside the batch: not a measurement
  }
  return median(per) / ALLOC_BATCH;
}

// ---------------------------------------------------------------------------------------------

function main(): void {
  const started = performance.now();
  const counts = { resource: 0, nonResource: 0, local: 0, peer: 0, notFound: 0, unavailable: 0, error: 0 };
  for (const info of PARSED) {
    if (info instanceof Error) counts.error++;
    else if (info.isResourceRequest) counts.resource++;
    else counts.nonResource++;
    const d = decide(info, undefined, table);
    if (d.kind === 'local') counts.local++;
    else counts[d.kind]++;
  }
  // (a) and (c) must give the same (shared, frozen) decision for every request, or comparing them is meaningless.
  for (let i = 0; i < N; i++) {
    const a = decide(PARSED[i], undefined, table);
    const c = decideFlat(PARSED[i], undefined, flat);
    if (a !== c) throw new Error(`variants disagree on ${REQS[i].method} ${REQS[i].full}`);
  }
  console.log(
    `hotpath: ${N} request targets (${counts.resource} resource, ${counts.nonResource} non-resource, ${counts.error} RequestInfo errors; ` +
      `decide → local ${counts.local}, peer ${counts.peer}, notFound ${counts.notFound}, unavailable ${counts.unavailable}); ` +
      `route table ${table.size} GVRs`,
  );
  console.log(`${RUNS} interleaved runs × ${calls.toLocaleString('en-US')} calls per row${QUICK ? ' (--quick)' : ''}; (d) find-my-way: not installed, skipped`);

  // Warm-up: let every loop reach optimized code before anything is timed.
  const warmReps = Math.max(1, Math.round((QUICK ? 5_000 : 50_000) / N));
  for (const r of rows) for (let i = 0; i < 3; i++) sink += r.fn(warmReps);

  for (let run = 0; run < RUNS; run++) for (const r of rows) r.ns.push(timeOnce(r.fn));

  const gc = getGC();
  const byId = new Map(rows.map((r) => [r.id, r]));
  const empty = bytesPerCall(gc, 'empty', ALLOC_CALLS / 10); // the measurement's own overhead
  const alloc = (fn: AllocRow, calls: number) => Math.max(0, bytesPerCall(gc, fn, calls) - empty);
  byId.get('(a)')!.bytes = alloc('a', ALLOC_CALLS);
  byId.get('(b)')!.bytes = alloc('b', ALLOC_CALLS / 10);
  byId.get('(c)')!.bytes = alloc('c', ALLOC_CALLS / 10);
  byId.get('(a-)')!.bytes = alloc('lookup', ALLOC_CALLS / 10);
  byId.get('(c-)')!.bytes = alloc('flatlookup', ALLOC_CALLS / 10);
  const shapeBytes = alloc('shape', ALLOC_CALLS / 10);

  printTable(
    `\nhotpath: ns per request, median of ${RUNS} runs (min–max); bytes per request, median of ${ALLOC_BATCH}-call batches after a minor GC`,
    ['row', 'what', 'median ns', 'min', 'max', 'bytes/req'],
    rows.map((r) => [r.id, r.label, median(r.ns), Math.min(...r.ns), Math.max(...r.ns), r.bytes ?? '-']),
  );
  const a = median(byId.get('(a)')!.ns);
  const b = median(byId.get('(b)')!.ns);
  const c = median(byId.get('(c)')!.ns);
  // Per-run ratios too: both rows ran back to back in each run, so these see the same noise.
  const perRun = byId.get('(a)')!.ns.map((x, i) => x / byId.get('(b)')!.ns[i]);
  console.log('');
  console.log(
    `ratio (a)/(b) = ${(a / b).toFixed(2)}  (ratio of the medians; paired per-run ratios ${perRun.map((x) => x.toFixed(2)).join(' ')}, median ${median(perRun).toFixed(2)}; ` +
      `target ≤ 1.00: ${a <= b ? 'met' : 'NOT met'})`,
  );
  const noQuery = median(byId.get('(a~)')!.ns);
  const floor = median(byId.get('(f)')!.ns);
  console.log(
    `ratio (f)/(b) = ${(floor / b).toFixed(2)}  (the JavaScript floor against new URL()); (a~)/(b) = ${(noQuery / b).toFixed(2)} ` +
      `(path only); list/watch queries ${(a - noQuery).toFixed(0)} ns of (a)'s ${a.toFixed(0)} on average`,
  );
  console.log(`ratio (c)/(a) = ${(c / a).toFixed(2)}  (flat string-keyed Map vs the route table, whole path)`);
  console.log(
    `allocation: (a) ${byId.get('(a)')!.bytes!.toFixed(0)} B/request vs ${shapeBytes.toFixed(0)} B for a RequestInfo-shaped object alone` +
      `${gc ? '' : ' (no gc available: batches may include a scavenge, figures approximate)'}; decide() alone ${byId.get('(a-)')!.bytes!.toFixed(0)} B`,
  );
  console.log(`hotpath total ${((performance.now() - started) / 1000).toFixed(1)} s${sink === 42 && kept === null ? ' ' : ''}`);
}

main();
