// Request body framing both front ends must agree on with the apiserver behind them (RFC 9112 §6,
// request smuggling). llhttp (node front end) already refuses most ambiguous shapes; the uWS build
// mvproxy runs does not (docs/dependencies.md §3): it takes the first of two Content-Length fields
// and reads any Transfer-Encoding as chunked. The headers are forwarded re-framed by undici, so a body read
// one way here and another way upstream is the risk; these rules refuse it before anything is sent,
// as Go's net/http does in front of kube-apiserver (net/http transfer.go fixLength/parseTransferEncoding).

import { ErrorCode, type AnsweredCode } from '../api/errors';

/** Counts the framing fields of one request while a front end walks its headers. */
export class FramingCheck {
  private contentLengths = 0;
  private transferEncodings = 0;
  private teValue = '';

  /** `name` lowercased. */
  see(name: string, value: string): void {
    if (name === 'content-length') {
      this.contentLengths++;
      // Not 1*DIGIT: no two readers agree on what it frames (Go refuses it: "bad Content-Length").
      if (contentLengthValue(value) < 0) this.contentLengths = 2;
    }
    else if (name === 'transfer-encoding') {
      this.transferEncodings++;
      this.teValue = value;
    }
  }

  /**
   * The error to answer with, or undefined when the body's framing is unambiguous:
   * - more than one Content-Length (even equal ones: the uWS build reads only the first, undici
   *   refuses to forward the pair) → 400;
   * - Content-Length together with Transfer-Encoding → 400 (RFC 9112 §6.3 allows ignoring CL, but
   *   a proxy that forwards both invites a differential; Go refuses it too);
   * - a Transfer-Encoding that is not exactly one `chunked` (`gzip, chunked`, `xchunked`, two
   *   fields) → 501, like Go ("Unsupported transfer encoding"): its codings are hop-by-hop and would
   *   be dropped while the still-coded body went upstream as if it were plain.
   */
  verdict(): AnsweredCode | undefined {
    if (this.contentLengths > 1) return ErrorCode.MVP_ERR_BAD_FRAMING;
    if (this.transferEncodings === 0) return undefined;
    if (this.contentLengths > 0) return ErrorCode.MVP_ERR_BAD_FRAMING;
    if (this.transferEncodings > 1 || !isChunked(this.teValue)) return ErrorCode.MVP_ERR_UNSUPPORTED_TRANSFER_ENCODING;
    return undefined;
  }
}

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
export function expectationRefusal(value: string): AnsweredCode | undefined {
  return value.trim().toLowerCase() === '100-continue' ? undefined : ErrorCode.MVP_ERR_EXPECTATION_FAILED;
}

/** A request's Content-Length as a number, or -1 when it is not 1*DIGIT (two of them are refused by FramingCheck). */
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
