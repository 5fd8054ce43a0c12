// A raw HTTP/2 client for flood attacks (test/security/h2-floods.test.ts): it writes frames exactly
// as given (no flow control, no stream bookkeeping, HPACK literals never Huffman-coded), bounded in
// count and time, and records what the server sent back: ACKs, RST_STREAMs, response HEADERS and
// END_STREAMs, the GOAWAY (its error code and last stream id) and whether the connection closed.
// Unlike a real client it can stop reading (the server's answers pile up in the kernel's buffers and
// then in the server's) or never acknowledge the server's SETTINGS.
import tls from 'node:tls';
import { HpackDecoder } from '../../src/upstream/h2/hpack';

export const FRAME = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PUSH_PROMISE: 5, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8 } as const;
/** RFC 9113 §7 error codes, by name, for messages. */
export const H2_ERROR: Record<number, string> = { 0: 'NO_ERROR', 1: 'PROTOCOL_ERROR', 2: 'INTERNAL_ERROR', 3: 'FLOW_CONTROL_ERROR', 4: 'SETTINGS_TIMEOUT', 5: 'STREAM_CLOSED', 6: 'FRAME_SIZE_ERROR', 7: 'REFUSED_STREAM', 8: 'CANCEL', 9: 'COMPRESSION_ERROR', 10: 'CONNECT_ERROR', 11: 'ENHANCE_YOUR_CALM', 12: 'INADEQUATE_SECURITY', 13: 'HTTP_1_1_REQUIRED' };

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}

/** An HPACK integer with an n-bit prefix (RFC 7541 §5.1). */
function hpackInt(v: number, n: number, first: number): number[] {
  const max = (1 << n) - 1;
  if (v < max) return [first | v];
  const out = [first | max];
  v -= max;
  while (v >= 128) {
    out.push((v % 128) + 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

/** A header block of literal fields without indexing, new names, no Huffman (RFC 7541 §6.2.2). */
export function headerBlock(fields: [string, string][]): Buffer {
  return Buffer.concat(fields.map(([n, v]) => literalField(Buffer.from(n, 'latin1'), Buffer.from(v, 'latin1'))));
}

/** One literal field without indexing, new name, neither string Huffman-coded (RFC 7541 §6.2.2), of the bytes given. */
export function literalField(name: Buffer, value: Buffer): Buffer {
  return Buffer.concat([Buffer.from([0x00, ...hpackInt(name.length, 7, 0)]), name, Buffer.from(hpackInt(value.length, 7, 0)), value]);
}

/** A literal field with incremental indexing, new name (RFC 7541 §6.2.1): it enters the decoder's dynamic table. */
export function indexedLiteralField(name: string, value: string): Buffer {
  const n = Buffer.from(name, 'latin1');
  const v = Buffer.from(value, 'latin1');
  return Buffer.concat([Buffer.from([0x40, ...hpackInt(n.length, 7, 0)]), n, Buffer.from(hpackInt(v.length, 7, 0)), v]);
}

/** An indexed field (RFC 7541 §6.1): index 62 is the newest entry of the dynamic table. One byte for 62. */
export function indexedField(index: number): Buffer {
  return Buffer.from(hpackInt(index, 7, 0x80));
}

/** The fields of a GET of `path` (pseudo-headers first), plus `extra`. */
export function getFields(path: string, extra: [string, string][] = []): [string, string][] {
  return [[':method', 'GET'], [':scheme', 'https'], [':authority', '127.0.0.1'], [':path', path], ...extra];
}

export const headers = (id: number, block: Buffer, flags = FLAG.END_HEADERS | FLAG.END_STREAM) => frame(FRAME.HEADERS, flags, id, block);
export const continuation = (id: number, block: Buffer, endHeaders = false) => frame(FRAME.CONTINUATION, endHeaders ? FLAG.END_HEADERS : 0, id, block);
export const rstStream = (id: number, code = 8 /* CANCEL */) => {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(code);
  return frame(FRAME.RST_STREAM, 0, id, p);
};
export const settings = (entries: [number, number][] = []) => {
  const p = Buffer.alloc(6 * entries.length);
  entries.forEach(([k, v], i) => {
    p.writeUInt16BE(k, 6 * i);
    p.writeUInt32BE(v, 6 * i + 2);
  });
  return frame(FRAME.SETTINGS, 0, 0, p);
};
export const ping = (n: number) => {
  const p = Buffer.alloc(8);
  p.writeUInt32BE(n >>> 0, 4);
  return frame(FRAME.PING, 0, 0, p);
};
export const windowUpdate = (id: number, increment: number) => {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(increment);
  return frame(FRAME.WINDOW_UPDATE, 0, id, p);
};
export const data = (id: number, payload: Buffer = Buffer.alloc(0), flags = 0) => frame(FRAME.DATA, flags, id, payload);

export interface FloodClientOptions {
  /** Client certificate and key (PEM): the peer listener's mTLS. */
  cert?: string;
  key?: string;
  /** Acknowledge the server's SETTINGS (default true, as a client must). */
  ackSettings?: boolean;
  /** Read what the server sends (default true); false: the socket is paused, nothing is read. */
  read?: boolean;
}

export interface GoAway {
  code: number;
  lastStreamId: number;
  /** ms after the connection opened. */
  at: number;
}

/** What the server sent back, counted as frames arrive. */
export interface FloodStats {
  bytesIn: number;
  frames: Record<number, number>;
  settingsAcks: number;
  pingAcks: number;
  /** Stream ids that got a response HEADERS from the server. */
  responded: Set<number>;
  /** The :status of each response HEADERS (decoded: a header block that fits one frame). */
  statuses: Map<number, string>;
  /** Stream ids the server ended (END_STREAM). */
  ended: Set<number>;
  /** RST_STREAMs from the server, by stream id, their error codes. */
  resets: Map<number, number>;
  goaway: GoAway | null;
  /** The TCP connection ended (ms after it opened), or null while it is open. */
  closedAt: number | null;
}

export class FloodClient {
  readonly stats: FloodStats = { bytesIn: 0, frames: {}, settingsAcks: 0, pingAcks: 0, responded: new Set(), statuses: new Map(), ended: new Set(), resets: new Map(), goaway: null, closedAt: null };
  /** Bytes the client handed to its socket, and how many of those writes were cut short by the close. */
  bytesOut = 0;
  private buf: Buffer = Buffer.alloc(0);
  private readonly t0 = Date.now();
  private closeWaiters: (() => void)[] = [];
  /** The server's HPACK state (its dynamic table), for the :status of its answers. */
  private readonly hpack = new HpackDecoder();

  private constructor(readonly socket: tls.TLSSocket, private readonly o: FloodClientOptions) {
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.stats.closedAt ??= Date.now() - this.t0;
      for (const w of this.closeWaiters.splice(0)) w();
    });
  }

  /** Connects with ALPN h2 and sends the preface and an empty SETTINGS; rejects when the server picks no h2. */
  static async open(port: number, o: FloodClientOptions = {}): Promise<FloodClient> {
    const socket = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false, ALPNProtocols: ['h2'], ...(o.cert ? { cert: o.cert, key: o.key } : {}) });
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', resolve);
      socket.once('error', reject);
    });
    if (socket.alpnProtocol !== 'h2') {
      socket.destroy();
      throw new Error(`ALPN chose ${String(socket.alpnProtocol)}, not h2`);
    }
    const c = new FloodClient(socket, o);
    if (o.read === false) socket.pause();
    c.send(Buffer.concat([PREFACE, settings()]));
    return c;
  }

  get closed(): boolean {
    return this.stats.closedAt !== null;
  }

  /** Writes bytes unless the connection is gone; true while the socket takes more without buffering. */
  send(b: Buffer): boolean {
    if (this.socket.destroyed || this.socket.writableEnded) return false;
    this.bytesOut += b.length;
    return this.socket.write(b);
  }

  /**
   * Writes `batch(i)` for i = 0, 1, ... until `count` batches went out, `maxMs` passed or the
   * connection closed; waits for the socket to drain (at most until `maxMs`) when it buffers.
   * Resolves with how many batches were written.
   */
  async flood(batch: (i: number) => Buffer, o: { count: number; maxMs: number }): Promise<number> {
    const end = Date.now() + o.maxMs;
    let i = 0;
    while (i < o.count && Date.now() < end && !this.closed) {
      const ok = this.send(batch(i++));
      if (!ok) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(done, Math.max(0, end - Date.now()));
          const s = this.socket;
          function done() {
            clearTimeout(t);
            s.off('drain', done);
            s.off('close', done);
            resolve();
          }
          s.once('drain', done);
          s.once('close', done);
        });
      } else if (i % 64 === 0) await new Promise((r) => setImmediate(r)); // let the server (same process) run
    }
    return i;
  }

  /** Resolves true once the connection closed, false when `ms` passed first. */
  whenClosed(ms: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), ms);
      this.closeWaiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  destroy(): void {
    this.socket.destroy();
  }

  private onData(d: Buffer): void {
    this.stats.bytesIn += d.length;
    this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
    while (this.buf.length >= 9) {
      const len = this.buf.readUIntBE(0, 3);
      if (this.buf.length < 9 + len) break;
      const type = this.buf[3]!;
      const flags = this.buf[4]!;
      const id = this.buf.readUInt32BE(5) & 0x7fffffff;
      const payload = this.buf.subarray(9, 9 + len);
      this.buf = this.buf.subarray(9 + len);
      const s = this.stats;
      s.frames[type] = (s.frames[type] ?? 0) + 1;
      if (type === FRAME.SETTINGS) {
        if (flags & FLAG.ACK) s.settingsAcks++;
        else if (this.o.ackSettings !== false) this.send(frame(FRAME.SETTINGS, FLAG.ACK, 0));
      } else if (type === FRAME.PING) {
        if (flags & FLAG.ACK) s.pingAcks++;
        else this.send(frame(FRAME.PING, FLAG.ACK, 0, Buffer.from(payload)));
      } else if (type === FRAME.GOAWAY) {
        s.goaway ??= { lastStreamId: payload.readUInt32BE(0) & 0x7fffffff, code: payload.readUInt32BE(4), at: Date.now() - this.t0 };
      } else if (type === FRAME.RST_STREAM) {
        s.resets.set(id, payload.readUInt32BE(0));
      } else if (type === FRAME.HEADERS) {
        s.responded.add(id);
        if (flags & FLAG.END_HEADERS && !(flags & (FLAG.PADDED | 0x20))) {
          const fields = this.hpack.decode(payload, 1 << 20);
          const at = fields.indexOf(':status');
          if (at >= 0 && at % 2 === 0) s.statuses.set(id, fields[at + 1]!);
        }
        if (flags & FLAG.END_STREAM) s.ended.add(id);
      } else if (type === FRAME.DATA && flags & FLAG.END_STREAM) {
        s.ended.add(id);
      }
    }
  }
}

/** "GOAWAY ENHANCE_YOUR_CALM (last stream 1999) after 120 ms", or "no GOAWAY". */
export function describeGoAway(g: GoAway | null): string {
  return g ? `GOAWAY ${H2_ERROR[g.code] ?? g.code} (last stream ${g.lastStreamId}) after ${g.at} ms` : 'no GOAWAY';
}
