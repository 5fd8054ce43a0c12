// One attempt of a proxied request on one upstream connection (Envoy's UpstreamRequest): it writes
// the request, reads one response through the strict reader (response-parser.ts), and reports —
// head, body slices, end, failure — to the request that owns it (proxy/proxied.ts ProxiedRequest),
// which makes every decision: hold or relay, fail over, answer with a Status. The attempt decides
// nothing but how to use its connection.

import type { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type { ConnectionUser, OriginPool, UpstreamConnection } from './origin';
import type { ResponseSink, UpstreamHead } from './response-parser';
import type { ResponseHead } from '../../listener/exchange';

/** A response head as an attempt reports it: HTTP/1.1's bytes (UpstreamHead) or HTTP/2's fields (h2/attempt.ts). */
export interface AttemptHead extends ResponseHead {
  readonly status: number;
  /** The first value of a relayed header (name lowercase), or ''. Not for the hot path. */
  get(lowerName: string): string;
}

/** What an attempt tells the request that owns it; exactly one of end/failed ends it. */
export interface AttemptReport {
  /** The final response head (1xx answers are read and not reported). */
  upstreamHead(head: AttemptHead): void;
  /**
   * A body slice. false: stop until resume(). `kept`: the chunk stays valid after the call (an
   * HTTP/2 stream's DATA, which node:http2 reads into a new buffer each time); otherwise it is a
   * view of the socket's reused read buffer: relay or copy it now.
   */
  upstreamBody(chunk: Buffer, kept?: boolean): boolean;
  /** The response ended; the connection went back to its pool (or was closed). */
  upstreamEnd(): void;
  /**
   * The attempt failed. `notSent`: no connection was made, so the upstream never saw the request.
   * `gotHead`: a head was reported before the failure (the body was cut).
   */
  upstreamFailed(err: Error, notSent: boolean, gotHead: boolean): void;
}

/** The request as the attempt sends it. */
export interface AttemptRequest {
  /** The whole head (upstream/request-head.ts), latin1. */
  head: string;
  /** A body read whole (written with the head, one write), a stream (written as it arrives), or none. */
  body: Buffer | Readable | null;
  /** Frame a streamed body as chunked (the head said Transfer-Encoding: chunked). */
  chunked: boolean;
  /** A HEAD request: its answer has no body whatever its framing says. */
  noBody: boolean;
  /** The upstream is an apiserver: its answer may not claim mvproxy's "not sent" (api/headers.ts). */
  fromAPIServer: boolean;
  /** Safe to send again on a fresh connection when a kept-alive one was closed under it (GET, HEAD: Go's transport retries those). */
  replayable: boolean;
}

const CRLF = '\r\n';
function ignoreError(): void {}
const LAST_CHUNK = '0\r\n\r\n';

/** What the request holds of its attempt under way (a fake one in proxy tests: test/unit/proxied.test.ts). */
export interface Attempt {
  start(): void;
  resume(): void;
  abort(): void;
  readonly bodyTouched: boolean;
  readonly sentAt: number;
  readonly headAt: number;
}

/** Makes an attempt: the relay's own (UpstreamAttempt), or a test's scripted one. */
export type AttemptFactory = (report: AttemptReport, pool: OriginPool, req: AttemptRequest) => Attempt;

export const newUpstreamAttempt: AttemptFactory = (report, pool, req) => new UpstreamAttempt(report, pool, req);

export class UpstreamAttempt implements ConnectionUser, ResponseSink, Attempt {
  private conn: UpstreamConnection | null = null;
  private done = false;
  /** A head was reported. */
  private gotHead = false;
  /** Bytes of an answer arrived (a kept-alive connection that closed after some is not an idle close). */
  private gotBytes = false;
  private retried = false;
  /** The request (head and body) was written whole: the connection can be reused after the answer. */
  private requestWritten = false;
  /** The client's body stream, while it is being written. */
  private pumping: Readable | null = null;
  /** The upstream started reading the client's streamed body: it cannot be sent elsewhere any more. */
  bodyTouched = false;
  /** performance.now() when the request was written, and when the head arrived (the request log's upstream latency). */
  sentAt = 0;
  headAt = 0;

  constructor(
    private readonly report: AttemptReport,
    private readonly pool: OriginPool,
    private readonly req: AttemptRequest,
  ) {}

  /** Takes a connection and sends; the report may hear the outcome before this returns. */
  start(): void {
    this.pool.acquire(this);
  }

  // ConnectionUser

  connected(conn: UpstreamConnection): void {
    if (this.done) {
      // Aborted while it connected: the new connection is good, and unused.
      this.pool.release(conn, true, -1);
      return;
    }
    this.conn = conn;
    const req = this.req;
    conn.parser.reset(this, req.noBody, req.fromAPIServer);
    this.sentAt = performance.now();
    const s = conn.socket;
    const body = req.body;
    if (body === null) {
      s.write(req.head, 'latin1');
      this.requestWritten = true;
    } else if (Buffer.isBuffer(body)) {
      // One writev for head and body.
      s.cork();
      s.write(req.head, 'latin1');
      if (body.length > 0) s.write(body);
      s.uncork();
      this.requestWritten = true;
    } else {
      s.write(req.head, 'latin1');
      this.pump(body);
    }
  }

  connectFailed(err: Error): void {
    if (this.done) return;
    this.done = true;
    this.report.upstreamFailed(err, true, false);
  }

  data(buf: Buffer): void {
    if (this.done) return;
    this.gotBytes = true;
    try {
      this.conn!.parser.execute(buf);
    } catch (e) {
      this.fail(e as Error);
    }
  }

  closed(err: Error | null): void {
    if (this.done) return;
    const conn = this.conn;
    // A kept-alive connection closed before any answer byte: the upstream closed it as idle while
    // the request went out. Sent again once on a fresh connection when that cannot run it twice.
    if (conn !== null && conn.reused && !this.gotBytes && !this.retried && this.req.replayable && !this.bodyTouched) {
      this.retried = true;
      this.conn = null;
      this.requestWritten = false;
      this.pool.acquire(this, true);
      return;
    }
    if (err === null && conn !== null) {
      try {
        conn.parser.finish(); // a close-delimited body ends here (onEnd)
        return;
      } catch (e) {
        // Closed before the answer was complete: a transport failure (the request may have run), not a framing one.
        err = Object.assign(new Error((e as Error).message), { code: 'ECONNRESET' });
      }
    }
    this.fail(err ?? Object.assign(new Error('the upstream closed the connection'), { code: 'ECONNRESET' }));
  }

  drained(): void {
    this.pumping?.resume();
  }

  // ResponseSink

  onHead(head: UpstreamHead): void {
    this.gotHead = true;
    this.headAt = performance.now();
    this.report.upstreamHead(head);
  }

  onBody(chunk: Buffer): void {
    if (this.done) return;
    if (!this.report.upstreamBody(chunk)) this.conn?.socket.pause();
  }

  onEnd(extra: boolean): void {
    if (this.done) return;
    this.done = true;
    const conn = this.conn!;
    this.conn = null;
    this.stopPumping();
    const head = conn.parser.head;
    this.pool.release(conn, !extra && this.requestWritten && conn.parser.reusable, head?.keepAliveSeconds ?? -1);
    this.report.upstreamEnd();
  }

  // The owner's controls

  /** The client can take more body again. */
  resume(): void {
    this.conn?.socket.resume();
  }

  /** Gives up (client gone, timeout, shutdown): the connection is destroyed, nothing more is reported. */
  abort(): void {
    if (this.done) return;
    this.done = true;
    this.stopPumping();
    const c = this.conn;
    this.conn = null;
    c?.destroy();
  }

  /** Whether the answer's head has arrived. */
  get answered(): boolean {
    return this.gotHead;
  }

  private fail(err: Error): void {
    if (this.done) return;
    this.done = true;
    this.stopPumping();
    const c = this.conn;
    this.conn = null;
    c?.destroy();
    this.report.upstreamFailed(err, false, this.gotHead);
  }

  /**
   * Writes the client's body as it arrives, chunk-framed when the head said so, pausing it while the
   * socket is full. Its listeners are made here, for requests with a streamed body only (writes),
   * not for every request.
   */
  private pump(body: Readable): void {
    const onData = (chunk: Buffer): void => {
      const c = this.conn;
      if (c === null) return;
      this.bodyTouched = true;
      const s = c.socket;
      let ok: boolean;
      if (this.req.chunked) {
        if (chunk.length === 0) return; // a zero-size chunk would end the body
        s.cork();
        s.write(chunk.length.toString(16) + CRLF, 'latin1');
        s.write(chunk);
        ok = s.write(CRLF, 'latin1');
        s.uncork();
      } else ok = s.write(chunk);
      if (!ok) body.pause();
    };
    const onEnd = (): void => {
      const c = this.conn;
      if (this.req.chunked && c !== null) c.socket.write(LAST_CHUNK, 'latin1');
      this.requestWritten = true;
      this.stopPumping();
    };
    this.pumping = body;
    this.unpump = () => {
      body.off('data', onData);
      body.off('end', onEnd);
    };
    body.on('data', onData);
    body.once('end', onEnd);
    // The client's body fails when the client goes away: the owner hears that from the front end.
    // This listener stays (never removed with the others): a front end destroys the body with an
    // error only while one listens, and the error comes a tick later, when an unlistened one would
    // end the process.
    body.on('error', ignoreError);
    body.resume();
  }

  private unpump: (() => void) | null = null;

  private stopPumping(): void {
    const b = this.pumping;
    if (b === null) return;
    this.pumping = null;
    this.unpump!();
    this.unpump = null;
    // Flowing with no listener would drop what arrives next: a failover's next attempt reads it.
    if (!b.readableEnded) b.pause();
  }
}
