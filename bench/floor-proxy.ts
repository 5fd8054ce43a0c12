// The floor of mvproxy's design: the same runtime and the same libraries (uWebSockets.js or
// node:http in front, undici's dispatch() behind), with none of mvproxy's logic: no RequestInfo, no
// routing, no header rules, no metrics, no deadlines, no request body. It copies the request head
// upstream and streams the answer back with backpressure. Whatever mvproxy costs above this per
// request is its own code; what this costs above nginx is the JavaScript stack's (issue 18's
// analysis). Two front ends, as mvproxy has: `uws` (the default) and `node`.
//
//   node bench/floor-proxy.ts <port> <upstream origin> [uws|node] [TLS options]
//
// TLS options, for the floor of the peer route (two floors chained over mutual TLS, as mvproxy A and
// B): --tls-cert F --tls-key F [--client-ca F] serve TLS (uWS SSLApp; with a CA, client certificates
// are asked for and verified, as on mvproxy's peer listener); --upstream-ca F --upstream-cert F
// --upstream-key F --upstream-servername S dial an https origin with a client certificate.
//
// Runs without tsx (Node ≥ 23 strips the types: only erasable syntax here, CommonJS), so its RSS is
// the process's own and not that of tsx's loader thread too. Prints {"listening":<port>} once it
// accepts. Bench-only: GET and HEAD without bodies.

import type { Dispatcher } from 'undici';
import type { HttpResponse } from 'uwebsockets';
import type { IncomingMessage, ServerResponse } from 'node:http';

const { Pool } = require('undici') as typeof import('undici');

const { readFileSync } = require('node:fs') as typeof import('node:fs');

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i === -1 ? undefined : args[i + 1];
};
const [portArg, origin] = args;
const front = args[2] === 'node' ? 'node' : 'uws';
const upstreamCA = opt('--upstream-ca');
const pool = new Pool(origin!, {
  connections: 128,
  pipelining: 1,
  ...(upstreamCA ? { connect: { ca: readFileSync(upstreamCA), cert: readFileSync(opt('--upstream-cert')!), key: readFileSync(opt('--upstream-key')!), servername: opt('--upstream-servername') } } : {}),
});

/** What a front end's response offers the relay. */
interface Sink {
  head(status: number, headers: [string, string][], length: number): void;
  /** The whole body at once (it arrived in one chunk of its Content-Length). */
  whole(chunk: Buffer): void;
  /** false: paused until onWritable */
  write(chunk: Buffer): boolean;
  end(): void;
  fail(message: string): void;
  aborted: boolean;
  onWritable: (() => void) | null;
  /** A queued write the sink made on its own did not all go out: pause the upstream until onWritable. */
  onFlushBlocked?: (() => void) | null;
}

class Relay implements Dispatcher.DispatchHandler {
  private length = -1;
  private ended = false;
  private readonly sink: Sink;
  constructor(sink: Sink) {
    this.sink = sink;
  }
  onRequestStart(): void {}
  onResponseStart(controller: Dispatcher.DispatchController, status: number): void {
    if (this.sink.aborted) return;
    const raw = controller.rawHeaders as Buffer[];
    const headers: [string, string][] = [];
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toString('latin1');
      const lower = name.toLowerCase();
      if (lower === 'content-length') this.length = Number(raw[i + 1]!.toString('latin1'));
      else if (lower !== 'connection' && lower !== 'date' && lower !== 'transfer-encoding' && lower !== 'keep-alive') headers.push([name, raw[i + 1]!.toString('latin1')]);
    }
    this.sink.onWritable = () => controller.resume();
    this.sink.onFlushBlocked = () => controller.pause();
    this.sink.head(status, headers, this.length);
  }
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.sink.aborted) return;
    if (this.length === chunk.length) {
      // The whole body in one chunk (the 2 KiB GET): one end with its Content-Length, as mvproxy's tryEnd.
      this.ended = true;
      this.sink.whole(chunk);
      return;
    }
    if (!this.sink.write(chunk)) controller.pause();
  }
  onResponseEnd(): void {
    if (!this.sink.aborted && !this.ended) this.sink.end();
  }
  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (!this.sink.aborted) this.sink.fail(err.message);
  }
}

// Chunks up to one TLS record (16 KiB, what node:tls hands over per callback on the peer hop) are
// queued and written once per turn, as mvproxy's UwsResponse does; written one by one, a 100 KiB
// body from a TLS upstream costs a sendto per record. Larger chunks (plain 64 KiB reads) go at once.
const COALESCE_CHUNK_MAX = 16 * 1024;
const COALESCE_MAX = 256 * 1024;

function uwsSink(res: HttpResponse): Sink {
  let queue: Buffer[] = [];
  let queued = 0;
  let armed = false;
  const writeNow = (chunk: Buffer): boolean => {
    let ok = true;
    res.cork(() => {
      ok = res.write(chunk);
    });
    return ok;
  };
  const flush = (): boolean => {
    if (queue.length === 0 || sink.aborted) return true;
    const chunk = queue.length === 1 ? queue[0]! : Buffer.concat(queue, queued);
    queue = [];
    queued = 0;
    return writeNow(chunk);
  };
  const sink: Sink = {
    aborted: false,
    onWritable: null,
    onFlushBlocked: null,
    head(status, headers) {
      res.cork(() => {
        res.writeStatus(String(status));
        for (const [k, v] of headers) res.writeHeader(k, v);
      });
    },
    whole(chunk) {
      res.cork(() => res.end(chunk));
    },
    write(chunk) {
      if (chunk.length > COALESCE_CHUNK_MAX) return flush() && writeNow(chunk);
      queue.push(chunk);
      queued += chunk.length;
      if (!armed) {
        armed = true;
        setImmediate(() => {
          armed = false;
          if (!flush()) sink.onFlushBlocked?.();
        });
      }
      return queued < COALESCE_MAX;
    },
    end() {
      flush();
      res.cork(() => res.end());
    },
    fail(message) {
      res.cork(() => res.writeStatus('502').end(message));
    },
  };
  res.onAborted(() => (sink.aborted = true));
  res.onWritable(() => {
    sink.onWritable?.();
    return true;
  });
  return sink;
}

function nodeSink(res: ServerResponse): Sink {
  const sink: Sink = {
    aborted: false,
    onWritable: null,
    head(status, headers, len) {
      res.statusCode = status;
      for (const [k, v] of headers) res.setHeader(k, v);
      if (len >= 0) res.setHeader('content-length', len);
    },
    whole(chunk) {
      res.end(chunk);
    },
    write(chunk) {
      return res.write(chunk);
    },
    end() {
      res.end();
    },
    fail(message) {
      if (!res.headersSent) res.statusCode = 502;
      res.end(message);
    },
  };
  res.on('close', () => {
    if (!res.writableFinished) sink.aborted = true;
  });
  res.on('drain', () => sink.onWritable?.());
  return sink;
}

function listening(port: number): void {
  console.log(JSON.stringify({ listening: port, front }));
}

if (front === 'node') {
  const http = require('node:http') as typeof import('node:http');
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req: IncomingMessage, res: ServerResponse) => {
    const headers: string[] = [];
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const k = raw[i]!.toLowerCase();
      if (k !== 'host' && k !== 'connection') headers.push(k, raw[i + 1]!);
    }
    pool.dispatch({ method: req.method as Dispatcher.HttpMethod, path: req.url!, headers, body: null }, new Relay(nodeSink(res)));
  });
  server.listen(Number(portArg), '127.0.0.1', () => listening(Number(portArg)));
} else {
  // The native addon is CommonJS only (src/listener/uws.ts loads it the same way).
  const uws = require('uwebsockets') as typeof import('uwebsockets');
  const cert = opt('--tls-cert');
  const ca = opt('--client-ca');
  const app = cert ? uws.SSLApp({ cert_file_name: cert, key_file_name: opt('--tls-key')!, ...(ca ? { ca_file_name: ca } : {}) }) : uws.App();
  app.any('/*', (res, req) => {
    const headers: string[] = [];
    req.forEach((k, v) => {
      if (k !== 'host' && k !== 'connection') headers.push(k, v);
    });
    const q = req.getQuery();
    pool.dispatch({ method: req.getCaseSensitiveMethod() as Dispatcher.HttpMethod, path: q ? `${req.getUrl()}?${q}` : req.getUrl(), headers, body: null }, new Relay(uwsSink(res)));
  });
  app.listen('127.0.0.1', Number(portArg), (sock) => {
    if (!sock) {
      console.error(`floor-proxy: cannot listen on ${portArg}`);
      process.exit(1);
    }
    listening(Number(portArg));
  });
}
