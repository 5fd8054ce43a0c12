// The client of mvproxy's own calls (discovery fetches, the local readiness probe, peer probes, the
// exclusion lists, the OpenAPI index, Lease calls and their watch): node:http(s) with a keep-alive
// Agent. It replaced undici's Pool (issue 40 §2): loaded and used, undici cost an idle daemon ~16 MiB
// of anonymous memory (its JavaScript and its llhttp WebAssembly; bench/README, "Memory at rest"),
// for a few requests a minute. Requests clients make never pass here (upstream/h1, upstream/h2).
//
import * as http from 'node:http';
import * as https from 'node:https';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { OwnDispatcher, OwnRequestOptions, OwnResponse, OwnResponseBody } from '../api/own-requests';
import { ConnectTimeoutError } from './h1/origin';
import { checkServerIdentity, type TLSFiles } from './tls-files';

export interface OwnPoolOptions {
  /** Connect timeout in ms (TCP and TLS handshake). */
  connectTimeoutMs: number;
  tls?: TLSFiles;
  /** Each new TLS connection: the serving certificate's notAfter (Unix seconds) the other side presented. */
  onServerCertificate?: (notAfterSeconds: number) => void;
  /** How long an idle connection is kept; a shorter Keep-Alive hint from the server lowers it (node's Agent). */
  keepAliveTimeoutMs: number;
}

/** What dump() reads of an unwanted body before it closes the connection instead (undici's default). */
export const DUMP_LIMIT_BYTES = 128 * 1024;

function timeoutError(message: string): Error {
  return Object.assign(new Error(message), { code: 'ETIMEDOUT' });
}

/** A keep-alive pool of HTTP/1.1 connections to one origin; no cap, since a Lease watch holds one for minutes. */
export class OwnPool implements OwnDispatcher {
  private readonly agent: http.Agent;
  private inFlight = 0;
  private closed = false;
  private drained: (() => void) | null = null;

  /**
   * `host` as a socket address takes it (an IPv6 address without brackets); nothing here parses or
   * throws: an address a Lease advertises that no URL parser takes fails its requests, not the daemon.
   */
  constructor(private readonly host: string, private readonly port: number, private readonly secure: boolean, o: OwnPoolOptions) {
    const t = o.tls;
    // rejectUnauthorized and Go's server name check (tls-files.ts): the peer calls carry the
    // front-proxy certificate and identity headers.
    const agentOptions = { keepAlive: true, timeout: o.keepAliveTimeoutMs, scheduling: 'lifo' as const, ...(secure ? { ca: t?.ca, cert: t?.cert, key: t?.key, servername: t?.servername, rejectUnauthorized: true, checkServerIdentity, ...t?.policy } : {}) };
    this.agent = this.secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
    const create = this.agent.createConnection.bind(this.agent) as (opts: object, cb?: (err: Error | null, s: Duplex) => void) => Duplex;
    const seen = o.onServerCertificate;
    // A connect timeout of its own: node's Agent has none (its `timeout` is the idle one above).
    (this.agent as { createConnection: unknown }).createConnection = (opts: object, cb?: (err: Error | null, s: Duplex) => void): Duplex => {
      const s = create(opts, cb);
      const timer = setTimeout(() => s.destroy(new ConnectTimeoutError(`${this.host}:${this.port}`, o.connectTimeoutMs)), o.connectTimeoutMs);
      const done = (): void => clearTimeout(timer);
      s.once(this.secure ? 'secureConnect' : 'connect', () => {
        done();
        if (seen) {
          const t = Date.parse((s as TLSSocket).getPeerCertificate?.().valid_to ?? '');
          if (Number.isFinite(t)) seen(t / 1000);
        }
      });
      s.once('close', done);
      return s;
    };
  }

  async request(o: OwnRequestOptions): Promise<OwnResponse> {
    if (this.closed) throw Object.assign(new Error('the pool is closed'), { code: 'ERR_POOL_CLOSED' });
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) headers[k] = v;
    const body = o.body ?? undefined;
    if (body !== undefined) headers['content-length'] = Buffer.byteLength(body);
    // A kept-alive connection the server closed as the request was written on it (an idle timeout, a
    // server closing idle connections) fails before any answer: a GET or HEAD goes out again, as Go's
    // transport sends it again, on the next connection (each failure takes one stale connection out of
    // the pool; a fresh one ends the loop). Taken as the answer, it marked the local apiserver down
    // and sent the node's requests to the peers for a second, and a peer's probe so would cut the
    // requests waiting on that peer (daemon/build.ts).
    // headersTimeout bounds the whole call, the tries together.
    const deadline = o.headersTimeout ? performance.now() + o.headersTimeout : Infinity;
    for (let tries = 1; ; tries++) {
      try {
        return await this.attempt(o, headers, body, deadline === Infinity ? undefined : Math.max(1, deadline - performance.now()));
      } catch (e) {
        const err = e as Error & { code?: string; reusedConnection?: boolean };
        const safe = o.method === 'GET' || o.method === 'HEAD';
        if (!safe || err.reusedConnection !== true || tries >= MAX_TRIES || this.closed || o.signal?.aborted || performance.now() >= deadline) throw e;
      }
    }
  }

  private attempt(o: OwnRequestOptions, headers: http.OutgoingHttpHeaders, body: string | Buffer | undefined, headersTimeout: number | undefined): Promise<OwnResponse> {
    const signal = o.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<OwnResponse>((resolve, reject) => {
      let req: http.ClientRequest;
      try {
        // The TLS options are the agent's: node's Agent merges them into every request it takes (addRequest).
        req = (this.secure ? https : http).request({ agent: this.agent, host: this.host, port: this.port, method: o.method, path: o.path, headers });
      } catch (e) {
        reject(e as Error); // a path or header node:http refuses
        return;
      }
      this.inFlight++;
      let settled = false;
      const headTimer = headersTimeout ? setTimeout(() => req.destroy(timeoutError(`no response head within ${o.headersTimeout} ms`)), headersTimeout) : undefined;
      let response: http.IncomingMessage | undefined;
      // After the head, the body ends with the reason (its reader sees it), and the connection with it.
      const onAbort = (): void => void (response ?? req).destroy(signal?.reason as Error);
      signal?.addEventListener('abort', onAbort, { once: true });
      req.once('close', () => {
        clearTimeout(headTimer);
        signal?.removeEventListener('abort', onAbort);
        if (--this.inFlight === 0 && this.drained) this.drained();
        // Closed with neither a head nor an error: node:http answers an unrequested 101 Switching
        // Protocols so (no 'upgrade' listener), and the request would wait forever (helper 12).
        if (!settled) {
          settled = true;
          // Not marked for another try: node closes without an error only after a head it parsed (a 101).
          reject(Object.assign(new Error('the connection closed before a response head (or the server switched protocols)'), { code: 'ECONNRESET' }));
        }
      });
      req.once('error', (e) => {
        if (!settled) {
          settled = true;
          reject(closedUnder(req, e));
        }
      });
      req.once('response', (res) => {
        clearTimeout(headTimer);
        settled = true;
        response = res;
        if (o.bodyTimeout) req.setTimeout(o.bodyTimeout, () => void res.destroy(timeoutError(`no response body bytes for ${o.bodyTimeout} ms`)));
        // A body destroyed with an error after the head: the reader's iteration or text() rejects; nobody else listens.
        res.on('error', () => undefined);
        resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: responseBody(res) });
      });
      req.end(body);
    });
  }

  close(): Promise<void> {
    this.closed = true;
    // Idle connections close now; the busy ones when their requests end.
    for (const list of Object.values(this.agent.freeSockets)) for (const s of [...(list ?? [])]) s.destroy();
    if (this.inFlight === 0) {
      this.agent.destroy();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.drained = () => {
        this.agent.destroy();
        resolve();
      };
    });
  }

  destroy(): Promise<void> {
    this.closed = true;
    this.agent.destroy(); // in-flight requests end with ECONNRESET/'socket hang up'
    if (this.drained) this.drained();
    return Promise.resolve();
  }
}

/** Tries of one GET or HEAD whose kept-alive connections closed under it (the last one on a fresh connection, as a rule). */
const MAX_TRIES = 3;

/**
 * The error, marked `reusedConnection` when the server closed (reset, EOF, broken pipe) a
 * kept-alive connection before any answer: nothing of the request was acted on that a GET changes.
 */
function closedUnder(req: http.ClientRequest, e: Error & { code?: string }): Error {
  if (req.reusedSocket && (e.code === 'ECONNRESET' || e.code === 'EPIPE')) Object.assign(e, { reusedConnection: true });
  return e;
}

function responseBody(res: http.IncomingMessage): OwnResponseBody {
  const collect = async (): Promise<Buffer> => {
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  };
  return {
    [Symbol.asyncIterator]: () => res[Symbol.asyncIterator]() as AsyncIterator<Buffer>,
    text: async () => (await collect()).toString('utf8'),
    json: async () => JSON.parse((await collect()).toString('utf8')) as unknown,
    arrayBuffer: async () => {
      const b = await collect();
      const out = new ArrayBuffer(b.length);
      new Uint8Array(out).set(b);
      return out;
    },
    dump: () =>
      new Promise<void>((resolve) => {
        if (res.readableEnded || res.destroyed) return resolve();
        let n = 0;
        res.on('data', (c: Buffer) => {
          n += c.length;
          if (n > DUMP_LIMIT_BYTES) res.destroy();
        });
        res.once('end', resolve);
        res.once('close', resolve);
      }),
    destroy: (err?: Error) => res.destroy(err),
  };
}
