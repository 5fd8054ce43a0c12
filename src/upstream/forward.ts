// One proxied exchange: client request → upstream (undici dispatch) → client response, streamed
// both ways with backpressure and no body copies. undici's dispatch() handler API is used instead
// of request()/stream(): it is the cheapest path (docs/dependencies.md §6: ~30 µs vs ~34 µs CPU per request)
// and hands us raw header Buffers without building an object.

import type { Dispatcher } from 'undici';
import type { Exchange, ResponseHead } from '../listener/exchange';
import { responseHeadFrom } from './headers';

export interface ForwardOptions {
  headers: string[];
  /** Watches, logs, exec...: no timeout on the body, and headers flushed at once. */
  longRunning: boolean;
  /**
   * Time to wait for the response head (then 504), and for other than long-running requests also
   * the longest silence within a body.
   */
  requestTimeoutMs: number;
  /**
   * Set: an answer with one of these statuses is not the client's answer yet. Its head and body are
   * held and handed to AttemptOwner.attemptHeld once the upstream is done with them (proxy/proxied.ts:
   * a resource the local apiserver does not know, 404, is asked of the peers, whose discovery this
   * node may not have seen yet; a peer that answers 404 or cannot answer, 502/503/504, passes it on).
   */
  holdStatuses?: readonly number[];
  /** The request body, already read whole so it can be sent again (the hold path); else ex.body streams. */
  body?: Buffer;
  /** The upstream is an apiserver (the local one), not a peer mvproxy: its answer may not say "not sent" (api/headers.ts NotSentHeader). */
  fromAPIServer?: boolean;
  /** Keep the upstream's Audit-Id and the time its head arrived (request logs at --v=4; off: nothing is scanned). */
  recordHead?: boolean;
}

/** Who hears how one attempt ended (proxy/proxied.ts ProxiedRequest): exactly one of these is called, once. */
export interface AttemptOwner {
  /** The response has ended or been cut; status is what the client got (0 if nothing was sent). */
  attemptDone(status: number, err: Error | null): void;
  /**
   * The upstream failed before any response byte reached the client. `bodyTouched` tells whether
   * the upstream started reading the request body (then it cannot be replayed elsewhere).
   * The owner writes the client's answer (retry elsewhere, or an error Status).
   */
  attemptFailed(err: Error, bodyTouched: boolean): void;
  /** The upstream answered one of ForwardOptions.holdStatuses: nothing of it reached the client. */
  attemptHeld(held: HeldAnswer): void;
}

export class ForwardHandler implements Dispatcher.DispatchHandler {
  private abortUpstream: ((err?: Error) => void) | null = null;
  private status = 0;
  private finished = false;
  /** The upstream answered a status in o.holdStatuses and the owner takes over: nothing of this answer reaches the client now. */
  private holding = false;
  /** That answer, kept (up to HELD_BODY_MAX) in case it is the client's answer after all. */
  /** Made when an answer is held (rare: a local 404 asked of peers), not for every attempt. */
  private held: HeldAnswer = NOTHING_HELD;
  private heldBytes = 0;

  constructor(
    private readonly ex: Exchange,
    private readonly o: ForwardOptions,
    private readonly owner: AttemptOwner,
  ) {
    this.sentAt = o.recordHead ? performance.now() : 0;
    ex.onClientClose = () => {
      // Client gone: release the upstream request (and for a watch, the upstream watch) at once.
      if (!this.finished && this.abortUpstream) this.abortUpstream(new ClientClosedError());
    };
  }

  /**
   * Hands the request to `upstream`. The owner may hear the outcome before this returns (undici
   * calls onResponseError synchronously on a closed pool), so an owner keeps the handler first.
   */
  dispatch(upstream: Dispatcher): void {
    const body = this.o.body ?? this.ex.body;
    upstream.dispatch(
      {
        path: this.ex.query ? this.ex.path + '?' + this.ex.query : this.ex.path,
        method: this.ex.method as Dispatcher.HttpMethod,
        headers: this.o.headers,
        body: body ?? null,
        headersTimeout: this.o.requestTimeoutMs,
        bodyTimeout: this.o.longRunning ? 0 : this.o.requestTimeoutMs,
      },
      this,
    );
  }

  /** With o.recordHead: performance.now() when the upstream's response head arrived, and its Audit-Id. */
  headAt = 0;
  auditID = '';
  /** With o.recordHead: performance.now() when the request was handed to the upstream. */
  readonly sentAt: number;

  /**
   * Gives up on an upstream that has not answered yet (its head not in): the exchange fails with
   * `err` through onFailedBeforeResponse, as a transport error would. False when it had answered.
   */
  abandon(err: Error): boolean {
    if (this.finished || this.status !== 0 || this.holding || !this.abortUpstream) return false;
    this.abortUpstream(err);
    return true;
  }

  /** The request ran past --request-timeout as a whole: 504 if nothing was answered yet, else cut. */
  expire(): void {
    if (this.finished) return;
    if (this.abortUpstream) this.abortUpstream(new RequestTimeoutError());
  }

  /** Ends a streaming response cleanly (shutdown): the upstream is released, the client sees a normal end. */
  endCleanly(): void {
    if (this.finished) return;
    if (this.abortUpstream) this.abortUpstream(new ShutdownError());
  }

  // undici 8's handler API (the legacy onConnect/onHeaders/onData one is gone): backpressure is
  // controller.pause()/resume() instead of a false return, and the raw header Buffers are still
  // there, as controller.rawHeaders, so the response head is built from bytes as before.
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.abortUpstream = (err?: Error) => controller.abort(err ?? new ClientClosedError());
    if (this.ex.clientClosed) controller.abort(new ClientClosedError());
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number): void {
    if (statusCode < 200) return; // 1xx (100 Continue): informational, not forwarded
    // Raw header lines (HTTP/1.1; pools.ts keeps the upstream on it): names and values as sent.
    const raw = controller.rawHeaders;
    const head = Array.isArray(raw) ? responseHeadFrom(raw, this.o.fromAPIServer) : undefined;
    if (this.o.recordHead) this.noteHead(head);
    if (this.o.holdStatuses?.includes(statusCode)) {
      this.holding = true;
      this.held = { status: statusCode, head: head ?? { headers: [], contentLength: -1, contentType: '' }, body: [] };
      return;
    }
    this.status = statusCode;
    if (!head) throw new Error('the upstream answer has no raw header lines (HTTP/2 upstream?)');
    const res = this.ex.res;
    res.writeHead(statusCode, head, this.o.longRunning);
    res.onDrain = () => controller.resume();
  }

  private noteHead(head: ResponseHead | undefined): void {
    this.headAt = performance.now();
    const h = head?.headers ?? [];
    for (let i = 0; i < h.length; i += 2) {
      if (h[i]!.toLowerCase() === 'audit-id') {
        this.auditID = h[i + 1]!;
        return;
      }
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.holding) {
      if ((this.heldBytes += chunk.length) <= HELD_BODY_MAX) this.held.body.push(chunk);
      return;
    }
    if (this.ex.clientClosed) return; // abort is on its way; drop
    if (!this.ex.res.write(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    this.onComplete();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.onError(err);
  }

  private handHeldOver(): void {
    this.finished = true;
    this.ex.onClientClose = null;
    this.ex.res.onDrain = null;
    if (!this.ex.clientClosed) this.owner.attemptHeld(this.held);
  }

  private onComplete(): void {
    if (this.holding) return this.handHeldOver();
    this.finished = true;
    this.ex.onClientClose = null;
    this.ex.res.onDrain = null;
    if (!this.ex.clientClosed) this.ex.res.end();
    this.owner.attemptDone(this.status, null);
  }

  private onError(err: Error): void {
    if (this.holding && !(err instanceof ClientClosedError) && !this.ex.clientClosed) return this.handHeldOver();
    this.finished = true;
    this.ex.onClientClose = null;
    this.ex.res.onDrain = null;
    if (this.ex.clientClosed || err instanceof ClientClosedError) {
      this.owner.attemptDone(this.status, err);
      return;
    }
    if (err instanceof ShutdownError && this.ex.res.headersSent) {
      // A watch ended by shutdown: a clean end tells client-go to re-list and re-watch (elsewhere).
      this.ex.res.end();
      this.owner.attemptDone(this.status, null);
      return;
    }
    if (!this.ex.res.headersSent) {
      // Once undici read from the body, a failover would lose what it consumed.
      const body = this.ex.body;
      this.owner.attemptFailed(err, this.o.body === undefined && body !== null && (body.readableDidRead || body.destroyed));
      return;
    }
    // Mid-body failure: cut the client connection so it sees a truncated response, not a clean end.
    this.ex.res.destroy();
    this.owner.attemptDone(this.status, err);
  }
}

/** An answer held back (ForwardOptions.hold): its status, head and body, to be the client's answer if nobody else has one. */
export interface HeldAnswer {
  status: number;
  head: ResponseHead;
  body: Buffer[];
}

const NOTHING_HELD: HeldAnswer = Object.freeze({ status: 0, head: Object.freeze({ headers: [], contentLength: -1, contentType: '' }), body: [] }) as HeldAnswer;

/** A Status body is well under this; a larger held 404 keeps only its first part (then it is not replayed whole). */
const HELD_BODY_MAX = 64 * 1024;

export class ClientClosedError extends Error {
  readonly code = 'MVP_ERR_CLIENT_CLOSED';
  constructor() {
    super('the client closed the connection');
  }
}

export class RequestTimeoutError extends Error {
  readonly code = 'MVP_ERR_REQUEST_TIMEOUT';
  constructor() {
    super('the request did not complete within --request-timeout');
  }
}

/** The peer failed its health probe while this request waited for its answer (handler.ts abandonPeer). */
export class PeerDownError extends Error {
  readonly code = 'MVP_ERR_PEER_DOWN';
  constructor(why: string) {
    super(`the peer stopped answering while the request waited: ${why}`);
  }
}

export class ShutdownError extends Error {
  readonly code = 'MVP_ERR_SHUTTING_DOWN';
  constructor() {
    super('the proxy is shutting down');
  }
}

/**
 * Did the request certainly reach no server? Only when the connection (TCP or TLS) was never
 * established, so no request byte was written. A reset on an established connection is ambiguous:
 * the server may have run the request.
 */
export function isNotSent(err: Error & { code?: string }): boolean {
  switch (err.code) {
    case 'ECONNREFUSED':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return true;
    default:
      // TLS verification failures carry OpenSSL-style codes: the handshake never completed.
      return typeof err.code === 'string' && TLS_FAILURE.test(err.code);
  }
}

/** GET and HEAD: Kubernetes treats them as safe, so running one twice changes nothing. */
export function isSafeMethod(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

/**
 * May a request that failed on one peer be sent to another? When the first certainly did not act
 * on it (isNotSent); after an ambiguous failure on an established connection (a reset) only for a
 * safe method. Never once the upstream started reading a streamed body (it cannot be replayed).
 */
export function isFailoverSafe(err: Error & { code?: string }, method: string, bodyTouched: boolean): boolean {
  if (bodyTouched) return false;
  if (isNotSent(err)) return true;
  switch (err.code) {
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
    case 'MVP_ERR_PEER_DOWN':
      return isSafeMethod(method);
    default:
      return false;
  }
}

const TLS_FAILURE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|SELF_SIGNED_|DEPTH_ZERO_|ERR_OSSL_)/;
