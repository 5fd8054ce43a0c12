// Fuzzing the two parsers on the request path with fast-check (issue 8): RequestInfo
// (newRequestInfo: method, raw path, raw query) and discovery Accept negotiation
// (negotiateDiscovery). Bounded: a number of generated inputs (default 1,000,000 in all) and a
// time budget (default 300 s), whichever comes first; the rate is printed as it runs.
//
// Checks, for every input: no exception escapes; the result has the documented shape (RequestInfo
// or a RequestInfoError with a stable code; a frozen DiscoveryNegotiation or null); and, over the
// long inputs (1 KiB to 64 KiB, log-uniform; adversarial repetitions such as "%%%%", ",,,,",
// "a/b;" and random text), time grows linearly with length: for each input shape, the exponent k
// of time ~ length^k is fitted over its inputs (1 linear, 2 quadratic, n log n ~1.1; above 1.5 is
// flagged), and its ns/char growth from 1–4 KiB to 16–64 KiB reported. Inputs are re-timed (min of
// several runs, so GC pauses do not count); the max/median ratio of ns/char within each length
// bucket is reported too (it mixes shapes of different cost, so it is not judged).
//
//   node --import tsx scripts/fuzz.ts [--inputs N] [--seconds S] [--seed N]   (or MVPROXY_FUZZ_SEED=N)
//
// Exit status 0 when every check passed within the budget, 1 otherwise (the last line is JSON).
//
// test/security/fuzz.test.ts runs the same harness with 20,000 inputs.

import fc from 'fast-check';
import { newRequestInfo, RequestInfoError } from '../src/request/requestinfo';
import { negotiateDiscovery } from '../src/request/accept';
import { fuzzSeed, seedLine } from '../test/support/fuzz-seed';

export interface FuzzOptions {
  /** Total generated inputs across all targets. */
  inputs: number;
  /** Time budget in seconds; the run stops (and says so) when it is spent. */
  seconds: number;
  seed: number;
  log?: (line: string) => void;
}

export interface TargetReport {
  target: string;
  inputs: number;
  failures: string[];
  /** Long-input timing: buckets by input length. */
  buckets: { range: string; count: number; medianNsPerChar: number; maxOverMedian: number }[];
  /** The largest, over input shapes, of k in time ~ length^k (least squares on the long inputs). */
  exponent: number;
  /** That shape's median ns/char at 16–64 KiB over its median ns/char at 1–4 KiB. */
  growth: number;
  /** The shape with that exponent. */
  worstShape: string;
  quadratic: boolean;
}

export interface FuzzReport {
  inputs: number;
  seconds: number;
  rate: number;
  stoppedByBudget: boolean;
  targets: TargetReport[];
  ok: boolean;
}

// ---------- generators ----------

const SEGMENTS = ['api', 'apis', 'v1', 'v1beta1', 'v2', 'apps', 'batch', 'namespaces', 'default', 'kube-system', 'pods', 'configmaps', 'status', 'finalize', 'watch', 'proxy', 'log', 'exec', 'scale', 'deployments', 'scheduling.k8s.io', 'example.com', '', '.', '..', '%2e%2e', '%2F', '%', '%zz', '%C0%AF', '%e2%82%ac', 'ä', '\u0000', '\u007f', ' ', '+', '?', '#', ';'];

const pathSegment = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...SEGMENTS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
  { weight: 1, arbitrary: fc.stringMatching(/^(%[0-9a-fA-Fg-z]{0,2})+$/) },
);

const structuredPath = fc.tuple(fc.array(pathSegment, { maxLength: 9 }), fc.boolean(), fc.boolean()).map(([segs, lead, trail]) => (lead ? '/' : '') + segs.join('/') + (trail ? '/' : ''));

const QUERY_KEYS = ['watch', 'fieldSelector', 'labelSelector', 'resourceVersion', 'limit', 'continue', 'timeoutSeconds', 'watch%3Dtrue', 'field%53elector', ''];
const QUERY_VALUES = ['true', 'false', '0', '1', 'metadata.name=foo', 'metadata.name%3Dfoo', 'metadata.name==foo', 'metadata.name=foo,spec.x=y', 'metadata.name!=foo', '%', '%zz', '+', 'a+b', ''];
const queryPair = fc.tuple(fc.oneof(fc.constantFrom(...QUERY_KEYS), fc.string({ maxLength: 8 })), fc.oneof(fc.constantFrom(...QUERY_VALUES), fc.string({ maxLength: 16 })), fc.constantFrom('=', '', '==')).map(([k, v, eq]) => k + eq + v);
const structuredQuery = fc.array(queryPair, { maxLength: 6 }).chain((pairs) => fc.constantFrom('&', ';', '&&').map((sep) => pairs.join(sep)));

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT', 'TRACE', 'get', 'PROPFIND', ''];
const method = fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...METHODS) }, { weight: 1, arbitrary: fc.string({ maxLength: 10 }) });

const requestInfoInput = fc.record({
  method,
  path: fc.oneof({ weight: 5, arbitrary: structuredPath }, { weight: 1, arbitrary: fc.string({ maxLength: 64 }) }, { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) }),
  query: fc.oneof({ weight: 4, arbitrary: structuredQuery }, { weight: 1, arbitrary: fc.string({ maxLength: 64 }) }),
});

const MEDIA_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf', 'application/*', '*/*', 'text/plain', 'application', '*', '', 'application/json;stream=watch', 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf'];
const PARAMS = ['g=apidiscovery.k8s.io', 'v=v2', 'v=v2beta1', 'as=APIGroupDiscoveryList', 'as=Table', 'g=meta.k8s.io', 'v=v1', 'profile=nopeer', 'profile=', 'q=0', 'q=0.5', 'q=1', 'q=1.0', 'q=abc', 'q=0.0000001', 'charset=utf-8', 'a', '=', 'g="apidiscovery.k8s.io"', 'profile="nopeer"', 'v', ''];
const acceptClause = fc.tuple(fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...MEDIA_TYPES) }, { weight: 1, arbitrary: fc.string({ maxLength: 12 }) }), fc.array(fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...PARAMS) }, { weight: 1, arbitrary: fc.string({ maxLength: 8 }) }), { maxLength: 5 }), fc.constantFrom(';', ' ; ', ';;', '\t;')).map(([t, ps, sep]) => [t, ...ps].join(sep));
const structuredAccept = fc.array(acceptClause, { maxLength: 6 }).chain((cs) => fc.constantFrom(',', ', ', ' , ', ',,').map((sep) => cs.join(sep)));
const acceptInput = fc.oneof({ weight: 6, arbitrary: structuredAccept }, { weight: 2, arbitrary: fc.string({ maxLength: 96 }) }, { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) }, { weight: 1, arbitrary: fc.constant(undefined) });

/** Adversarial long inputs: one token repeated to 1–64 KiB (the shapes that make backtracking or rescanning parsers blow up). */
const REQUESTINFO_TOKENS = ['/', '%', '%2', '%25', '%zz', '/.', '/..', 'a/', '//', '/api/v1/namespaces/', 'watch/', '%2F', 'ä'];
const QUERY_TOKENS = ['&', '=', '%', '+', 'watch=true&', 'fieldSelector=metadata.name%3D', 'a=b;', '%25', '&&=='];
const ACCEPT_TOKENS = [',', ';', ' ', 'a/b;', '=', '"', 'q=0.5,', 'application/json;', 'application/json,', ';q=1;', '*/*;q=0.1,', 'a=b;', ';;;', ',;', '\t', 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,'];
/** 1.1 KiB to 64 KiB, log-uniform, so each length bucket gets its share; > 1 KiB: never in negotiateDiscovery's cache. */
const longLength = fc.tuple(fc.integer({ min: 10, max: 15 }), fc.double({ min: 1, max: 2, noNaN: true })).map(([k, f]) => Math.min(64 * 1024, Math.max(1100, Math.floor(2 ** k * f))));
interface Shaped {
  /** Which adversarial shape (for the per-shape growth analysis). */
  shape: string;
  value: string;
}
const repeated = (tokens: string[]): fc.Arbitrary<Shaped> =>
  fc.tuple(fc.constantFrom(...tokens), longLength, fc.string({ maxLength: 8 })).map(([tok, n, tail]) => ({ shape: `repeat ${JSON.stringify(tok)}`, value: tok.repeat(Math.ceil(n / tok.length)).slice(0, n) + tail }));
const longRandom: fc.Arbitrary<Shaped> = longLength.chain((n) => fc.string({ minLength: n, maxLength: n, size: 'max' })).map((value) => ({ shape: 'random', value }));
const longRequestInfoInput = fc.oneof(
  fc.tuple(fc.constantFrom('GET', 'POST', 'DELETE'), repeated(REQUESTINFO_TOKENS)).map(([m, p]) => ({ method: m, path: '/' + p.value, query: '', shape: `path ${p.shape}` })),
  fc.tuple(fc.constantFrom('GET', 'POST', 'DELETE'), longRandom).map(([m, p]) => ({ method: m, path: '/api/v1/' + p.value, query: '', shape: 'path random' })),
  fc.tuple(fc.constantFrom('GET', 'DELETE'), repeated(QUERY_TOKENS)).map(([m, q]) => ({ method: m, path: '/api/v1/namespaces/default/pods', query: q.value, shape: `query ${q.shape}` })),
);
const longAcceptInput = fc.oneof(repeated(ACCEPT_TOKENS), longRandom);

// ---------- checks ----------

const VERBS = new Set(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection', 'proxy', '']);
const ERROR_CODES = new Set(['MVP_ERR_REQUESTINFO_INVALID_ESCAPE', 'MVP_ERR_REQUESTINFO_CONTROL_CHARACTER', 'MVP_ERR_REQUESTINFO_WATCH_PATH', 'MVP_ERR_REQUESTINFO_PROXY_PATH']);
const STRING_FIELDS = ['path', 'verb', 'apiPrefix', 'apiGroup', 'apiVersion', 'namespace', 'resource', 'subresource', 'name'] as const;

function checkRequestInfo(m: string, p: string, q: string): string | null {
  const r = newRequestInfo(m, p, q);
  if (r instanceof RequestInfoError) return ERROR_CODES.has(r.code) ? null : `unknown error code ${JSON.stringify(r.code)}`;
  if (r instanceof Error) return `an Error that is not a RequestInfoError: ${r.message}`;
  if (typeof r !== 'object' || r === null) return `result ${String(r)}`;
  if (typeof r.isResourceRequest !== 'boolean') return 'isResourceRequest is not a boolean';
  for (const f of STRING_FIELDS) if (typeof r[f] !== 'string') return `${f} is ${typeof r[f]}`;
  if (r.isResourceRequest) {
    if (r.apiPrefix !== 'api' && r.apiPrefix !== 'apis') return `resource request with prefix ${JSON.stringify(r.apiPrefix)}`;
    if (r.apiPrefix === 'api' && r.apiGroup !== '') return 'core group with a group name';
    if (!VERBS.has(r.verb)) return `verb ${JSON.stringify(r.verb)}`;
  } else if (r.verb !== m.toLowerCase()) return `non-resource verb ${JSON.stringify(r.verb)} for method ${JSON.stringify(m)}`;
  return null;
}

const KINDS = new Set(['aggregated', 'legacy']);
const VERSIONS = new Set(['v2', 'v2beta1', '']);
const ENCODINGS = new Set(['json', 'yaml', 'protobuf']);

function checkAccept(a: string | undefined): string | null {
  const r = negotiateDiscovery(a);
  if (r === null) return null; // 406
  if (typeof r !== 'object') return `result ${String(r)}`;
  if (!KINDS.has(r.kind) || !VERSIONS.has(r.version) || !ENCODINGS.has(r.encoding) || typeof r.profile !== 'string') return `shape ${JSON.stringify(r)}`;
  if ((r.kind === 'legacy') !== (r.version === '')) return `kind/version mismatch ${JSON.stringify(r)}`;
  if (r.kind === 'legacy' && r.profile !== '') return `legacy answer with a profile ${JSON.stringify(r)}`;
  if (!Object.isFrozen(r)) return 'result not frozen (it is shared between requests)';
  if (a === undefined || a.trim() === '') {
    if (r.kind !== 'legacy' || r.encoding !== 'json') return `empty Accept → ${JSON.stringify(r)}`;
  }
  return null;
}

// ---------- timing ----------

export interface Sample {
  shape: string;
  len: number;
  ns: number;
  rerun: () => void;
}

const BUCKETS: [number, number][] = [
  [1024, 4096],
  [4096, 16384],
  [16384, 65536 + 64],
];

function timeOnce(fn: () => void): number {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0);
}

function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

/**
 * The exponent k of time ~ length^k for one input shape: the median time within each power-of-two
 * length bin (robust against one slow call), then a least-squares fit of log(ns) on log(length)
 * through those medians. NaN when fewer than three bins have two samples.
 */
function fitExponent(ss: readonly Sample[]): number {
  const bins = new Map<number, number[]>();
  for (const x of ss) {
    const b = Math.floor(Math.log2(x.len));
    bins.set(b, [...(bins.get(b) ?? []), x.ns]);
  }
  const pts = [...bins].filter(([, v]) => v.length >= 2).map(([b, v]) => ({ x: Math.log(2 ** (b + 0.5)), y: Math.log(Math.max(1, median(v))) }));
  if (pts.length < 3) return NaN;
  const mx = pts.reduce((a, p) => a + p.x, 0) / pts.length;
  const my = pts.reduce((a, p) => a + p.y, 0) / pts.length;
  let sxy = 0;
  let sxx = 0;
  for (const p of pts) {
    sxy += (p.x - mx) * (p.y - my);
    sxx += (p.x - mx) ** 2;
  }
  return sxy / sxx;
}

export function analyse(samples: Sample[]): Pick<TargetReport, 'buckets' | 'growth' | 'exponent' | 'quadratic' | 'worstShape'> {
  // Re-time every long input twice more (min of three), and the slowest per character five more
  // times: a GC pause during one call must not look like a slow parse.
  const perChar = (s: Sample) => s.ns / s.len;
  for (const s of samples) s.ns = Math.min(s.ns, timeOnce(s.rerun), timeOnce(s.rerun));
  for (const s of [...samples].sort((a, b) => perChar(b) - perChar(a)).slice(0, 20)) for (let i = 0; i < 5; i++) s.ns = Math.min(s.ns, timeOnce(s.rerun));
  const bucketOf = (len: number) => BUCKETS.findIndex(([lo, hi]) => len >= lo && len < hi);

  const buckets: TargetReport['buckets'] = [];
  for (const [i, [lo, hi]] of BUCKETS.entries()) {
    const inB = samples.filter((s) => bucketOf(s.len) === i);
    if (inB.length === 0) continue;
    const med = median(inB.map(perChar));
    buckets.push({ range: `${(lo / 1024).toFixed(0)}–${Math.round(hi / 1024)} KiB`, count: inB.length, medianNsPerChar: Math.round(med * 10) / 10, maxOverMedian: Math.round((Math.max(...inB.map(perChar)) / med) * 10) / 10 });
  }

  // Per input shape (the same kind of input at different lengths; mixing shapes would compare a
  // cheap shape's long inputs with an expensive shape's short ones): the exponent k of time ~ n^k,
  // a least-squares fit of log(ns) on log(length) (1 = linear, 2 = quadratic; n log n fits ~1.1),
  // and the ns/char growth from the 1–4 KiB to the 16–64 KiB bucket.
  let growth = 0;
  let exponent = 0;
  let worstShape = '';
  const shapes = new Map<string, Sample[]>();
  for (const s of samples) shapes.set(s.shape, [...(shapes.get(s.shape) ?? []), s]);
  for (const [shape, ss] of shapes) {
    let k = fitExponent(ss);
    if (!Number.isFinite(k)) continue;
    if (k > 1.5) {
      // Confirm before flagging: a shape with few samples, timed while the JIT was still warming up
      // or during a GC, fits steep (measured: a flat 13–16 ns/char shape once fitted 1.63). Re-time
      // each of its inputs ten more times and fit again.
      for (const x of ss) for (let i = 0; i < 10; i++) x.ns = Math.min(x.ns, timeOnce(x.rerun));
      k = fitExponent(ss);
    }
    const first = median(ss.filter((x) => bucketOf(x.len) === 0).map(perChar));
    const last = median(ss.filter((x) => bucketOf(x.len) === BUCKETS.length - 1).map(perChar));
    if (k > exponent) {
      exponent = k;
      worstShape = shape;
      growth = Number.isFinite(first) && Number.isFinite(last) ? last / first : NaN;
    }
  }
  return { buckets, growth: Math.round(growth * 100) / 100, exponent: Math.round(exponent * 100) / 100, quadratic: exponent > 1.5, worstShape };
}

// ---------- runner ----------

export function runFuzz(o: FuzzOptions): FuzzReport {
  const log = o.log ?? ((l: string) => process.stdout.write(l + '\n'));
  const t0 = Date.now();
  const deadline = t0 + o.seconds * 1000;
  let total = 0;
  let stoppedByBudget = false;
  let lastPrint = t0;
  const progress = () => {
    const now = Date.now();
    if (now - lastPrint >= 5000) {
      lastPrint = now;
      log(`  ${total.toLocaleString('en-US')} inputs, ${Math.round(total / ((now - t0) / 1000)).toLocaleString('en-US')}/s`);
    }
  };

  // Half the inputs each target; of each half, up to 2,000 long ones (1–64 KiB, kept for the
  // timing analysis: memory bounds their number), the rest short (the common case).
  const longShare = Math.min(2000, Math.max(20, Math.round(o.inputs * 0.002)));
  const shortShare = Math.max(1, Math.round(o.inputs / 2) - longShare);
  const plan: { target: 'RequestInfo' | 'Accept'; long: boolean; runs: number }[] = [
    { target: 'RequestInfo', long: false, runs: shortShare },
    { target: 'Accept', long: false, runs: shortShare },
    { target: 'RequestInfo', long: true, runs: longShare },
    { target: 'Accept', long: true, runs: longShare },
  ];
  const reports = new Map<string, { inputs: number; failures: string[]; samples: Sample[] }>([
    ['RequestInfo', { inputs: 0, failures: [], samples: [] }],
    ['Accept', { inputs: 0, failures: [], samples: [] }],
  ]);

  for (const step of plan) {
    const remainingMs = deadline - Date.now();
    if (remainingMs <= 0) {
      stoppedByBudget = true;
      break;
    }
    const rep = reports.get(step.target)!;
    const record = (shape: string, len: number, ns: number, rerun: () => void) => {
      if (step.long) rep.samples.push({ shape, len, ns, rerun });
    };
    const fail = (what: string) => {
      if (rep.failures.length < 20) rep.failures.push(what);
      return false;
    };
    const params = { numRuns: step.runs, seed: o.seed + plan.indexOf(step), interruptAfterTimeLimit: remainingMs, markInterruptAsFailure: false, endOnFailure: true };
    const res: { interrupted: boolean; failed: boolean; counterexample: unknown } =
      step.target === 'RequestInfo'
        ? fc.check(fc.property(step.long ? longRequestInfoInput : requestInfoInput.map((x) => ({ ...x, shape: 'short' })), ({ method: m, path: p, query: q, shape }) => {
            total++;
            rep.inputs++;
            if ((total & 0xfff) === 0) progress();
            let problem: string | null;
            const t = process.hrtime.bigint();
            try {
              problem = checkRequestInfo(m, p, q);
            } catch (e) {
              problem = `threw ${(e as Error).stack ?? String(e)}`;
            }
            record(shape, p.length + q.length, Number(process.hrtime.bigint() - t), () => void newRequestInfo(m, p, q));
            return problem === null || fail(`${problem} ← ${JSON.stringify({ method: m, path: p.slice(0, 200), query: q.slice(0, 200) })}`);
          }), params)
        : fc.check(fc.property(step.long ? longAcceptInput : acceptInput.map((value) => ({ shape: 'short', value })), ({ shape, value: a }) => {
            total++;
            rep.inputs++;
            if ((total & 0xfff) === 0) progress();
            let problem: string | null;
            const t = process.hrtime.bigint();
            try {
              problem = checkAccept(a);
            } catch (e) {
              problem = `threw ${(e as Error).stack ?? String(e)}`;
            }
            record(shape, a?.length ?? 0, Number(process.hrtime.bigint() - t), () => void negotiateDiscovery(a));
            return problem === null || fail(`${problem} ← ${JSON.stringify(a?.slice(0, 300))}`);
          }), params);
    if (res.interrupted) stoppedByBudget = true;
    if (res.failed && res.counterexample) rep.failures.unshift(`counterexample (shrunk): ${JSON.stringify(res.counterexample).slice(0, 600)}`);
    if (stoppedByBudget) break;
  }

  const seconds = (Date.now() - t0) / 1000;
  const targets: TargetReport[] = [...reports].map(([target, r]) => ({ target, inputs: r.inputs, failures: r.failures, ...analyse(r.samples) }));
  return {
    inputs: total,
    seconds: Math.round(seconds * 10) / 10,
    rate: Math.round(total / seconds),
    stoppedByBudget,
    targets,
    ok: targets.every((t) => t.failures.length === 0 && !t.quadratic),
  };
}

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const eq = process.argv.find((a) => a.startsWith(`--${name}=`));
  const v = eq ? eq.split('=')[1] : i >= 0 ? process.argv[i + 1] : undefined;
  const n = v === undefined ? def : Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name}: not a number: ${v}`);
  return n;
}

if (require.main === module) {
  const inputs = arg('inputs', 1_000_000);
  const seconds = arg('seconds', 300);
  // --seed N, else MVPROXY_FUZZ_SEED (as the fuzz tests), else a random one; printed either way.
  const seed = arg('seed', fuzzSeed());
  console.log(`fuzz: RequestInfo and Accept negotiation, ${inputs.toLocaleString('en-US')} inputs, budget ${seconds} s, ${seedLine(seed)}`);
  const r = runFuzz({ inputs, seconds, seed });
  console.log(`done: ${r.inputs.toLocaleString('en-US')} inputs in ${r.seconds} s (${r.rate.toLocaleString('en-US')}/s)${r.stoppedByBudget ? ' — STOPPED BY THE TIME BUDGET' : ''}`);
  for (const t of r.targets) {
    console.log(`${t.target}: ${t.inputs.toLocaleString('en-US')} inputs, ${t.failures.length} failures`);
    for (const f of t.failures) console.log(`  FAIL ${f}`);
    for (const b of t.buckets) console.log(`  long inputs ${b.range}: ${b.count} inputs, median ${b.medianNsPerChar} ns/char, max/median ${b.maxOverMedian}`);
    console.log(`  worst input shape ${t.worstShape}: time ~ length^${t.exponent} (ns/char ×${t.growth} from 1–4 KiB to 16–64 KiB) → ${t.quadratic ? 'SUPERLINEAR (flagged: exponent > 1.5)' : 'linear'}`);
  }
  console.log(JSON.stringify({ inputs: r.inputs, seconds: r.seconds, rate: r.rate, stoppedByBudget: r.stoppedByBudget, ok: r.ok, exponent: Object.fromEntries(r.targets.map((t) => [t.target, t.exponent])) }));
  process.exit(r.ok && !r.stoppedByBudget ? 0 : 1);
}
