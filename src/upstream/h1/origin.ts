// Keep-alive connections to one upstream origin (the local kube-apiserver, with or without the
// front-proxy certificate; a peer mvproxy over mutual TLS), for mvproxy's own HTTP/1.1 client
// (issue 28). Plain net/tls sockets, reused last-in first-out (the warmest connection, and idle
// ones at the bottom age out); one response at a time on a connection; a connection whose response
// was not read to its end, or that the upstream closes after it, is destroyed, never reused. No cap:
// each watch holds a connection for its life (issue 29 moves them onto shared HTTP/2 streams).
//
// Listeners are attached once per connection, not per request: each routes to the connection's
// current user (attempt.ts), so a request adds no closures here.

import net from 'node:net';
import tls, { type TLSSocket } from 'node:tls';
import { performance } from 'node:perf_hooks';
import { ErrorCode } from '../../api/errors';
import { ResponseParser } from './response-parser';
import { checkServerIdentity, type TLSFiles } from '../tls-files';
import { H2Origin } from '../h2/origin';

export interface OriginOptions {
  host: string;
  port: number;
  /** The Host header of requests to it (host:port, [v6]:port); host:port unless given. */
  authority?: string;
  /** Absent: plain TCP. */
  tls?: TLSFiles;
  /** A dead upstream is a 503 within this (ConnectTimeoutError). */
  connectTimeoutMs: number;
  /**
   * How long an idle connection is kept: below the upstream's own idle close, so a request never
   * goes out on a connection the upstream is closing. kube-apiserver closes after 90 s
   * (secure_serving.go IdleTimeout); a uWS peer listener after ~10 s; a node:http server hints its
   * keepAliveTimeout (Keep-Alive: timeout=5), which lowers this per connection.
   */
  idleTimeoutMs: number;
  /** Each new TLS connection: the serving certificate's notAfter (Unix seconds) the other side presented. */
  onServerCertificate?: (notAfterSeconds: number) => void;
  /** TLS only: long-running requests share HTTP/2 sessions when the upstream offers h2 (--upstream-http2). */
  http2?: boolean;
}

/** What holds a connection: one attempt at a time (attempt.ts). */
export interface ConnectionUser {
  connected(conn: UpstreamConnection): void;
  connectFailed(err: Error): void;
  data(buf: Buffer): void;
  /** The socket ended or failed while this user held it. */
  closed(err: Error | null): void;
  drained(): void;
}

export class ConnectTimeoutError extends Error {
  readonly code = ErrorCode.MVP_ERR_CONNECT_TIMEOUT;
  constructor(origin: string, ms: number) {
    super(`connecting to ${origin} took longer than ${ms} ms`);
  }
}

export class UpstreamConnection {
  readonly parser = new ResponseParser();
  user: ConnectionUser | null = null;
  /** It served a response before: a failure before any answer byte may be the upstream's idle close racing the request (attempt.ts). */
  reused = false;
  /** Since when it is idle (performance.now()), and for how long it may stay so. */
  idleSince = 0;
  idleLimitMs: number;
  private connecting = true;

  constructor(
    readonly pool: OriginPool,
    readonly socket: net.Socket,
    connectTimeoutMs: number,
  ) {
    this.idleLimitMs = pool.idleTimeoutMs;
    socket.setTimeout(connectTimeoutMs);
    socket.on(pool.secure ? 'secureConnect' : 'connect', () => this.onConnect());
    socket.on('timeout', () => {
      if (this.connecting) socket.destroy(new ConnectTimeoutError(pool.name, connectTimeoutMs));
    });
    socket.on('end', () => this.onEnd());
    socket.on('error', (e: Error) => this.onError(e));
    socket.on('close', () => this.onClose());
    socket.on('drain', () => this.user?.drained());
  }

  private onConnect(): void {
    this.connecting = false;
    this.socket.setTimeout(0);
    this.socket.setNoDelay(true); // a request head and a response are one write each: never wait for an ACK (Nagle)
    this.socket.setKeepAlive(true, 30_000); // as Go's dialer: a watch on a dead peer is noticed
    this.pool.connected(this);
  }

  /** Bytes read into READ_BUFFER (onread): a view valid until this returns; false pauses the socket. */
  onRead(n: number): boolean {
    this.onData(READ_BUFFER.subarray(0, n));
    return !this.socket.isPaused();
  }

  private onData(b: Buffer): void {
    const u = this.user;
    // Bytes on an idle connection: nobody asked; the upstream is out of step.
    if (u === null) this.socket.destroy();
    else u.data(b);
  }

  private onEnd(): void {
    const u = this.user;
    this.user = null;
    u?.closed(null);
    this.socket.destroy();
  }

  private onError(e: Error): void {
    if (this.connecting) {
      this.connecting = false;
      const u = this.user;
      this.user = null;
      u?.connectFailed(e);
      return;
    }
    const u = this.user;
    this.user = null;
    u?.closed(e);
  }

  private onClose(): void {
    this.pool.forget(this);
    if (this.connecting) {
      // Closed before connecting without an error event (destroyed by close()).
      this.connecting = false;
      const u = this.user;
      this.user = null;
      u?.connectFailed(Object.assign(new Error('the connection closed before it was established'), { code: 'ECONNRESET' }));
      return;
    }
    const u = this.user;
    this.user = null;
    u?.closed(null);
  }

  /** Discards the connection (a response not read to its end, a protocol error, an aborted request). */
  destroy(): void {
    this.user = null;
    this.socket.destroy();
  }
}

/**
 * Every upstream connection reads into this one buffer (net/tls `onread`): no allocation per read.
 * Measured on the local LIST (100 KiB): node's default stream reads allocate a fresh 64 KiB buffer per
 * read, and GC took 34 % of the relay's CPU. What reads it consumes the bytes before returning (the
 * parser copies a head out; front ends copy only what they must keep: ClientResponse.write).
 */
const READ_BUFFER = Buffer.allocUnsafeSlow(64 * 1024);

/**
 * Idle connections kept per origin at most: a burst (10,000 watches whose clients left while their
 * connections were still opening) must not park that many sockets until the idle timeout.
 */
const MAX_IDLE_PER_ORIGIN = 256;

/** Pools swept for idle connections, once a second by one timer for all. */
const pools = new Set<OriginPool>();
let sweeper: NodeJS.Timeout | null = null;
const SWEEP_MS = 1000;

function sweepAll(): void {
  const now = performance.now();
  for (const p of pools) p.sweep(now);
}

export class OriginPool {
  readonly name: string;
  readonly secure: boolean;
  private o: OriginOptions;
  /** Idle connections, the most recently used last (taken first). */
  private idle: UpstreamConnection[] = [];
  private readonly all = new Set<UpstreamConnection>();
  /** The latest TLS session ticket of this origin: new connections resume it (one full handshake per origin, not per connection). */
  private session: Buffer | undefined;
  private closed = false;
  /** HTTP/2 sessions to the same origin for long-running requests (upstream/h2/origin.ts), when enabled and TLS. */
  readonly h2: H2Origin | undefined;

  constructor(o: OriginOptions) {
    this.o = o;
    this.h2 = o.http2 && o.tls ? new H2Origin({ host: o.host, port: o.port, authority: o.authority ?? `${o.host}:${o.port}`, tls: o.tls, connectTimeoutMs: o.connectTimeoutMs, onServerCertificate: o.onServerCertificate }) : undefined;
    this.name = o.authority ?? `${o.host}:${o.port}`;
    this.secure = o.tls !== undefined;
    pools.add(this);
    if (sweeper === null) {
      sweeper = setInterval(sweepAll, SWEEP_MS);
      sweeper.unref();
    }
  }

  get idleTimeoutMs(): number {
    return this.o.idleTimeoutMs;
  }

  /** Connections open now (busy and idle). */
  get open(): number {
    return this.all.size;
  }

  /** Connections idle now. */
  get idleCount(): number {
    return this.idle.length;
  }

  /** Gives `user` a connection: an idle one at once (synchronously), else a new one when it connects. `fresh`: never an idle one. */
  acquire(user: ConnectionUser, fresh = false): void {
    if (!fresh) {
      const idle = this.idle;
      while (idle.length > 0) {
        const c = idle.pop()!;
        if (c.socket.destroyed) continue;
        c.user = user;
        user.connected(c);
        return;
      }
    }
    if (this.closed) {
      user.connectFailed(Object.assign(new Error(`the pool for ${this.name} is closed`), { code: 'ECONNREFUSED' }));
      return;
    }
    this.dial(user);
  }

  private dial(user: ConnectionUser): void {
    const o = this.o;
    let socket: net.Socket;
    // The connection is made after the socket (onread needs it first): the callback reaches it through this holder.
    const holder: { c: UpstreamConnection | null } = { c: null };
    const onread = { buffer: READ_BUFFER, callback: (n: number) => holder.c!.onRead(n) };
    try {
      if (o.tls) {
        const t = o.tls;
        socket = tls.connect({
          host: o.host,
          port: o.port,
          secureContext: this.secureContext(),
          servername: t.servername ?? (net.isIP(o.host) ? undefined : o.host),
          rejectUnauthorized: true,
          checkServerIdentity,
          ALPNProtocols: ['http/1.1'],
          session: this.session,
          ...t.policy,
          // tls.connect takes onread as net.connect does (node docs); @types/node leaves it out.
          ...({ onread } as object),
        });
        socket.on('session', (s: Buffer) => (this.session = s));
      } else {
        socket = net.connect({ host: o.host, port: o.port, onread });
      }
    } catch (e) {
      // Synchronous failures (EMFILE from the socket() call, invalid TLS options) reach the user the same way.
      failLater(user, e as Error);
      return;
    }
    const c = new UpstreamConnection(this, socket, o.connectTimeoutMs);
    holder.c = c;
    c.user = user;
    this.all.add(c);
  }

  /**
   * One TLS context for every connection of this origin (CA store, client pair, policy), made once
   * per TLS material: tls.connect with ca/cert/key options builds a new one per connection, which
   * costs a CA parse and its memory for each (each watch holds a connection).
   */
  private secureContext(): tls.SecureContext {
    if (this.context === undefined) {
      const t = this.o.tls!;
      this.context = tls.createSecureContext({ ca: t.ca, cert: t.cert, key: t.key, ...t.policy });
    }
    return this.context;
  }

  private context: tls.SecureContext | undefined;

  /** Called by a connection once it is established (TLS verified). */
  connected(c: UpstreamConnection): void {
    const seen = this.o.onServerCertificate;
    if (seen !== undefined) {
      const validTo = (c.socket as TLSSocket).getPeerCertificate?.().valid_to;
      const t = validTo ? Date.parse(validTo) : NaN;
      if (Number.isFinite(t)) seen(t / 1000);
    }
    const u = c.user;
    if (u === null) return c.destroy();
    u.connected(c);
  }

  /**
   * A connection's response ended. Reused when it ended on a boundary and the upstream keeps it,
   * else destroyed. `keepAliveSeconds`: the upstream's Keep-Alive hint (-1: none).
   */
  release(c: UpstreamConnection, reusable: boolean, keepAliveSeconds: number): void {
    c.user = null;
    // Nothing of the request stays reachable from the connection (see failLater).
    c.parser.detach();
    if (!reusable || this.closed || c.socket.destroyed) return c.destroy();
    // A response whose last read met a slow client ended with its socket paused: an idle
    // connection reads again (else the next request's answer is never read: it waited for its
    // deadline, measured in test/slow/streaming.test.ts).
    c.socket.resume();
    c.reused = true;
    c.idleSince = performance.now();
    // Below the upstream's own idle close by a second (node:http servers: timeout=5 → 4 s).
    c.idleLimitMs = keepAliveSeconds > 0 ? Math.min(this.o.idleTimeoutMs, keepAliveSeconds * 1000 - 1000) : this.o.idleTimeoutMs;
    if (c.idleLimitMs <= 0 || this.idle.length >= MAX_IDLE_PER_ORIGIN) return c.destroy();
    this.idle.push(c);
  }

  /** A connection closed (by either side): out of the pool. */
  forget(c: UpstreamConnection): void {
    this.all.delete(c);
    const i = this.idle.indexOf(c);
    if (i >= 0) this.idle.splice(i, 1);
  }

  /** Closes connections idle past their limit (the oldest are at the bottom of the stack). */
  sweep(now: number): void {
    const idle = this.idle;
    let n = 0;
    while (n < idle.length && now - idle[n]!.idleSince > idle[n]!.idleLimitMs) n++;
    if (n === 0) return;
    for (const c of idle.splice(0, n)) c.destroy();
  }

  /** New TLS material (certificate rotation): new connections use it; idle ones are closed, busy ones finish. */
  setTLS(t: TLSFiles): void {
    this.o = { ...this.o, tls: t };
    this.session = undefined;
    this.context = undefined;
    this.h2?.setTLS(t);
    for (const c of this.idle.splice(0)) c.destroy();
  }

  /** Stops reuse: idle connections close now, busy ones when their response ends. */
  close(): void {
    this.closed = true;
    pools.delete(this);
    // The sweep is shared by every pool of the process: it ends with the last one (a closed daemon holds no timer).
    if (pools.size === 0 && sweeper !== null) {
      clearInterval(sweeper);
      sweeper = null;
    }
    for (const c of this.idle.splice(0)) c.destroy();
  }

  /** Closes every connection at once, busy ones included. */
  destroy(): void {
    this.close();
    this.h2?.destroy();
    for (const c of [...this.all]) c.destroy();
  }
}

/**
 * Reports a connect failure on the next microtask. A function of its own, not a closure in dial():
 * closures of one function share its context, so the socket's onread callback (alive as long as
 * the connection) kept dial()'s `user`, the connection's first request with its exchange and
 * response, for the connection's life (found in a heap snapshot under load: one UpstreamAttempt per
 * connection held by a context's `user`, and one by each idle parser's sink).
 */
function failLater(user: ConnectionUser, e: Error): void {
  queueMicrotask(() => user.connectFailed(e));
}
