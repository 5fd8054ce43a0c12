// The relay's own HTTP/1.1 client (src/upstream/h1, issue 28) as a client sees it, on both front
// ends, against a raw-socket "apiserver" that writes exactly the bytes a case scripts: bodies split
// across many reads, chunked and close-delimited bodies, HEAD/204/304, 1xx, trailers, framing an
// honest proxy must refuse, keep-alive reuse and discard, streamed request bodies, header bytes
// outside ASCII, and the idle-close race on a kept-alive connection.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http from 'node:http';
import { FRONTENDS } from '../support/frontends';
import { startTestDaemon } from '../support/daemon';
import type { Daemon } from '../../src/daemon';

const CM = '/api/v1/namespaces/default/configmaps';
const API = JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [] });

interface Seen {
  conn: number;
  method: string;
  target: string;
  head: string;
  body: Buffer;
}

/** What the raw upstream writes for one request: pieces (written apart, `gapMs` between them), then maybe a close. */
interface Script {
  pieces: (string | Buffer)[];
  gapMs?: number;
  close?: boolean;
  /** Close the connection without answering. */
  drop?: boolean;
}

/** A raw HTTP/1.1 server: reads each request (Content-Length or chunked body), answers with the case's script. */
async function rawUpstream(answer: (r: Seen) => Script): Promise<{ port: number; seen: Seen[]; accepted: () => number; close(): Promise<void> }> {
  const seen: Seen[] = [];
  let conns = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    const conn = conns++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    let busy = false;
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      void next();
    });
    const next = async () => {
      if (busy) return;
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end + 4).toString('latin1');
      const [method = '', target = ''] = head.split(' ');
      let bodyEnd = end + 4;
      let body = Buffer.alloc(0);
      const cl = /\r\ncontent-length: *(\d+)/i.exec(head);
      if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
        const parts: Buffer[] = [];
        let i = end + 4;
        for (;;) {
          const eol = buf.indexOf('\r\n', i);
          if (eol < 0) return;
          const size = parseInt(buf.subarray(i, eol).toString('latin1'), 16);
          if (buf.length < eol + 2 + size + 2) return;
          if (size === 0) {
            bodyEnd = eol + 4;
            break;
          }
          parts.push(buf.subarray(eol + 2, eol + 2 + size));
          i = eol + 2 + size + 2;
        }
        body = Buffer.concat(parts);
      } else if (cl) {
        const n = Number(cl[1]);
        if (buf.length < end + 4 + n) return;
        body = buf.subarray(end + 4, end + 4 + n);
        bodyEnd = end + 4 + n;
      }
      buf = buf.subarray(bodyEnd);
      const r: Seen = { conn, method, target, head, body: Buffer.from(body) };
      if (target === '/api' || target === '/apis') {
        s.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList\r\nContent-Length: ${API.length}\r\n\r\n${API}`);
        return void next();
      }
      if (!/^\/(api|apis)\//.test(target)) {
        s.write('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
        return void next();
      }
      seen.push(r);
      const script = answer(r);
      if (script.drop) return void s.destroy();
      busy = true;
      for (const [i, p] of script.pieces.entries()) {
        if (i > 0 && script.gapMs) await new Promise((res) => setTimeout(res, script.gapMs));
        if (s.destroyed) return;
        s.write(p);
      }
      busy = false;
      if (script.close) s.end();
      else void next();
    };
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    seen,
    accepted: () => conns,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  raw: string[];
  body: Buffer;
}

function get(port: number, path: string, o: { method?: string; body?: Buffer | Buffer[]; headers?: Record<string, string>; agent?: http.Agent } = {}): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: o.method ?? 'GET', headers: o.headers, agent: o.agent ?? false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, raw: res.rawHeaders, body: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (Array.isArray(o.body)) {
      for (const b of o.body) req.write(b);
      req.end();
    } else req.end(o.body);
  });
}

const BIG = Buffer.alloc(100 * 1024);
for (let i = 0; i < BIG.length; i++) BIG[i] = (i * 7) & 0xff;

for (const frontend of FRONTENDS) {
  describe(`the relay's HTTP/1.1 client (${frontend} front end)`, () => {
    let up: Awaited<ReturnType<typeof rawUpstream>>;
    let d: Daemon;
    let script: (r: Seen) => Script = () => ({ pieces: ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}'] });
    before(async () => {
      up = await rawUpstream((r) => script(r));
      d = await startTestDaemon({ frontend, localAPIServer: `http://127.0.0.1:${up.port}`, requestTimeoutMs: 3000 });
      await d.publisher.refresh();
    });
    after(async () => {
      await d?.close();
      await up?.close();
    });

    test('a 100 KiB Content-Length body written in 1 KiB pieces arrives byte for byte', async () => {
      const pieces: Buffer[] = [Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${BIG.length}\r\n\r\n`)];
      for (let i = 0; i < BIG.length; i += 1024) pieces.push(BIG.subarray(i, i + 1024));
      script = () => ({ pieces, gapMs: 0 });
      const r = await get(d.clientPort, `${CM}/big`);
      assert.equal(r.status, 200);
      assert.ok(r.body.equals(BIG), 'body bytes');
    });

    test('a chunked body (extensions, a trailer) is relayed de-chunked, the trailer not at all', async () => {
      script = () => ({ pieces: ['HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n', '3;x=y\r\nabc\r\n', '4\r\ndefg\r\n', '0\r\nX-Secret-Trailer: t\r\n\r\n'], gapMs: 20 });
      const r = await get(d.clientPort, `${CM}/chunked`);
      assert.equal(r.body.toString(), 'abcdefg');
      assert.equal(r.headers['x-secret-trailer'], undefined);
    });

    test('a close-delimited body arrives whole, and that connection is not reused', async () => {
      script = () => ({ pieces: ['HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n', 'until ', 'close'], gapMs: 10, close: true });
      const r = await get(d.clientPort, `${CM}/close`);
      assert.equal(r.body.toString(), 'until close');
      script = () => ({ pieces: ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'] });
      const before = up.seen.length;
      await get(d.clientPort, `${CM}/after`);
      assert.notEqual(up.seen[before]!.conn, up.seen[before - 1]!.conn, 'a new upstream connection');
    });

    test('keep-alive: sequential requests reuse one upstream connection', async () => {
      script = () => ({ pieces: ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'] });
      const before = up.seen.length;
      for (let i = 0; i < 5; i++) assert.equal((await get(d.clientPort, `${CM}/ka${i}`)).body.toString(), 'ok');
      const conns = new Set(up.seen.slice(before).map((s) => s.conn));
      assert.equal(conns.size, 1, 'one connection for five requests');
    });

    test('HEAD: no body, the Content-Length of the GET; 204 and 304: no body', async () => {
      script = () => ({ pieces: ['HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12345\r\n\r\n'] });
      const h = await get(d.clientPort, `${CM}/head`, { method: 'HEAD' });
      assert.equal(h.status, 200);
      assert.equal(h.headers['content-length'], '12345');
      assert.equal(h.body.length, 0);
      for (const status of [204, 304]) {
        script = () => ({ pieces: [`HTTP/1.1 ${status} X\r\nEtag: "e"\r\n\r\n`] });
        const r = await get(d.clientPort, `${CM}/s${status}`);
        assert.equal(r.status, status);
        assert.equal(r.body.length, 0);
        assert.equal(r.headers.etag, '"e"');
      }
    });

    test('1xx answers are read and not relayed; the final answer is', async () => {
      script = () => ({ pieces: ['HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n', 'HTTP/1.1 201 Created\r\nContent-Length: 7\r\n\r\ncreated'], gapMs: 10 });
      const r = await get(d.clientPort, CM, { method: 'POST', body: Buffer.from('{}'), headers: { 'content-type': 'application/json' } });
      assert.equal(r.status, 201);
      assert.equal(r.body.toString(), 'created');
    });

    for (const [name, bytes] of [
      ['Content-Length and Transfer-Encoding together', 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'],
      ['two Content-Lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc'],
      ['an obs-folded header', 'HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 3\r\n\r\nabc'],
      ['a bare LF', 'HTTP/1.1 200 OK\r\nX-A: 1\nContent-Length: 3\r\n\r\nabc'],
    ] as const) {
      test(`an answer with ${name}: 502 Status, and that upstream connection is discarded`, async () => {
        script = () => ({ pieces: [bytes] });
        const r = await get(d.clientPort, `${CM}/bad`);
        assert.equal(r.status, 502);
        assert.match(r.body.toString(), /MVP_ERR_UPSTREAM_PROTOCOL/);
        script = () => ({ pieces: ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'] });
        const before = up.seen.length;
        await get(d.clientPort, `${CM}/next`);
        assert.notEqual(up.seen[before]!.conn, up.seen[before - 1]!.conn, 'not reused');
      });
    }

    test('a client that goes away mid-body: the upstream connection is closed, never reused', async () => {
      let sock: net.Socket | undefined;
      script = () => ({ pieces: [`HTTP/1.1 200 OK\r\nContent-Length: ${BIG.length}\r\n\r\n`, BIG.subarray(0, 1000), BIG.subarray(1000, 2000), BIG.subarray(2000)], gapMs: 300 });
      await new Promise<void>((resolve) => {
        sock = net.connect(d.clientPort, '127.0.0.1', () => sock!.write(`GET ${CM}/cut HTTP/1.1\r\nHost: x\r\n\r\n`));
        sock.once('data', () => {
          sock!.destroy();
          resolve();
        });
      });
      const cutConn = up.seen.at(-1)!.conn;
      await new Promise((r) => setTimeout(r, 700));
      script = () => ({ pieces: ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'] });
      await get(d.clientPort, `${CM}/next`);
      assert.notEqual(up.seen.at(-1)!.conn, cutConn);
    });

    test('request bodies: a Content-Length body goes as is; a chunked one is re-chunked and arrives whole', async () => {
      script = () => ({ pieces: ['HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok'] });
      await get(d.clientPort, CM, { method: 'POST', body: BIG, headers: { 'content-type': 'application/octet-stream', 'content-length': String(BIG.length) } });
      let s = up.seen.at(-1)!;
      assert.match(s.head, new RegExp(`\\r\\ncontent-length: ${BIG.length}\\r\\n`, 'i'));
      assert.ok(s.body.equals(BIG));
      await get(d.clientPort, CM, { method: 'POST', body: [BIG.subarray(0, 5000), BIG.subarray(5000)], headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' } });
      s = up.seen.at(-1)!;
      assert.match(s.head, /\r\ntransfer-encoding: chunked\r\n/i);
      assert.doesNotMatch(s.head, /\r\ncontent-length:/i);
      assert.ok(s.body.equals(BIG));
    });

    test('header bytes outside ASCII reach the client as the upstream sent them', async () => {
      script = () => ({ pieces: [Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nX-Latin: caf'), Buffer.from([0xe9]), Buffer.from('\r\nAudit-Id: a1\r\nContent-Length: 2\r\n\r\nok')])] });
      const r = await get(d.clientPort, `${CM}/bytes`);
      const i = r.raw.findIndex((h) => h.toLowerCase() === 'x-latin');
      assert.equal(Buffer.from(r.raw[i + 1]!, 'latin1').toString('hex'), Buffer.from([0x63, 0x61, 0x66, 0xe9]).toString('hex'));
      assert.equal(r.headers['audit-id'], 'a1');
    });

    test('a kept-alive connection the upstream closes as the request goes out: a GET is sent again on a fresh one; a POST gets a 503', async () => {
      script = () => ({ pieces: ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'] });
      await get(d.clientPort, `${CM}/warm`);
      let dropped = 0;
      script = () => (dropped++ === 0 ? { pieces: [], drop: true } : { pieces: ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'] });
      const g = await get(d.clientPort, `${CM}/race`);
      assert.equal(g.status, 200);
      assert.equal(dropped, 2, 'sent twice: once on the kept-alive connection, once fresh');
      await get(d.clientPort, `${CM}/warm2`);
      dropped = 0;
      const p = await get(d.clientPort, CM, { method: 'POST', body: Buffer.from('{}'), headers: { 'content-type': 'application/json' } });
      assert.equal(p.status, 503);
      assert.equal(dropped, 1, 'a create is never sent twice');
    });
  });
}
