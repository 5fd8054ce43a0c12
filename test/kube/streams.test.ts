// Pod streams through mvproxy to a kubelet: real kubectl against each member on each front end,
// kube-apiserver forwarding to the fake kubelet (support/kubelet.ts: Kubernetes' own streaming server).
// kubectl 1.33 speaks WebSocket (exec/attach/cp: v5.channel.k8s.io; port-forward: SPDY tunnelled in
// WebSocket), kubectl 1.27 speaks SPDY; the uWS front end carries WebSocket only and must refuse
// SPDY with a Status that names --frontend=node (README "Which front end carries what").
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KUBECTL, kubectlAs, startControlPlane, type KubeControlPlane } from './support/control-plane';
import { containerDir, startFakeKubelet, type FakeKubelet } from './support/kubelet';
import { forEachFrontend } from './support/suite';
import { kubectlPath } from '../support/kubectl';

const KUBECTL_SPDY = kubectlPath(27); // exec, attach and port-forward over SPDY/3.1
const MiB = 1024 * 1024;
const POD = 'streams';
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function waitUntil(ok: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A TCP echo server on 127.0.0.1, the port-forward target "in the pod". */
function echoServer(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer((s) => s.pipe(s));
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port }));
  });
}

/** kubectl port-forward running in the background; resolves with its local port once it forwards. */
function portForward(bin: string, kubeconfig: string, server: string, remotePort: number): Promise<{ localPort: number; stop(): void; output(): string }> {
  const home = mkdtempSync(join(tmpdir(), 'mvproxy-kubectl-'));
  const child = spawn(bin, [`--kubeconfig=${kubeconfig}`, `--server=${server}`, `--cache-dir=${join(home, 'cache')}`, 'port-forward', `pod/${POD}`, `:${remotePort}`], { env: { ...process.env, HOME: home } });
  let out = '';
  const stop = () => {
    child.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`kubectl port-forward did not start in 20 s:\n${out}`));
    }, 20_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = out.match(/Forwarding from 127\.0\.0\.1:(\d+) ->/);
      if (m) {
        clearTimeout(timer);
        resolve({ localPort: Number(m[1]), stop, output: () => out });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`kubectl port-forward exited ${code}:\n${out}`), { output: out }));
    });
  });
}

/** Sends size random bytes through localPort and reads the echo back; resolves with both checksums. */
function roundTrip(localPort: number, size: number): Promise<{ sent: string; received: string }> {
  const data = randomBytes(size);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let got = 0;
    const s = createConnection({ host: '127.0.0.1', port: localPort }, () => s.end(data));
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`round trip: ${got} of ${size} bytes back after 60 s`));
    }, 60_000);
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      got += d.length;
      if (got >= size) {
        clearTimeout(timer);
        s.destroy();
        resolve({ sent: sha(data), received: sha(Buffer.concat(chunks)) });
      }
    });
    s.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

describe('pod streams through mvproxy to a kubelet (exec, attach, cp, port-forward, logs -f)', () => {
  let plane: KubeControlPlane;
  let kubelet: FakeKubelet;
  let adminKC: string;
  let echo: { server: Server; port: number };
  before(async () => {
    plane = await startControlPlane();
    kubelet = await startFakeKubelet(plane);
    echo = await echoServer();
    await kubelet.pod(POD, [echo.port]);
    adminKC = plane.kubeconfig('admin', { cert: plane.admin });
    mkdirSync(containerDir(plane), { recursive: true });
  });
  after(async () => {
    echo?.server.close();
    await kubelet?.stop();
    await plane?.stop();
  });

  forEachFrontend(() => plane, (frontend, members) => {
    const k = (member: number, args: string[], o: { input?: string; bin?: string } = {}) => kubectlAs(adminKC, members()[member]!.url, args, { ...o, timeoutMs: 60_000 });

    for (const member of [0, 1]) {
      test(`kubectl 1.33 exec through member ${member} (WebSocket): stdin, stdout, stderr and the exit code`, async () => {
        const e = await k(member, ['exec', '-i', POD, '--', 'sh', '-c', 'cat; echo to-stderr >&2; exit 7'], { input: 'hello from stdin\n' }).then(
          () => assert.fail('exit 7 must fail kubectl'),
          (err: { stdout: string; stderr: string; exitCode: number | null }) => err,
        );
        assert.equal(e.stdout, 'hello from stdin\n');
        assert.match(e.stderr, /to-stderr/);
        assert.equal(e.exitCode, 7, e.stderr);
        const ok = await k(member, ['exec', POD, '--', 'echo', 'ok']);
        assert.equal(ok.stdout, 'ok\n');
      });
    }

    test('kubectl 1.27 exec (SPDY/3.1): carried on node, refused on uws with a Status naming --frontend=node', async () => {
      const run = k(0, ['exec', '-i', POD, '--', 'sh', '-c', 'cat; exit 3'], { input: 'spdy stdin\n', bin: KUBECTL_SPDY });
      const e = await run.then(() => assert.fail('exit 3 must fail kubectl'), (err: { stdout: string; stderr: string; exitCode: number | null }) => err);
      if (frontend === 'node') {
        assert.equal(e.stdout, 'spdy stdin\n');
        assert.equal(e.exitCode, 3, e.stderr);
      } else {
        assert.equal(e.stdout, '');
        assert.match(e.stderr, /--frontend=node/, 'kubectl shows the Status naming the front end that carries SPDY');
      }
    });

    test('kubectl 1.33 exec -it: the terminal size reaches the command (resize stream), output comes back through the TTY', async () => {
      // script(1) gives kubectl a terminal of 33 rows and 101 columns; `stty size` runs under the
      // fake kubelet's pseudo-terminal, sized by the resize events kubectl sends.
      const home = mkdtempSync(join(tmpdir(), 'mvproxy-kubectl-'));
      const cmd = `stty rows 33 cols 101; exec ${KUBECTL} --kubeconfig=${adminKC} --server=${members()[0]!.url} --cache-dir=${home}/cache exec -it ${POD} -- stty size`;
      const out = await new Promise<string>((resolve, reject) => {
        const child = spawn('script', ['-qec', cmd, '/dev/null'], { env: { ...process.env, HOME: home } });
        let o = '';
        child.stdout.on('data', (d: Buffer) => (o += d.toString()));
        child.stderr.on('data', (d: Buffer) => (o += d.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        child.once('exit', (code) => {
          clearTimeout(timer);
          rmSync(home, { recursive: true, force: true });
          if (code === 0) resolve(o);
          else reject(new Error(`exit ${code}: ${o}`));
        });
        child.stdin.end();
      });
      assert.match(out, /\b33 101\b/);
    });

    test('kubectl 1.33 attach -i: stdin reaches the container\'s process, its output comes back', async () => {
      const r = await k(0, ['attach', '-i', POD, '-c', 'main'], { input: 'ping\npong\n' });
      assert.match(r.stdout, /echo: ping\necho: pong\n/);
    });

    test('kubectl 1.33 cp, both directions: a 10 MiB file arrives whole (sha256 equal)', async () => {
      const dir = join(containerDir(plane), frontend);
      mkdirSync(dir, { recursive: true });
      const local = join(plane.dir, `cp-${frontend}.bin`);
      const data = randomBytes(10 * MiB);
      writeFileSync(local, data);
      await k(0, ['cp', local, `default/${POD}:${dir}/in.bin`]);
      assert.equal(sha(readFileSync(join(dir, 'in.bin'))), sha(data), 'the file written in the "container"');
      const back = join(plane.dir, `cp-${frontend}-back.bin`);
      await k(1, ['cp', `default/${POD}:${dir}/in.bin`, back]);
      assert.equal(sha(readFileSync(back)), sha(data), 'the file copied out of the "container"');
    });

    test('kubectl 1.33 port-forward (SPDY tunnelled in WebSocket): a 10 MiB round trip, then a second connection', async () => {
      const pf = await portForward(KUBECTL, adminKC, members()[0]!.url, echo.port);
      try {
        const r = await roundTrip(pf.localPort, 10 * MiB);
        assert.equal(r.received, r.sent);
        const r2 = await roundTrip(pf.localPort, 64 * 1024);
        assert.equal(r2.received, r2.sent);
      } finally {
        pf.stop();
      }
    });

    test('kubectl 1.27 port-forward (SPDY/3.1): carried on node, refused on uws with a Status naming --frontend=node', async () => {
      if (frontend === 'node') {
        const pf = await portForward(KUBECTL_SPDY, adminKC, members()[1]!.url, echo.port);
        try {
          const r = await roundTrip(pf.localPort, 10 * MiB);
          assert.equal(r.received, r.sent);
        } finally {
          pf.stop();
        }
        return;
      }
      // kubectl 1.27 upgrades per forwarded connection: it starts listening, then fails on the first.
      const pf = await portForward(KUBECTL_SPDY, adminKC, members()[1]!.url, echo.port).catch((e: { output?: string }) => ({ failed: e.output ?? String(e) }));
      if ('failed' in pf) {
        assert.match(pf.failed, /--frontend=node/);
        return;
      }
      try {
        await roundTrip(pf.localPort, 1024).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 500));
        assert.match(pf.output(), /--frontend=node/);
      } finally {
        pf.stop();
      }
    });

    test('kubectl 1.33 logs -f streams the container log while it is written and ends cleanly when the container does', async () => {
      rmSync(kubelet.logStopFile, { force: true });
      const home = mkdtempSync(join(tmpdir(), 'mvproxy-kubectl-'));
      const child = spawn(KUBECTL, [`--kubeconfig=${adminKC}`, `--server=${members()[1]!.url}`, `--cache-dir=${join(home, 'cache')}`, 'logs', '-f', POD, '-c', 'main'], { env: { ...process.env, HOME: home } });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      try {
        // Lines arrive while the log is still being written (the container has not "exited" yet).
        await waitUntil(() => /^log line 3$/m.test(out), 20_000, () => `kubectl logs -f output so far: ${out}${err}`);
        writeFileSync(kubelet.logStopFile, '');
        const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 20_000))]);
        assert.equal(code, 0, `kubectl logs -f exit: ${String(code)} ${err}`);
        const lines = out.trim().split('\n');
        assert.equal(lines.at(-1), 'log ended');
        assert.deepEqual(lines.slice(0, -1), lines.slice(0, -1).map((_, i) => `log line ${i + 1}`), 'every line once, in order');
      } finally {
        child.kill('SIGKILL');
        rmSync(home, { recursive: true, force: true });
      }
    });
  });
});
