// The uWebSockets.js front end (uwebsockets@3.0.6, its build for Node 24 on glibc >= 2.38:
// docs/dependencies.md §1), the default client listener, and the peer listener beside it
// (listenPeerUWS) where that build reads client certificates. Rules from docs/dependencies.md §2
// and the uWS docs:
// - HttpRequest lives only during the synchronous handler: everything is read before returning;
// - onAborted is registered before any async work; onData chunks are copied (uWS neuters them);
// - writes outside the handler are corked, and status + headers go out with the first body chunk
//   (one syscall; +10–12 % GET throughput measured in a prototype, docs/dependencies.md §5);
// - a relayed body is never altered (no byte added, none dropped). This uWS build completes a
//   response head only with the first body byte (write('') returns before the head's final CRLF;
//   there is no flush), so a long-running response goes out with its first body bytes. One
//   exception, on the client listener only: a long-running 200 whose body is identity-encoded
//   `application/json` (a JSON watch) gets one space first (JSON_STREAM_LEAD). kube-apiserver
//   flushes a watch's head at once, and Go's client (client-go's Watch(), so an informer or a
//   controller that watches, then writes) returns only with the head: without it a watch of a
//   quiet resource returned with its first event, up to timeoutSeconds later, and a client with a
//   request timeout failed (test/kube/routing.test.ts waited 60 s). JSON allows whitespace before
//   a value (RFC 8259 §2) and every watch decoder skips it (client-go's json framer, Python's and
//   JavaScript's line readers). Nothing is added to any other body: a gzip or protobuf watch goes
//   out with its first bytes (a space there corrupted every gzip watch: issue 33; kube-apiserver
//   1.37 gzips watch-lists for Go clients), and the peer listener adds nothing (the client
//   listener that relays its answer does).

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { Readable } from 'node:stream';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uwebsockets';
import { ListenerState, MAX_HEADER_BYTES, type ClientResponse, type Exchange, type ResponseHead, type RunningListener } from './exchange';
import { CertificateUsers, certificateRefusal, isRefusal, type Identity } from '../api/identity';
import type { ClientCA } from '../api/client-ca';
import { listHasToken } from '../api/headers';
import { X509Certificate } from 'node:crypto';
import { codedError, ErrorCode } from '../api/errors';
import { HeadCheck, contentLengthValue, expectationRefusal, identityLengthsProblem, type Refusal } from './head-check';
import { routeWebSockets, type WebSocketDialer, type WebSocketRouteHolder } from './uws-websocket';
import { uwsReadsClientCertificates, type UWSLoad } from './frontend';
import { peerCertificateProblem, PeerVerdicts } from './peer-auth';
import { uwsRemoteAddress } from './remote-address';

type UWS = typeof import('uwebsockets');

/** Loads the native module, or returns the reason it cannot load (the caller falls back to node:http). */
export function loadUWS(): UWSLoad {
  // Read once when the module loads: bearer JWTs plus Impersonate-* headers pass uWS's 4 KiB
  // default (docs/dependencies.md §2); 16 KiB matches the node front end's maxHeaderSize.
  process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= String(MAX_HEADER_BYTES);
  try {
    return { uws: require('uwebsockets') as UWS };
  } catch (e) {
    return { error: e as Error };
  }
}

const statusLines = new Map<number, string>();
function statusLine(code: number): string {
  let s = statusLines.get(code);
  if (s === undefined) {
    s = `${code} ${STATUS_CODES[code] ?? 'Unknown'}`;
    statusLines.set(code, s);
  }
  return s;
}

export class UwsResponse implements ClientResponse {
  onDrain: (() => void) | null = null;
  aborted = false;
  private status = 0;
  /** Until it is written: a watch's head would stay alive as long as the watch (~330 B each, bench/watch-heap.ts --owners). */
  private head: ResponseHead | null = null;
  /** The head asks to close the connection (a generated head's Connection: close), read when it is set. */
  private headCloses = false;
  /**
   * The body's length as this response frames it: the head's Content-Length, or -1 once it goes out
   * chunked instead (TRYEND_STREAMS_RELIABLY). Kept here, not in a copy of the head: a relayed head
   * is the upstream's bytes and is never rewritten.
   */
  private length = -1;
  private headWritten = false;
  private done = false;
  /** tryEnd bookkeeping when the body length is known. */
  private pending: Buffer | null = null;
  private pendingOffset = 0;

  constructor(
    private readonly res: HttpResponse,
    private readonly state: ListenerState,
    /** The client listener's responses: a JSON watch's head goes out at once (see the top of this file). */
    private readonly jsonStreamLead: boolean,
  ) {
    res.onWritable((offset) => this.writable(offset));
  }

  /** Whether the connection closes after this response (ClientResponse contract). */
  private closing(): boolean {
    // An unread request body closes the connection only on a build whose pause() stops the body (a
    // paused socket never reads again). The Node 24 build never pauses: it reads and drops the rest
    // of the body after the answer, and closing instead reset the connection under the client's
    // upload, which then lost the answer (an early 401 never arrived: measured).
    return this.closeAfter || (this.requestBodyPending && PAUSE_THROTTLES_BODY) || this.state.draining || this.headCloses;
  }

  /** Set when the connection must close after this response whatever it says (a refused upgrade). */
  closeAfter = false;

  /**
   * True once the status line went to the client (uWS holds it until the first body byte), or a
   * body chunk is queued for it (coalesce): the response is committed either way.
   */
  get headersSent(): boolean {
    return this.headWritten || this.queued !== null;
  }

  /** uWS forbids any use of the response after it ended or was aborted. */
  get usable(): boolean {
    return !this.aborted && !this.done;
  }

  /**
   * `flushNow` (a long-running answer): this build sends a head only with a body byte, so the head
   * goes out with the first chunk, except a JSON watch's, pushed out by JSON_STREAM_LEAD (the top of
   * this file).
   */
  writeHead(status: number, head: ResponseHead, flushNow: boolean): void {
    this.streaming = flushNow;
    this.status = status;
    this.head = head;
    this.headCloses = head.raw === undefined && hasConnectionClose(head.headers);
    this.length = head.contentLength;
    if (flushNow && this.jsonStreamLead && status === 200 && head.contentLength < 0 && isIdentityJSON(head)) this.write(JSON_STREAM_LEAD);
  }

  /** `close`: the head says `Connection: close` (uWS writes one itself only when end() closes). */
  private writeHeadNow(close = false): void {
    if (this.headWritten) return;
    this.headWritten = true;
    const res = this.res;
    const head = this.head!;
    this.head = null;
    const raw = head.raw;
    if (raw !== undefined) {
      // A relayed head, as the upstream's bytes: its status line, then each run of relayed lines in
      // one "name: value" write whose value spans the run's later lines (UpstreamHead.runs); no
      // header strings are made. Connection and Date are never in a run (uWS writes its own).
      const b = raw.buf;
      const r = raw.runs;
      res.writeStatus(b.subarray(raw.statusStart, raw.statusEnd));
      if (close) res.writeHeader('connection', 'close');
      for (let i = 0; i < r.length; i += 4) res.writeHeader(b.subarray(r[i]!, r[i + 1]!), b.subarray(r[i + 2]!, r[i + 3]!));
      return;
    }
    res.writeStatus(statusLine(this.status));
    if (close) res.writeHeader('connection', 'close');
    const h = head.headers;
    // uWS writes its own Connection: close when it closes (end(…, true)), and its own Date on every
    // response (not switchable in this build): the upstream's would make two of each.
    for (let i = 0; i < h.length; i += 2) if (h[i] !== 'connection' && !isDate(h[i])) res.writeHeader(h[i], h[i + 1]);
  }

  /**
   * Body chunks of this event-loop turn not yet handed to uWS, and their bytes. A TLS upstream (the
   * peer hop) hands its body over one 16 KiB record at a time, each its own callback: written one
   * by one, a 100 KiB LIST left through 14 sendto calls (bench/syscalls.ts, peer/list). Queued and
   * written once per turn (flushQueued, setImmediate), it goes in one piece, and keeps its
   * Content-Length when it arrived whole within the turn (TRYEND_STREAMS_RELIABLY). The chunks are
   * copied once, into one buffer sized for the body (the relay's reads are views of a reused
   * buffer): copied one by one and concatenated, the peer LIST spent 11 % of mvproxy A's CPU in
   * the copies and 27 % in GC.
   */
  private queued: Buffer | null = null;
  private queuedBytes = 0;
  /** `queued` is this response's own buffer (else a region of the turn's ARENA, copied if it must wait). */
  private queuedOwned = false;
  /** Body bytes handed to write() so far (queued or written). */
  private bodyBytes = 0;
  /** A long-running answer (writeHead's flushNow): its queue starts at STREAM_QUEUE_BYTES. */
  private streaming = false;
  /** write() returned false for the queue's size: onDrain is owed once it is written. */
  private owesDrain = false;

  write(chunk: Buffer): boolean {
    if (this.aborted || this.done) return true;
    this.bodyBytes += chunk.length;
    const total = this.length;
    if (chunk.length > COALESCE_CHUNK_MAX_BYTES) {
      // A plain socket's read (up to 64 KiB): already large; copying it into a bigger piece cost
      // more than the sendto it saves (local LIST, measured: 161 → 230 µs/req).
      if (this.queued !== null && !this.flush()) {
        this.writeNow(chunk);
        this.owesDrain = true;
        return false;
      }
      return this.writeNow(chunk);
    }
    if (this.queued === null) {
      // The common answer (a GET: the whole known-length body in one chunk) goes out now.
      if (total >= 0 && this.bodyBytes >= total) return this.writeNow(chunk);
      // Room for the rest of a known-length body (up to COALESCE_MAX_BYTES), else for 64 KiB.
      // A stream (a watch: one event a turn, mostly) takes room for a few events, not 64 KiB: at
      // 2,000 watches one update took 2,000 × 64 KiB, past the 4 MiB arena after 64 of them, and every
      // other event allocated 64 KiB (test:scale --profile, uws-local: allocation 8 % and GC 9 % of
      // mvproxy's CPU). The queue grows if a burst (a watch-list's initial events) needs more.
      const rest = total >= 0 ? total - (this.bodyBytes - chunk.length) : this.streaming ? STREAM_QUEUE_BYTES : COALESCE_INITIAL_BYTES;
      this.queued = takeQueue(Math.max(chunk.length, Math.min(rest, COALESCE_MAX_BYTES)));
      this.queuedOwned = this.queued.buffer !== ARENA.buffer;
      this.queuedBytes = 0;
      toFlush.push(this);
      if (!flushArmed) {
        flushArmed = true;
        setImmediate(flushQueued);
      }
    } else if (this.queuedBytes + chunk.length > this.queued.length) {
      // More than was room for within one turn (an unknown length, or reads that came on after a pause).
      const grown = Buffer.allocUnsafe(Math.max(this.queued.length * 2, this.queuedBytes + chunk.length));
      this.queued.copy(grown, 0, 0, this.queuedBytes);
      this.queued = grown;
      this.queuedOwned = true;
    }
    chunk.copy(this.queued, this.queuedBytes);
    this.queuedBytes += chunk.length;
    // The whole body is here: no reason to wait for the turn to end.
    if (total >= 0 && this.bodyBytes >= total) return this.flush();
    if (this.pending === null && this.queuedBytes < COALESCE_MAX_BYTES) return true;
    this.owesDrain = true;
    return false;
  }

  /** Writes what write() queued, in one piece. false = not all of it went out (onDrain follows). */
  flush(): boolean {
    const q = this.queued;
    if (q === null) return true;
    this.queued = null;
    if (this.aborted || this.done) return true;
    const chunk = q.subarray(0, this.queuedBytes);
    this.queuedBytes = 0;
    const ok = this.writeNow(chunk, this.queuedOwned);
    if (ok && this.owesDrain) {
      this.owesDrain = false;
      this.onDrain?.();
    }
    return ok;
  }

  /** `owned`: the chunk is this response's own buffer (the coalesced queue), kept as is if it must wait. */
  private writeNow(chunk: Buffer, owned = false): boolean {
    if (this.pending !== null) {
      // Still waiting for the client (onWritable): a known-length body went out by tryEnd and
      // cannot take more until the rest of the previous piece is out; this one waits behind it.
      this.pending = Buffer.concat([this.pending, chunk]);
      return false;
    }
    let ok = true;
    if (!TRYEND_STREAMS_RELIABLY && !this.headWritten && chunk.length < this.length) this.length = -1;
    const total = this.length;
    this.res.cork(() => {
      if (total >= 0 && (this.headWritten ? this.res.getWriteOffset() : 0) + chunk.length >= total && this.closing()) {
        if (!this.headWritten) {
          this.endClosing(chunk);
          return;
        }
        // Part of the body already went out by tryEnd: finish it the same way (its backpressure
        // bookkeeping below); the resumed socket reads and drops the rest of the upload until the
        // client closes or idles out.
        this.requestBodyPaused?.();
      }
      // The head goes out before the body's end: if this response must close its connection, only
      // its head can say so (end(…, true) after it corrupts a body: endClosing). The client closes it
      // then: a draining daemon's kept-alive connections served one request each and were used on
      // for as long as requests came (the drain ran to its timeout: test/integration/shutdown.test.ts).
      this.writeHeadNow(this.closing());
      if (total >= 0) {
        const before = this.res.getWriteOffset();
        // Indexed, not destructured: array destructuring runs the iterator protocol (an allocation per response).
        const tried = this.res.tryEnd(chunk, total);
        const sent = tried[0];
        const finished = tried[1];
        if (finished) this.done = true;
        else if (!sent) {
          // Not all of it went out: keep the rest for onWritable, which reports the new offset.
          this.pending = owned ? chunk : Buffer.from(chunk); // the rest waits for onWritable: kept past this call
          this.pendingOffset = before;
          ok = false;
        }
      } else {
        ok = this.res.write(chunk);
      }
    });
    return ok;
  }

  private writable(offset: number): boolean {
    if (this.aborted) return true;
    if (this.pending) {
      const rest = this.pending.subarray(offset - this.pendingOffset);
      const tried = this.res.tryEnd(rest, this.length);
      const sent = tried[0];
      const finished = tried[1];
      if (finished) this.done = true;
      if (!sent && !finished) return false;
      this.pending = null;
    }
    this.owesDrain = false;
    this.onDrain?.();
    return true;
  }

  end(): void {
    if (this.queued !== null) this.flush();
    if (this.aborted || this.done) return;
    if (this.closing()) {
      this.res.cork(() => this.endClosing(undefined));
      return;
    }
    this.done = true;
    const length = this.length;
    this.res.cork(() => {
      if (!this.headWritten) {
        this.writeHeadNow();
        // HEAD (or a 304 giving its 200's length): the length of the body not sent.
        if (length > 0 && this.status !== 204) this.res.endWithoutBody(length);
        // No Content-Length on a 204, nor a made-up 0 on a 304 (RFC 9110 §8.6, §15.4.5): as the
        // apiserver sends them. endWithoutBody(0) wrote "Content-Length: 0" (and an explicit
        // undefined writes 9223372036854775808: measured), so no argument at all.
        else if (this.status === 204 || this.status === 304) this.res.endWithoutBody();
        else if (length === 0) this.res.endWithoutBody(0);
        else this.res.end();
      } else {
        this.res.end();
      }
    });
  }

  /**
   * Ends the response and closes the connection after it. When the request body is still arriving
   * (an early 401/413 from the apiserver, an upstream that died mid-upload, a framing error) its
   * rest cannot be skipped safely, as Go's net/http decides too; the socket is resumed first: a
   * paused uWS socket never reads again, not even the client's FIN, and used to stay ESTABLISHED
   * for ever with the unread upload queued (one fd per abandoned upload). While draining, every
   * response closes (ListenerState).
   */
  private endClosing(last: Buffer | undefined): void {
    this.requestBodyPaused?.();
    this.done = true;
    if (this.headWritten) {
      // Too late to close: this build's end(…, true) then writes "Connection: close" into the body
      // (measured: a chunked watch ended that way is corrupt, "Expected LF after chunk data"). The
      // resumed socket reads and drops any rest of the upload; the client's FIN still closes it.
      this.res.end(last);
      return;
    }
    this.writeHeadNow();
    const n = this.length;
    // HEAD, 204, 304: no body (a HEAD answer keeps the length of the body not sent). Closing, a 204 or
    // 304 says Content-Length: 0: endWithoutBody() without a length cannot close the connection.
    if (!last && (n > 0 || n === 0 || this.status === 204 || this.status === 304)) {
      this.res.endWithoutBody(Math.max(0, n), true);
      return;
    }
    this.res.end(last, true);
  }

  /** True while the request body has not been read to its end (set by the exchange). */
  requestBodyPending = false;
  /** Resumes the request socket if the body stream paused it (set by the exchange). */
  requestBodyPaused: (() => void) | null = null;

  destroy(): void {
    this.queued = null;
    if (this.aborted) return;
    this.aborted = true;
    this.res.close();
  }
}

/**
 * A response may queue this many body bytes within one turn before write() asks its upstream to
 * pause until the queue is written: 16 TLS records, four 64 KiB socket reads. The queue never
 * outlives the turn, and a slow client's backpressure still reaches the upstream (onWritable).
 */
const COALESCE_MAX_BYTES = 256 * 1024;
/** The coalescing buffer of a body of unknown length starts at this size (it grows if a turn brings more). */
const COALESCE_INITIAL_BYTES = 64 * 1024;
/** A stream's first queue of a turn: a few watch events (~1 KiB each here); grown when more come. */
const STREAM_QUEUE_BYTES = 4 * 1024;
/** Only chunks up to one TLS record (16 KiB, what node:tls hands over per callback) are queued. */
const COALESCE_CHUNK_MAX_BYTES = 16 * 1024;

/** Responses with queued body chunks, written once per turn by one setImmediate for them all. */
let toFlush: UwsResponse[] = [];
let flushArmed = false;
function flushQueued(): void {
  const list = toFlush;
  toFlush = [];
  flushArmed = false;
  for (const r of list) r.flush();
  // Every region handed out this turn has been written (or copied by a response that must wait).
  arenaUsed = 0;
}

/**
 * The turn's coalescing memory: queues take regions of one 4 MiB buffer, reset once a turn when
 * everything queued is written (flushQueued). A buffer allocated per response instead (100 KiB per
 * peer LIST) is external memory V8 counts towards its GC heuristics: measured on mvproxy A of the
 * peer LIST, GC was 29 % of its CPU. A turn that needs more than the arena allocates as before.
 */
const ARENA = Buffer.allocUnsafeSlow(4 * 1024 * 1024);
let arenaUsed = 0;

function takeQueue(size: number): Buffer {
  if (arenaUsed + size > ARENA.length) return Buffer.allocUnsafe(size);
  const b = ARENA.subarray(arenaUsed, arenaUsed + size);
  arenaUsed += size;
  return b;
}

/** `Date` in any case, without lowercasing every header name on the hot path. */
function isDate(name: string): boolean {
  return name.length === 4 && (name.charCodeAt(0) | 0x20) === 0x64 && name.toLowerCase() === 'date';
}


function hasConnectionClose(h: readonly string[]): boolean {
  for (let i = 0; i < h.length; i += 2) if (h[i] === 'connection' && h[i + 1] === 'close') return true;
  return false;
}

class UwsExchange implements Exchange {
  readonly method: string;
  readonly target: string;
  readonly path: string;
  readonly query: string;
  readonly headers: string[] = [];
  peerProxied: string | undefined;
  contentLength = -1;
  readonly remoteAddress: string;
  body: Readable | null = null;
  readonly res: UwsResponse;
  onClientClose: (() => void) | null = null;
  clientClosed = false;
  upgrade = false;
  readonly refusal: Refusal | undefined;
  readonly identity?: Identity;
  readonly identityRefusal?: string;
  /** Peer listener (listenPeerUWS): why this connection's certificate may not use it, or null. */
  peerProblem: string | null = null;

  constructor(res: HttpResponse, req: HttpRequest, state: ListenerState, users: CertificateUsers | null, jsonStreamLead: boolean, identityCheck: IdentityCheck | undefined) {
    this.method = req.getCaseSensitiveMethod();
    // uWS decodes the target as UTF-8 and splits it at the first '?' (getQuery() is undefined
    // without one, '' for a bare '?'): put together and turned back into the client's bytes.
    const query = req.getQuery();
    const check = new HeadCheck(true);
    const target = (this.target = check.requestLine(this.method, query === undefined ? req.getUrl() : req.getUrl() + '?' + query));
    const q = target.indexOf('?');
    this.path = q === -1 ? target : target.slice(0, q);
    this.query = q === -1 ? '' : target.slice(q + 1);
    const headers = this.headers;
    let hasBody = false;
    let expect: string | undefined;
    let closeAsked = false;
    let connections = 0;
    req.forEach((k, raw) => {
      const v = check.field(k, raw);
      headers.push(k, v);
      if (k === 'x-kubernetes-peer-proxied') {
        if (this.peerProxied === undefined) this.peerProxied = v;
      } else if (k === 'content-length' || k === 'transfer-encoding') {
        if (k === 'transfer-encoding' || v !== '0') hasBody = true;
        if (k === 'content-length') this.contentLength = contentLengthValue(v);
      } else if (k === 'upgrade') this.upgrade = true;
      else if (k === 'expect') expect ??= v;
      else if (k === 'connection') {
        // This build reads the first Connection field only, and only an exact `close` in it
        // (measured): `close` anywhere else, as Go reads it, left the connection open.
        if (listHasToken(v, 'close') && (connections > 0 || v.trim().toLowerCase() !== 'close')) closeAsked = true;
        connections++;
      }
    });
    // This build serves HTTP/1.1 only (505 to anything else): a Host field is required.
    this.refusal = check.verdict(true) ?? identityCheck?.(headers) ?? (expect === undefined ? undefined : expectationRefusal(expect));
    this.remoteAddress = uwsRemoteAddress(res);
    // uSockets with ca_file_name verifies a certificate the client sends (SSL_VERIFY_PEER: one that
    // does not verify fails the handshake) and lets clients without one through (bearer tokens).
    if (users !== null) {
      const pem = resCertificate(res);
      const u = pem ? users.ofPEM(pem) : null;
      if (isRefusal(u)) this.identityRefusal = certificateRefusal(u, headers);
      else if (u !== null) this.identity = u;
    }
    // A HEAD answer has no body, so no lead byte either (it went out as a chunk after a HEAD's head: helper 7).
    this.res = new UwsResponse(res, state, jsonStreamLead && this.method !== 'HEAD');
    if (closeAsked) this.res.closeAfter = true;
    res.onAborted(() => {
      this.res.aborted = true;
      this.clientClosed = true;
      // With an error only for a reader that listens: an 'error' nobody listens to is thrown, and
      // a body not read yet (its answer deferred to the next turn, routeAll) would end the process.
      const body = this.body;
      if (body && !body.readableEnded) body.destroy(body.listenerCount('error') > 0 ? new Error('client aborted the request') : undefined);
      const cb = this.onClientClose;
      this.onClientClose = null;
      if (cb) cb();
    });
    if (this.refusal !== undefined) {
      // No body stream: the bytes after the head cannot be framed, and the answer closes the connection.
      this.res.requestBodyPending = true;
      this.res.closeAfter = true;
    } else if (hasBody) {
      this.res.requestBodyPending = true;
      this.body = bodyStream(res, this.res);
    }
  }
}

/**
 * Whether HttpResponse.pause() stops the request body on this uWS build. Measured on the build for
 * Node 24 (ABI 137): it does not (67 MiB of a 100 MiB upload arrived through onData while paused),
 * and a connection paused once is reset ~10 s later even while its body keeps flowing (the
 * idle timer resume() arms is never re-armed by data: ECONNRESET 11.8 s in, every run; never
 * without pause). So that build is never paused: an upload is read as fast as the client sends it
 * and waits in memory for a slower upstream (README "Limitations"; kube-apiserver itself refuses
 * bodies over 3 MiB). The Node 20 build (ABI 115) throttled correctly.
 */
const NODE24_BUILD = uwsReadsClientCertificates();
const PAUSE_THROTTLES_BODY = !NODE24_BUILD;

/**
 * Whether a known-length body may be streamed with tryEnd(chunk, total) over many chunks. Measured
 * on the Node 24 build: a 100 MiB Content-Length download to a client that stalls first stalled
 * for good about once in 30 (the same stream sent chunked: 60 of 60 whole). So on that build a
 * body that does not arrive in one piece goes out chunked (its Content-Length dropped; HTTP/1.1
 * clients read either framing); one that does is still sent whole with its length.
 */
const TRYEND_STREAMS_RELIABLY = !NODE24_BUILD;

/** The request body as a Readable, with backpressure where this uWS build can pause reading. */
function bodyStream(res: HttpResponse, out: UwsResponse): Readable {
  let paused = false;
  const r = new Readable({
    highWaterMark: 64 * 1024,
    read() {
      if (paused && out.usable) {
        paused = false;
        res.resume();
      }
    },
  });
  // Called by the response just before it ends with the body unread (still usable then).
  out.requestBodyPaused = () => {
    if (paused && out.usable) {
      paused = false;
      res.resume();
    }
  };
  res.onData((ab, isLast) => {
    // The response may have ended before the upload did (an early 401): uWS then throws on any use
    // of `res`, and a throw here kills the process. Drop the rest of the body.
    if (!out.usable) {
      if (!r.destroyed) r.destroy();
      return;
    }
    if (ab.byteLength > 0) {
      const copy = Buffer.allocUnsafe(ab.byteLength);
      copy.set(new Uint8Array(ab));
      if (!r.push(copy) && PAUSE_THROTTLES_BODY && !isLast && !paused && out.usable) {
        paused = true;
        res.pause();
      }
    }
    if (isLast) {
      out.requestBodyPending = false;
      r.push(null);
    }
  });
  return r;
}

export interface UwsListenerOptions {
  host: string;
  port: number;
  /** caFile: ask clients for a certificate (optional: bearer tokens still work) and forward a verified one's user. */
  /** ciphers: the OpenSSL list of --tls-cipher-suites (config/tls-policy.ts). */
  tls?: { certFile: string; keyFile: string; caFile?: string; ciphers?: string };
  /** How a verified certificate's user is read (api/identity.ts); default: from tls.caFile, without a UID header. */
  certificateUsers?: CertificateUsers;
  onRequest(ex: Exchange): void;
  /** Called for upgrade requests this front end does not carry (anything but WebSocket: SPDY, …). */
  onUpgradeRefused(ex: Exchange): void;
  /** Where WebSocket upgrades go (bridged, upstream/websocket.ts webSocketDialer); absent = refused like SPDY. */
  webSocket?: WebSocketDialer;
  /** The daemon's lifecycle (lifecycle/state.ts): responses close their connections once it drains. */
  lifecycle?: { readonly draining: boolean };
  /** Told of each connection closed unanswered because its client certificate is too large for this build (UWS_MAX_CLIENT_CERTIFICATE_BYTES). */
  onOversizedCertificate?: (derBytes: number, remoteAddress: string) => void;
}

/**
 * uSockets sets SO_REUSEADDR only when an explicit port is given (bsd_create_listen_socket); with
 * port 0 the accepted sockets lack it, and connections this server closed block a restart on the
 * same port for the 60 s of TIME_WAIT (measured). So an ephemeral port is picked by node first.
 */
async function explicitPort(host: string, port: number): Promise<number> {
  if (port !== 0) return port;
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => srv.once('error', reject).listen(0, host, resolve));
  const p = (srv.address() as net.AddressInfo).port;
  await new Promise((resolve) => srv.close(resolve));
  return p;
}

interface Callbacks {
  onRequest(ex: UwsExchange): void;
  onUpgradeRefused(ex: UwsExchange): void;
}
interface CallbackHolder extends WebSocketRouteHolder {
  cb: Callbacks | null;
  /** The listener verifies client certificates (ca_file_name): each request's user, else null. */
  readonly certificateUsers: CertificateUsers | null;
  /** Peer listener: why the request's connection may not use it (null: it may). */
  readonly peerProblem?: (res: HttpResponse) => string | null;
  /** A connection closed unanswered because its client certificate is too large for this build (oversizedCertificate). */
  readonly onOversizedCertificate?: (derBytes: number, remoteAddress: string) => void;
  /** Peer listener: refuses identity headers this build's parser may have changed (head-check.ts identityLengthsProblem). */
  readonly identityCheck?: IdentityCheck;
}

/** A check of a request's identity headers as they arrived (the peer listener's). */
type IdentityCheck = (headers: readonly string[]) => Refusal | undefined;

/**
 * The largest client certificate (DER bytes of the leaf) this uWS build can answer over TLS 1.3.
 * Measured (EC P-256 client key, node:https client): a leaf of 32,038 bytes is answered; from
 * 32,086 bytes the handshake completes and the handler runs, but nothing written to the connection
 * ever reaches the client (uSockets; TLS 1.2 is not affected) and it closes at the 12 s idle
 * timeout. The client's last flight (certificate, CertificateVerify, Finished) then passes ~32 KiB;
 * an RSA-4096 CertificateVerify is ~450 bytes larger than an EC one, hence the margin. Such a
 * connection is closed at once instead of hanging (a Status cannot be written on it), and the
 * daemon logs why; the node front end serves these certificates (README "Security").
 */
export const UWS_MAX_CLIENT_CERTIFICATE_BYTES = 31_500;

/** DER bytes of a PEM certificate when it may be over UWS_MAX_CLIENT_CERTIFICATE_BYTES, else 0 (no decode for the usual few-KiB PEM). */
function oversizedCertificate(pem: string | undefined): number {
  // base64 makes 48 bytes 65 characters (64 plus a newline): a PEM under this length cannot exceed the bound.
  if (pem === undefined || pem.length < (UWS_MAX_CLIENT_CERTIFICATE_BYTES * 65) / 48) return 0;
  const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64').length;
  return der > UWS_MAX_CLIENT_CERTIFICATE_BYTES ? der : 0;
}

/** The PEM of the connection's verified client certificate (uSockets verified it in the handshake); empty or undefined without one. */
function resCertificate(res: HttpResponse): string | undefined {
  return (res as HttpResponse & { getX509Certificate?(): string | undefined }).getX509Certificate?.();
}

/**
 * The native app keeps its route handlers for the life of the process, even after app.close():
 * every stopped daemon stayed reachable through them (measured in one process: ~0.5 MiB of heap
 * per restart, the whole daemon retained). So the handler is created here, where its closure
 * captures nothing but the holder (a closure inside listenUWS would share that function's context,
 * options included), and reaches the callbacks through it; close() empties it.
 */
function routeAll(app: TemplatedApp, holder: CallbackHolder): void {
  app.any('/*', (res, req) => {
    const cb = holder.cb;
    if (cb === null) {
      res.close();
      return;
    }
    if (holder.certificateUsers !== null) {
      const der = oversizedCertificate(resCertificate(res));
      if (der > 0) {
        holder.onOversizedCertificate?.(der, uwsRemoteAddress(res));
        res.close();
        return;
      }
    }
    // The peer listener's verdict on the connection's certificate first: a request it refuses (401)
    // is forwarded nowhere, so its identity headers need no check.
    const peerProblem = holder.peerProblem ? holder.peerProblem(res) : null;
    const ex = new UwsExchange(res, req, holder.state, holder.certificateUsers, holder.peerProblem === undefined, peerProblem === null ? holder.identityCheck : undefined);
    ex.peerProblem = peerProblem;
    // A refused request and a refused upgrade are answered on the next turn, not now: this uWS
    // build goes on parsing the bytes after the head (with two Content-Length fields, or behind an
    // upgrade, as the next request: a smuggled one) even after an end(…, closeConnection); a
    // request pipelined behind a refused upgrade reached the peer listener's handler (measured,
    // test/security/peer-listener.test.ts). With the answer pending, uWS aborts the connection
    // instead when more bytes follow, so nothing hidden is ever handed to us (issue 19); otherwise
    // the Status goes out and the connection closes. The peer listener's refusal of a connection
    // without a certificate goes the same way.
    if (ex.refusal !== undefined || ex.peerProblem === NO_PEER_CERTIFICATE) {
      setImmediate(() => {
        if (!ex.clientClosed) cb.onRequest(ex);
      });
    } else if (ex.upgrade) {
      // Not a WebSocket upgrade (those take the ws route, where there is one).
      ex.res.closeAfter = true;
      setImmediate(() => {
        if (!ex.clientClosed) cb.onUpgradeRefused(ex);
      });
    } else if (!SAFE_METHODS.has(ex.method) && ex.peerProblem === null) {
      // Pipelining (README "Security"): this build closes a connection on which a request arrives
      // while an answer is pending, in native code, before JavaScript sees it: the requests before
      // lose their answers. A request that changes something is sent only on the next turn, after
      // the bytes that came with it were parsed: if another request was pipelined behind it in the
      // same read, uWS has closed the connection by then and it is never sent, so it cannot run
      // without its client hearing of it (a client then retries a create it never learnt ran).
      // (A peer listener's request refused for its certificate is answered at once: nothing is sent.)
      setImmediate(() => {
        if (!ex.clientClosed) cb.onRequest(ex);
      });
    } else cb.onRequest(ex);
  });
}

/** A serving pair and CA as the certificate reloader checked them (lifecycle/certs.ts). */
export interface UwsTLSMaterial {
  cert: Buffer;
  key: Buffer;
  /** The CA client certificates must chain to; absent = none asked for. */
  ca?: Buffer;
}

/** A uWS listener whose serving pair and client CA can be replaced while it serves. */
export interface UwsRunningListener extends RunningListener {
  /**
   * New connections get this material; open ones keep theirs, as node's setSecureContext does.
   * uSockets cannot swap an app's context (and this build's SNI contexts hung every handshake,
   * measured), so a new app listens on the same port beside the old one (uSockets sets
   * SO_REUSEPORT: no moment without a listener), then the old one stops accepting. Each app keeps
   * its native routes (~0.5 MiB, routeAll), once per certificate rotation.
   */
  reload(material: UwsTLSMaterial): Promise<void>;
}

/** The files uSockets reads a serving pair (and the CA client certificates must chain to) from. */
export interface UwsTLSFiles {
  certFile: string;
  keyFile: string;
  caFile?: string;
}

/**
 * One port served by a sequence of apps, each made by `build` (its routes on the shared holder):
 * the first with the configured files, each reload with the reloader's material.
 */
async function listenApps(uws: UWS, host: string, port: number, holder: CallbackHolder, first: UwsTLSFiles | undefined, build: (files: UwsTLSFiles | undefined) => TemplatedApp): Promise<UwsRunningListener> {
  const apps: TemplatedApp[] = [];
  const listen = (files: UwsTLSFiles | undefined): Promise<us_listen_socket> => {
    const app = build(files);
    apps.push(app);
    return new Promise((resolve, reject) => {
      app.listen(host, port, (sock: us_listen_socket | false) => {
        if (sock) resolve(sock);
        else reject(codedError(ErrorCode.MVP_ERR_LISTEN, `uWebSockets.js could not listen on ${host}:${port}`));
      });
    });
  };
  let sock: us_listen_socket | null = await listen(first);
  const stopAccepting = () => {
    holder.state.stopAccepting();
    if (sock !== null) uws.us_listen_socket_close(sock);
    sock = null;
  };
  return {
    port: uws.us_socket_local_port(sock),
    stopAccepting,
    async reload(m) {
      if (sock === null || first === undefined) return;
      // uSockets reads files: the material the reloader checked goes to a private directory for
      // the moment the new app reads it (a file changed again meanwhile cannot slip in unchecked).
      const dir = mkdtempSync(join(tmpdir(), 'mvproxy-tls-'));
      let next: us_listen_socket;
      try {
        const files: UwsTLSFiles = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), ...(m.ca ? { caFile: join(dir, 'ca.crt') } : {}) };
        writeFileSync(files.certFile, m.cert, { mode: 0o600 });
        writeFileSync(files.keyFile, m.key, { mode: 0o600 });
        if (m.ca) writeFileSync(files.caFile!, m.ca, { mode: 0o600 });
        next = await listen(files);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      if (sock === null) {
        uws.us_listen_socket_close(next); // stopped meanwhile
        return;
      }
      uws.us_listen_socket_close(sock);
      sock = next;
    },
    close: () => {
      stopAccepting();
      for (const app of apps) app.close();
      holder.cb = null;
      holder.webSocket = null;
    },
  };
}

function sslApp(uws: UWS, files: UwsTLSFiles, ciphers: string | undefined): TemplatedApp {
  return uws.SSLApp({ cert_file_name: files.certFile, key_file_name: files.keyFile, ...(files.caFile ? { ca_file_name: files.caFile } : {}), ...(ciphers ? { ssl_ciphers: ciphers } : {}) });
}

export async function listenUWS(uws: UWS, o: UwsListenerOptions): Promise<UwsRunningListener> {
  const port = await explicitPort(o.host, o.port);
  const users = o.tls?.caFile ? (o.certificateUsers ?? new CertificateUsers({ uidHeader: false }, readFileSync(o.tls.caFile))) : null;
  const holder: CallbackHolder = {
    cb: { onRequest: o.onRequest, onUpgradeRefused: o.onUpgradeRefused },
    state: new ListenerState(o.lifecycle),
    certificateUsers: users,
    webSocket: o.webSocket ?? null,
    userOf: users === null ? () => null : (res) => {
      const pem = resCertificate(res);
      return pem ? users.ofPEM(pem) : null;
    },
    onOversizedCertificate: o.onOversizedCertificate,
  };
  return listenApps(uws, o.host, port, holder, o.tls, (files) => {
    const app = files ? sslApp(uws, files, o.tls?.ciphers) : uws.App();
    routeWebSockets(app, holder);
    routeAll(app, holder);
    return app;
  });
}

export interface UwsPeerListenerOptions {
  host: string;
  port: number;
  /** Serving pair (peers check it as kubernetes.default.svc) and --requestheader-client-ca-file, as files: uSockets reads them. */
  files: Required<UwsTLSFiles>;
  ciphers?: string;
  /** --requestheader-allowed-names; empty = any CN signed by the CA. */
  allowedNames: readonly string[];
  /** files.caFile as Go reads it: a peer's certificate must be one of its CAs signed directly (listener/peer-auth.ts). */
  ca: ClientCA;
  /** Front-proxy identity header names (--requestheader-*-headers), lowercase: their values are checked as they arrived. */
  isIdentityHeader(lowerName: string): boolean;
  onRequest(ex: Exchange): void;
  /** A request whose connection presented no certificate, or one whose CN is not allowed: answered 401. */
  onRejected(ex: Exchange, why: string): void;
  /** Every upgrade (WebSocket too: no WebSocket route here); the connection closes after the answer. */
  onUpgradeRefused(ex: Exchange): void;
  lifecycle?: { readonly draining: boolean };
}

const NO_PEER_CERTIFICATE = peerCertificateProblem(false, 'no client certificate', undefined, new Set())!;

/** The peer listener on uWS (daemon/listen.ts picks it with choosePeerFrontend); listen-node.ts listenPeer is its node twin. */
export async function listenPeerUWS(uws: UWS, o: UwsPeerListenerOptions): Promise<UwsRunningListener> {
  const port = await explicitPort(o.host, o.port);
  const allowed = new Set(o.allowedNames);
  // By certificate PEM (uWS gives it per request), judged per request (peer-auth.ts PeerVerdicts).
  const verdicts = new PeerVerdicts(allowed, o.ca);
  const peerProblem = (res: HttpResponse): string | null => {
    // uSockets with ca_file_name fails the handshake of a certificate that does not verify, and
    // lets a connection without one through: refused here, per request, as node's listener does.
    const pem = (res as HttpResponse & { getX509Certificate?(): string | undefined }).getX509Certificate?.();
    if (!pem) return NO_PEER_CERTIFICATE;
    return verdicts.of(pem, () => new X509Certificate(pem).raw);
  };
  // Without a certificate the connection is refused as a whole (node's listener fails its
  // handshake): one 401, then it closes. A certificate with a CN not allowed gets a 401 per request.
  const reject = (ex: UwsExchange, why: string) => {
    if (why === NO_PEER_CERTIFICATE) ex.res.closeAfter = true;
    o.onRejected(ex, why);
  };
  const holder: CallbackHolder = {
    cb: {
      onRequest: (ex) => (ex.peerProblem === null ? o.onRequest(ex) : reject(ex, ex.peerProblem)),
      onUpgradeRefused: (ex) => (ex.peerProblem === NO_PEER_CERTIFICATE ? reject(ex, ex.peerProblem) : o.onUpgradeRefused(ex)),
    },
    state: new ListenerState(o.lifecycle),
    certificateUsers: null, // a peer's certificate is the proxy's, never the user's: identity comes from its X-Remote-* headers
    webSocket: null,
    userOf: () => null,
    peerProblem,
    identityCheck: (headers) => identityLengthsProblem(headers, o.isIdentityHeader),
  };
  return listenApps(uws, o.host, port, holder, o.files, (files) => {
    const app = sslApp(uws, files!, o.ciphers);
    routeAll(app, holder); // no WebSocket route: every upgrade is refused (routeAll)
    return app;
  });
}

/** Methods that change nothing (RFC 9110 §9.2.1): sent at once; the others on the next turn (routeAll). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The one byte a JSON watch's body starts with on uWS, so that its head goes out at once (see the top of this file). */
const JSON_STREAM_LEAD = Buffer.from(' ');

/** An identity-encoded `application/json` answer (a JSON watch stream), by its head. */
function isIdentityJSON(head: ResponseHead): boolean {
  const type = head.contentType;
  const semi = type.indexOf(';');
  if ((semi < 0 ? type : type.slice(0, semi)).trim().toLowerCase() !== 'application/json') return false;
  const h = head.headers;
  for (let i = 0; i < h.length; i += 2) if (h[i]!.toLowerCase() === 'content-encoding' && h[i + 1]!.trim().toLowerCase() !== 'identity') return false;
  return true;
}
