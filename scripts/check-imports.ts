// `npm run check:imports` (issue 17, item 2): the module graph of src/ has no import cycle and follows
// the stage layering of docs/architecture.md. Every import counts: `import type`, `export … from`,
// `import x = require()`, `require()`, `import()` and `typeof import()` (a type-only cycle still
// couples the modules, and it turns into a runtime one as soon as a value is added to it).
// Only relative specifiers are followed; packages and node: builtins are not modules of src/.
//
//   node --import tsx scripts/check-imports.ts
//
// Checked: (a) no cycle among the modules of src/, nor among its folders (cli -> config -> cli);
// (b) a stage folder imports no later stage (STAGES); (c) a neutral home imports no stage (NEUTRAL), nor does the pipeline off the
// request path (OFF_PATH).
// Prints one line per problem and exits 1; exits 0 with a one-line summary when there is none.
// test/unit/check-imports.test.ts runs checkGraph() on small synthetic graphs.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import ts from 'typescript';

/**
 * The stage folders in the order a request passes them (docs/architecture.md): a module in one may
 * import an earlier stage's module, never a later one's. The one place this order is written down.
 */
export const STAGES = ['src/listener', 'src/request', 'src/discovery', 'src/routing', 'src/upstream', 'src/respond'] as const;

/**
 * Neutral homes: what every stage shares (the wire vocabulary in src/api, the Go standard library
 * ports in src/gocompat, the logger and the metrics registry in src/telemetry). Whole folders, no
 * single-module exceptions (issue 32 item 2): they import no stage folder.
 */
export const NEUTRAL = ['src/api', 'src/gocompat', 'src/telemetry'] as const;

/**
 * Off the request path, read by it: the discovery pipeline (src/aggregation) builds what the
 * discovery stage serves and the route table reads; it imports no stage folder either, so the
 * stages can import its shapes without a cycle.
 */
export const OFF_PATH = ['src/aggregation'] as const;

/** One import of a module: the imported module (a repository-relative path) and the line it is on. */
export interface Edge {
  to: string;
  line?: number;
}

/** Module (repository-relative path such as 'src/routing/decide.ts') -> the src/ modules it imports. */
export type Graph = ReadonlyMap<string, readonly Edge[]>;

/** The stage number (0-based index into STAGES) of a module, or -1 if it is in no stage folder. */
export function stageOf(module: string): number {
  return STAGES.findIndex((s) => module.startsWith(s + '/'));
}

const inFolder = (folders: readonly string[], module: string): boolean => folders.some((f) => module.startsWith(f + '/'));

export function isNeutral(module: string): boolean {
  return inFolder(NEUTRAL, module);
}

const stageName = (i: number): string => `stage ${i + 1} ${STAGES[i]!.slice('src/'.length)}`;
const at = (from: string, e: Edge): string => (e.line === undefined ? from : `${from}:${e.line}`);

/** Every problem in the graph, one line each: layering first (in module order), then cycles. */
export function checkGraph(graph: Graph): string[] {
  const problems: string[] = [];
  const modules = [...graph.keys()].sort();
  for (const from of modules) {
    const fromStage = stageOf(from);
    for (const e of graph.get(from)!) {
      const toStage = stageOf(e.to);
      if (toStage < 0) continue;
      if (isNeutral(from)) {
        problems.push(`neutral home imports a stage: ${at(from, e)} imports ${e.to} (${stageName(toStage)})`);
      } else if (inFolder(OFF_PATH, from)) {
        problems.push(`off the request path, imports a stage: ${at(from, e)} imports ${e.to} (${stageName(toStage)})`);
      } else if (fromStage >= 0 && toStage > fromStage) {
        problems.push(`later stage: ${at(from, e)} (${stageName(fromStage)}) imports ${e.to} (${stageName(toStage)})`);
      }
    }
  }
  for (const cycle of findCycles(graph)) problems.push(`cycle: ${cycle.join(' -> ')}`);
  problems.push(...folderCycles(graph));
  return problems;
}

/**
 * The part of src/ a module belongs to: its top folder under src/ (src/cli, src/discovery, …), else
 * the module itself (src/main.ts).
 */
export function folderOf(module: string): string {
  const parts = module.split('/');
  return parts.length > 2 ? parts.slice(0, 2).join('/') : module;
}

/**
 * Cycles between folders (cli -> config -> cli), import cycles too even when no single module is
 * on one: two folders that import each other cannot be read, tested or moved one without the
 * other. A plain top-folder count: every import between two folders is an edge, none excepted
 * (issue 32). Each step names one import that makes it.
 */
function folderCycles(graph: Graph): string[] {
  const folders = new Map<string, Edge[]>();
  const because = new Map<string, string>();
  for (const from of [...graph.keys()].sort()) {
    const f = folderOf(from);
    if (!folders.has(f)) folders.set(f, []);
    for (const e of graph.get(from)!) {
      const t = folderOf(e.to);
      if (t === f) continue;
      if (!folders.has(t)) folders.set(t, []);
      if (!because.has(`${f}\0${t}`)) {
        because.set(`${f}\0${t}`, `${at(from, e)} imports ${e.to}`);
        folders.get(f)!.push({ to: t });
      }
    }
  }
  return findCycles(folders).map((c) => {
    const steps = c.slice(0, -1).map((f, i) => because.get(`${f}\0${c[i + 1]!}`)!);
    return `folder cycle: ${c.join(' -> ')} (${steps.join('; ')})`;
  });
}

/**
 * The import cycles, each as a path that starts and ends with the same module. Within each strongly
 * connected component (Tarjan), cycles are listed until every import inside the component is on
 * one: a shortest cycle through the first import not yet covered, repeatedly. So every import that
 * takes part in a cycle is shown, without listing the (possibly exponentially many) elementary cycles.
 */
export function findCycles(graph: Graph): string[][] {
  const targets = (m: string): string[] => [...new Set((graph.get(m) ?? []).map((e) => e.to))].sort();
  const cycles: string[][] = [];
  for (const scc of stronglyConnected(graph, targets)) {
    const inScc = new Set(scc);
    const edges: [string, string][] = [];
    for (const m of [...scc].sort()) for (const t of targets(m)) if (inScc.has(t)) edges.push([m, t]);
    if (scc.length === 1 && edges.length === 0) continue; // a single module that does not import itself
    const covered = new Set<string>();
    for (const [u, v] of edges) {
      if (covered.has(`${u}\0${v}`)) continue;
      // Shortest path v ~> u inside the component, then the import u -> v closes the cycle.
      const prev = new Map<string, string>([[v, v]]);
      const queue = [v];
      while (queue.length > 0 && !prev.has(u)) {
        const m = queue.shift()!;
        for (const t of targets(m)) {
          if (!inScc.has(t) || prev.has(t)) continue;
          prev.set(t, m);
          queue.push(t);
        }
      }
      const path = [u];
      for (let m = u; m !== v; m = prev.get(m)!) path.push(prev.get(m)!);
      path.reverse(); // v … u
      const cycle = [u, ...path];
      for (let i = 0; i + 1 < cycle.length; i++) covered.add(`${cycle[i]}\0${cycle[i + 1]}`);
      cycles.push(rotate(cycle));
    }
  }
  return cycles;
}

/** The same cycle, starting (and ending) at its alphabetically first module: a stable way to print it. */
function rotate(cycle: string[]): string[] {
  const ring = cycle.slice(0, -1);
  let first = 0;
  for (let i = 1; i < ring.length; i++) if (ring[i]! < ring[first]!) first = i;
  const out = [...ring.slice(first), ...ring.slice(0, first)];
  return [...out, out[0]!];
}

/** Tarjan's strongly connected components, iterative (src/ is deep enough to make recursion a risk). */
function stronglyConnected(graph: Graph, targets: (m: string) => string[]): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  let next = 0;
  for (const root of [...graph.keys()].sort()) {
    if (index.has(root)) continue;
    const work: { m: string; ts: string[]; i: number }[] = [];
    const enter = (m: string): void => {
      index.set(m, next);
      low.set(m, next++);
      stack.push(m);
      onStack.add(m);
      work.push({ m, ts: targets(m), i: 0 });
    };
    enter(root);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      if (top.i < top.ts.length) {
        const t = top.ts[top.i++]!;
        if (!index.has(t)) enter(t);
        else if (onStack.has(t)) low.set(top.m, Math.min(low.get(top.m)!, index.get(t)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.m;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.m)!));
      }
      if (low.get(top.m) === index.get(top.m)) {
        const scc: string[] = [];
        let m: string;
        do {
          m = stack.pop()!;
          onStack.delete(m);
          scc.push(m);
        } while (m !== top.m);
        out.push(scc);
      }
    }
  }
  return out;
}

/** The .ts modules under dir (repository-relative, '/'-separated), declaration files excluded. */
function modulesUnder(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir)).sort()) {
    const rel = posix.join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) out.push(...modulesUnder(root, rel));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** A relative specifier resolved as tsconfig's NodeNext does for this CommonJS package. */
function resolveSpecifier(root: string, from: string, spec: string): string | undefined {
  const base = posix.normalize(posix.join(posix.dirname(from), spec));
  const stem = base.replace(/\.(js|ts)$/, '');
  for (const c of [`${stem}.ts`, `${base}/index.ts`]) if (existsSync(join(root, c)) && statSync(join(root, c)).isFile()) return c;
  if (existsSync(join(root, base)) && statSync(join(root, base)).isFile()) return base; // .json and the like: not a module of the graph
  return undefined;
}

/**
 * The import graph of src/ under root. Imports leaving src/ are dropped; a relative import that
 * resolves to nothing is returned in `unresolved` (a checker that skipped it could pass silently).
 */
export function buildGraph(root: string): { graph: Map<string, Edge[]>; unresolved: string[] } {
  const graph = new Map<string, Edge[]>();
  const unresolved: string[] = [];
  for (const module of modulesUnder(root, 'src')) {
    const text = readFileSync(join(root, module), 'utf8');
    const edges: Edge[] = [];
    const seen = new Set<string>();
    for (const f of ts.preProcessFile(text, true, true).importedFiles) {
      if (!f.fileName.startsWith('./') && !f.fileName.startsWith('../')) continue;
      const line = text.slice(0, f.pos).split('\n').length;
      const to = resolveSpecifier(root, module, f.fileName);
      if (to === undefined) unresolved.push(`unresolved import: ${module}:${line} '${f.fileName}'`);
      else if (to.startsWith('src/') && to.endsWith('.ts') && !seen.has(to)) {
        seen.add(to);
        edges.push({ to, line });
      }
    }
    graph.set(module, edges);
  }
  return { graph, unresolved };
}

function main(): number {
  const { graph, unresolved } = buildGraph(dirname(__dirname));
  const problems = [...unresolved, ...checkGraph(graph)];
  for (const p of problems) console.log(p);
  const imports = [...graph.values()].reduce((n, es) => n + es.length, 0);
  if (problems.length > 0) {
    console.error(`check:imports: ${problems.length} problem(s) in ${graph.size} modules of src/ (${imports} imports)`);
    return 1;
  }
  console.log(`check:imports: ${graph.size} modules of src/, ${imports} imports: no cycle (modules or folders), stages in order, neutral homes import no stage`);
  return 0;
}

if (require.main === module) process.exitCode = main();
