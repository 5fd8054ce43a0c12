// The floors of mvproxy's design: the same runtime and front ends (uWebSockets.js or node:http),
// with none of mvproxy's logic: no RequestInfo, no routing, no header rules, no metrics, no
// deadlines, no request body. Each copies the request head upstream and streams the answer back with
// backpressure; whatever mvproxy costs above a floor per request is its own code. Two upstream
// clients (`--client`):
//   undici  undici's Pool.dispatch() (the general-purpose client mvproxy used until issue 28)
//   plain   the least HTTP/1.1 client that does the job, on net/tls sockets (below, ~150 lines): a
//           LIFO keep-alive pool, the request head in one write, the response head found with one
//           indexOf("\r\n\r\n"), Content-Length and chunked bodies passed through. It shares no code
//           with mvproxy's src/upstream/h1 (a floor must not run the code it is the floor of).
// Both clients hand the answer to the same front-end sinks, so two floors differ in the client only.
//
//   node bench/floor-proxy.ts <port> <upstream origin> [uws|node] [--client undici|plain] [TLS options]
//
// TLS options, for the floor of the peer route (two floors chained over mutual TLS, as mvproxy A and
// B): --tls-cert F --tls-key F [--client-ca F] serve TLS (uWS SSLApp; with a CA, client certificates
// are asked for and verified, as on mvproxy's peer listener); --upstream-ca F --upstream-cert F
// --upstream-key F --upstream-servername S dial an https origin with a client certificate.
//
// --identity-from-cert: the client certificate's CN and O as X-Remote-User/-Group (below; bench/rate.ts's floors).
// SIGUSR2: one collection at rest (below; bench/idle-rss-kube.ts --floors).
// On the node front end, --tls-cert serves HTTP/2 and HTTP/1.1 by ALPN (node:http2's compatibility API).
//
// Only erasable syntax here, CommonJS: the bench strips its types ahead (bench/targets.ts
// strippedScript) and runs it without tsx, so its RSS is the process's own and not that of a compiler
// too; undici is loaded only by its floor.
// Prints {"listening":<port>} once it accepts. Bench-only: GET and HEAD without bodies.

import type { Dispatcher } from 'undici';
import type { HttpResponse } from 'uwebsockets';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

const { readFileSync } = require('node:fs') as typeof import('node:fs');

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i === -1 ? undefined : args[i + 1];
};
const [portArg, origin] = args;
const front = args[2] === 'node' ? 'node' : 'uws';
const client = opt('--client') === 'plain' ? 'plain' : 'undici';
const upstreamCA = opt('--upstream-ca');
const upstreamTLS = upstreamCA ? { ca: readFileSync(upstreamCA), cert: readFileSync(opt('--upstream-cert')!), key: readFileSync(opt('--upstream-key')!), servername: opt('--upstream-servername') } : undefined;

/** What a front end's response offers the relay. */
interface Sink {
  /** length: the body's Content-Length, -1 when unknown (chunked). */
  /** headers: flat [name, value, ...]. */
  head(status: number, headers: string[], length: number): void;
  /** false: paused until onWritable */
  write(chunk: Buffer): boolean;
  end(): void;
  fail(message: string): void;
  aborted: boolean;
  onWritable: (() => void) | null;
  /** The client went away (plain relay: the upstream connection is dropped, its answer unread). */
  onAborted: (() => void) | null;
}

// ---------------------------------------------------------------- the undici relay

class UndiciRelay implements Dispatcher.DispatchHandler {
  private readonly sink: Sink;
  constructor(sink: Sink) {
    this.sink = sink;
  }
  onRequestStart(): void {}
  onResponseStart(controller: Dispatcher.DispatchController, status: number): void {
    if (this.sink.aborted) return;
    const raw = controller.rawHeaders as Buffer[];
    const headers: string[] = [];
    let length = -1;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toString('latin1');
      const lower = name.toLowerCase();
      if (lower === 'content-length') length = Number(raw[i + 1]!.toString('latin1'));
      else if (lower !== 'connection' && lower !== 'date' && lower !== 'transfer-encoding' && lower !== 'keep-alive') headers.push(name, raw[i + 1]!.toString('latin1'));
    }
    this.sink.onWritable = () => controller.resume();
    this.sink.head(status, headers, length);
  }
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.sink.aborted && !this.sink.write(chunk)) controller.pause();
  }
  onResponseEnd(): void {
    if (!this.sink.aborted) this.sink.end();
  }
  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (!this.sink.aborted) this.sink.fail(err.message);
  }
}

let undiciPool: import('undici').Pool | undefined;
function undiciRequest(method: string, path: string, headers: string[], sink: Sink): void {
  undiciPool ??= new (require('undici') as typeof import('undici')).Pool(origin!, { connections: 128, pipelining: 1, ...(upstreamTLS ? { connect: upstreamTLS } : {}) });
  undiciPool.dispatch({ method: method as Dispatcher.HttpMethod, path, headers, body: null }, new UndiciRelay(sink));
}

// ---------------------------------------------------------------- the plain relay

const net = require('node:net') as typeof import('node:net');
const tls = require('node:tls') as typeof import('node:tls');

const target = new URL(origin!);
const HOST_LINE = `host: ${target.host}\r\n`;
const secureContext = upstreamTLS ? tls.createSecureContext(upstreamTLS) : undefined;
let tlsSession: Buffer | undefined;
/** Idle connections, last in first out. */
const idle: Upstream[] = [];
// Below the 10 s after which uWS (the bench backend, a peer floor) closes an idle connection.
const IDLE_MS = 4000;
const MAX_HEAD = 64 * 1024;
// Behind uWS every read lands in one buffer (net/tls onread), handled before the next: no buffer per
// read (GC; uWS copies what it keeps). node:http keeps written chunks until they are sent, so there
// each read is a buffer of its own, handed over without a copy.
const REUSE_READS = front === 'uws';
const READ_BUFFER = Buffer.allocUnsafe(REUSE_READS ? 64 * 1024 : 0);
// Reading states (numbers, not literals: a state changes inside the calls made in one branch).
const HEAD: number = 0, LENGTH: number = 1, CHUNKED: number = 2, UNTIL_CLOSE: number = 3;
const SIZE_LINE: number = 0, DATA: number = 1, DATA_END: number = 2, TRAILER: number = 3;

/** One keep-alive connection; one request at a time. */
class Upstream {
  sink: Sink | null = null;
  headOnly = false;
  state = HEAD;
  /** Head bytes of a head that did not end in the reads so far. */
  partial: Buffer | null = null;
  /** Body bytes left: of the Content-Length, or of the current chunk. */
  left = 0;
  chunk = SIZE_LINE;
  line = '';
  reuse = true;
  idleSince = 0;
  readonly sock: Socket;
  constructor() {
    const port = Number(target.port) || (secureContext ? 443 : 80);
    // A read that must wait for the client pauses the socket itself (sock.pause() works with onread).
    const onread = {
      buffer: READ_BUFFER,
      callback: (n: number): boolean => {
        this.data(READ_BUFFER.subarray(0, n));
        return true;
      },
    };
    const reads = REUSE_READS ? { onread } : {};
    // tls.connect takes onread as net.connect does (node docs); @types/node leaves it out.
    this.sock = secureContext ? tls.connect({ host: target.hostname, port, secureContext, servername: upstreamTLS!.servername, session: tlsSession, ...(reads as object) }) : net.connect({ host: target.hostname, port, ...reads });
    if (!REUSE_READS) this.sock.on('data', (d: Buffer) => this.data(d));
    this.sock.setNoDelay(true);
    if (secureContext) this.sock.on('session', (s: Buffer) => (tlsSession = s));
    this.sock.on('error', () => {});
    this.sock.on('close', () => this.closed());
  }

  send(method: string, path: string, headerLines: string, sink: Sink): void {
    this.sink = sink;
    this.headOnly = method === 'HEAD';
    this.state = HEAD;
    sink.onWritable = () => this.sock.resume();
    sink.onAborted = () => this.sock.destroy();
    this.sock.write(`${method} ${path} HTTP/1.1\r\n${HOST_LINE}${headerLines}\r\n`, 'latin1');
  }

  private data(d: Buffer): void {
    if (this.sink === null) return void this.sock.destroy(); // bytes nobody asked for
    if (this.state === HEAD) {
      const buf = this.partial ? Buffer.concat([this.partial, d]) : d;
      const end = buf.indexOf('\r\n\r\n', this.partial ? Math.max(0, this.partial.length - 3) : 0);
      if (end === -1) {
        if (buf.length > MAX_HEAD) return void this.fail('response head too large');
        this.partial = this.partial || !REUSE_READS ? buf : Buffer.from(buf); // kept past the read
        return;
      }
      this.partial = null;
      if (!this.head(buf.toString('latin1', 0, end))) return;
      d = buf.subarray(end + 4);
      if (this.state === LENGTH && this.left === 0) return this.done(d.length === 0);
      if (d.length === 0) return;
      if (this.state === HEAD) return this.data(d); // after a 100 Continue
    }
    if (this.state === CHUNKED) return this.dechunk(d);
    if (this.state === LENGTH) {
      if (d.length >= this.left) {
        const n = this.left;
        this.left = 0;
        this.sink.write(d.length > n ? d.subarray(0, n) : d);
        return this.done(d.length === n);
      }
      this.left -= d.length;
    }
    if (!this.sink.write(d)) this.sock.pause();
  }

  /**
   * The status line and headers; false when refused. Scanned in place (no split, no trimmed copies,
   * a flat list): what the head costs is the field strings uWS needs, which is the floor's point.
   */
  private head(text: string): boolean {
    let eol = text.indexOf('\r\n');
    if (eol === -1) eol = text.length;
    const status = Number(text.slice(9, 12));
    if (!text.startsWith('HTTP/1.') || !(status >= 100 && status < 600)) return this.fail('bad status line');
    if (status < 200 && status !== 101) return true; // interim: the real head follows
    const headers: string[] = [];
    let length = -1;
    let chunked = false;
    for (let at = eol + 2; at < text.length; at = eol + 2) {
      eol = text.indexOf('\r\n', at);
      if (eol === -1) eol = text.length;
      const colon = text.indexOf(':', at);
      if (colon <= at || colon > eol) return this.fail('bad header line');
      let a = colon + 1;
      let b = eol;
      while (a < b && (text.charCodeAt(a) === 32 || text.charCodeAt(a) === 9)) a++;
      while (b > a && (text.charCodeAt(b - 1) === 32 || text.charCodeAt(b - 1) === 9)) b--;
      const name = text.slice(at, colon);
      switch (name.length === 14 || name.length === 17 || name.length === 10 || name.length === 4 ? name.toLowerCase() : '') {
        case 'content-length': {
          const value = text.slice(a, b);
          if (length !== -1 || !/^\d+$/.test(value)) return this.fail('bad Content-Length');
          length = Number(value);
          break;
        }
        case 'transfer-encoding':
          chunked = text.slice(a, b).toLowerCase() === 'chunked';
          if (!chunked) return this.fail('unsupported Transfer-Encoding');
          break;
        case 'connection':
          if (text.slice(a, b).toLowerCase().includes('close')) this.reuse = false;
          break;
        case 'keep-alive':
        case 'date':
          break;
        default:
          headers.push(name, text.slice(a, b));
      }
    }
    if (chunked && length !== -1) return this.fail('both Content-Length and chunked');
    const none = this.headOnly || status === 204 || status === 304;
    this.state = none || length !== -1 ? LENGTH : chunked ? CHUNKED : UNTIL_CLOSE;
    this.left = none ? 0 : length;
    this.chunk = SIZE_LINE;
    if (this.state === UNTIL_CLOSE) this.reuse = false;
    this.sink!.head(status, headers, none ? 0 : length);
    return true;
  }

  /** Chunked framing off, the data to the client (chunk extensions and trailers dropped). */
  private dechunk(d: Buffer): void {
    let i = 0;
    let ok = true;
    while (i < d.length) {
      if (this.chunk === DATA) {
        const n = Math.min(this.left, d.length - i);
        ok = this.sink!.write(d.subarray(i, i + n)) && ok;
        i += n;
        this.left -= n;
        if (this.left === 0) this.chunk = DATA_END;
        continue;
      }
      const nl = d.indexOf(10, i);
      if (nl === -1) {
        this.line += d.toString('latin1', i);
        if (this.line.length > 4096) this.fail('chunk line too long');
        return;
      }
      const raw = this.line + d.toString('latin1', i, nl);
      this.line = '';
      i = nl + 1;
      if (!raw.endsWith('\r')) return void this.fail('bare LF');
      const line = raw.slice(0, -1);
      if (this.chunk === SIZE_LINE) {
        const size = /^[0-9a-fA-F]{1,8}(?=;|$)/.exec(line);
        if (!size) return void this.fail('bad chunk size');
        this.left = parseInt(size[0], 16);
        this.chunk = this.left === 0 ? TRAILER : DATA;
      } else if (this.chunk === DATA_END) {
        if (line !== '') return void this.fail('chunk without CRLF');
        this.chunk = SIZE_LINE;
      } else if (line === '') {
        return this.done(i === d.length);
      }
    }
    if (!ok) this.sock.pause();
  }

  /** The answer is complete: the client's response ends, the connection goes back to the pool. */
  private done(clean: boolean): void {
    const sink = this.sink!;
    this.sink = null;
    sink.onWritable = sink.onAborted = null;
    sink.end();
    if (!clean || !this.reuse) return void this.sock.destroy();
    this.sock.resume();
    this.idleSince = performance.now();
    idle.push(this);
  }

  private fail(message: string): false {
    const sink = this.sink;
    this.sink = null;
    this.sock.destroy();
    if (sink && !sink.aborted) sink.fail(message);
    return false;
  }

  private closed(): void {
    const i = idle.indexOf(this);
    if (i !== -1) idle.splice(i, 1);
    if (this.sink && this.state === UNTIL_CLOSE) {
      const sink = this.sink;
      this.sink = null;
      sink.end();
    } else if (this.sink) this.fail('upstream closed');
  }
}

function plainRequest(method: string, path: string, headerLines: string, sink: Sink): void {
  let c = idle.pop();
  while (c && performance.now() - c.idleSince > IDLE_MS) {
    c.sock.destroy();
    c = idle.pop();
  }
  (c ?? new Upstream()).send(method, path, headerLines, sink);
}

// ---------------------------------------------------------------- front ends

// As mvproxy's UwsResponse: a body that arrives in one read (the 2 KiB GET) goes out with its head in
// one send, whole with its Content-Length; a large read (a plain socket's, up to 64 KiB) goes out at
// once; small reads (a TLS upstream hands over one 16 KiB record at a time: written one by one, a
// 100 KiB body costs a sendto per record) are copied into one buffer and written once per turn.
// A chunk is valid during write() only (the plain relay reads into one reused buffer); uWS copies
// what the socket does not take at once.
const COALESCE_CHUNK_MAX = 16 * 1024;
const COALESCE_MAX = 256 * 1024;

function uwsSink(res: HttpResponse): Sink {
  let status = '';
  let headers: string[] = [];
  let headPending = false;
  let headSent = false;
  let length = -1;
  let received = 0;
  let queue: Buffer | null = null;
  let queued = 0;
  let owed = false;
  let blocked = false;
  let ended = false;
  /** The head if not sent yet, then the chunk (the last: with end); false = the client is slow. */
  const send = (chunk: Buffer | undefined, last: boolean): boolean => {
    let ok = true;
    res.cork(() => {
      if (headPending) {
        headPending = false;
        headSent = true;
        res.writeStatus(status);
        for (let i = 0; i < headers.length; i += 2) res.writeHeader(headers[i]!, headers[i + 1]!);
      }
      if (last) res.end(chunk);
      else if (chunk) ok = res.write(chunk);
    });
    return ok;
  };
  const flush = (last: boolean): boolean => {
    const chunk = queue?.subarray(0, queued);
    queue = null;
    queued = 0;
    if (sink.aborted || ended) return true;
    ended = last;
    return send(chunk, last);
  };
  const turnEnd = () => {
    if (queue === null) return;
    if (!flush(false)) blocked = true; // uWS holds the rest: the upstream waits for onWritable
    else if (owed) {
      owed = false;
      sink.onWritable?.();
    }
  };
  const sink: Sink = {
    aborted: false,
    onWritable: null,
    onAborted: null,
    head(s, h, len) {
      status = String(s);
      headers = h;
      length = len;
      headPending = true;
    },
    write(chunk) {
      if (sink.aborted || ended) return true;
      received += chunk.length;
      if (chunk.length > COALESCE_CHUNK_MAX || (queue === null && received === length)) {
        const ok = (queue === null || flush(false)) && send(chunk, (ended = received === length));
        if (!ok) blocked = true;
        return ok;
      }
      if (queue === null) {
        queue = Buffer.allocUnsafe(Math.max(chunk.length, Math.min(length >= 0 ? length - received + chunk.length : 64 * 1024, COALESCE_MAX)));
        setImmediate(turnEnd);
      } else if (queued + chunk.length > queue.length) {
        const grown = Buffer.allocUnsafe(Math.max(queue.length * 2, queued + chunk.length));
        queue.copy(grown, 0, 0, queued);
        queue = grown;
      }
      chunk.copy(queue, queued);
      queued += chunk.length;
      if (received === length) return flush(true);
      if (queued < COALESCE_MAX && !blocked) return true;
      owed = true;
      return false;
    },
    end() {
      if (!ended) flush(true);
    },
    fail(message) {
      if (sink.aborted || ended) return;
      ended = true;
      if (headSent) return void res.close();
      res.cork(() => res.writeStatus('502').end(message));
    },
  };
  res.onAborted(() => {
    sink.aborted = true;
    sink.onAborted?.();
  });
  res.onWritable(() => {
    blocked = owed = false;
    sink.onWritable?.();
    return true;
  });
  return sink;
}

function nodeSink(res: ServerResponse): Sink {
  const sink: Sink = {
    aborted: false,
    onWritable: null,
    onAborted: null,
    head(status, headers, len) {
      res.statusCode = status;
      for (let i = 0; i < headers.length; i += 2) res.setHeader(headers[i]!, headers[i + 1]!);
      if (len >= 0) res.setHeader('content-length', len);
    },
    write(chunk) {
      return res.write(chunk);
    },
    end() {
      res.end();
    },
    fail(message) {
      if (res.headersSent) return void res.destroy();
      res.statusCode = 502;
      res.end(message);
    },
  };
  res.on('close', () => {
    if (res.writableFinished) return;
    sink.aborted = true;
    sink.onAborted?.();
  });
  res.on('drain', () => sink.onWritable?.());
  return sink;
}

// --identity-from-cert (uWS, plain client, with --client-ca): what nginx does in bench/rate.ts and
// mvproxy on its local route, the least of it: the client certificate's CN and O sent upstream as
// X-Remote-User and X-Remote-Group (the client's own X-Remote-* dropped), one parse per certificate.
const IDENTITY = args.includes('--identity-from-cert');
const identities = new Map<string, string>();
function identityLines(res: HttpResponse): string {
  const pem = (res as HttpResponse & { getX509Certificate?(): string | undefined }).getX509Certificate?.();
  if (!pem) return '';
  let lines = identities.get(pem);
  if (lines === undefined) {
    const subject = new (require('node:crypto') as typeof import('node:crypto')).X509Certificate(pem).subject.split('\n');
    const field = (k: string) => subject.find((l) => l.startsWith(k + '='))?.slice(k.length + 1);
    const user = field('CN');
    const group = field('O');
    lines = (user ? `x-remote-user: ${user}\r\n` : '') + (group ? `x-remote-group: ${group}\r\n` : '');
    if (identities.size < 1000) identities.set(pem, lines);
  }
  return lines;
}

/** --identity-from-cert on the node front end: the verified certificate's CN and O, one parse per connection. */
const nodeIdentities = new WeakMap<object, string>();
function nodeIdentityLines(req: IncomingMessage): string {
  const sock = req.socket as import('node:tls').TLSSocket;
  // HTTP/2 hands each stream a proxy of the session's socket: the session is the connection's key.
  const key = ((req as unknown as { stream?: { session?: object } }).stream?.session ?? sock) as object;
  let lines = nodeIdentities.get(key);
  if (lines === undefined) {
    lines = '';
    if (sock.authorized) {
      const subject = sock.getPeerCertificate().subject;
      const user = subject?.CN;
      const group = subject?.O;
      lines = (user ? `x-remote-user: ${String(user)}\r\n` : '') + (group ? `x-remote-group: ${String(group)}\r\n` : '');
    }
    nodeIdentities.set(key, lines);
  }
  return lines;
}

// Exits through process.exit, so that `node --cpu-prof` writes its profile.
process.once('SIGTERM', () => process.exit(0));

// SIGUSR2: one last-resort collection, the one mvproxy runs once at rest (src/lifecycle/memory.ts),
// so that bench/idle-rss-kube.ts reads the floor's RSS at rest as it reads mvproxy's (V8 keeps a
// grown young generation's pages until such a collection). Prints {"collectedAtRest":<ms>}.
process.on('SIGUSR2', () => {
  (require('node:v8') as typeof import('node:v8')).setFlagsFromString('--expose-gc');
  const gc = (require('node:vm') as typeof import('node:vm')).runInNewContext('gc') as (o: object) => void;
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  console.log(JSON.stringify({ collectedAtRest: Date.now() }));
});

function listening(port: number): void {
  console.log(JSON.stringify({ listening: port, front, client }));
}

if (front === 'node') {
  const cert = opt('--tls-cert');
  const ca = opt('--client-ca');
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const raw = req.rawHeaders;
    if (client === 'plain') {
      let lines = IDENTITY ? nodeIdentityLines(req) : '';
      for (let i = 0; i < raw.length; i += 2) {
        const k = raw[i]!.toLowerCase();
        // HTTP/2's pseudo-header fields (':path', ...) are the request line's, not fields to relay.
        if (k !== 'host' && k !== 'connection' && k.charCodeAt(0) !== 58 && !(IDENTITY && k.startsWith('x-remote-'))) lines += `${raw[i]}: ${raw[i + 1]}\r\n`;
      }
      return plainRequest(req.method!, req.url!, lines, nodeSink(res));
    }
    const headers: string[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      const k = raw[i]!.toLowerCase();
      if (k !== 'host' && k !== 'connection' && k.charCodeAt(0) !== 58) headers.push(k, raw[i + 1]!);
    }
    undiciRequest(req.method!, req.url!, headers, nodeSink(res));
  };
  // With --tls-cert: node:http2's compatibility API, HTTP/2 and HTTP/1.1 by ALPN as mvproxy's node
  // front end serves them; with --client-ca a client certificate is asked for and verified, and a
  // client without one still gets through (bearer tokens), as on mvproxy and the uWS floor.
  const server = cert
    ? (require('node:http2') as typeof import('node:http2')).createSecureServer(
        { allowHTTP1: true, cert: readFileSync(cert), key: readFileSync(opt('--tls-key')!), ...(ca ? { ca: readFileSync(ca), requestCert: true, rejectUnauthorized: false } : {}) },
        handler as never,
      )
    : (require('node:http') as typeof import('node:http')).createServer({ keepAliveTimeout: 60_000 }, handler);
  server.listen(Number(portArg), '127.0.0.1', () => listening(Number(portArg)));
} else {
  // The native addon is CommonJS only (src/listener/uws.ts loads it the same way).
  const uws = require('uwebsockets') as typeof import('uwebsockets');
  const cert = opt('--tls-cert');
  const ca = opt('--client-ca');
  const app = cert ? uws.SSLApp({ cert_file_name: cert, key_file_name: opt('--tls-key')!, ...(ca ? { ca_file_name: ca } : {}) }) : uws.App();
  app.any('/*', (res, req) => {
    const q = req.getQuery();
    const path = q ? `${req.getUrl()}?${q}` : req.getUrl();
    if (client === 'plain') {
      let lines = IDENTITY ? identityLines(res) : '';
      req.forEach((k, v) => {
        if (k !== 'host' && k !== 'connection' && !(IDENTITY && k.startsWith('x-remote-'))) lines += `${k}: ${v}\r\n`;
      });
      return plainRequest(req.getCaseSensitiveMethod(), path, lines, uwsSink(res));
    }
    const headers: string[] = [];
    req.forEach((k, v) => {
      if (k !== 'host' && k !== 'connection') headers.push(k, v);
    });
    undiciRequest(req.getCaseSensitiveMethod(), path, headers, uwsSink(res));
  });
  app.listen('127.0.0.1', Number(portArg), (sock) => {
    if (!sock) {
      console.error(`floor-proxy: cannot listen on ${portArg}`);
      process.exit(1);
    }
    listening(Number(portArg));
  });
}
