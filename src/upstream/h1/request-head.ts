// The request head mvproxy's upstream client writes: one string, built in one pass over the
// client's header list as the front end handed it over, the header rules of the proxy hop applied
// while copying (upstream/headers.ts says each rule and why), written in one write (latin1: one
// character a byte). The same rules as forwardRequestHeaders, which the upgrade paths use.

import { PeerProxiedHeader } from '../../api/headers';
import type { Identity } from '../../api/identity';
import { HOP_BY_HOP, connectionHeaderNames, identityHeaders, type IdentityHeaderRules } from '../headers';

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
  /**
   * The front end decoded header values as UTF-8 (uWS): re-encode non-ASCII ones to their bytes.
   * node's parser hands each byte as one latin1 character already.
   */
  utf8Values: boolean;
}

/** The identity lines of a user, built once per Identity (front ends cache one per certificate). */
const identityLinesCache = new WeakMap<Identity, Map<IdentityHeaderRules, string>>();

function identityLines(identity: Identity, rules: IdentityHeaderRules): string {
  let byRules = identityLinesCache.get(identity);
  if (byRules === undefined) identityLinesCache.set(identity, (byRules = new Map()));
  let lines = byRules.get(rules);
  if (lines === undefined) {
    lines = '';
    const h = identityHeaders(identity, rules);
    for (let i = 0; i < h.length; i += 2) lines += h[i] + ': ' + h[i + 1] + '\r\n';
    byRules.set(rules, lines);
  }
  return lines;
}

/**
 * `METHOD target HTTP/1.1`, Host, the client's headers under the hop rules, X-Forwarded-For, the
 * peer-proxied marker, the identity, the framing, and the blank line.
 * @param headers flat [name, value, ...], names lowercased, wire order, duplicates kept (Exchange.headers)
 */
export function requestHead(method: string, target: string, headers: readonly string[], o: RequestHeadOptions): string {
  let named: Set<string> | undefined;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] === 'connection') {
      const n = connectionHeaderNames(headers[i + 1]!);
      if (n.size > 0) for (const x of n) (named ??= new Set()).add(x);
    }
  }
  let fields = '';
  let xff: string | undefined;
  const rules = o.rules;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    const value = headers[i + 1]!;
    if (name === 'host' || name === 'content-length' || name === 'expect' || HOP_BY_HOP.has(name)) continue; // framing is ours (below); Expect: headers.ts
    if (named !== undefined && named.has(name)) continue;
    if (!o.trustIdentityHeaders && rules.isIdentityHeader(name)) continue;
    if (name === 'x-forwarded-for') {
      xff = xff === undefined ? value : xff + ', ' + value;
      continue;
    }
    if (o.peerHop && name === PeerProxiedHeader) continue;
    fields += name + ': ' + value + '\r\n';
  }
  fields += 'x-forwarded-for: ' + (xff === undefined ? o.remoteAddress : xff + ', ' + o.remoteAddress) + '\r\n';
  // A non-ASCII value from uWS was decoded as UTF-8: its bytes go upstream as the client sent them.
  if (o.utf8Values && Buffer.byteLength(fields) !== fields.length) fields = Buffer.from(fields, 'utf8').toString('latin1');
  let head = method + ' ' + target + ' HTTP/1.1\r\nhost: ' + o.host + '\r\n' + fields;
  if (o.peerHop) head += PeerProxiedHeader + ': true\r\n';
  if (o.identity !== undefined) head += identityLines(o.identity, rules);
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
 * The same request as HTTP/2 headers (for a long-running request on a shared HTTP/2 session,
 * upstream/h2/attempt.ts): the same rules as requestHead, pseudo-headers instead of the request line
 * and Host, repeated fields as arrays (node:http2 sends each element as its own field, so every
 * X-Remote-Group line stays one group). Values are byte strings, as node:http2 sends them (latin1).
 */
export function requestHeaders2(method: string, target: string, headers: readonly string[], o: RequestHeadOptions): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = { ':method': method, ':path': target, ':authority': o.host, ':scheme': 'https' };
  const add = (name: string, value: string) => {
    const prev = out[name];
    out[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  };
  let named: Set<string> | undefined;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] === 'connection') for (const x of connectionHeaderNames(headers[i + 1]!)) (named ??= new Set()).add(x);
  }
  let xff: string | undefined;
  const rules = o.rules;
  const encode = (v: string) => (o.utf8Values && Buffer.byteLength(v) !== v.length ? Buffer.from(v, 'utf8').toString('latin1') : v);
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    const value = headers[i + 1]!;
    if (name === 'host' || name === 'content-length' || name === 'expect' || HOP_BY_HOP.has(name)) continue;
    if (named !== undefined && named.has(name)) continue;
    if (!o.trustIdentityHeaders && rules.isIdentityHeader(name)) continue;
    if (name === 'x-forwarded-for') {
      xff = xff === undefined ? value : xff + ', ' + value;
      continue;
    }
    if (o.peerHop && name === PeerProxiedHeader) continue;
    add(name, encode(value));
  }
  add('x-forwarded-for', xff === undefined ? o.remoteAddress : xff + ', ' + o.remoteAddress);
  if (o.peerHop) add(PeerProxiedHeader, 'true');
  if (o.identity !== undefined) {
    const h = identityHeaders(o.identity, rules);
    for (let i = 0; i < h.length; i += 2) add(h[i]!.toLowerCase(), h[i + 1]!);
  }
  if (o.bodyLength >= 0) add('content-length', String(o.bodyLength));
  return out;
}
