// The one writer of upstream request heads (issue 38). Every request mvproxy sends upstream for a
// client — the relay's HTTP/1.1 head, a long-running request's HTTP/2 fields, an upgrade's header
// list — takes its fields from forwardedFields here: the client's fields under the header rules of
// the proxy hop (upstream/headers.ts says each rule and why), then X-Forwarded-For, the peer marker,
// the identity mvproxy asserts, the framing. And every method, target, Host, name and value is
// checked on its way out, as Go's Request.write and transport check them (gocompat/http.ts): a field
// with CR, LF, NUL or any other byte a field line may not carry, or a character above U+00FF (it
// would not be the byte it claims to be), is never written. The writer throws UnsafeFieldError and
// the request is answered with its Status (MVP_ERR_UNSAFE_REQUEST_FIELD, or
// MVP_ERR_UNSAFE_UPSTREAM_ADDRESS for a bad Host), counted. The front ends refuse all of these
// first (listener/head-check.ts); this is the defence behind them, whatever front end decoded the
// request.
//
// Strings are byte strings, one character a byte: the HTTP/1.1 head is written as latin1 (one
// write), node:http2 and node:http send HTTP/2 fields and upgrade heads as latin1 too.

import { IdentityLengthsHeader, PeerProxiedHeader } from '../api/headers';
import type { Identity } from '../api/identity';
import { ErrorCode } from '../api/errors';
import { isToken, requestTargetProblem, validHeaderFieldValue, validHostHeader } from '../gocompat/http';
import { HOP_BY_HOP, connectionHeaderNames, identityHeaders, type IdentityHeaderRules } from './headers';

/** The body framing the head announces. */
export const NO_BODY = -2;
export const CHUNKED_BODY = -1;

export interface RequestHeadOptions {
  /** host:port of the origin dialled (the Host header, as Go's ReverseProxy sends the target's). */
  host: string;
  /** Appended to X-Forwarded-For. */
  remoteAddress: string;
  rules: IdentityHeaderRules;
  /** Pass incoming identity headers through: only for requests from a verified peer. */
  trustIdentityHeaders: boolean;
  /** The user mvproxy authenticated itself (client certificate). */
  identity: Identity | undefined;
  /** Set x-kubernetes-peer-proxied: true (the peer hop). */
  peerHop: boolean;
  /** NO_BODY, CHUNKED_BODY, or a Content-Length. */
  bodyLength: number;
}

/** Which part of a head the writer refused (the label of mvproxy_upstream_writes_refused_total). */
export type UnsafePart = 'method' | 'target' | 'host' | 'name' | 'value';

/** A field the writer will not write: nothing of the request was written. */
export class UnsafeFieldError extends Error {
  readonly code: typeof ErrorCode.MVP_ERR_UNSAFE_REQUEST_FIELD | typeof ErrorCode.MVP_ERR_UNSAFE_UPSTREAM_ADDRESS;
  constructor(readonly part: UnsafePart, what: string) {
    super(`refused to write ${part} ${JSON.stringify(what.length > 80 ? what.slice(0, 80) + '…' : what)} upstream`);
    this.code = part === 'host' ? ErrorCode.MVP_ERR_UNSAFE_UPSTREAM_ADDRESS : ErrorCode.MVP_ERR_UNSAFE_REQUEST_FIELD;
  }
}

/** Throws unless the request line and Host may be written: a token method, a request-URI Go parses, a valid host. */
function checkLine(method: string, target: string, host: string): void {
  if (!isToken(method)) throw new UnsafeFieldError('method', method);
  if (target.charCodeAt(0) !== 0x2f || requestTargetProblem(target) !== undefined) throw new UnsafeFieldError('target', target);
  if (host.length === 0 || !validHostHeader(host)) throw new UnsafeFieldError('host', host);
}

/** Receives the fields of one upstream head in order: the HTTP/1.1 string, the HTTP/2 object, the upgrade's list. */
interface FieldSink {
  field(name: string, value: string): void;
}

/** Throws unless a field may be written: a token name, a value Go's ValidHeaderFieldValue takes. */
function checkField(name: string, value: string): void {
  if (!isToken(name)) throw new UnsafeFieldError('name', name);
  if (!validHeaderFieldValue(value)) throw new UnsafeFieldError('value', name + ': ' + value);
}

/** The identity fields of a user, checked once per Identity and rules (front ends cache one Identity per certificate). */
const identityCache = new WeakMap<Identity, Map<IdentityHeaderRules, readonly string[]>>();

function identityFields(identity: Identity, rules: IdentityHeaderRules): readonly string[] {
  let byRules = identityCache.get(identity);
  if (byRules === undefined) identityCache.set(identity, (byRules = new Map()));
  let h = byRules.get(rules);
  if (h === undefined) {
    h = identityHeaders(identity, rules);
    for (let i = 0; i < h.length; i += 2) checkField(h[i]!, h[i + 1]!);
    byRules.set(rules, h);
  }
  return h;
}

/**
 * The fields every shape writes, in order: the client's under the hop rules (Host, the framing,
 * Expect and hop-by-hop headers are the proxy's; any header Connection names is dropped; identity
 * headers pass only from a verified peer; the client's peer marker is dropped on the peer hop), then
 * X-Forwarded-For with the client appended, the peer marker, the asserted identity. An upgrade keeps
 * the client's Upgrade and sends `Connection: Upgrade`. Each client field is checked as it is
 * handed to the sink.
 * @param headers flat [name, value, ...], names lowercased, wire order, duplicates kept (Exchange.headers)
 */
function forwardedFields(headers: readonly string[], o: Pick<RequestHeadOptions, 'remoteAddress' | 'rules' | 'trustIdentityHeaders' | 'identity' | 'peerHop'>, sink: FieldSink, upgrade: boolean): void {
  let named: Set<string> | undefined;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] === 'connection') {
      const n = connectionHeaderNames(headers[i + 1]!);
      if (n.size > 0) for (const x of n) (named ??= new Set()).add(x);
    }
  }
  let xff: string | undefined;
  const rules = o.rules;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    const value = headers[i + 1]!;
    if (name === 'host' || name === 'content-length' || name === 'expect' || name === IdentityLengthsHeader) continue; // framing is ours; Expect: headers.ts
    if (HOP_BY_HOP.has(name) && !(upgrade && name === 'upgrade')) continue;
    if (named !== undefined && named.has(name)) continue;
    if (!o.trustIdentityHeaders && rules.isIdentityHeader(name)) continue;
    if (name === 'x-forwarded-for') {
      xff = xff === undefined ? value : xff + ', ' + value;
      continue;
    }
    if (o.peerHop && name === PeerProxiedHeader) continue;
    checkField(name, value);
    sink.field(name, value);
  }
  const forwardedFor = xff === undefined ? o.remoteAddress : xff + ', ' + o.remoteAddress;
  checkField('x-forwarded-for', forwardedFor);
  sink.field('x-forwarded-for', forwardedFor);
  if (upgrade) sink.field('connection', 'Upgrade');
  if (o.peerHop) sink.field(PeerProxiedHeader, 'true');
  if (o.identity !== undefined) {
    const h = identityFields(o.identity, rules);
    for (let i = 0; i < h.length; i += 2) sink.field(h[i]!, h[i + 1]!);
    // The peer's uWS listener checks what arrived against these (api/headers.ts IdentityLengthsHeader).
    if (o.peerHop) sink.field(IdentityLengthsHeader, identityLengths(o.identity, rules));
  }
}

const lengthsCache = new WeakMap<Identity, Map<IdentityHeaderRules, string>>();

/** The byte length of each identity value, in order, comma-separated (the values are byte strings). */
function identityLengths(identity: Identity, rules: IdentityHeaderRules): string {
  let byRules = lengthsCache.get(identity);
  if (byRules === undefined) lengthsCache.set(identity, (byRules = new Map()));
  let s = byRules.get(rules);
  if (s === undefined) {
    const h = identityFields(identity, rules);
    s = '';
    for (let i = 1; i < h.length; i += 2) s += (i === 1 ? '' : ',') + h[i]!.length;
    byRules.set(rules, s);
  }
  return s;
}

/** requestHead's sink: one string of field lines (one shared instance: requestHead is synchronous). */
class LineSink implements FieldSink {
  lines = '';
  field(name: string, value: string): void {
    this.lines += name + ': ' + value + '\r\n';
  }
}
const LINES = new LineSink();

/**
 * The HTTP/1.1 head: `METHOD target HTTP/1.1`, Host, the forwarded fields, the framing, the blank
 * line. One string, written in one write as latin1. Throws UnsafeFieldError, having built nothing
 * anyone writes.
 * @param target the client's request target, its bytes (Exchange.target)
 */
export function requestHead(method: string, target: string, headers: readonly string[], o: RequestHeadOptions): string {
  checkLine(method, target, o.host);
  LINES.lines = '';
  try {
    forwardedFields(headers, o, LINES, false);
  } catch (e) {
    LINES.lines = '';
    throw e;
  }
  let head = method + ' ' + target + ' HTTP/1.1\r\nhost: ' + o.host + '\r\n' + LINES.lines;
  LINES.lines = '';
  if (o.bodyLength >= 0) head += 'content-length: ' + o.bodyLength + '\r\n';
  else if (o.bodyLength === CHUNKED_BODY) head += 'transfer-encoding: chunked\r\n';
  return head + '\r\n';
}

/** Whether the upstream request carries front-proxy identity headers (then the front-proxy certificate is presented: headers.ts carriesIdentity). */
export function headCarriesIdentity(headers: readonly string[], o: Pick<RequestHeadOptions, 'identity' | 'trustIdentityHeaders' | 'rules'>): boolean {
  if (o.identity !== undefined) return true;
  if (!o.trustIdentityHeaders) return false;
  for (let i = 0; i < headers.length; i += 2) if (o.rules.isIdentityHeader(headers[i]!)) return true;
  return false;
}

/**
 * The same request as HTTP/2 fields (a long-running request on a shared HTTP/2 session,
 * upstream/h2/attempt.ts), a flat [name, value, ...] list for hpack.ts encodeFields: pseudo-headers
 * instead of the request line and Host, then the same fields as requestHead, in their order.
 * Throws UnsafeFieldError.
 */
export function requestHeaders2(method: string, target: string, headers: readonly string[], o: RequestHeadOptions): string[] {
  checkLine(method, target, o.host);
  const sink = new ListSink();
  sink.out.push(':method', method, ':path', target, ':authority', o.host, ':scheme', 'https');
  forwardedFields(headers, o, sink, false);
  if (o.bodyLength >= 0) sink.field('content-length', String(o.bodyLength));
  return sink.out;
}

/** requestHeaders2's and forwardRequestHeaders' sink: a flat [name, value, ...] list. */
class ListSink implements FieldSink {
  readonly out: string[] = [];
  field(name: string, value: string): void {
    this.out.push(name, value);
  }
}

export interface ForwardHeaderOptions {
  /** The client's address, appended to X-Forwarded-For. */
  remoteAddress: string;
  /** Identity header names; default X-Remote-User, X-Remote-Group, X-Remote-Extra-. */
  identityRules: IdentityHeaderRules;
  /** Pass incoming identity headers through: only for requests from a verified peer (its source mvproxy set them). */
  trustIdentityHeaders?: boolean;
  /** The user mvproxy authenticated itself (client certificate), written as identity headers. */
  identity?: Identity;
  /** Set x-kubernetes-peer-proxied: true (the peer hop). Otherwise any client value passes through to the local apiserver, as in-tree. */
  peerHop: boolean;
  /** Keep Upgrade and send `Connection: Upgrade` (a protocol upgrade is being requested). */
  upgrade?: boolean;
}

/**
 * The fields of an upgrade request (upstream/upgrade.ts, upstream/websocket.ts: node:http and the ws
 * client write the head from them) as a flat [name, value, ...] list, after checking the method and
 * target the caller passes on. Throws UnsafeFieldError.
 */
export function forwardRequestHeaders(method: string, target: string, incoming: readonly string[], o: ForwardHeaderOptions): string[] {
  if (!isToken(method)) throw new UnsafeFieldError('method', method);
  if (target.charCodeAt(0) !== 0x2f || requestTargetProblem(target) !== undefined) throw new UnsafeFieldError('target', target);
  const sink = new ListSink();
  forwardedFields(incoming, { remoteAddress: o.remoteAddress, rules: o.identityRules, trustIdentityHeaders: o.trustIdentityHeaders ?? false, identity: o.identity, peerHop: o.peerHop }, sink, o.upgrade ?? false);
  return sink.out;
}
