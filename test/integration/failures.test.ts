// Failure behaviour of the data path (issue 3, docs/kubernetes-mvp.md §2.4 improved): timeouts, an unreachable local
// apiserver, failover between peers, client disconnects, protocol upgrades, front-end fallback.
import { describe, test, before, after } from 'node:test';
import { FRONTENDS } from '../support/frontends';
import { eventually } from '../support/poll';
import assert from 'node:assert/strict';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { startFakeUpstream } from '../support/fake-upstream';
import { startTestDaemon, capturingLogger } from '../support/daemon';
import { call, AUTH } from '../support/plane';
import { startPlane, type Plane } from '../../src/demo/topology';
import { ConfigError } from '../../src/daemon';

const NEW_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads';

for (const frontend of FRONTENDS) {
  describe(`failures (${frontend} front end)`, () => {
    let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
    const upgrades: string[] = [];
    before(async () => {
      upstream = await startFakeUpstream((req, res) => {
        if (req.url?.startsWith('/api/v1/namespaces/default/configmaps/hang')) return true; // never answers
        if (req.url?.startsWith('/api/v1/namespaces/default/configmaps?watch=true')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.flushHeaders();
          setTimeout(() => res.write('{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"late"}}}\n'), 900);
          setTimeout(() => res.end(), 1000);
          return true;
        }
        return false;
      });
      upstream.server.on('upgrade', (req, socket: net.Socket) => {
        upgrades.push(JSON.stringify(req.headers));
        socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
        socket.on('data', (d) => socket.write(d)); // echo
        socket.on('end', () => socket.end()); // http.Server sockets are half-open: close like an apiserver does
      });
    });
    after(async () => {
      await upstream?.close();
    });

    test('a non-long-running request past --request-timeout gets a 504 Status, a watch is not cut by it', async () => {
      const d = await startTestDaemon({ frontend, localAPIServer: upstream.url, requestTimeoutMs: 400 });
      try {
        const base = `http://127.0.0.1:${d.clientPort}`;
        const t0 = Date.now();
        const r = await call(base, '/api/v1/namespaces/default/configmaps/hang');
        assert.equal(r.status, 504);
        assert.equal(r.json().reason, 'Timeout');
        assert.ok(Date.now() - t0 < 3000);
        const w = await call(base, '/api/v1/namespaces/default/configmaps?watch=true');
        assert.equal(w.status, 200);
        assert.match(w.text, /"name":"late"/, 'the event 900 ms later still arrived');
      } finally {
        await d.close();
      }
    });

    test('the local apiserver unreachable: 503 Status with Retry-After, promptly, and the daemon keeps serving', async () => {
      const dead = net.createServer();
      await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
      const port = (dead.address() as net.AddressInfo).port;
      await new Promise((r) => dead.close(r));
      const d = await startTestDaemon({ frontend, localAPIServer: `http://127.0.0.1:${port}`, connectTimeoutMs: 1000 });
      try {
        const base = `http://127.0.0.1:${d.clientPort}`;
        for (let i = 0; i < 3; i++) {
          const t0 = Date.now();
          const r = await call(base, '/api/v1/namespaces/default/pods', { headers: AUTH });
          assert.equal(r.status, 503);
          assert.equal(r.json().kind, 'Status');
          assert.equal(r.json().reason, 'ServiceUnavailable');
          assert.match(r.json().message, /MVP_ERR_LOCAL_UNAVAILABLE/);
          assert.equal(r.headers['retry-after'], '1');
          assert.ok(Date.now() - t0 < 2000);
        }
        const m = await request(`http://127.0.0.1:${d.metricsPort}/metrics`);
        assert.match(await m.body.text(), /mvproxy_upstream_errors_total\{route="local",peer=""\} 3/);
      } finally {
        await d.close();
      }
    });

    test('protocol upgrades: tunnelled on the node front end without client identity headers; on uWS a WebSocket upgrade is bridged (an upstream 101 that is not a valid WebSocket handshake: 502 Status) and SPDY gets a Status naming --frontend=node', async () => {
      const d = await startTestDaemon({ frontend, localAPIServer: upstream.url });
      try {
        const sock = net.connect(d.clientPort, '127.0.0.1');
        await new Promise((r) => sock.once('connect', r));
        sock.write('GET /api/v1/namespaces/default/pods/p/exec?command=sh HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nX-Remote-User: system:admin\r\nAuthorization: Bearer t\r\n\r\n');
        let got = '';
        sock.on('data', (b) => (got += b.toString()));
        await sleep(300);
        if (frontend === 'node') {
          assert.match(got, /^HTTP\/1.1 101/);
          sock.write('ping-bytes');
          await sleep(200);
          assert.match(got, /ping-bytes$/);
          const seen = JSON.parse(upgrades.at(-1)!);
          assert.equal(seen['x-remote-user'], undefined);
          assert.equal(seen.authorization, 'Bearer t');
          assert.equal(seen.upgrade, 'websocket');
        } else {
          // This fake upstream's 101 carries no Sec-WebSocket-Accept: the bridge refuses it.
          assert.match(got, /^HTTP\/1.1 502/);
          assert.match(got, /MVP_ERR_UPGRADE_FAILED/);
          const seen = JSON.parse(upgrades.at(-1)!);
          assert.equal(seen['x-remote-user'], undefined);
          assert.equal(seen.authorization, 'Bearer t');
          const spdy = net.connect(d.clientPort, '127.0.0.1');
          await new Promise((r) => spdy.once('connect', r));
          let out = '';
          spdy.on('data', (b) => (out += b.toString()));
          const closed = new Promise((r) => spdy.once('close', r));
          spdy.write('POST /api/v1/namespaces/default/pods/p/exec?command=sh HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n');
          await closed;
          assert.match(out, /^HTTP\/1.1 400/);
          assert.match(out, /--frontend=node/);
          assert.match(out, /"kind":"Status"/);
        }
        sock.destroy();
      } finally {
        await d.close();
      }
    });
  });
}

describe('front-end selection and listener safety', () => {
  test('--frontend=uws where uWebSockets.js cannot load: refused at start (exit 2), naming why and the alternatives', async () => {
    await assert.rejects(
      startTestDaemon({ frontend: 'uws' }, { loadUWS: () => ({ error: new Error('simulated: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38\' not found') }) }),
      (e: Error) => e instanceof ConfigError && /GLIBC_2\.38/.test(e.message) && /--frontend=node/.test(e.message),
    );
  });

  test('--frontend=auto where uWebSockets.js cannot load: the daemon serves on the node front end and says why once', async () => {
    const upstream = await startFakeUpstream(() => false);
    const log = capturingLogger();
    const d = await startTestDaemon({ frontend: 'auto', localAPIServer: upstream.url }, { log, loadUWS: () => ({ error: new Error('simulated: uws_linux_x64_115.node: cannot open shared object file') }) });
    try {
      assert.equal(d.frontend, 'node');
      const r = await call(`http://127.0.0.1:${d.clientPort}`, '/version');
      assert.equal(r.status, 404); // the fake upstream's answer: the request went through
      assert.equal(log.lines.filter((l) => l.includes('cannot load')).length, 1, log.lines.join('\n'));
      const m = await (await request(`http://127.0.0.1:${d.metricsPort}/metrics`)).body.text();
      assert.match(m, /mvproxy_build_info\{[^}]*frontend="node"\} 1/);
    } finally {
      await d.close();
      await upstream.close();
    }
  });

  test('plain HTTP on a non-loopback --bind-address is refused at start', async () => {
    await assert.rejects(startTestDaemon({ bindAddress: '0.0.0.0' }), (e: Error) => e instanceof ConfigError && /plain HTTP is only served on loopback/.test(e.message));
  });
});

describe('peers: failover and released watches', () => {
  let plane: Plane;
  let tmp: string;
  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'mvproxy-failover-'));
    plane = await startPlane({
      dir: join(tmp, 'pki'),
      frontend: 'auto',
      members: [
        { name: 'old', kubernetesVersion: 'v1.33' },
        { name: 'new-a', kubernetesVersion: 'v1.37' },
        { name: 'new-b', kubernetesVersion: 'v1.37' },
      ],
      configure: (c) => {
        c.connectTimeoutMs = 1000;
        c.discoveryRefreshIntervalMs = 60_000;
      },
    });
  });
  after(async () => {
    await plane?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  test('a dead peer: requests fail over to another peer that serves the GVR (in-tree: one random try)', async () => {
    const rerouted = async () => Number(/apiserver_rerouted_request_total\{code="200",group="scheduling.k8s.io",version="v1beta1",resource="workloads"\} (\d+)/.exec(await (await request(plane.member('old').metricsUrl)).body.text())?.[1] ?? 0);
    const before = await rerouted();
    await plane.stopProxy('new-a');
    try {
      for (let i = 0; i < 20; i++) {
        const r = await call(plane.member('old').url, NEW_ONLY, { headers: AUTH });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.headers['x-sim-server'], 'new-b');
      }
      const m = await (await request(plane.member('old').metricsUrl)).body.text();
      assert.match(m, /mvproxy_upstream_errors_total\{route="peer",peer="mvproxy-new-a"\} [1-9]/, 'some requests tried the dead peer first');
      // Each client request is one rerouted request with the status it got, failover or not (upstream: one per proxied request).
      assert.equal(await rerouted(), before + 20);
    } finally {
      await plane.startProxy('new-a');
    }
  });

  test('a client that disconnects mid-watch releases the upstream watch on the serving apiserver', async () => {
    const store = plane.store;
    const before = store.listenerCount();
    // Not waiting for the head: a watch with no event yet gets it with its first event on uWS (no
    // byte is added to a relayed body to send a head alone, issue 33).
    const ac = new AbortController();
    const res = request(`${plane.member('old').url}${NEW_ONLY}?watch=true`, { headers: AUTH, bodyTimeout: 0, signal: ac.signal });
    res.catch(() => undefined);
    await eventually(() => store.listenerCount() === before + 1, { what: 'one upstream watch open', timeoutMs: 3000, intervalMs: 50 });
    ac.abort();
    await eventually(() => store.listenerCount() === before, { what: 'the upstream watch released', timeoutMs: 3000, intervalMs: 50 });
  });
});
