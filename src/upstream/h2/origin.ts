// HTTP/2 sessions to one TLS upstream, for long-running requests (watches, logs -f): they share a
// few connections as streams instead of holding one TCP+TLS connection each (issue 29). In-tree,
// client-go multiplexes its watches over HTTP/2 straight into the apiserver (up to its
// max-concurrent-streams per connection); through the HTTP/1.1 relay 10,000 watches were 10,000
// connections into the apiserver, one goroutine and ~100 KiB in mvproxy each.
//
// A session is opened on a TLS connection that offers h2 and http/1.1 by ALPN: an upstream that
// picks http/1.1 (a uWS peer listener, an old server) is remembered as such, and its long-running
// requests go on HTTP/1.1 (attempt.ts falls back). A session takes streams up to the server's
// SETTINGS_MAX_CONCURRENT_STREAMS (kube-apiserver: --http2-max-streams-per-connection, Go's 250 by
// default; capped here at MAX_STREAMS_PER_SESSION), then the next session opens.
//
// Flow control: each stream's window is STREAM_WINDOW_BYTES, so a watcher whose client is slow
// holds at most that much here before the apiserver stops sending it (attempt.ts pauses the
// stream); the connection's window is large, so one slow stream never stalls the others.

import net from 'node:net';
import tls from 'node:tls';
import { codedError, ErrorCode } from '../../api/errors';
import { checkServerIdentity, type TLSFiles } from '../tls-files';
import { H2Connection } from './connection';

/** Streams per session at most, whatever the server allows (Go's default is 250, kube-apiserver's configurable). */
export const MAX_STREAMS_PER_SESSION = 250;
/** A stream's receive window: what one slow watcher may hold in mvproxy before the upstream waits for it. */
export const STREAM_WINDOW_BYTES = 256 * 1024;
/** The connection's receive window: room for many paused streams without stalling the rest. */
export const SESSION_WINDOW_BYTES = 1 << 30;
/** A response's header list at most this (RFC 7541 sizes; apiserver heads are < 1 KiB, warnings a few KiB). */
export const MAX_HEADER_LIST_BYTES = 256 * 1024;
/** A session with no stream closes after this. */
const SESSION_IDLE_MS = 30_000;

export interface H2OriginOptions {
  host: string;
  port: number;
  /** :authority of the requests (host:port, [v6]:port). */
  authority: string;
  tls: TLSFiles;
  connectTimeoutMs: number;
  /** Each new connection: the serving certificate's notAfter (Unix seconds). */
  onServerCertificate?: (notAfterSeconds: number) => void;
}

/** One HTTP/2 connection and the streams open on it. */
export class H2Session {
  active = 0;
  /** The server's SETTINGS_MAX_CONCURRENT_STREAMS, capped (until its SETTINGS arrive: Go's default). */
  max = MAX_STREAMS_PER_SESSION;
  usable = true;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly conn: H2Connection,
    private readonly origin: H2Origin,
  ) {}

  get full(): boolean {
    return this.active >= this.max;
  }

  streamOpened(): void {
    this.active++;
    if (this.idleTimer !== null) {
      clearTimeout(this.idleTimer);
      this.idleTimer = null;
    }
  }

  streamClosed(): void {
    this.active--;
    if (this.active === 0 && !this.usable) return this.origin.retire(this);
    if (this.active === 0) {
      this.idleTimer = setTimeout(() => this.origin.retire(this), SESSION_IDLE_MS);
      this.idleTimer.unref();
    }
  }

  close(): void {
    this.usable = false;
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.conn.close();
  }

  /** Ends the session at once, its streams with it (H2Origin.destroy). */
  destroy(): void {
    this.usable = false;
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.conn.destroy();
  }
}

type Waiter = (s: H2Session | null, err: Error | null) => void;

export class H2Origin {
  /** Whether the upstream speaks h2: unknown until the first connection's ALPN says. */
  state: 'unknown' | 'h2' | 'h1' = 'unknown';
  private readonly sessions: H2Session[] = [];
  /** Requests waiting for the session being opened. */
  private waiting: Waiter[] = [];
  private opening = false;
  private tlsSession: Buffer | undefined;
  private context: tls.SecureContext | undefined;
  private closed = false;

  constructor(private o: H2OriginOptions) {}

  /** Sessions open now, and streams open on them (scale checks, tests). */
  get sessionCount(): number {
    return this.sessions.length;
  }

  get streamCount(): number {
    let n = 0;
    for (const s of this.sessions) n += s.active;
    return n;
  }

  /**
   * Calls back with a session that has room for a stream; with null (and no error) when the
   * upstream speaks no h2 (the request goes on HTTP/1.1); with an error when no connection could
   * be made (nothing was sent).
   */
  acquire(cb: Waiter): void {
    if (this.state === 'h1') return cb(null, null);
    for (const s of this.sessions) {
      if (s.usable && !s.full) return cb(s, null);
    }
    this.waiting.push(cb);
    if (!this.opening) this.open();
  }

  private open(): void {
    if (this.closed) return this.settle(null, Object.assign(new Error('the HTTP/2 pool is closed'), { code: 'ECONNREFUSED' }));
    this.opening = true;
    const o = this.o;
    let socket: tls.TLSSocket;
    try {
      this.context ??= tls.createSecureContext({ ca: o.tls.ca, cert: o.tls.cert, key: o.tls.key, ...o.tls.policy });
      socket = tls.connect({
        host: o.host,
        port: o.port,
        secureContext: this.context,
        servername: o.tls.servername ?? (net.isIP(o.host) ? undefined : o.host),
        rejectUnauthorized: true,
        checkServerIdentity,
        ALPNProtocols: ['h2', 'http/1.1'],
        session: this.tlsSession,
        ...o.tls.policy,
      });
    } catch (e) {
      this.opening = false;
      return this.settle(null, e as Error);
    }
    socket.on('session', (t: Buffer) => (this.tlsSession = t));
    const timer = setTimeout(() => socket.destroy(codedError(ErrorCode.MVP_ERR_CONNECT_TIMEOUT, `connecting to ${o.authority} took longer than ${o.connectTimeoutMs} ms`)), o.connectTimeoutMs);
    const failed = (e: Error) => {
      clearTimeout(timer);
      this.opening = false;
      this.settle(null, e);
    };
    socket.once('error', failed);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      socket.off('error', failed);
      const validTo = socket.getPeerCertificate?.().valid_to;
      const t = validTo ? Date.parse(validTo) : NaN;
      if (Number.isFinite(t)) o.onServerCertificate?.(t / 1000);
      if (socket.alpnProtocol !== 'h2') {
        // No h2 here: remembered; this and later long-running requests go on HTTP/1.1.
        socket.destroy();
        this.state = 'h1';
        this.opening = false;
        return this.settle(null, null);
      }
      this.state = 'h2';
      let settled = false;
      // The server's first SETTINGS within the connect timeout, or the connection is given up.
      const settingsTimer = setTimeout(() => s.conn.destroy(), o.connectTimeoutMs);
      const conn = new H2Connection(socket, { streamWindow: STREAM_WINDOW_BYTES, connectionWindow: SESSION_WINDOW_BYTES, maxHeaderListBytes: MAX_HEADER_LIST_BYTES }, {
        settings: (maxConcurrentStreams) => {
          // Absent, the limit is unbounded (RFC 9113 §6.5.2): MAX_STREAMS_PER_SESSION then.
          s.max = Math.max(1, Math.min(maxConcurrentStreams ?? MAX_STREAMS_PER_SESSION, MAX_STREAMS_PER_SESSION));
          if (settled) return;
          // The session takes streams once the server said how many: handed out before, streams past
          // its limit waited inside nghttp2 for ever (measured: 120 watches at once, limit 100).
          settled = true;
          clearTimeout(settingsTimer);
          this.sessions.push(s);
          this.opening = false;
          // Hand the new session to as many waiters as it takes; the rest open the next one.
          const waiting = this.waiting;
          this.waiting = [];
          for (const w of waiting) this.acquire(w);
        },
        // No new streams on it; the open ones finish.
        goaway: () => (s.usable = false),
        close: () => {
          clearTimeout(settingsTimer);
          this.forget(s);
          if (settled) return;
          this.opening = false;
          this.settle(null, Object.assign(new Error('the HTTP/2 session closed before its settings arrived'), { code: 'ECONNRESET' }));
        },
      });
      const s = new H2Session(conn, this);
    });
  }

  private settle(s: H2Session | null, err: Error | null): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const w of waiting) w(s, err);
  }

  /** A session idle past SESSION_IDLE_MS: closed. */
  retire(s: H2Session): void {
    if (s.active > 0) return;
    s.close();
    this.forget(s);
  }

  private forget(s: H2Session): void {
    s.usable = false;
    const i = this.sessions.indexOf(s);
    if (i >= 0) this.sessions.splice(i, 1);
  }

  /** New TLS material: new sessions use it; open ones keep their streams. */
  setTLS(t: TLSFiles): void {
    this.o = { ...this.o, tls: t };
    this.context = undefined;
    this.tlsSession = undefined;
    this.state = 'unknown';
    for (const s of this.sessions) s.usable = false;
  }

  /** Closes every session at once (their streams end). */
  destroy(): void {
    this.closed = true;
    for (const s of [...this.sessions]) s.destroy();
    this.sessions.length = 0;
  }
}
