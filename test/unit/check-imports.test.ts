// scripts/check-imports.ts (npm run check:imports): its core, checkGraph(), on small synthetic module
// graphs (module and folder cycles, a later-stage import, a neutral home importing a stage, a clean
// graph), so that a checker that stopped seeing cycles or layering breaks cannot pass in silence;
// and once on this repository's src/ to show that it finds its modules and their imports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildGraph, checkGraph, findCycles, folderOf, isNeutral, stageOf, STAGES, type Edge, type Graph } from '../../scripts/check-imports';

/** { module: [imported modules] } -> Graph (every imported module becomes a node too). */
function graph(g: Record<string, string[]>): Graph {
  const m = new Map<string, Edge[]>();
  for (const [from, tos] of Object.entries(g)) {
    m.set(from, tos.map((to) => ({ to })));
    for (const to of tos) if (!m.has(to) && !(to in g)) m.set(to, []);
  }
  return m;
}

test('the stage order is listener, request, discovery, routing, upstream, respond', () => {
  assert.deepEqual(STAGES, ['src/listener', 'src/request', 'src/discovery', 'src/routing', 'src/upstream', 'src/respond']);
  assert.equal(stageOf('src/listener/uws.ts'), 0);
  assert.equal(stageOf('src/respond/status.ts'), 5);
  assert.equal(stageOf('src/listenerx/a.ts'), -1, 'a folder prefix is not enough');
  assert.equal(stageOf('src/proxy/handler.ts'), -1);
  assert.ok(isNeutral('src/api/errors.ts') && isNeutral('src/gocompat/url.ts') && isNeutral('src/telemetry/log.ts'));
  assert.ok(!isNeutral('src/observability/ops-server.ts'));
});

test('a clean graph has no problem: earlier stages, neutral homes, unranked modules', () => {
  const g = graph({
    'src/proxy/handler.ts': ['src/listener/exchange.ts', 'src/routing/decide.ts', 'src/upstream/forward.ts'],
    'src/upstream/forward.ts': ['src/routing/decide.ts', 'src/api/status.ts', 'src/telemetry/log.ts'],
    'src/routing/decide.ts': ['src/request/requestinfo.ts', 'src/api/headers.ts'],
    'src/request/requestinfo.ts': ['src/gocompat/url.ts'],
    'src/api/headers.ts': [],
    'src/gocompat/url.ts': ['src/gocompat/strconv.ts'],
  });
  assert.deepEqual(checkGraph(g), []);
  assert.deepEqual(findCycles(g), []);
});

test('a cycle is reported with its path', () => {
  const problems = checkGraph(graph({ 'src/cli/flags.ts': ['src/config/load.ts'], 'src/config/load.ts': ['src/config/types.ts'], 'src/config/types.ts': ['src/cli/flags.ts'] }));
  assert.deepEqual(problems, [
    'cycle: src/cli/flags.ts -> src/config/load.ts -> src/config/types.ts -> src/cli/flags.ts',
    'folder cycle: src/cli -> src/config -> src/cli (src/cli/flags.ts imports src/config/load.ts; src/config/types.ts imports src/cli/flags.ts)',
  ]);
  assert.deepEqual(checkGraph(graph({ 'src/a.ts': ['src/a.ts'] })), ['cycle: src/a.ts -> src/a.ts'], 'a module importing itself');
});

test('two cycles sharing a module: every import on a cycle is shown', () => {
  const cycles = findCycles(graph({ 'src/a.ts': ['src/b.ts', 'src/c.ts'], 'src/b.ts': ['src/a.ts'], 'src/c.ts': ['src/a.ts'], 'src/d.ts': ['src/a.ts'] }));
  assert.deepEqual(cycles, [
    ['src/a.ts', 'src/b.ts', 'src/a.ts'],
    ['src/a.ts', 'src/c.ts', 'src/a.ts'],
  ]);
});

test('folders that import each other are a cycle though no module is on one; a plain top-folder count, no module excepted', () => {
  const g = new Map<string, Edge[]>([
    ['src/cli/featuregate.ts', [{ to: 'src/config/types.ts', line: 7 }]],
    ['src/cli/flags.ts', []],
    ['src/config/types.ts', []],
    ['src/config/load.ts', [{ to: 'src/cli/flags.ts', line: 26 }]],
    // observability/ops-server.ts -> listener -> telemetry/log.ts is no cycle: the logger has a folder of its own.
    ['src/observability/ops-server.ts', [{ to: 'src/listener/uws.ts', line: 3 }]],
    ['src/listener/uws.ts', [{ to: 'src/telemetry/log.ts', line: 9 }]],
    ['src/telemetry/log.ts', []],
  ]);
  assert.equal(folderOf('src/telemetry/log.ts'), 'src/telemetry');
  assert.equal(folderOf('src/api/headers.ts'), 'src/api');
  assert.equal(folderOf('src/discovery/codec/proto.ts'), 'src/discovery');
  assert.equal(folderOf('src/main.ts'), 'src/main.ts');
  assert.deepEqual(checkGraph(g), [
    'folder cycle: src/cli -> src/config -> src/cli (src/cli/featuregate.ts:7 imports src/config/types.ts; src/config/load.ts:26 imports src/cli/flags.ts)',
  ]);
  // The layout before issue 32: the logger inside src/observability, declared neutral on its own.
  const before = new Map<string, Edge[]>([
    ['src/observability/ops-server.ts', [{ to: 'src/listener/uws.ts', line: 3 }]],
    ['src/listener/uws.ts', [{ to: 'src/observability/log.ts', line: 9 }]],
    ['src/observability/log.ts', []],
  ]);
  assert.deepEqual(checkGraph(before), ['folder cycle: src/listener -> src/observability -> src/listener (src/listener/uws.ts:9 imports src/observability/log.ts; src/observability/ops-server.ts:3 imports src/listener/uws.ts)']);
});

test('a later-stage import that closes a folder cycle is reported as both', () => {
  const problems = checkGraph(graph({ 'src/listener/exchange.ts': ['src/upstream/headers.ts'], 'src/upstream/forward.ts': ['src/listener/exchange.ts'] }));
  assert.deepEqual(problems, [
    'later stage: src/listener/exchange.ts (stage 1 listener) imports src/upstream/headers.ts (stage 5 upstream)',
    'folder cycle: src/listener -> src/upstream -> src/listener (src/listener/exchange.ts imports src/upstream/headers.ts; src/upstream/forward.ts imports src/listener/exchange.ts)',
  ]);
});

test('a stage importing a later stage is reported; the stage order decides, not the name', () => {
  const problems = checkGraph(
    graph({
      'src/listener/uws.ts': ['src/upstream/forward.ts'],
      'src/discovery/sync.ts': ['src/routing/routetable.ts', 'src/request/accept.ts'],
      'src/respond/status.ts': ['src/listener/exchange.ts'],
    }),
  );
  assert.deepEqual(problems, [
    'later stage: src/discovery/sync.ts (stage 3 discovery) imports src/routing/routetable.ts (stage 4 routing)',
    'later stage: src/listener/uws.ts (stage 1 listener) imports src/upstream/forward.ts (stage 5 upstream)',
  ]);
});

test('a neutral home importing any stage is reported, an earlier one too', () => {
  const g = new Map<string, Edge[]>([
    ['src/api/headers.ts', [{ to: 'src/routing/decide.ts', line: 3 }]],
    ['src/telemetry/metrics.ts', [{ to: 'src/listener/exchange.ts', line: 7 }]],
    ['src/observability/healthz.ts', [{ to: 'src/listener/exchange.ts', line: 1 }]],
    ['src/routing/decide.ts', []],
    ['src/listener/exchange.ts', []],
  ]);
  assert.deepEqual(checkGraph(g), [
    'neutral home imports a stage: src/api/headers.ts:3 imports src/routing/decide.ts (stage 4 routing)',
    'neutral home imports a stage: src/telemetry/metrics.ts:7 imports src/listener/exchange.ts (stage 1 listener)',
  ]);
});

test('the discovery pipeline off the request path importing a stage is reported', () => {
  const g = new Map<string, Edge[]>([
    ['src/aggregation/openapi-index.ts', [{ to: 'src/routing/routetable.ts', line: 4 }, { to: 'src/api/errors.ts', line: 5 }]],
    ['src/routing/routetable.ts', []],
    ['src/api/errors.ts', []],
  ]);
  assert.deepEqual(checkGraph(g), ['off the request path, imports a stage: src/aggregation/openapi-index.ts:4 imports src/routing/routetable.ts (stage 4 routing)']);
});

test('files are read: type-only, re-export, require and typeof import() count; packages and ../ outside src/ do not', () => {
  const root = mkdtempSync(join(tmpdir(), 'check-imports-'));
  try {
    const files: Record<string, string> = {
      'src/routing/decide.ts': "import type { Exchange } from '../listener/exchange';\nexport const x = 1;\n",
      'src/listener/exchange.ts': "import { Agent } from 'undici';\nimport pkg from '../../package.json';\nexport type T = typeof import('../upstream');\n",
      'src/upstream/index.ts': "export * from './forward';\n",
      'src/upstream/forward.ts': "const d = require('../routing/decide.js');\nimport './gone';\n",
      'package.json': '{}',
    };
    for (const [p, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, p)), { recursive: true });
      writeFileSync(join(root, p), text);
    }
    const { graph: g, unresolved } = buildGraph(root);
    assert.deepEqual(Object.fromEntries([...g].map(([m, es]) => [m, es.map((e) => `${e.to}:${e.line}`)])), {
      'src/listener/exchange.ts': ['src/upstream/index.ts:3'],
      'src/routing/decide.ts': ['src/listener/exchange.ts:1'],
      'src/upstream/forward.ts': ['src/routing/decide.ts:1'],
      'src/upstream/index.ts': ['src/upstream/forward.ts:1'],
    });
    assert.deepEqual(unresolved, ["unresolved import: src/upstream/forward.ts:2 './gone'"]);
    assert.deepEqual(checkGraph(g), [
      'later stage: src/listener/exchange.ts:3 (stage 1 listener) imports src/upstream/index.ts (stage 5 upstream)',
      'cycle: src/listener/exchange.ts -> src/upstream/index.ts -> src/upstream/forward.ts -> src/routing/decide.ts -> src/listener/exchange.ts',
      'folder cycle: src/listener -> src/upstream -> src/routing -> src/listener (src/listener/exchange.ts:3 imports src/upstream/index.ts; src/upstream/forward.ts:1 imports src/routing/decide.ts; src/routing/decide.ts:1 imports src/listener/exchange.ts)',
    ]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("this repository's src/ is read: its modules and their relative imports", () => {
  const { graph: g, unresolved } = buildGraph(join(__dirname, '..', '..'));
  assert.ok(g.size > 50, `${g.size} modules`);
  assert.ok(g.has('src/main.ts'));
  const edges = [...g.values()].reduce((n, es) => n + es.length, 0);
  assert.ok(edges > g.size, `${edges} imports`);
  for (const [from, es] of g) for (const e of es) assert.ok(g.has(e.to), `${from} -> ${e.to} is a module of src/`);
  // Another change may leave an import unresolved for a moment; tsc reports that one, not this test.
  for (const u of unresolved) assert.match(u, /^unresolved import: src\/.+:\d+ '\.\.?\//);
});
