// kubectl exec through mvproxy on every front end (issue 12): kubectl 1.33 speaks WebSocket
// (`v5.channel.k8s.io`) to the simulated apiserver's exec endpoint (src/sim/exec.ts), through the
// uWS front end's WebSocket bridge (listener/uws-websocket.ts) or the node front end's raw tunnel
// (upstream/upgrade.ts). stdout, stderr, stdin, exit codes and a large stdin round trip (what
// `kubectl cp` does) are checked; SPDY on uWS gets a Status naming the front end that carries it.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { FRONTENDS } from '../support/frontends';
import { eventually } from '../support/poll';
import { twoVersionPlane, call, AUTH, OLD } from '../support/plane';
import { findKubectl } from '../support/kubectl';
import { sendRaw } from '../support/lenient-upstream';
import type { Plane } from '../../src/demo/topology';

const POD = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'shell', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'busybox' }] }, status: { phase: 'Running' } };

function run(bin: string, server: string, args: string[], input?: string | Buffer): Promise<{ code: number; stdout: string; stderr: string }> {
  const home = mkdtempSync(join(tmpdir(), 'mvproxy-exec-'));
  return new Promise((resolve) => {
    const child = execFile(bin, ['--server', server, `--cache-dir=${join(home, 'cache')}`, ...args], { timeout: 30_000, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, HOME: home, KUBECONFIG: '/dev/null' } }, (err, stdout, stderr) => {
      rmSync(home, { recursive: true, force: true });
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    if (input !== undefined) child.stdin!.end(input);
    else child.stdin!.end();
  });
}

const k133 = findKubectl(33);

for (const frontend of FRONTENDS) {
  describe(`kubectl exec through the ${frontend} front end`, () => {
    let plane: Plane & { tmp: string };
    let server: string;
    before(async () => {
      plane = await twoVersionPlane(frontend);
      server = plane.member(OLD).url;
      const r = await call(server, '/api/v1/namespaces/default/pods', { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify(POD) });
      assert.ok(r.status === 201 || r.status === 409, `create pod: ${r.status} ${r.text}`);
    });
    after(async () => {
      await plane?.close();
    });

    test('kubectl 1.33 exec: stdout and exit code 0', { skip: 'skip' in k133 && k133.skip }, async () => {
      const r = await run((k133 as { bin: string }).bin, server, ['exec', 'shell', '-n', 'default', '--', 'echo', 'hello', 'from', 'exec']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'hello from exec\n');
    });

    test('kubectl 1.33 exec: stderr and a non-zero exit code reach the client', { skip: 'skip' in k133 && k133.skip }, async () => {
      const r = await run((k133 as { bin: string }).bin, server, ['exec', 'shell', '-n', 'default', '--', 'exit', '3']);
      assert.equal(r.code, 3, `${r.code}: ${r.stderr}`);
      assert.match(r.stderr, /exiting 3/);
    });

    test('kubectl 1.33 exec -i: 1 MiB of stdin comes back whole on stdout (the kubectl cp path)', { skip: 'skip' in k133 && k133.skip }, async () => {
      const data = randomBytes(512 * 1024).toString('hex'); // 1 MiB of text
      const r = await run((k133 as { bin: string }).bin, server, ['exec', '-i', 'shell', '-n', 'default', '--', 'cat'], data);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.length, data.length);
      assert.equal(createHash('sha256').update(r.stdout).digest('hex'), createHash('sha256').update(data).digest('hex'));
    });

    test('a WebSocket client: 10 MiB on stdin round-trips with its checksum, a resize is delivered, the close code is relayed', async () => {
      const url = server.replace(/^http/, 'ws') + '/api/v1/namespaces/default/pods/shell/exec?command=cat&stdin=true&stdout=true&stderr=true';
      const ws = new WebSocket(url, ['v5.channel.k8s.io'], { headers: AUTH, perMessageDeflate: false });
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      });
      assert.equal(ws.protocol, 'v5.channel.k8s.io');
      const total = 10 * 1024 * 1024;
      const sent = createHash('sha256');
      const got = createHash('sha256');
      let received = 0;
      let stderr = '';
      const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
      ws.on('message', (m: Buffer) => {
        if (m[0] === 1) {
          got.update(m.subarray(1));
          received += m.length - 1;
        } else if (m[0] === 2) stderr += m.subarray(1).toString();
      });
      ws.send(Buffer.concat([Buffer.from([4]), Buffer.from('{"Width":120,"Height":40}')]));
      for (let n = 0; n < total; n += 32 * 1024) {
        const chunk = randomBytes(32 * 1024);
        sent.update(chunk);
        ws.send(Buffer.concat([Buffer.from([0]), chunk]));
        if (ws.bufferedAmount > 4 * 1024 * 1024) await new Promise((r) => setTimeout(r, 5));
      }
      await eventually(() => received >= total, { what: `all ${total} bytes echoed`, timeoutMs: 10_000, intervalMs: 25 });
      ws.send(Buffer.from([255, 0])); // v5: stdin closed
      const code = await closed;
      assert.equal(received, total);
      assert.equal(got.digest('hex'), sent.digest('hex'));
      assert.match(stderr, /resize 120x40/);
      assert.equal(code, 1000);
    });

    test('sub-protocols that are not RFC 7230 tokens (port-forward\'s "SPDY/3.1+portforward.k8s.io") are offered upstream verbatim; the daemon keeps serving', { timeout: 30_000 }, async () => {
      // kubectl >= 1.31 port-forward offers SPDY/3.1+portforward.k8s.io; the uWS front end once
      // crashed on it (its WebSocket client throws on a '/' in a sub-protocol). The simulator picks
      // v5 from the list, so the 101 shows the whole list reached it; offered alone, the simulator
      // refuses it and that answer comes back.
      const url = server.replace(/^http/, 'ws') + '/api/v1/namespaces/default/pods/shell/exec?command=echo&command=hi&stdout=true';
      const both = new WebSocket(url, { headers: { ...AUTH, 'sec-websocket-protocol': 'SPDY/3.1+portforward.k8s.io, v5.channel.k8s.io' }, perMessageDeflate: false });
      // The ws client itself cannot offer such a list: it is set as a header, and the answer taken
      // out before ws checks it (as src/upstream/websocket.ts does).
      let chosen: string | string[] | undefined;
      both.on('upgrade', (res) => {
        chosen = res.headers['sec-websocket-protocol'];
        delete res.headers['sec-websocket-protocol'];
      });
      const out = await new Promise<string>((resolve, reject) => {
        let o = '';
        both.on('message', (m: Buffer) => {
          if (m[0] === 1) o += m.subarray(1).toString();
        });
        both.once('close', () => resolve(o));
        both.once('error', reject);
      });
      assert.equal(chosen, 'v5.channel.k8s.io');
      assert.equal(out, 'hi\n');
      const alone = await sendRaw(Number(new URL(server).port), `GET /api/v1/namespaces/default/pods/shell/portforward HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH.authorization}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: SPDY/3.1+portforward.k8s.io\r\n\r\n`, { waitMs: 1500 });
      assert.ok(alone.status >= 400 && alone.status < 500, `the simulator's refusal: ${alone.out}`);
      assert.match(alone.out, /"kind":"Status"/);
      const after = await call(server, '/api/v1/namespaces/default/pods/shell', { headers: AUTH });
      assert.equal(after.status, 200, 'the daemon still serves');
    });

    test('an exec the apiserver refuses (no such command protocol: SPDY here): its answer, never a tunnel', async () => {
      // SPDY upgrades (kubectl <= 1.29) reach the node front end's tunnel (the simulator refuses them
      // with a 400 Status); the uWS front end refuses them itself, naming the front end that carries them.
      const r = await sendRaw(Number(new URL(server).port), `POST /api/v1/namespaces/default/pods/shell/exec?command=id HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH.authorization}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n`, { waitMs: 1500 });
      assert.equal(r.status, 400, r.out);
      assert.match(r.out, /"kind":"Status"/);
      if (frontend === 'uws') assert.match(r.out, /--frontend=node/);
      assert.ok(r.closed);
    });
  });
}
