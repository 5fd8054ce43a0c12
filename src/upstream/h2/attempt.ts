// One long-running request (a watch, logs -f) as a stream of a shared HTTP/2 connection (origin.ts,
// connection.ts: mvproxy's own HTTP/2 client, the stream's frames pumped with no node:http2).
// It reports to the request that owns it exactly as the HTTP/1.1 attempt does (h1/attempt.ts
// AttemptReport): head, body, end, failure. When the upstream speaks no h2, it hands the request to
// an HTTP/1.1 attempt instead, once, at the start.
//
// The head a client gets is what HTTP/1.1 relaying would have given it: HTTP/2 names are lowercase
// on the wire, and each is written back in Go's canonical form (textproto.CanonicalMIMEHeaderKey),
// which is how kube-apiserver's HTTP/1.1 answers spell every header it sets; Go writes both
// versions' headers in sorted key order (h2_bundle.go encodeHeaders, Header.WriteSubset), so the
// order is the same too, but for Date, which the HTTP/1.1 server writes last (uWS replaces Date with
// its own either way). test/integration/watch-h2.test.ts checks the spelling a client gets.

import { performance } from 'node:perf_hooks';
import { codedError, ErrorCode } from '../../api/errors';
import { NotSentHeader, headerListSize } from '../../api/headers';
import type { Attempt, AttemptHead, AttemptReport } from '../h1/attempt';
import { H2_REFUSED_STREAM, type H2Stream, type H2StreamSink } from './connection';
import { encodeFields } from './hpack';
import type { H2Origin, H2Session } from './origin';

/** Response header fields never relayed: HTTP/2 forbids the connection-specific ones anyway; framing is the front end's. */
const DROP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'content-length']);

/** A head read from HTTP/2 fields, names in Go's canonical form. */
class H2Head implements AttemptHead {
  constructor(
    readonly status: number,
    readonly headers: string[],
    readonly contentLength: number,
    readonly contentType: string,
  ) {}

  get(lowerName: string): string {
    const h = this.headers;
    for (let i = 0; i < h.length; i += 2) if (h[i]!.toLowerCase() === lowerName) return h[i + 1]!;
    return '';
  }
}

/** Go's textproto.CanonicalMIMEHeaderKey: the first letter and each letter after '-' upper case, the rest lower; a name with a byte outside a token unchanged. */
export function canonicalHeaderKey(name: string): string {
  let out = '';
  let upper = true;
  for (let i = 0; i < name.length; i++) {
    let c = name.charCodeAt(i);
    if (!(c === 0x2d || (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || "!#$%&'*+.^_`|~".includes(name[i]!))) return name;
    if (upper && c >= 0x61 && c <= 0x7a) c -= 0x20;
    else if (!upper && c >= 0x41 && c <= 0x5a) c += 0x20;
    out += String.fromCharCode(c);
    upper = c === 0x2d;
  }
  return out;
}

export function h2ResponseHead(raw: readonly string[], fromAPIServer: boolean): AttemptHead {
  let status = 0;
  let contentLength = -1;
  let contentType = '';
  const headers: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    if (name === ':status') {
      status = Number(value);
      continue;
    }
    if (name.charCodeAt(0) === 0x3a /* : */) continue;
    if (name === 'content-length') contentLength = /^\d{1,15}$/.test(value) ? Number(value) : -1;
    if (DROP.has(name)) continue;
    if (fromAPIServer && name === NotSentHeader) continue;
    if (name === 'content-type') contentType = value;
    headers.push(canonicalHeaderKey(name), value);
  }
  return new H2Head(status, headers, contentLength, contentType);
}

export class H2Attempt implements Attempt, H2StreamSink {
  private stream: H2Stream | null = null;
  private session: H2Session | null = null;
  private fallback: Attempt | null = null;
  private done = false;
  private gotHead = false;
  readonly bodyTouched = false;
  sentAt = 0;
  headAt = 0;
  /**
   * The request's HEADERS block (hpack.ts encodeFields): refused fields throw here, in the constructor,
   * before anything is sent. Dropped once sent, as is the HTTP/1.1 fallback once a session is had: a
   * watch lives for minutes, and these held ~0.5 KiB of it (bench/watch-heap.ts --owners).
   */
  private block: Buffer | null;
  /** The same request on HTTP/1.1, for an upstream that speaks no h2. */
  private h1: (() => Attempt) | null;
  /** The request's header list size (RFC 9113 §6.5.2), checked against the server's SETTINGS_MAX_HEADER_LIST_SIZE. */
  private readonly listBytes: number;
  private readonly isHead: boolean;

  constructor(
    private readonly report: AttemptReport,
    private readonly origin: H2Origin,
    /** requestHeaders2's flat list, :method first. */
    headers: readonly string[],
    private readonly fromAPIServer: boolean,
    h1: () => Attempt,
  ) {
    this.h1 = h1;
    this.block = encodeFields(headers);
    this.listBytes = headerListSize(headers);
    this.isHead = headers[0] === ':method' && headers[1] === 'HEAD';
  }

  start(): void {
    this.origin.acquire((s, err) => {
      const h1 = this.h1!;
      this.h1 = null;
      if (this.done) return;
      if (err !== null) {
        this.done = true;
        return this.report.upstreamFailed(err, true, false);
      }
      if (s === null) {
        this.fallback = h1();
        return this.fallback.start();
      }
      this.open(s);
    });
  }

  private open(s: H2Session): void {
    // As Go's Transport (errRequestHeaderListSize): a request the server said it would not take is
    // refused here, alone. Sent, a server may end the whole connection for it, with every other
    // client's watch on it (Go's kube-apiserver did: PROTOCOL_ERROR, helper 10).
    if (this.listBytes > s.conn.peerMaxHeaderList) {
      this.done = true;
      const why = `the request's header list (${this.listBytes} bytes) is larger than the upstream takes (${s.conn.peerMaxHeaderList}, its SETTINGS_MAX_HEADER_LIST_SIZE)`;
      return this.report.upstreamFailed(codedError(ErrorCode.MVP_ERR_HEADER_LIST_TOO_LARGE, why), false, false);
    }
    try {
      const block = this.block!;
      this.block = null;
      this.stream = s.conn.request(block, this, this.isHead);
    } catch (e) {
      // The connection closed under us (a GOAWAY between acquire and request): nothing was sent.
      s.usable = false;
      this.done = true;
      return this.report.upstreamFailed(e as Error, true, false);
    }
    this.session = s;
    s.streamOpened();
    this.sentAt = performance.now();
  }

  // ---------------------------------------------------------------- H2StreamSink

  head(fields: string[]): void {
    if (this.done) return;
    const head = h2ResponseHead(fields, this.fromAPIServer);
    if (head.status < 200) return; // informational: not relayed
    this.gotHead = true;
    this.headAt = performance.now();
    this.report.upstreamHead(head);
  }

  data(chunk: Buffer): boolean {
    if (this.done) return true;
    return this.report.upstreamBody(chunk, true);
  }

  end(): void {
    this.session?.streamClosed();
    if (this.done) return;
    this.done = true;
    this.report.upstreamEnd();
  }

  closed(code: number): void {
    this.session?.streamClosed();
    if (this.done) return;
    this.done = true;
    // REFUSED_STREAM: the server did not process it (RFC 9113 §8.7), so it may go elsewhere.
    const refused = code === H2_REFUSED_STREAM;
    const why = `the upstream HTTP/2 stream closed (code ${code})`;
    const err = refused ? codedError(ErrorCode.MVP_ERR_STREAM_REFUSED, why) : Object.assign(new Error(why), { code: 'ECONNRESET' });
    this.report.upstreamFailed(err, refused && !this.gotHead, this.gotHead);
  }

  // ----------------------------------------------------------------

  resume(): void {
    if (this.fallback !== null) return this.fallback.resume();
    this.stream?.resume();
  }

  abort(): void {
    if (this.fallback !== null) return this.fallback.abort();
    if (this.done) return;
    this.done = true;
    const st = this.stream;
    if (st !== null && !st.done) {
      st.cancel();
      this.session?.streamClosed();
    }
  }
}
