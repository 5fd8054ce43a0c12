// mvproxy's own HTTP/2 client for long-running streams (src/upstream/h2/connection.ts) against a
// real HTTP/2 server (node:http2, nghttp2's encoder and flow control) and against a raw one that
// breaks the protocol. What a user would notice: a watcher that stops reading holds at most one
// stream window here, then gets every byte once it reads again; a header value with CR/LF from an
// upstream never reaches a client; a GOAWAY's unprocessed streams are retriable (REFUSED_STREAM);
// a peer breaking framing or HPACK ends the connection, every stream told.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import type tls from 'node:tls';
import { H2Connection, H2_COMPRESSION_ERROR, H2_ENHANCE_YOUR_CALM, H2_FLOW_CONTROL_ERROR, H2_FRAME_SIZE_ERROR, H2_PROTOCOL_ERROR, H2_REFUSED_STREAM, type H2StreamSink } from '../../src/upstream/h2/connection';
import { encodeFields } from '../../src/upstream/h2/hpack';
import { FRAME, FLAG, data, frame, headerBlock, headers, settings } from '../support/h2-flood';
import { eventually } from '../support/poll';

const WINDOW = 256 * 1024;
const OPTIONS = { streamWindow: WINDOW, connectionWindow: 1 << 30, maxHeaderListBytes: 64 * 1024 };
const GET = (path: string) => encodeFields([':method', 'GET', ':path', path, ':scheme', 'http', ':authority', '127.0.0.1']);

/** A sink that records everything; `pauseAt`: returns false from data() once that many bytes arrived. */
class Recorder implements H2StreamSink {
  heads: string[][] = [];
  bytes = 0;
  chunks = 0;
  ended = false;
  closedCode = -1;
  constructor(public pauseAt = Infinity) {}
  head(f: string[]) {
    this.heads.push(f);
  }
  data(c: Buffer) {
    this.bytes += c.length;
    this.chunks++;
    return this.bytes < this.pauseAt;
  }
  end() {
    this.ended = true;
  }
  closed(code: number) {
    this.closedCode = code;
  }
}

async function connect(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  let settings = 0;
  let closed = false;
  const conn = new H2Connection(socket as unknown as tls.TLSSocket, OPTIONS, { settings: () => settings++, goaway: () => undefined, close: () => (closed = true) });
  await eventually(() => settings > 0, { timeoutMs: 2000, what: 'the server SETTINGS' });
  return { conn, socket, isClosed: () => closed };
}

test('a stream whose consumer pauses holds at most its window here while the server waits; on resume every byte arrives, in order', async () => {
  const BODY = 4 * 1024 * 1024;
  let sent = 0;
  const server = http2.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'audit-id': 'x' });
    const chunk = Buffer.alloc(16 * 1024, 7);
    const pump = () => {
      while (sent < BODY) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { conn } = await connect((server.address() as net.AddressInfo).port);
  const rec = new Recorder(1);
  const st = conn.request(GET('/watch'), rec);
  try {
    await eventually(() => rec.heads.length === 1 && rec.bytes > 0, { timeoutMs: 2000, what: 'the head and a first chunk' });
    // One read's frames for a stream are handed on as one chunk: the first may hold several.
    const atPause = rec.bytes;
    assert.equal(rec.chunks, 1);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(rec.bytes, atPause, 'after the pause nothing more was handed on');
    assert.ok(sent < BODY, `the server waited for a window (sent ${sent} of ${BODY})`);
    // The server could send at most one window before waiting for us (nghttp2 buffers its side).
    assert.ok(st.window >= 0 && st.window <= WINDOW, `window ${st.window}`);
    assert.deepEqual(rec.heads[0]!.slice(0, 2), [':status', '200']);
    rec.pauseAt = Infinity;
    st.resume();
    await eventually(() => rec.ended, { timeoutMs: 5000, what: 'the whole body' });
    assert.equal(rec.bytes, BODY);
    assert.equal(rec.closedCode, -1);
  } finally {
    conn.destroy();
    server.close();
  }
});

/** A raw HTTP/2 server: reads the client's preface and HEADERS, answers with `answer(streamId)`'s frames. */
async function rawServer(answer: (ids: number[], sock: net.Socket) => void, want = 1) {
  const got: Buffer[] = [];
  const server = net.createServer((sock) => {
    let buf = Buffer.alloc(0);
    const ids: number[] = [];
    sock.write(settings());
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      got.push(d);
      let i = buf.subarray(0, 24).toString('latin1').startsWith('PRI *') ? 24 : 0;
      for (; buf.length - i >= 9; ) {
        const len = buf.readUIntBE(i, 3);
        if (buf.length - i < 9 + len) break;
        if (buf[i + 3] === FRAME.HEADERS) ids.push(buf.readUInt32BE(i + 5) & 0x7fffffff);
        i += 9 + len;
      }
      buf = buf.subarray(i);
      if (ids.length === want) {
        answer([...ids], sock);
        ids.push(-1); // answered once
      }
    });
    sock.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close(), received: () => Buffer.concat(got) };
}

test('a response field with CR/LF (or an upper-case name) ends the stream: the owner never gets the head', async () => {
  for (const bad of [['x-a', 'v\r\nx-remote-user: admin'], ['X-Upper', 'v'], ['x-nul', 'a\u0000b']] as [string, string][]) {
    const srv = await rawServer(([id], sock) => sock.write(headers(id!, headerBlock([[':status', '200'], bad]), FLAG.END_HEADERS)));
    const { conn } = await connect(srv.port);
    const rec = new Recorder();
    conn.request(GET('/w'), rec);
    await eventually(() => rec.closedCode !== -1, { timeoutMs: 2000, what: `the stream closed (${JSON.stringify(bad)})` });
    assert.equal(rec.heads.length, 0);
    assert.equal(rec.closedCode, H2_PROTOCOL_ERROR);
    conn.destroy();
    srv.close();
  }
});

test("a GOAWAY: streams above its last id are refused (retriable), the one below it finishes; no new stream is taken", async () => {
  const srv = await rawServer(([a, b], sock) => {
    const p = Buffer.alloc(8);
    p.writeUInt32BE(a!, 0);
    sock.write(Buffer.concat([frame(FRAME.GOAWAY, 0, 0, p), headers(a!, headerBlock([[':status', '200']]), FLAG.END_HEADERS), data(a!, Buffer.from('{}\n'), FLAG.END_STREAM)]));
    void b;
  }, 2);
  const { conn } = await connect(srv.port);
  const first = new Recorder();
  const second = new Recorder();
  conn.request(GET('/a'), first);
  conn.request(GET('/b'), second);
  await eventually(() => first.ended && second.closedCode !== -1, { timeoutMs: 2000, what: 'both streams settled' });
  assert.equal(first.bytes, 3);
  assert.equal(second.closedCode, H2_REFUSED_STREAM);
  assert.throws(() => conn.request(GET('/c'), new Recorder()));
  srv.close();
});

test('protocol breaches end the connection and every stream hears it: a frame over 16 KiB, a bad HPACK block, DATA past the window, PUSH_PROMISE', async () => {
  const cases: [string, (id: number) => Buffer, number][] = [
    ['a frame over 16 KiB', (id) => data(id, Buffer.alloc(16_385)), H2_FRAME_SIZE_ERROR],
    ['an HPACK index past the table', (id) => headers(id, Buffer.from([0xbe]), FLAG.END_HEADERS), H2_COMPRESSION_ERROR],
    ['DATA past the stream window', (id) => Buffer.concat([headers(id, headerBlock([[':status', '200']]), FLAG.END_HEADERS), ...Array.from({ length: 17 }, () => data(id, Buffer.alloc(16_384)))]), H2_FLOW_CONTROL_ERROR],
    ['PUSH_PROMISE', (id) => frame(FRAME.PUSH_PROMISE, FLAG.END_HEADERS, id, Buffer.concat([Buffer.from([0, 0, 0, 2]), headerBlock([[':method', 'GET']])])), H2_PROTOCOL_ERROR],
  ];
  for (const [what, answer, code] of cases) {
    const srv = await rawServer(([id], sock) => sock.write(answer(id!)));
    const { conn, isClosed } = await connect(srv.port);
    // The consumer pauses at once: no window is granted back, so the 17th 16 KiB frame is past 256 KiB.
    const rec = new Recorder(code === H2_FLOW_CONTROL_ERROR ? 1 : Infinity);
    conn.request(GET('/w'), rec);
    await eventually(() => rec.closedCode !== -1, { timeoutMs: 2000, what: `${what}: the stream closed` });
    assert.equal(rec.closedCode, code, what);
    // DATA past a window is a stream error (RST_STREAM); the others end the connection.
    if (code !== H2_FLOW_CONTROL_ERROR) await eventually(isClosed, { timeoutMs: 2000, what: `${what}: the connection closed` });
    // What we wrote back: a GOAWAY or RST_STREAM with the code.
    await eventually(() => {
      const r = srv.received();
      return r.includes(Buffer.from([0, 0, 0, code]));
    }, { timeoutMs: 2000, what: `${what}: the code reached the server` });
    conn.destroy();
    srv.close();
  }
});

test('a body longer or shorter than its Content-Length, or DATA on a 204, ends the stream (RFC 9113 §8.1.1): never relayed as if whole', async () => {
  const head = (status: string, cl?: string) => headerBlock([[':status', status], ...(cl === undefined ? [] : [['content-length', cl] as [string, string]])]);
  const cases: [string, (id: number) => Buffer][] = [
    ['longer', (id) => Buffer.concat([headers(id, head('200', '5'), FLAG.END_HEADERS), data(id, Buffer.from('HELLOHTTP/1.1 200 OK\r\n\r\n'), FLAG.END_STREAM)])],
    ['shorter', (id) => Buffer.concat([headers(id, head('200', '5'), FLAG.END_HEADERS), data(id, Buffer.from('HEL'), FLAG.END_STREAM)])],
    ['DATA on a 204', (id) => Buffer.concat([headers(id, head('204'), FLAG.END_HEADERS), data(id, Buffer.from('x'), FLAG.END_STREAM)])],
    ['two different lengths', (id) => headers(id, headerBlock([[':status', '200'], ['content-length', '1'], ['content-length', '2']]), FLAG.END_HEADERS)],
  ];
  for (const [what, answer] of cases) {
    const srv = await rawServer(([id], sock) => sock.write(answer(id!)));
    const { conn } = await connect(srv.port);
    const rec = new Recorder();
    conn.request(GET('/w'), rec);
    await eventually(() => rec.closedCode !== -1, { timeoutMs: 2000, what: `${what}: the stream closed` });
    assert.equal(rec.closedCode, H2_PROTOCOL_ERROR, what);
    assert.equal(rec.ended, false, what);
    assert.ok(rec.bytes <= 5, `${what}: ${rec.bytes} bytes handed on`);
    conn.destroy();
    srv.close();
  }
  // As long as declared: relayed and ended.
  const ok = await rawServer(([id], sock) => sock.write(Buffer.concat([headers(id!, head('200', '5'), FLAG.END_HEADERS), data(id!, Buffer.from('HE')), data(id!, Buffer.from('LLO'), FLAG.END_STREAM)])));
  const { conn } = await connect(ok.port);
  const rec = new Recorder();
  conn.request(GET('/w'), rec);
  await eventually(() => rec.ended, { timeoutMs: 2000, what: 'the 5-byte body' });
  assert.equal(rec.bytes, 5);
  conn.destroy();
  ok.close();
});

test("one read's DATA frames for a stream reach its owner as one chunk: a thousand 1-byte frames are not a thousand writes", async () => {
  const srv = await rawServer(([id], sock) => sock.write(Buffer.concat([headers(id!, headerBlock([[':status', '200']]), FLAG.END_HEADERS), ...Array.from({ length: 1000 }, () => data(id!, Buffer.from('x')))])));
  const { conn } = await connect(srv.port);
  const rec = new Recorder();
  conn.request(GET('/w'), rec);
  await eventually(() => rec.bytes === 1000, { timeoutMs: 2000, what: 'the thousand bytes' });
  assert.ok(rec.chunks <= 5, `${rec.chunks} chunks`);
  conn.destroy();
  srv.close();
});

test('floods from an upstream: empty CONTINUATIONs past the header bound, PINGs whose ACKs it never reads: the connection is cut', async () => {
  const cont = await rawServer(([id], sock) => sock.write(Buffer.concat([headers(id!, headerBlock([[':status', '200']]), 0), ...Array.from({ length: 10_000 }, () => frame(FRAME.CONTINUATION, 0, id!))])));
  let c = await connect(cont.port);
  let rec = new Recorder();
  c.conn.request(GET('/w'), rec);
  await eventually(c.isClosed, { timeoutMs: 2000, what: 'CONTINUATION flood: the connection closed' });
  assert.equal(rec.closedCode, H2_PROTOCOL_ERROR);
  cont.close();
  // 1,000,000 PINGs (17 MB of ACKs owed) to a client whose server never reads: more than the kernel's buffers hold.
  const ping = await rawServer(([], sock) => {
    sock.pause();
    const batch = Buffer.concat(Array.from({ length: 10_000 }, () => frame(FRAME.PING, 0, 0, Buffer.alloc(8))));
    let n = 0;
    const more = () => {
      while (n++ < 100 && !sock.destroyed) if (!sock.write(batch)) return void sock.once('drain', more);
    };
    more();
  });
  c = await connect(ping.port);
  rec = new Recorder();
  c.conn.request(GET('/w'), rec);
  await eventually(c.isClosed, { timeoutMs: 10_000, what: 'PING flood: the connection closed' });
  assert.equal(rec.closedCode, H2_ENHANCE_YOUR_CALM);
  ping.close();
});

test('an answer ended while its consumer is paused is kept whole: the connection closing (or a RST after the end) does not cut what the consumer has not taken', async () => {
  for (const after of ['close', 'rst'] as const) {
    const srv = await rawServer(([id], sock) => {
      sock.write(Buffer.concat([headers(id!, headerBlock([[':status', '200']]), FLAG.END_HEADERS), data(id!, Buffer.alloc(1000, 0x61)), data(id!, Buffer.alloc(500, 0x62), FLAG.END_STREAM)]));
      setTimeout(() => (after === 'close' ? sock.destroy() : sock.write(frame(FRAME.RST_STREAM, 0, id!, Buffer.from([0, 0, 0, 0])))), 100);
    });
    const { conn, isClosed } = await connect(srv.port);
    const rec = new Recorder(1);
    const st = conn.request(GET('/w'), rec);
    await eventually(() => rec.bytes > 0, { timeoutMs: 2000, what: 'the first bytes' });
    if (after === 'close') await eventually(isClosed, { timeoutMs: 2000, what: 'the connection closed' });
    else await new Promise((r) => setTimeout(r, 300));
    assert.equal(rec.closedCode, -1, after);
    rec.pauseAt = Infinity;
    st.resume();
    assert.equal(rec.bytes, 1500, after);
    assert.equal(rec.ended, true, after);
    conn.destroy();
    srv.close();
  }
});

test('frames cut anywhere by the reads (pieces of 1 to 20 bytes) arrive whole and in order', async () => {
  const body = Buffer.from(Array.from({ length: 60 }, (_, i) => `{"n":${i},"pad":"${'x'.repeat(i * 7)}"}\n`).join(''));
  const srv = await rawServer(([id], sock) => {
    sock.setNoDelay(true);
    const frames: Buffer[] = [headers(id!, headerBlock([[':status', '200']]), FLAG.END_HEADERS)];
    for (let at = 0; at < body.length; ) {
      const n = 1 + ((at * 7919) % 700);
      frames.push(data(id!, body.subarray(at, at + n), at + n >= body.length ? FLAG.END_STREAM : 0));
      at += n;
    }
    const all = Buffer.concat(frames);
    let at = 0;
    const next = () => {
      if (at >= all.length || sock.destroyed) return;
      const n = 1 + (at % 20);
      sock.write(all.subarray(at, at + n));
      at += n;
      setTimeout(next, 1);
    };
    next();
  });
  const { conn } = await connect(srv.port);
  const got: Buffer[] = [];
  const rec = new Recorder();
  const data0 = rec.data.bind(rec);
  rec.data = (c: Buffer) => (got.push(Buffer.from(c)), data0(c));
  conn.request(GET('/w'), rec);
  await eventually(() => rec.ended, { timeoutMs: 20_000, what: 'the whole answer' });
  assert.ok(Buffer.concat(got).equals(body));
  conn.destroy();
  srv.close();
});
