// Raw clients for the differential test: the exact bytes of an HTTP/1.1 exchange, or HTTP/2 frames
// written by hand (HPACK literals, never Huffman-coded, so any byte of a name or value goes out as
// given), over TLS or plain TCP. They read until the server closes, every stream ended, or a bound.
import net from 'node:net';
import tls from 'node:tls';
import { FRAME, frame, literalField } from './h2-flood';

export interface ClientTLS {
  /** A client certificate and key (PEM), or none (anonymous or bearer). */
  cert?: string;
  key?: string;
}

export interface H1Reply {
  out: Buffer;
  /** The server closed the connection within the bound. */
  closed: boolean;
}

function connect(port: number, t: ClientTLS | undefined, alpn: string[]): net.Socket {
  if (t === undefined) return net.connect(port, '127.0.0.1');
  return tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false, ALPNProtocols: alpn, ...(t.cert ? { cert: t.cert, key: t.key } : {}) });
}

/** Writes `bytes` once the connection is up and reads until the server closes it or `timeoutMs` passes. */
export function sendH1(port: number, bytes: Buffer, o: { tls?: ClientTLS; timeoutMs: number }): Promise<H1Reply> {
  return new Promise((resolve) => {
    const s = connect(port, o.tls, ['http/1.1']);
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ out: Buffer.concat(chunks), closed });
    };
    const timer = setTimeout(() => finish(false), o.timeoutMs);
    s.once(o.tls ? 'secureConnect' : 'connect', () => s.write(bytes));
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', () => finish(true));
    s.on('close', () => finish(true));
  });
}

/** One HTTP/2 request: its header fields in order (pseudo-headers first, as a client sends them) and an optional body. */
export interface H2Request {
  fields: [Buffer, Buffer][];
  body?: Buffer;
}

export interface H2Reply {
  /** Per request: how its stream ended ('end' with the server's END_STREAM, 'reset', or 'open' at the bound). */
  streams: ('end' | 'reset' | 'open')[];
  /** Per request: its answer's body (DATA payloads; the head is HPACK-coded and not read). */
  bodies: Buffer[];
  goaway: boolean;
}

/** Sends each request as its own stream on one connection (ALPN h2) and waits for every stream to end or `timeoutMs`. */
export function sendH2(port: number, requests: H2Request[], o: { tls: ClientTLS; timeoutMs: number }): Promise<H2Reply> {
  return new Promise((resolve) => {
    const s = connect(port, o.tls, ['h2']) as tls.TLSSocket;
    const streams: ('end' | 'reset' | 'open')[] = requests.map(() => 'open');
    const bodies: Buffer[][] = requests.map(() => []);
    let goaway = false;
    let done = false;
    let buf = Buffer.alloc(0);
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ streams, bodies: bodies.map((b) => Buffer.concat(b)), goaway });
    };
    const timer = setTimeout(finish, o.timeoutMs);
    const check = () => {
      if (goaway || streams.every((x) => x !== 'open')) finish();
    };
    s.once('secureConnect', () => {
      if (s.alpnProtocol !== 'h2') return finish();
      const out: Buffer[] = [Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0))];
      requests.forEach((r, i) => {
        const id = 1 + 2 * i;
        const block = Buffer.concat(r.fields.map(([n, v]) => literalField(n, v)));
        const hasBody = r.body !== undefined;
        out.push(frame(FRAME.HEADERS, 0x4 | (hasBody ? 0 : 0x1), id, block));
        if (hasBody) out.push(frame(FRAME.DATA, 0x1, id, r.body!));
      });
      s.write(Buffer.concat(out));
    });
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) break;
        const type = buf[3]!;
        const flags = buf[4]!;
        const id = buf.readUInt32BE(5) & 0x7fffffff;
        const payload = buf.subarray(9, 9 + len);
        buf = buf.subarray(9 + len);
        const i = (id - 1) / 2;
        if (type === FRAME.DATA && bodies[i]) {
          const padded = flags & 0x8;
          bodies[i]!.push(padded ? payload.subarray(1, payload.length - payload[0]!) : payload);
        }
        if (type === FRAME.SETTINGS && (flags & 0x1) === 0) s.write(frame(FRAME.SETTINGS, 0x1, 0, Buffer.alloc(0)));
        else if (type === FRAME.PING && (flags & 0x1) === 0) s.write(frame(FRAME.PING, 0x1, 0, payload));
        else if (type === FRAME.GOAWAY) goaway = true;
        else if (type === FRAME.RST_STREAM && streams[i] === 'open') streams[i] = 'reset';
        else if ((type === FRAME.DATA || type === FRAME.HEADERS) && flags & 0x1 && streams[i] === 'open') streams[i] = 'end';
      }
      check();
    });
    s.on('error', finish);
    s.on('close', finish);
  });
}
