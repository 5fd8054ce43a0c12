// Summarizes a V8 .cpuprofile (node --cpu-prof): top functions by self time, by inclusive time,
// and self time by package (mvproxy src/, undici, uWS native, node internals, GC, idle).
//
//   node --import tsx bench/profile.ts FILE.cpuprofile [--top 25]

import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface FunctionCost {
  fn: string;
  where: string;
  package: string;
  selfMs: number;
  selfPct: number;
  totalMs: number;
  totalPct: number;
}

export interface ProfileSummary {
  file: string;
  durationMs: number;
  /** Share of samples that were not idle. */
  busyPct: number;
  bySelf: FunctionCost[];
  byTotal: FunctionCost[];
  byPackage: { package: string; selfMs: number; pct: number }[];
}

const ROOT = relative('/', __dirname + '/..');

function packageOf(cf: CallFrame): string {
  const u = cf.url;
  const n = cf.functionName;
  if (n === '(idle)') return '(idle)';
  if (n === '(garbage collector)') return '(gc)';
  if (n === '(program)') return '(program: native, not attributed)';
  if (n === '(root)') return '(root)';
  if (!u) return 'native (uWS, builtins)';
  if (u.startsWith('node:')) return 'node internals';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u);
  if (nm) return nm[1]!;
  const src = /\/(?:src|bench\/\.build\/src)\/([^/]+)\//.exec(u);
  if (src) return `mvproxy src/${src[1]}`;
  return u.replace(/^file:\/\//, '').replace('/' + ROOT + '/', '');
}

function whereOf(cf: CallFrame): string {
  if (!cf.url) return '';
  const u = cf.url.replace(/^file:\/\//, '').replace('/' + ROOT + '/', '').replace(/^.*node_modules\//, '');
  return `${u}:${cf.lineNumber + 1}`;
}

/**
 * @param window only the samples taken in [fromUs, toUs], on the profile's own clock (V8's
 *   TimeTicks: CLOCK_MONOTONIC on Linux, as process.hrtime), e.g. one phase of a longer run
 */
export function summarizeProfile(file: string, top = 25, window?: { fromUs: number; toUs: number }): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  for (const n of p.nodes) byId.set(n.id, n);
  const self = new Map<number, number>();
  let at = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    at += p.timeDeltas[i] ?? 0;
    if (window && (at < window.fromUs || at > window.toUs)) continue;
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
  }
  const key = (cf: CallFrame) => `${cf.functionName || '(anonymous)'}\u0000${whereOf(cf)}`;
  const fnSelf = new Map<string, number>();
  const fnTotal = new Map<string, number>();
  const fnFrame = new Map<string, CallFrame>();
  let total = 0;
  let idle = 0;
  for (const [id, ms] of self) {
    const cf = byId.get(id)!.callFrame;
    total += ms;
    if (cf.functionName === '(idle)') idle += ms;
    const k = key(cf);
    fnSelf.set(k, (fnSelf.get(k) ?? 0) + ms);
    fnFrame.set(k, cf);
  }
  // Inclusive time: each node's subtree, counted once per function along a stack (recursion).
  const root = p.nodes[0]!;
  const stack: string[] = [];
  const visit = (n: ProfileNode): number => {
    const k = key(n.callFrame);
    fnFrame.set(k, n.callFrame);
    stack.push(k);
    let t = self.get(n.id) ?? 0;
    for (const c of n.children ?? []) t += visit(byId.get(c)!);
    stack.pop();
    if (!stack.includes(k)) fnTotal.set(k, (fnTotal.get(k) ?? 0) + t);
    return t;
  };
  visit(root);
  const busy = total - idle;
  const cost = (k: string): FunctionCost => {
    const cf = fnFrame.get(k)!;
    const s = fnSelf.get(k) ?? 0;
    const t = fnTotal.get(k) ?? 0;
    return { fn: cf.functionName || '(anonymous)', where: whereOf(cf), package: packageOf(cf), selfMs: s, selfPct: busy > 0 ? (s / busy) * 100 : 0, totalMs: t, totalPct: busy > 0 ? (t / busy) * 100 : 0 };
  };
  const skip = new Set(['(idle)', '(root)']);
  const fns = [...fnFrame.keys()].filter((k) => !skip.has(fnFrame.get(k)!.functionName));
  const pk = new Map<string, number>();
  for (const k of fnSelf.keys()) {
    const cf = fnFrame.get(k)!;
    if (skip.has(cf.functionName)) continue;
    const name = packageOf(cf);
    pk.set(name, (pk.get(name) ?? 0) + (fnSelf.get(k) ?? 0));
  }
  return {
    file,
    durationMs: window ? (Math.min(window.toUs, p.endTime) - Math.max(window.fromUs, p.startTime)) / 1000 : (p.endTime - p.startTime) / 1000,
    busyPct: total > 0 ? (busy / total) * 100 : 0,
    bySelf: fns.map(cost).sort((a, b) => b.selfMs - a.selfMs).slice(0, top),
    byTotal: fns
      .map(cost)
      .filter((c) => c.fn !== '(program)' && c.fn !== '(garbage collector)')
      .sort((a, b) => b.totalMs - a.totalMs)
      .slice(0, top),
    byPackage: [...pk].map(([k, v]) => ({ package: k, selfMs: v, pct: busy > 0 ? (v / busy) * 100 : 0 })).sort((a, b) => b.selfMs - a.selfMs),
  };
}

export function printProfile(s: ProfileSummary): string {
  const L: string[] = [];
  L.push(`${s.file}: ${(s.durationMs / 1000).toFixed(1)} s profiled, ${s.busyPct.toFixed(0)} % busy; shares below are of busy time`);
  L.push('self time by package:');
  for (const p of s.byPackage.slice(0, 14)) L.push(`  ${p.pct.toFixed(1).padStart(5)} %  ${p.package}`);
  L.push('top functions by self time:');
  for (const f of s.bySelf) L.push(`  ${f.selfPct.toFixed(1).padStart(5)} %  ${f.fn}  ${f.where}`);
  L.push('top functions by inclusive time:');
  for (const f of s.byTotal.slice(0, 15)) L.push(`  ${f.totalPct.toFixed(1).padStart(5)} %  ${f.fn}  ${f.where}`);
  return L.join('\n');
}

if (require.main === module) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: profile.ts FILE.cpuprofile [--top N]\n');
    process.exit(2);
  }
  const i = process.argv.indexOf('--top');
  console.log(printProfile(summarizeProfile(file, i === -1 ? 25 : Number(process.argv[i + 1]))));
}
