// The node:http / node:https front end. Second client-facing front end (--frontend=node), the
// fallback when uWebSockets.js cannot load, and the base of the peer listener (it can require a
// client certificate, which uWS cannot: docs/dependencies.md §4).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { MAX_HEADER_BYTES, type ClientResponse, type Exchange, type ListenerState, type ResponseHead } from './exchange';
import { certificateRefusal, isRefusal, type CertificateUser, type Identity } from '../api/identity';
import { ErrorCode } from '../api/errors';
import { headerListSize } from '../api/headers';
import { HeadCheck, contentLengthValue, expectationRefusal, type Refusal } from './head-check';
import { nodeRemoteAddress } from './remote-address';

/**
 * How long a connection closed with its request body unread stays half-open after the response
 * (our FIN sent, the socket not yet destroyed). Closing a socket with unread bytes queued sends a
 * RST, and a client still uploading then often loses the response it had not read yet (EPIPE,
 * ECONNRESET instead of the Status). Go's net/http waits the same 500 ms (rstAvoidanceDelay).
 */
const RST_AVOIDANCE_DELAY_MS = 500;

/**
 * Sends a response's head now, before any body. node:http's flushHeaders() is `_send('')`: the head
 * goes out as a UTF-8 string, so an obs-text byte of the upstream's (0xE9) reached the client as two
 * (C3 A9). The same call with 'latin1' writes one byte per char, as the head was parsed. An empty
 * Buffer write would too, but node:http ignores writes, the head's included, to an answer without
 * a body (HEAD, 204, 304: helper 8). HTTP/2 (node:http2 encodes header values as latin1) and a
 * node:http without `_send` use flushHeaders(). test/integration/watch-h2.test.ts checks the byte.
 */
function sendHeadNow(res: ServerResponse, h2: boolean): void {
  const send = (res as ServerResponse & { _send?: (data: string, encoding: BufferEncoding) => boolean })._send;
  if (!h2 && typeof send === 'function') send.call(res, '', 'latin1');
  else res.flushHeaders();
}

/**
 * node:http ends a `connection: close` response with socket.destroySoon() (_http_server.js
 * resOnFinish): destroy as soon as our FIN is flushed. For this one socket it lingers instead.
 */
function lingerBeforeClose(socket: Socket): void {
  socket.destroySoon = function lingeringDestroySoon(this: Socket) {
    if (this.writable) this.end();
    const t = setTimeout(() => this.destroy(), RST_AVOIDANCE_DELAY_MS);
    t.unref();
    this.once('close', () => clearTimeout(t));
  };
}

export class NodeResponse implements ClientResponse {
  onDrain: (() => void) | null = null;
  /** An HTTP/2 stream: no connection-level headers (RFC 9113 §8.2.2), and closing is the session's GOAWAY. */
  private readonly h2: boolean;
  /** Set by the exchange when the body framing is in doubt: the connection closes after the answer. */
  closeAfter = false;
  constructor(
    private readonly res: ServerResponse,
    private readonly req: IncomingMessage,
    /** Whether the request has a body at all (a GET without one is not `complete` yet in the handler). */
    private readonly hasBody: boolean,
    private readonly state: ListenerState,
  ) {
    this.h2 = isHTTP2(req);
    res.on('drain', () => this.onDrain?.());
  }

  /** Status and headers given to writeHead but not yet on the wire (they go out with the first body byte). */
  private pendingHead: { status: number; headers: string[] } | null = null;
  private headWritten = false;

  /**
   * True once the status line went to the client. node:http's own headersSent turns true at
   * writeHead(), before a byte is written: a head held back that way and an upstream that then
   * failed left the client with a closed connection and zero bytes, where a Status can still be sent.
   */
  get headersSent(): boolean {
    return this.headWritten;
  }

  writeHead(status: number, head: ResponseHead, flushNow: boolean): void {
    const headers = head.contentLength >= 0 ? [...head.headers, 'content-length', String(head.contentLength)] : head.headers;
    this.pendingHead = { status, headers };
    if (flushNow) {
      this.flushHead();
      sendHeadNow(this.res, this.h2);
    }
  }

  private flushHead(): void {
    const p = this.pendingHead;
    if (p === null) return;
    this.pendingHead = null;
    this.headWritten = true;
    let headers = p.headers;
    const req = this.req;
    // Answered before the request body was read whole (an early 401/413, an upstream that died
    // mid-upload). A body nobody touched, node:http discards after the response and keeps the
    // connection (what Go does for small bodies too). One a reader had started on cannot be
    // skipped: undici destroyed the IncomingMessage but, on purpose, not its socket, so the body
    // stayed paused and the connection ESTABLISHED for ever with the upload queued (one fd per
    // abandoned upload). Such a connection closes after this response, as Go's net/http does.
    const unreadStarted = this.hasBody && !req.complete && (req.readableFlowing !== null || req.destroyed);
    if (!this.h2 && (unreadStarted || this.closeAfter || this.state.draining)) {
      headers = [...headers, 'connection', 'close'];
      if (this.hasBody && !req.complete) lingerBeforeClose(req.socket);
    }
    this.res.writeHead(p.status, headers);
  }

  write(chunk: Buffer, kept = false): boolean {
    this.flushHead();
    // node:http keeps the chunk until it is written: a copy, unless it stays valid anyway (an HTTP/2
    // upstream's: each watch event of the node front end was copied once more; ClientResponse.write).
    return this.res.write(kept ? chunk : Buffer.from(chunk));
  }

  end(): void {
    this.ended = true;
    this.flushHead();
    this.res.end();
  }

  /** end() was called: the response finished because mvproxy ended it, not because the client left. */
  ended = false;

  destroy(): void {
    this.res.destroy();
  }
}

/**
 * Whether the request is an HTTP/2 stream (node:http2's compatibility request, which has one).
 * Not httpVersionMajor: llhttp reports 2 for an HTTP/1.1 request line that says HTTP/2.0, and
 * reading the stream of such a request crashed the daemon (one unauthenticated request: found by
 * an adversarial probe, test/security/request-line.test.ts).
 */
export function isHTTP2(req: IncomingMessage): boolean {
  return (req as IncomingMessage & { stream?: unknown }).stream !== undefined;
}

/** HTTP/1.x connections whose request was refused: they close after its answer. */
const CLOSING = new WeakSet<Socket>();

/**
 * Whether a request arrived on a connection that closes after a refused request before it (a request
 * pipelined behind it): it is never read, as Go's server never reads past a request it refused. A
 * request behind a 501 or 417 used to go upstream under the client's identity (issue 38).
 */
export function behindRefusal(req: IncomingMessage): boolean {
  return CLOSING.has(req.socket);
}

export class NodeExchange implements Exchange {
  readonly method: string;
  readonly target: string;
  readonly path: string;
  readonly query: string;
  readonly headers: string[];
  readonly peerProxied: string | undefined;
  readonly contentLength: number = -1;
  readonly remoteAddress: string;
  readonly body: Readable | null;
  readonly res: NodeResponse;
  onClientClose: (() => void) | null = null;
  clientClosed = false;
  readonly identity?: Identity;
  readonly identityRefusal?: string;
  readonly refusal: Refusal | undefined;

  constructor(req: IncomingMessage, res: ServerResponse, state: ListenerState, user: CertificateUser = null) {
    // node's parsers hand every byte over as one latin1 character: the method, the target (an
    // HTTP/2 :path too) and each field are the client's bytes already.
    this.method = req.method ?? '';
    const check = new HeadCheck(false);
    const url = (this.target = check.requestLine(this.method, req.url ?? ''));
    const q = url.indexOf('?');
    this.path = q === -1 ? url : url.slice(0, q);
    this.query = q === -1 ? '' : url.slice(q + 1);
    const raw = req.rawHeaders;
    const headers: string[] = [];
    let peerProxied: string | undefined;
    let hasBody = false;
    let sawLength = false;
    let expect: string | undefined;
    const h2 = isHTTP2(req);
    // HTTP/2's header list, counted before anything else reads it (RFC 9113 §6.5.2: name, value and
    // 32 bytes a field, pseudo-header fields too, as Go's server counts): node:http2 applies the
    // MAX_HEADER_BYTES it advertises only once the client acknowledged its SETTINGS, and a client
    // that never does had ~6 KB of HPACK references decoded into 8 MB of fields and forwarded.
    const tooLarge = h2 && headerListSize(raw) > MAX_HEADER_BYTES;
    for (let i = 0; i < raw.length && !tooLarge; i += 2) {
      const name = raw[i].toLowerCase();
      if (name.charCodeAt(0) === 0x3a /* : */) continue; // HTTP/2 pseudo-headers (:method, :path, :authority, :scheme)
      const value = check.field(name, raw[i + 1]);
      headers.push(name, value);
      if (name === 'x-kubernetes-peer-proxied') {
        if (peerProxied === undefined) peerProxied = value;
      } else if (name === 'content-length' || name === 'transfer-encoding') {
        sawLength = true;
        if (name === 'content-length') this.contentLength = contentLengthValue(value);
        if (name === 'transfer-encoding' || value !== '0') hasBody = true;
      } else if (name === 'expect') expect ??= value;
    }
    // HTTP/2 frames its body itself: a request has one unless its HEADERS frame ended the stream
    // (a Content-Length, when sent, still counts as above).
    if (h2 && !hasBody && !sawLength) hasBody = !(req as unknown as { stream: { endAfterHeaders: boolean } }).stream.endAfterHeaders;
    // llhttp takes a request line without a version as HTTP/0.9, and went on to read header lines
    // after it (the differential test found one forwarded as HTTP/1.1); Go's server answers 400.
    // It takes "HTTP/2.0" on an HTTP/1.1 connection too (Go: 505); that is not an HTTP/2 stream.
    // HTTP/1.1 needs a Host field (Go: "missing required Host header"); HTTP/2 has :authority.
    const lineRefusal = h2 || req.httpVersionMajor === 1 ? undefined : { code: ErrorCode.MVP_ERR_HTTP_VERSION, message: `unsupported protocol version HTTP/${req.httpVersion}` };
    this.refusal = tooLarge
      ? { code: ErrorCode.MVP_ERR_HEADER_LIST_TOO_LARGE, message: `the request's header list is larger than ${MAX_HEADER_BYTES} bytes` }
      : (lineRefusal ?? check.verdict(!h2 && req.httpVersionMinor === 1) ?? (expect === undefined ? undefined : expectationRefusal(expect)));
    if (isRefusal(user)) this.identityRefusal = certificateRefusal(user, headers);
    else if (user !== null) this.identity = user;
    // Expect: 100-continue (node:http's checkContinue: nothing sent yet). As Go's net/http: the
    // 100 Continue goes out when the body is first read; an answer before that (a 401 from the
    // apiserver, say) spares the client the upload.
    if (expect !== undefined && this.refusal === undefined && hasBody) continueOnFirstRead(req, res);
    this.headers = headers;
    this.peerProxied = peerProxied;
    this.remoteAddress = nodeRemoteAddress(req.socket.remoteAddress);
    this.body = hasBody ? req : null;
    this.res = new NodeResponse(res, req, hasBody, state);
    if (this.refusal !== undefined) {
      this.res.closeAfter = true;
      if (!h2) CLOSING.add(req.socket);
    }
    res.on('close', () => {
      // node:http2's compatibility response reports a stream the client reset (RST_STREAM, GOAWAY,
      // the connection gone) as finished too ('finish', then 'close' with writableFinished true):
      // only an end mvproxy made itself is not the client leaving. Going by writableFinished leaked
      // every HTTP/2 watch whose client went away (issue 33: 6,005 upstream sockets 11 min later).
      if (this.res.ended) return;
      this.clientClosed = true;
      const cb = this.onClientClose;
      this.onClientClose = null;
      if (cb) cb();
    });
  }
}

function continueOnFirstRead(req: IncomingMessage, res: ServerResponse): void {
  let sent = false;
  const send = () => {
    if (sent || res.headersSent || res.destroyed) return; // node's own: nothing may precede a final head
    sent = true;
    res.writeContinue();
  };
  // Flowing mode ('data' listener, pipe) emits 'resume'; paused mode reads after a 'readable' listener.
  req.once('resume', send);
  req.on('newListener', function onListener(ev: string | symbol) {
    if (ev !== 'readable') return;
    req.off('newListener', onListener);
    send();
  });
}
