// Request and response header rules of the proxy hop (docs/kubernetes-mvp.md §2.2, §2.3).
//
// Request: hop-by-hop headers are dropped (Go's httputil.ReverseProxy list plus any named in
// `Connection`), `Host` is set by the upstream client from the target origin, X-Forwarded-For is
// appended, front-proxy identity headers (X-Remote-*) from a client are never trusted, and
// x-kubernetes-peer-proxied is *set* (not added, unlike in-tree) on the peer hop so that a client's
// `false` cannot survive next to our `true` and cause a second hop (docs/kubernetes-mvp.md §2.2, §9).
// Authorization and Impersonate-* pass through unchanged: the apiserver authenticates and
// authorizes them. Expect is answered by the front end itself (100 Continue, or 417 for anything
// else), as Go's net/http server does before a handler reads the body, and never forwarded: the
// upstream client sends the body whole (undici refused the header: "expect header not supported",
// which turned every `Expect: 100-continue` upload, curl's past 1 MB, into a 503). The rules are
// applied, and every field written checked, by the one writer of upstream heads
// (upstream/request-head.ts).

import { IdentityLengthsHeader, NotSentHeader, owsEnd, owsStart, tokenIs } from '../api/headers';
import type { Identity } from '../api/identity';
import type { ResponseHead } from '../listener/exchange';

/** Lowercased hop-by-hop header names (Go net/http/httputil hopHeaders, RFC 7230 §6.1). */
export const HOP_BY_HOP = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Front-proxy identity header names (kube-apiserver --requestheader-*-headers). Every configured
 * name and prefix — and always the X-Remote-* defaults — is stripped from untrusted requests; the
 * first of each is the one mvproxy writes.
 */
export class IdentityHeaderRules {
  private readonly names: Set<string>;
  private readonly prefixes: string[];
  readonly userHeader: string;
  readonly groupHeader: string;
  readonly extraPrefix: string;
  /** --requestheader-uid-headers' first name; undefined: none configured, so a certificate's UID cannot be forwarded. */
  readonly uidHeader: string | undefined;

  constructor(userHeaders: readonly string[] = ['X-Remote-User'], groupHeaders: readonly string[] = ['X-Remote-Group'], extraPrefixes: readonly string[] = ['X-Remote-Extra-'], uidHeaders: readonly string[] = []) {
    this.names = new Set([...userHeaders, ...groupHeaders, ...uidHeaders, 'X-Remote-Uid'].map((n) => n.toLowerCase()));
    this.uidHeader = uidHeaders[0]?.toLowerCase();
    this.prefixes = [...new Set(['x-remote-', ...extraPrefixes.map((p) => p.toLowerCase())])];
    this.userHeader = (userHeaders[0] ?? 'X-Remote-User').toLowerCase();
    this.groupHeader = (groupHeaders[0] ?? 'X-Remote-Group').toLowerCase();
    this.extraPrefix = (extraPrefixes[0] ?? 'X-Remote-Extra-').toLowerCase();
  }

  isIdentityHeader(lowerName: string): boolean {
    if (this.names.has(lowerName)) return true;
    // Indexed: for-of's iterator was still allocated per call here (bench/allocations.ts --sites).
    const prefixes = this.prefixes;
    for (let i = 0; i < prefixes.length; i++) if (lowerName.startsWith(prefixes[i]!)) return true;
    return false;
  }
}

const DEFAULT_IDENTITY_RULES = new IdentityHeaderRules();

/**
 * The identity of mvproxy's own requests to peers (discovery fetches, health probes), as in-tree
 * peer discovery sends them (docs/kubernetes-mvp.md §4.4): user system:apiserver, group system:authenticated, so the
 * peer's apiserver authorizes them by its system:discovery binding. Without an identity the peer's
 * apiserver answered 401 (the front-proxy certificate with no user header, see carriesIdentity).
 */
export function ownPeerIdentityHeaders(rules: IdentityHeaderRules = DEFAULT_IDENTITY_RULES): Record<string, string> {
  const user = 'system:apiserver';
  const group = 'system:authenticated';
  // With the byte lengths a uWS peer listener checks them against (api/headers.ts IdentityLengthsHeader).
  return { [rules.userHeader]: user, [rules.groupHeader]: group, [IdentityLengthsHeader]: `${user.length},${group.length}` };
}

/**
 * Whether an upstream request to the local apiserver presents the front-proxy client certificate
 * (--proxy-client-cert-file): only when it carries front-proxy identity headers. kube-apiserver's
 * x509 authenticator does not skip a client certificate its --client-ca-file did not sign, it
 * fails, and a failed authenticator is a 401 even with anonymous auth on; the request-header
 * authenticator before it returns "no user" when the certificate is good but the user header is
 * missing. So a client with no credentials, sent with the certificate, got 401 "Unauthorized"
 * where the apiserver alone answers as system:anonymous (measured against v1.34.4 and v1.37.2,
 * test/kube/identity.test.ts). Without the certificate, bearer tokens and anonymous requests are
 * judged exactly as if they had reached the apiserver directly.
 */
export function carriesIdentity(headers: readonly string[], rules: IdentityHeaderRules = DEFAULT_IDENTITY_RULES): boolean {
  for (let i = 0; i < headers.length; i += 2) if (rules.isIdentityHeader(headers[i]!)) return true;
  return false;
}

/**
 * Go's headerKeyEscape (client-go transport): every byte of an extra key that is not an RFC 7230
 * token character, and '%' itself, becomes %XX; the apiserver lowercases and unescapes it.
 */
export function headerKeyEscape(key: string): string {
  let out = '';
  for (const b of Buffer.from(key, 'utf8')) {
    const c = String.fromCharCode(b);
    out += c !== '%' && /^[!#$%&'*+\-.^_`|~0-9A-Za-z]$/.test(c) ? c : '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

/**
 * The front-proxy headers asserting a user mvproxy authenticated itself (a client certificate), as a
 * flat [name, value, ...] list of byte strings (one character a byte, as every upstream writer
 * sends them): each value is its UTF-8 bytes, which is what Go's net/http hands kube-apiserver
 * and how it spells the same name read from the certificate. (Written as characters, `café`
 * arrived as the Latin-1 byte E9, another user, and a name past U+00FF could not be written at all:
 * issue 27.) api/identity.ts has already refused any value a header cannot carry unchanged.
 */
export function identityHeaders(identity: Identity, rules: IdentityHeaderRules = DEFAULT_IDENTITY_RULES): string[] {
  const out: string[] = [rules.userHeader, utf8Bytes(identity.user)];
  if (identity.uid !== undefined && rules.uidHeader !== undefined) out.push(rules.uidHeader, utf8Bytes(identity.uid));
  for (const g of identity.groups) out.push(rules.groupHeader, utf8Bytes(g));
  for (const [k, vs] of Object.entries(identity.extra ?? {})) for (const v of vs) out.push(rules.extraPrefix + headerKeyEscape(k), utf8Bytes(v));
  return out;
}

/** A string as its UTF-8 bytes, one character a byte (latin1); ASCII is returned as it is. */
export function utf8Bytes(v: string): string {
  return Buffer.byteLength(v) === v.length ? v : Buffer.from(v, 'utf8').toString('latin1');
}

const NO_NAMES: ReadonlySet<string> = new Set();

/** The header names a Connection header's tokens list (close, keep-alive and upgrade are not names). */
export function connectionHeaderNames(tokens: string): ReadonlySet<string> {
  // The usual values (keep-alive, close, Upgrade, in any case, as a list) name nothing: they are
  // scanned in place, with no array and no Set (2.5 % of a uWS GET's bytes were this Set,
  // bench/allocations.ts --sites: undici, as most clients, sends Connection: keep-alive).
  let s: Set<string> | undefined;
  for (let start = 0, end = 0; start <= tokens.length; start = end + 1) {
    end = tokens.indexOf(',', start);
    if (end < 0) end = tokens.length;
    const a = owsStart(tokens, start, end);
    const b = owsEnd(tokens, a, end);
    if (a < b && !tokenIs(tokens, a, b, 'close') && !tokenIs(tokens, a, b, 'keep-alive') && !tokenIs(tokens, a, b, 'upgrade')) (s ??= new Set()).add(tokens.slice(a, b).toLowerCase());
  }
  return s ?? NO_NAMES;
}

/**
 * Response headers from the upstream (raw Buffers from undici) to pass back to the client:
 * hop-by-hop headers dropped, and Content-Length reported separately because each front end
 * writes it itself from the body it sends (writing it twice would corrupt the response).
 */
export function responseHeadFrom(raw: readonly (Buffer | string)[], fromAPIServer = false): ResponseHead {
  // One pass, each name turned into a string and lowercased once (issue 18: this ran twice per
  // header). A Connection header naming other headers is rare: those are dropped afterwards.
  const headers: string[] = [];
  let contentLength = -1;
  let contentType = '';
  let named: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toString('latin1');
    const lower = name.toLowerCase();
    const value = raw[i + 1].toString('latin1');
    if (lower === 'content-length') {
      contentLength = Number(value);
      continue;
    }
    if (HOP_BY_HOP.has(lower)) {
      if (lower === 'connection') named = named === undefined ? value : named + ',' + value;
      continue;
    }
    // Only mvproxy's own answers may say "not sent" (api/headers.ts): never an apiserver's.
    if (fromAPIServer && lower === NotSentHeader) continue;
    if (lower === 'content-type') contentType = value;
    headers.push(name, value);
  }
  if (named !== undefined) {
    const drop = connectionHeaderNames(named);
    if (drop.size > 0) return withoutNamed(headers, drop, contentLength, drop.has('content-type') ? '' : contentType);
  }
  return { headers, contentLength, contentType };
}

/** The head without the headers a Connection header named (RFC 9110 §7.6.1). */
function withoutNamed(headers: string[], drop: ReadonlySet<string>, contentLength: number, contentType: string): ResponseHead {
  const kept: string[] = [];
  for (let i = 0; i < headers.length; i += 2) if (!drop.has(headers[i]!.toLowerCase())) kept.push(headers[i]!, headers[i + 1]!);
  return { headers: kept, contentLength, contentType };
}
