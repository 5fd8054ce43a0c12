// The client of mvproxy's own calls (src/upstream/own-client.ts: discovery, probes, Leases), against
// small servers on 127.0.0.1. Its peer calls carry the front-proxy certificate and identity headers,
// so a server that does not prove it is a peer must get no request at all.
import { describe, test, before } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createCA, type CA } from '../../src/pki/throwaway';
import { createPool, PEER_SERVER_NAME } from '../../src/upstream/pools';
import { ErrorCode } from '../../src/api/errors';
import { eventually } from '../support/poll';
import { fetchDiscoveryDocument } from '../../src/snapshot/fetch';

const listen = async <S extends net.Server>(s: S): Promise<number> => {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return (s.address() as AddressInfo).port;
};

describe("own-client: mvproxy's own calls", () => {
  let ca: CA;
  let other: CA;
  before(async () => {
    ca = await createCA('peer-ca');
    other = await createCA('someone-else');
  });

  test('a peer proves kubernetes.default.svc under --peer-ca-file before it sees a request; a server that cannot gets none', async () => {
    const cases: { name: string; issuer: () => CA; dnsNames: string[]; commonName?: string; ok: boolean }[] = [
      { name: 'right CA, right name', issuer: () => ca, dnsNames: [PEER_SERVER_NAME], ok: true },
      { name: 'right CA, another name', issuer: () => ca, dnsNames: ['evil.example'], ok: false },
      { name: 'another CA, right name', issuer: () => other, dnsNames: [PEER_SERVER_NAME], ok: false },
      // node:tls would read the CN when there is no DNS SAN; Go (kube-apiserver's peer client) does not.
      { name: 'right CA, the name only as CN', issuer: () => ca, dnsNames: [], commonName: PEER_SERVER_NAME, ok: false },
    ];
    for (const c of cases) {
      const leaf = await c.issuer().issue({ commonName: c.commonName ?? 'peer', dnsNames: c.dnsNames, usage: 'server' });
      const seen: (string | undefined)[] = [];
      const server = https.createServer({ cert: leaf.cert, key: leaf.key }, (req, res) => {
        seen.push(req.headers['x-remote-user'] as string | undefined);
        res.end('ok');
      });
      const port = await listen(server);
      const notAfter: number[] = [];
      const pool = createPool(new URL(`https://127.0.0.1:${port}`), { connectTimeoutMs: 2000, tls: { ca: Buffer.from(ca.cert), servername: PEER_SERVER_NAME }, onServerCertificate: (t) => notAfter.push(t) });
      try {
        const r = await pool.request({ path: '/readyz', method: 'GET', headers: { 'x-remote-user': 'system:kube-apiserver' } });
        assert.equal(await r.body.text(), 'ok', c.name);
        assert.ok(c.ok, `${c.name}: answered`);
        assert.equal(notAfter.length, 1, 'the serving certificate is reported once per connection');
        assert.ok(notAfter[0]! > Date.now() / 1000);
      } catch (e) {
        assert.ok(!c.ok, `${c.name}: ${(e as Error).message}`);
        assert.deepEqual(seen, [], `${c.name}: no request reached the server`);
      } finally {
        await pool.destroy();
        server.close();
      }
    }
  });

  test('keep-alive: sequential requests share one connection; a body dump() would read past 128 KiB closes it instead', async () => {
    let connections = 0;
    const server = http.createServer((req, res) => {
      if (req.url === '/big') res.end(Buffer.alloc(1024 * 1024, 0x61));
      else res.end('{"items":[]}');
    });
    server.on('connection', () => connections++);
    const port = await listen(server);
    const pool = createPool(new URL(`http://127.0.0.1:${port}`), { connectTimeoutMs: 2000 });
    try {
      for (let i = 0; i < 3; i++) assert.deepEqual(await (await pool.request({ path: '/x', method: 'GET' })).body.json(), { items: [] });
      assert.equal(connections, 1);
      await (await pool.request({ path: '/big', method: 'GET' })).body.dump();
      await (await pool.request({ path: '/x', method: 'GET' })).body.text();
      assert.equal(connections, 2, 'the dumped connection was not reused');
    } finally {
      await pool.destroy();
      server.close();
    }
  });

  test('timeouts: no TLS handshake, no response head, a silent body: each ends the request with its error', async () => {
    const sockets = new Set<net.Socket>();
    const mute = net.createServer((s) => sockets.add(s)); // accepts, says nothing
    const mutePort = await listen(mute);
    const tlsPool = createPool(new URL(`https://127.0.0.1:${mutePort}`), { connectTimeoutMs: 200, tls: { ca: Buffer.from(ca.cert) } });
    await assert.rejects(tlsPool.request({ path: '/', method: 'GET' }), (e: Error & { code?: string }) => e.code === ErrorCode.MVP_ERR_CONNECT_TIMEOUT);

    const stall = http.createServer((req, res) => {
      if (req.url === '/body') {
        res.writeHead(200, { 'content-length': '10' });
        res.write('12345');
      }
    });
    const stallPort = await listen(stall);
    const pool = createPool(new URL(`http://127.0.0.1:${stallPort}`), { connectTimeoutMs: 2000 });
    try {
      await assert.rejects(pool.request({ path: '/head', method: 'GET', headersTimeout: 100 }), (e: Error & { code?: string }) => e.code === 'ETIMEDOUT' && /response head/.test(e.message));
      const r = await pool.request({ path: '/body', method: 'GET', headersTimeout: 2000, bodyTimeout: 100 });
      await assert.rejects(r.body.text(), (e: Error & { code?: string }) => e.code === 'ETIMEDOUT' && /body/.test(e.message));
      const ac = new AbortController();
      const p = pool.request({ path: '/head', method: 'GET', signal: ac.signal });
      ac.abort(new Error('stopped'));
      await assert.rejects(p, /stopped/);
    } finally {
      await Promise.all([tlsPool.destroy(), pool.destroy()]);
      for (const s of sockets) s.destroy();
      mute.close();
      stall.closeAllConnections();
      stall.close();
    }
  });

  test('an unrequested 101 Switching Protocols fails the request instead of leaving it waiting', { timeout: 20_000 }, async () => {
    const server = net.createServer((s) => s.once('data', () => s.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n')));
    const port = await listen(server);
    const pool = createPool(new URL(`http://127.0.0.1:${port}`), { connectTimeoutMs: 2000 });
    try {
      await assert.rejects(pool.request({ path: '/apis', method: 'GET' }), (e: Error & { code?: string }) => e.code === 'ECONNRESET' && /switched protocols/.test(e.message));
    } finally {
      await pool.destroy();
      server.close();
    }
  });

  test('a discovery body trickled a byte at a time fails at the fetch deadline, though no gap reaches the body timeout', { timeout: 20_000 }, async () => {
    let sent = 0;
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
      const tick = setInterval(() => {
        if (res.destroyed || ++sent > 200) {
          clearInterval(tick);
          res.end();
        } else res.write(' ');
      }, 20);
    });
    const port = await listen(server);
    const pool = createPool(new URL(`http://127.0.0.1:${port}`), { connectTimeoutMs: 2000 });
    try {
      await assert.rejects(fetchDiscoveryDocument(pool, '/apis', { peerHop: false, timeoutMs: 500 }), (e: Error & { code?: string }) => e.code === ErrorCode.MVP_ERR_DISCOVERY_TRANSPORT && /no whole answer within 500 ms/.test(e.message));
      assert.ok(sent < 200, 'the body was cut before the server ended it');
    } finally {
      await pool.destroy();
      server.closeAllConnections();
      server.close();
    }
  });

  test('close(): a watch in flight runs to its end, new requests are refused, then the connections close', async () => {
    let watch: http.ServerResponse | undefined;
    let closedConnections = 0;
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"type":"ADDED"}\n');
      watch = res;
    });
    server.on('connection', (s) => s.on('close', () => closedConnections++));
    const port = await listen(server);
    const pool = createPool(new URL(`http://127.0.0.1:${port}`), { connectTimeoutMs: 2000 });
    try {
      const r = await pool.request({ path: '/watch', method: 'GET' });
      const it = r.body[Symbol.asyncIterator]();
      assert.equal(String((await it.next()).value), '{"type":"ADDED"}\n');
      let closed = false;
      const closing = pool.close().then(() => (closed = true));
      await assert.rejects(pool.request({ path: '/x', method: 'GET' }), (e: Error & { code?: string }) => e.code === 'ERR_POOL_CLOSED');
      watch!.write('{"type":"MODIFIED"}\n');
      assert.equal(String((await it.next()).value), '{"type":"MODIFIED"}\n');
      assert.equal(closed, false, 'close() waits for the watch');
      watch!.end();
      assert.equal((await it.next()).done, true);
      await closing;
      await eventually(() => closedConnections === 1, { what: "the pool's connection closed", timeoutMs: 5000 }); // the server sees the FIN a moment later
    } finally {
      await pool.destroy();
      server.close();
    }
  });

  test('a kept-alive connection the server closes as a request is written on it: a GET or HEAD is asked again on the next connection (as Go\'s transport does), a POST fails', async () => {
    // The server takes one request per connection and closes the connection when a second arrives
    // on it (what an idle timeout racing the client's next request looks like from the client).
    const served: string[] = [];
    const server = http.createServer((req, res) => {
      const s = req.socket as net.Socket & { requests?: number };
      s.requests = (s.requests ?? 0) + 1;
      if (s.requests > 1) return void req.socket.destroy();
      served.push(`${req.method} ${req.url}`);
      req.resume();
      res.end('ok');
    });
    const port = await listen(server);
    const pool = createPool(new URL(`http://127.0.0.1:${port}`), { connectTimeoutMs: 2000 });
    try {
      for (const method of ['GET', 'HEAD', 'GET']) {
        const r = await pool.request({ path: `/readyz?${method}`, method, headersTimeout: 2000 });
        await r.body.dump();
        assert.equal(r.statusCode, 200, `${method} on a connection the server closed under it`);
      }
      assert.deepEqual(served, ['GET /readyz?GET', 'HEAD /readyz?HEAD', 'GET /readyz?GET'], 'each answered once, on a fresh connection');
      // A write is never sent twice: the server may have acted on it.
      await assert.rejects(pool.request({ path: '/leases', method: 'POST', body: '{}' }), (e: Error & { code?: string }) => e.code === 'ECONNRESET');
      assert.equal(served.length, 3, 'the POST reached no handler, and was not sent again');
    } finally {
      await pool.destroy();
      server.close();
    }
  });

  test('a server that answers 101 Switching Protocols on a kept-alive connection: the GET fails once, never sent again (the server answered)', async () => {
    let probes = 0;
    const server = net.createServer((sock) => {
      let buf = '';
      let n = 0;
      sock.on('data', (d) => {
        buf += d.toString('latin1');
        while (buf.includes('\r\n\r\n')) {
          buf = buf.slice(buf.indexOf('\r\n\r\n') + 4);
          n++;
          if (n === 1) sock.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
          else {
            probes++;
            sock.write('HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n');
          }
        }
      });
    });
    const port = await listen(server);
    const pool = createPool(new URL(`http://127.0.0.1:${port}`), { connectTimeoutMs: 2000 });
    try {
      const first = await pool.request({ path: '/readyz', method: 'GET', headersTimeout: 2000 });
      await first.body.dump();
      await assert.rejects(pool.request({ path: '/readyz', method: 'GET', headersTimeout: 2000 }), (e: Error & { code?: string }) => e.code === 'ECONNRESET');
      assert.equal(probes, 1, 'the GET the server answered 101 was not sent again');
    } finally {
      await pool.destroy();
      server.close();
    }
  });
});
