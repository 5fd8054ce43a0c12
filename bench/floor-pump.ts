// The floor of issue 40 §1's design: the least code that pumps HTTP/2 frames between two TLS sockets
// on this runtime. HTTP/2 over TLS in front (h2 by ALPN only: client-go's default), HTTP/2 sessions
// over TLS with the admin's client certificate behind; no node:http2 anywhere. Frames are read off
// each socket's 'data' chunks; a DATA frame's payload is a view of that chunk, written to the other
// socket behind a new 9-byte header with the stream id swapped (no per-stream Readable, no copy);
// HPACK only for HEADERS (decoded and re-encoded, as literals never indexed, with hpack.js); window
// updates to the upstream batched per read; each socket's frames of one turn leave in one corked
// write (one TLS record). The stream tables are Maps from stream id to a two-ended link.
//
// What a floor may leave out, and this one does: sending-side flow control (client-go's windows are
// 4 MiB a stream and 1 GiB a connection, watch events are ~1 KiB: a bench never reaches them), request
// bodies (watches have none: forwarded without flow control), priorities, identity, routing, bounds.
// npm run test:scale's `pumpfloor-local` / `pumpfloor-peer` cases run it (see bench/scale.ts).
//
// Plain TypeScript with only erasable syntax: bench/scale.ts strips its types ahead (bench/targets.ts
// strippedScript) and runs it without tsx, so its RSS is the design's, not a compiler's.
//
//   node bench/floor-pump.ts PORT UPSTREAM_URL CA_FILE CLIENT_CERT CLIENT_KEY SERVING_CERT SERVING_KEY [verify]
//
// `verify`: ask for and verify the client's certificate (the peer route's B, as mvproxy's peer listener).

import type { TLSSocket } from 'node:tls';
// require, not import: the package is CommonJS and Node strips this file's types as is (no tsx).
const { readFileSync } = require('node:fs') as typeof import('node:fs');
const tls = require('node:tls') as typeof import('node:tls');

interface HpackField {
  name: string;
  value: string;
}
interface Decompressor {
  write(b: Buffer): void;
  execute(): void;
  read(): HpackField | null;
}
// hpack.js (indutny's, as the spdy module uses) has no types; CommonJS.
interface Compressor {
  write(fields: { name: string; value: string; huffman: boolean; neverIndex: boolean }[]): void;
  read(): Buffer | null;
}
const hpack = require('hpack.js') as { decompressor: { create(o: { table: { size: number } }): Decompressor }; compressor: { create(o: { table: { maxSize: number } }): Compressor } };
const encoder = hpack.compressor.create({ table: { maxSize: 4096 } });

const [port, upstream, caFile, certFile, keyFile, servingCert, servingKey, mode] = process.argv.slice(2);
if (!servingKey) {
  process.stderr.write('usage: floor-pump.ts PORT UPSTREAM_URL CA_FILE CLIENT_CERT CLIENT_KEY SERVING_CERT SERVING_KEY [verify]\n');
  process.exit(2);
}
const up = new URL(upstream!);
const ca = readFileSync(caFile!);
const upContext = tls.createSecureContext({ ca, cert: readFileSync(certFile!), key: readFileSync(keyFile!) });

// Frame types and flags (RFC 9113 §6).
const DATA = 0, HEADERS = 1, RST_STREAM = 3, SETTINGS = 4, PING = 6, GOAWAY = 7, WINDOW_UPDATE = 8, CONTINUATION = 9;
const END_STREAM = 0x1, ACK = 0x1, END_HEADERS = 0x4, PADDED = 0x8, PRIORITY = 0x20;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const CANCEL = 8, INTERNAL_ERROR = 2;
/** As mvproxy's upstream sessions (src/upstream/h2/origin.ts): 256 KiB a stream, 1 GiB the connection, ≤ 250 streams. */
const STREAM_WINDOW = 256 * 1024;
const CONN_WINDOW = 1 << 30;
const MAX_STREAMS = 250;
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'host']);

function frameHead(len: number, type: number, flags: number, sid: number): Buffer {
  const h = Buffer.allocUnsafe(9);
  h.writeUIntBE(len, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(sid, 5);
  return h;
}

function frame(type: number, flags: number, sid: number, payload?: Buffer): Buffer {
  const h = frameHead(payload?.length ?? 0, type, flags, sid);
  return payload ? Buffer.concat([h, payload]) : h;
}

function u32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n);
  return b;
}

/** The fields but the hop-by-hop ones, as literals never indexed, no Huffman (hpack.js's encoder): no table state, so one encoder serves every connection. */
function encode(fields: HpackField[]): Buffer {
  encoder.write(fields.filter((f) => !HOP.has(f.name)).map((f) => ({ name: f.name, value: f.value, huffman: false, neverIndex: true })));
  const parts: Buffer[] = [];
  for (let b = encoder.read(); b !== null; b = encoder.read()) parts.push(b);
  return Buffer.concat(parts);
}

/** A socket's frames of one turn, written at once (corked: one TLS record for many frames). */
const dirty = new Set<Conn>();
function flushAll(): void {
  for (const c of dirty) c.flush();
  dirty.clear();
}

/** One stream as seen from both ends. */
interface Link {
  client: ClientConn;
  csid: number;
  up: UpConn | null;
  usid: number;
  /** Upstream DATA bytes received since the last stream WINDOW_UPDATE. */
  consumed: number;
  head: Buffer;
  endStream: boolean;
}

abstract class Conn {
  private out: Buffer[] = [];
  private buf: Buffer | null = null;
  /** Header block fragments of a HEADERS not yet ended (CONTINUATION follows). */
  private block: Buffer[] = [];
  private blockSid = 0;
  private blockFlags = 0;
  private readonly decoder = hpack.decompressor.create({ table: { size: 4096 } });
  protected prefaceLeft: number;
  readonly socket: TLSSocket;

  constructor(socket: TLSSocket, prefaceLeft: number) {
    this.socket = socket;
    this.prefaceLeft = prefaceLeft;
    socket.on('data', (d: Buffer) => {
      this.read(d);
      flushAll();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed();
      flushAll();
    });
  }

  queue(b: Buffer): void {
    this.out.push(b);
    dirty.add(this);
  }

  flush(): void {
    const out = this.out;
    if (out.length === 0 || this.socket.destroyed) return void (this.out = []);
    this.out = [];
    if (out.length === 1) return void this.socket.write(out[0]!);
    this.socket.cork();
    for (const b of out) this.socket.write(b);
    this.socket.uncork();
  }

  private read(d: Buffer): void {
    let b = this.buf === null ? d : Buffer.concat([this.buf, d]);
    this.buf = null;
    let i = 0;
    if (this.prefaceLeft > 0) {
      const n = Math.min(this.prefaceLeft, b.length);
      i = n;
      this.prefaceLeft -= n;
    }
    while (b.length - i >= 9) {
      const len = b.readUIntBE(i, 3);
      if (b.length - i < 9 + len) break;
      const type = b[i + 3]!;
      const flags = b[i + 4]!;
      const sid = b.readUInt32BE(i + 5) & 0x7fffffff;
      const p = b.subarray(i + 9, i + 9 + len);
      i += 9 + len;
      this.onFrame(type, flags, sid, p);
    }
    if (i < b.length) this.buf = b.subarray(i);
    b = d; // the views handed on keep the chunk alive as long as they need it
  }

  private onFrame(type: number, flags: number, sid: number, p: Buffer): void {
    switch (type) {
      case HEADERS: {
        let s = 0;
        let e = p.length;
        if (flags & PADDED) {
          e -= p[0]!;
          s = 1;
        }
        if (flags & PRIORITY) s += 5;
        this.blockSid = sid;
        this.blockFlags = flags;
        this.block = [p.subarray(s, e)];
        if (flags & END_HEADERS) this.endBlock();
        return;
      }
      case CONTINUATION:
        this.block.push(p);
        if (flags & END_HEADERS) this.endBlock();
        return;
      case SETTINGS:
        if (flags & ACK) return;
        this.queue(frame(SETTINGS, ACK, 0));
        for (let j = 0; j + 6 <= p.length; j += 6) this.onSetting(p.readUInt16BE(j), p.readUInt32BE(j + 2));
        return this.onSettings();
      case PING:
        if (!(flags & ACK)) this.queue(frame(PING, ACK, 0, Buffer.from(p)));
        return;
      case DATA: {
        let s = 0;
        let e = p.length;
        if (flags & PADDED) {
          e -= p[0]!;
          s = 1;
        }
        return this.onData(sid, flags, p.subarray(s, e), p.length);
      }
      case RST_STREAM:
        return this.onReset(sid, p.readUInt32BE(0));
      case GOAWAY:
        return this.onGoaway();
      case WINDOW_UPDATE:
        return; // no sending-side flow control in the floor (see the top)
      default:
        return; // PRIORITY, PUSH_PROMISE (disabled), unknown: ignored
    }
  }

  private endBlock(): void {
    const block = this.block.length === 1 ? this.block[0]! : Buffer.concat(this.block);
    this.block = [];
    this.decoder.write(block);
    this.decoder.execute();
    const fields: HpackField[] = [];
    for (let f = this.decoder.read(); f !== null; f = this.decoder.read()) fields.push(f);
    this.onHeaders(this.blockSid, this.blockFlags, fields);
  }

  protected abstract onHeaders(sid: number, flags: number, fields: HpackField[]): void;
  protected abstract onData(sid: number, flags: number, payload: Buffer, flowLength: number): void;
  protected abstract onReset(sid: number, code: number): void;
  protected onSetting(_id: number, _value: number): void {}
  protected onSettings(): void {}
  protected onGoaway(): void {}
  protected abstract closed(): void;
}

/** A client's connection: HEADERS open a stream upstream; a RST cancels it. */
class ClientConn extends Conn {
  readonly links = new Map<number, Link>();

  constructor(socket: TLSSocket) {
    super(socket, PREFACE.length);
    // SETTINGS_MAX_CONCURRENT_STREAMS 250 (as mvproxy's front end).
    const s = Buffer.allocUnsafe(6);
    s.writeUInt16BE(3, 0);
    s.writeUInt32BE(MAX_STREAMS, 2);
    this.queue(frame(SETTINGS, 0, 0, s));
    flushAll();
  }

  protected onHeaders(sid: number, flags: number, fields: HpackField[]): void {
    const link: Link = { client: this, csid: sid, up: null, usid: 0, consumed: 0, head: encode(fields), endStream: (flags & END_STREAM) !== 0 };
    this.links.set(sid, link);
    pool.open(link);
  }

  protected onData(sid: number, flags: number, payload: Buffer): void {
    const l = this.links.get(sid);
    if (l?.up) l.up.queue(Buffer.concat([frameHead(payload.length, DATA, flags & END_STREAM, l.usid), payload]));
  }

  protected onReset(sid: number): void {
    const l = this.links.get(sid);
    if (!l) return;
    this.links.delete(sid);
    if (l.up) {
      l.up.links.delete(l.usid);
      l.up.queue(frame(RST_STREAM, 0, l.usid, u32(CANCEL)));
      l.up.streamClosed();
    } else pool.waiting.delete(l);
  }

  protected closed(): void {
    for (const sid of [...this.links.keys()]) this.onReset(sid);
  }
}

/** One HTTP/2 connection to the upstream, up to its SETTINGS_MAX_CONCURRENT_STREAMS streams. */
class UpConn extends Conn {
  readonly links = new Map<number, Link>();
  nextSid = 1;
  max = MAX_STREAMS;
  ready = false;
  usable = true;
  private connConsumed = 0;

  constructor(socket: TLSSocket) {
    super(socket, 0);
    const s = Buffer.allocUnsafe(12);
    s.writeUInt16BE(2, 0); // ENABLE_PUSH 0
    s.writeUInt32BE(0, 2);
    s.writeUInt16BE(4, 6); // INITIAL_WINDOW_SIZE
    s.writeUInt32BE(STREAM_WINDOW, 8);
    this.queue(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0, s), frame(WINDOW_UPDATE, 0, 0, u32(CONN_WINDOW - 65535))]));
  }

  get room(): boolean {
    return this.ready && this.usable && this.links.size < this.max;
  }

  start(l: Link): void {
    l.up = this;
    l.usid = this.nextSid;
    this.nextSid += 2;
    this.links.set(l.usid, l);
    this.queue(Buffer.concat([frameHead(l.head.length, HEADERS, END_HEADERS | (l.endStream ? END_STREAM : 0), l.usid), l.head]));
  }

  protected onSetting(id: number, value: number): void {
    if (id === 3) this.max = Math.max(1, Math.min(value, MAX_STREAMS));
  }

  protected onSettings(): void {
    if (this.ready) return;
    this.ready = true;
    pool.ready(this);
  }

  protected onHeaders(sid: number, flags: number, fields: HpackField[]): void {
    const l = this.links.get(sid);
    if (!l) return;
    const block = encode(fields);
    l.client.queue(Buffer.concat([frameHead(block.length, HEADERS, END_HEADERS | (flags & END_STREAM), l.csid), block]));
    if (flags & END_STREAM) this.finish(l);
  }

  protected onData(sid: number, flags: number, payload: Buffer, flowLength: number): void {
    this.connConsumed += flowLength;
    if (this.connConsumed >= CONN_WINDOW / 2) {
      this.queue(frame(WINDOW_UPDATE, 0, 0, u32(this.connConsumed)));
      this.connConsumed = 0;
    }
    const l = this.links.get(sid);
    if (!l) return;
    l.client.queue(frameHead(payload.length, DATA, flags & END_STREAM, l.csid));
    if (payload.length > 0) l.client.queue(payload);
    if (flags & END_STREAM) return this.finish(l);
    l.consumed += flowLength;
    // Batched: one WINDOW_UPDATE per half window a stream has taken.
    if (l.consumed >= STREAM_WINDOW / 2) {
      this.queue(frame(WINDOW_UPDATE, 0, sid, u32(l.consumed)));
      l.consumed = 0;
    }
  }

  protected onReset(sid: number, code: number): void {
    const l = this.links.get(sid);
    if (!l) return;
    l.client.queue(frame(RST_STREAM, 0, l.csid, u32(code)));
    this.finish(l);
  }

  private finish(l: Link): void {
    this.links.delete(l.usid);
    l.client.links.delete(l.csid);
    this.streamClosed();
  }

  streamClosed(): void {
    pool.drain();
  }

  protected onGoaway(): void {
    this.usable = false;
  }

  protected closed(): void {
    this.usable = false;
    pool.forget(this);
    for (const l of this.links.values()) {
      l.client.queue(frame(RST_STREAM, 0, l.csid, u32(INTERNAL_ERROR)));
      l.client.links.delete(l.csid);
    }
    this.links.clear();
  }
}

/** The upstream sessions: a stream goes on the first with room; a new session opens when none has. */
const pool = {
  conns: [] as UpConn[],
  waiting: new Set<Link>(),
  opening: false,
  open(l: Link): void {
    for (const c of this.conns) if (c.room) return c.start(l);
    this.waiting.add(l);
    if (this.opening) return;
    this.opening = true;
    const socket = tls.connect({ host: up.hostname, port: Number(up.port), secureContext: upContext, ALPNProtocols: ['h2'] });
    const c = new UpConn(socket);
    this.conns.push(c);
    socket.once('secureConnect', () => flushAll());
    socket.once('close', () => (this.opening = false));
  },
  ready(c: UpConn): void {
    this.opening = false;
    void c;
    this.drain();
  },
  drain(): void {
    for (const l of this.waiting) {
      const c = this.conns.find((x) => x.room);
      if (!c) {
        if (!this.opening && this.waiting.size > 0) {
          this.waiting.delete(l);
          this.open(l);
        }
        return;
      }
      this.waiting.delete(l);
      c.start(l);
    }
  },
  forget(c: UpConn): void {
    const i = this.conns.indexOf(c);
    if (i >= 0) this.conns.splice(i, 1);
  },
};

const server = tls.createServer({ cert: readFileSync(servingCert!), key: readFileSync(servingKey!), ALPNProtocols: ['h2'], ...(mode === 'verify' ? { ca, requestCert: true, rejectUnauthorized: true } : {}) }, (socket) => {
  if (socket.alpnProtocol !== 'h2') return void socket.destroy();
  new ClientConn(socket);
});
server.listen(Number(port), '127.0.0.1', () => process.stdout.write(`floor-watch listening on 127.0.0.1:${port} (frame pump)\n`));
process.on('SIGTERM', () => process.exit(0));
