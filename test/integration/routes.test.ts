// Route introspection (issue 15 §5): /debug/routes on the ops listener and `mvproxy routes` show,
// for each group/version/resource, local or which peer, and the peers' state; /version answers in
// kube-apiserver's shape.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { DEFAULT_FRONTEND } from '../support/frontends';
import { twoVersionPlane, OLD, NEW } from '../support/plane';
import { ROOT } from '../support/child-daemon';
import type { Plane } from '../../src/demo/topology';
import type { RoutesReport } from '../../src/observability/routes';

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), ...args], { cwd: ROOT });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d: Buffer) => (stdout += d));
  p.stderr.on('data', (d: Buffer) => (stderr += d));
  return new Promise((resolve) => p.once('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('route introspection', () => {
  let plane: Plane & { tmp: string };
  let ops = '';
  before(async () => {
    plane = await twoVersionPlane(DEFAULT_FRONTEND);
    ops = new URL(plane.member(OLD).metricsUrl).host;
  });
  after(async () => plane?.close());

  test('/debug/routes: a peer-only kind routes to the new member, a shared one is local, the peer is up', async () => {
    const r = (await fetch(`http://${ops}/debug/routes`).then((x) => x.json())) as RoutesReport;
    assert.equal(r.synced, true);
    assert.ok(r.generation >= 1);
    const peerOnly = r.resources.find((x) => x.group === 'scheduling.k8s.io' && x.version === 'v1beta1' && x.resource === 'workloads');
    assert.deepEqual(peerOnly && { local: peerOnly.local, peers: peerOnly.peers }, { local: false, peers: [`mvproxy-${NEW}`] });
    const shared = r.resources.find((x) => x.group === '' && x.version === 'v1' && x.resource === 'configmaps');
    assert.equal(shared?.local, true);
    assert.deepEqual(r.peers.map((p) => [p.id, p.up]), [[`mvproxy-${NEW}`, true]]);
  });

  test('mvproxy routes prints the table from the running daemon; without a daemon it says where it looked', async () => {
    const out = await cli(['routes', `--metrics-bind-address=${ops}`]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /^route table generation \d+, published /);
    assert.match(out.stdout, new RegExp(`^scheduling\\.k8s\\.io/v1beta1\\s+workloads\\s+peer: mvproxy-${NEW}`, 'm'));
    assert.match(out.stdout, /^v1\s+configmaps\s+local/m);
    const none = await cli(['routes', '--metrics-bind-address=127.0.0.1:1']);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no mvproxy answers at http:\/\/127\.0\.0\.1:1 \(--metrics-bind-address\)/);
  });

  test('/version on the ops listener answers in kube-apiserver\'s shape', async () => {
    const v = (await fetch(`http://${ops}/version`).then((x) => x.json())) as Record<string, string>;
    for (const k of ['major', 'minor', 'gitVersion', 'gitCommit', 'gitTreeState', 'buildDate', 'goVersion', 'compiler', 'platform']) assert.ok(k in v, k);
    assert.match(v.gitVersion!, /^v\d+\.\d+\.\d+/);
  });
});
