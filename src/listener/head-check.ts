// What both front ends check of a request head before anything of it is forwarded: exactly what
// Go's net/http server refuses in front of kube-apiserver (gocompat/http.ts has each rule and where
// Go runs it), so that the apiserver behind mvproxy never reads a request Go would not have read
// from the client's own bytes. A refused request is answered with the Status Go's status would be,
// and its connection closes (as Go's server closes it): nothing pipelined behind it is read.
//
// Everything a front end hands on is a byte string, one character a byte (latin1), whatever the
// front end decoded: node's parsers do so already; uWS decodes each value as UTF-8, which HeadCheck
// turns back into the client's bytes (bytesOfUTF8), and refuses a value whose bytes its decoding
// lost (invalid UTF-8 became U+FFFD). A target is visible ASCII or refused (requestLine): issue 38's
// U+010D, U+010A and U+0120 in a target went upstream as CR, LF and SP.
//
// Body framing (RFC 9112 §6, request smuggling): llhttp (node front end) already refuses most
// ambiguous shapes; the uWS build mvproxy runs does not (docs/dependencies.md §3): it takes the first
// of two Content-Length fields and reads any Transfer-Encoding as chunked. The body is forwarded
// re-framed, so a body read one way here and another way upstream is the risk; these rules refuse
// it before anything is sent, as Go's net/http does (transfer.go fixLength/parseTransferEncoding).

import { ErrorCode, type AnsweredCode } from '../api/errors';
import { IdentityLengthsHeader } from '../api/headers';
import { isToken, requestTargetProblem, validHeaderFieldValue, validHostHeader } from '../gocompat/http';

/** A refused request: its code, and Go's words for why where they say more than the code's message. */
export interface Refusal {
  readonly code: AnsweredCode;
  readonly message?: string;
}

const REPLACEMENT_CHARACTER = 0xfffd;

/**
 * A string a front end decoded as UTF-8, as its bytes (one character a byte), or null when the
 * decoding replaced bytes that were not UTF-8 (U+FFFD: the client's bytes are unknown). ASCII is
 * returned as it is, without a copy.
 */
export function bytesOfUTF8(s: string): string | null {
  let i = 0;
  while (i < s.length && s.charCodeAt(i) < 0x80) i++;
  if (i === s.length) return s;
  for (let j = i; j < s.length; j++) if (s.charCodeAt(j) === REPLACEMENT_CHARACTER) return null;
  return Buffer.from(s, 'utf8').toString('latin1');
}

/** Only the bytes 0x21-0x7E (controls, space and DEL are refused by requestTargetProblem first). */
function isVisibleASCII(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7e) return false;
  return true;
}

/** Collects what one request's head says while a front end walks it, and refuses what Go's server would. */
export class HeadCheck {
  private contentLengths = 0;
  private transferEncodings = 0;
  private teValue = '';
  private hosts = 0;
  private lineRefusal: Refusal | undefined;
  private fieldRefusal: Refusal | undefined;

  /** `utf8`: the front end hands over UTF-8-decoded strings (uWS); they are turned back into bytes. */
  constructor(private readonly utf8: boolean) {}

  /**
   * The request line: the method must be a token (request.go validMethod), the target a request-URI
   * Go parses (gocompat/http.ts requestTargetProblem), and visible ASCII. Go also takes bytes
   * 0x80-0xFF unescaped, but node's HTTP/1.1 parser (llhttp: the node front end, the node peer
   * listener) refuses them, so a peer-routed request with one was refused by the peer's listener
   * and answered 503 "no peer could be reached" (test/kube/injection.test.ts); and no Kubernetes
   * client sends them (RFC 3986 §2.1: they are percent-encoded). Refused alike on every front end,
   * every hop. Returns the target ('' when refused).
   */
  requestLine(method: string, target: string): string {
    if (!isToken(method)) this.lineRefusal ??= { code: ErrorCode.MVP_ERR_BAD_REQUEST_LINE, message: `invalid method ${JSON.stringify(method)}` };
    const problem = requestTargetProblem(target) ?? (isVisibleASCII(target) ? undefined : 'a byte outside visible ASCII in the request target (clients percent-encode it)');
    if (problem !== undefined) {
      this.lineRefusal ??= { code: ErrorCode.MVP_ERR_BAD_REQUEST_TARGET, message: problem };
      return '';
    }
    return target;
  }

  /** One field (`name` lowercased, as both front ends hand names over). Returns the value as bytes. */
  field(name: string, value: string): string {
    let v: string | null = value;
    if (this.utf8) {
      v = bytesOfUTF8(value);
      if (v === null) {
        this.fieldRefusal ??= { code: ErrorCode.MVP_ERR_BAD_HEADER_FIELD, message: `the value of ${JSON.stringify(name)} is not valid UTF-8 as this front end decoded it: its bytes cannot be forwarded as sent` };
        return '';
      }
    }
    if (!isToken(name)) this.fieldRefusal ??= { code: ErrorCode.MVP_ERR_BAD_HEADER_FIELD, message: 'invalid header name' };
    else if (!validHeaderFieldValue(v)) this.fieldRefusal ??= { code: ErrorCode.MVP_ERR_BAD_HEADER_FIELD, message: `invalid header value (${name})` };
    else if (name === 'content-length') {
      this.contentLengths++;
      // Not 1*DIGIT: no two readers agree on what it frames (Go refuses it: "bad Content-Length").
      if (contentLengthValue(v) < 0) this.contentLengths = 2;
    } else if (name === 'transfer-encoding') {
      this.transferEncodings++;
      this.teValue = v;
    } else if (name === 'host') {
      this.hosts++;
      if (!validHostHeader(v)) this.fieldRefusal ??= { code: ErrorCode.MVP_ERR_BAD_HEADER_FIELD, message: 'malformed Host header' };
    }
    return v;
  }

  /**
   * The refusal to answer with, or undefined when the head may be forwarded. In Go's order: the
   * request line, the fields, Host (HTTP/1.1 needs exactly one: `needsHost`), then the body framing:
   * - more than one Content-Length (even equal ones: the uWS build reads only the first, undici
   *   refuses to forward the pair) → 400;
   * - Content-Length together with Transfer-Encoding → 400 (RFC 9112 §6.3 allows ignoring CL, but
   *   a proxy that forwards both invites a differential; Go refuses it too);
   * - a Transfer-Encoding that is not exactly one `chunked` (`gzip, chunked`, `xchunked`, two
   *   fields) → 501, like Go ("Unsupported transfer encoding"): its codings are hop-by-hop and would
   *   be dropped while the still-coded body went upstream as if it were plain.
   */
  verdict(needsHost: boolean): Refusal | undefined {
    if (this.lineRefusal !== undefined) return this.lineRefusal;
    if (this.fieldRefusal !== undefined) return this.fieldRefusal;
    if (needsHost && this.hosts === 0) return { code: ErrorCode.MVP_ERR_BAD_HEADER_FIELD, message: 'missing required Host header' };
    if (this.hosts > 1) return { code: ErrorCode.MVP_ERR_BAD_HEADER_FIELD, message: 'too many Host headers' };
    if (this.contentLengths > 1) return FRAMING;
    if (this.transferEncodings === 0) return undefined;
    if (this.contentLengths > 0) return FRAMING;
    if (this.transferEncodings > 1 || !isChunked(this.teValue)) return UNSUPPORTED_TE;
    return undefined;
  }
}

const FRAMING: Refusal = { code: ErrorCode.MVP_ERR_BAD_FRAMING };
const UNSUPPORTED_TE: Refusal = { code: ErrorCode.MVP_ERR_UNSUPPORTED_TRANSFER_ENCODING };

/** Exactly the token `chunked`, case-insensitive, optional surrounding whitespace (Go: textproto trims). */
function isChunked(v: string): boolean {
  return v.trim().toLowerCase() === 'chunked';
}

/**
 * Expect (RFC 9110 §10.1.1), as Go's net/http server treats it in front of kube-apiserver: only
 * `100-continue` (case-insensitive) is met — the front end sends `100 Continue` when the body is
 * first read (uWS: its build sends it itself before the handler) and the header is not forwarded
 * (upstream/headers.ts). Any other expectation gets 417 and the connection closes.
 */
export function expectationRefusal(value: string): Refusal | undefined {
  return value.trim().toLowerCase() === '100-continue' ? undefined : EXPECTATION_FAILED;
}

const EXPECTATION_FAILED: Refusal = { code: ErrorCode.MVP_ERR_EXPECTATION_FAILED };

/** A request's Content-Length as a number, or -1 when it is not 1*DIGIT (two of them are refused by HeadCheck). */
export function contentLengthValue(v: string): number {
  const t = v.trim();
  if (t.length === 0 || t.length > 15) return -1;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return -1;
  }
  return Number(t);
}

/**
 * Whether a request target is in origin-form (RFC 9112 §3.2.1: an absolute path, then an optional
 * query), the only form mvproxy forwards. The upstream of every request is the configured origin —
 * the local apiserver, or the chosen peer's address from the snapshot — and never anything read from
 * the target, so the target is passed on as the bytes the client sent:
 * - a path that starts with `//` (`//host:port/api/...`) is origin-form too (an absolute-path's
 *   first segment may be empty) and Go's server reads it as a path (url.ParseRequestURI: no
 *   authority without a scheme): forwarded verbatim to the configured origin, where the apiserver
 *   reads a non-resource path and answers 404;
 * - absolute-form (`http://h/...`), authority-form (`h:443`, CONNECT) and asterisk-form (`*`) are
 *   refused with 400 (MVP_ERR_BAD_REQUEST_TARGET): they are for forward proxies, no Kubernetes client
 *   sends them, and routing would read one path where the apiserver (Go takes r.URL.Path of an
 *   absolute-form target) could read another. The uWS build answers absolute-form 505 before mvproxy
 *   sees it.
 */
export function isOriginForm(target: string): boolean {
  return target.charCodeAt(0) === 0x2f /* / */;
}

/**
 * Why a request that reached the uWS peer listener must not be forwarded with the identity it
 * carries, or undefined: its identity fields (`isIdentity`) are not the byte lengths the source
 * mvproxy wrote (IdentityLengthsHeader), or it carries identity without them. This build's parser
 * drops bytes >= 0x80 at the ends of a value, undetectably but for the length.
 */
export function identityLengthsProblem(headers: readonly string[], isIdentity: (lowerName: string) => boolean): Refusal | undefined {
  let lengths: string | undefined;
  let got = '';
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    if (name === IdentityLengthsHeader) lengths ??= headers[i + 1]!;
    else if (isIdentity(name)) got += (got === '' ? '' : ',') + headers[i + 1]!.length;
  }
  if (got === '' && lengths === undefined) return undefined;
  if (lengths === got) return undefined;
  return { code: ErrorCode.MVP_ERR_BAD_HEADER_FIELD, message: `the identity headers did not arrive as the source wrote them (byte lengths ${JSON.stringify(got)}, sent ${JSON.stringify(lengths ?? 'none')}): not forwarded` };
}
