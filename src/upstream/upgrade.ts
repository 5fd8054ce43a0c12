// Protocol upgrades (kubectl exec/attach/port-forward over SPDY or WebSocket, WebSocket watches)
// on the node front end.
//
// The rule (issue 19, the "request smuggled behind a refused upgrade"): nothing passes mvproxy
// except as a parsed request under its header rules until the upstream has answered
// `101 Switching Protocols`. The upgrade request is sent as one request, on a connection of its
// own, with the same header rules as any request (client X-Remote-* stripped, a certificate user
// forwarded as front-proxy headers); the client socket is paused meanwhile, and the bytes the client
// sent after the request head are held back. Only after a 101 do bytes flow raw both ways, starting
// with the held-back ones. Any other answer (401, 403, 404, 400, …) is relayed as an ordinary
// response with `Connection: close` and the client connection is closed: whatever the client sent
// after the upgrade request never reaches the upstream, which trusts mvproxy's proxy client
// certificate as the front-proxy identity. (Before this, the head was rewritten and every later
// byte piped raw, so a request pipelined behind an upgrade the apiserver refused reached it with
// the client's own X-Remote-User: system:admin.)
//
// Upgrades always go to the local apiserver: the subresources that upgrade (pods/exec, attach,
// portforward) belong to the core group, which every apiserver serves.

import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { carriesIdentity, responseHeadFrom, type IdentityHeaderRules } from './headers';
import { forwardRequestHeaders, UnsafeFieldError } from './request-head';
import type { Metrics } from '../telemetry/metrics';
import { ErrorCode } from '../api/errors';
import type { Identity } from '../api/identity';
import { checkServerIdentity, type TLSFiles } from './tls-files';
import type { Logger } from '../telemetry/log';
import { answerStatus, closeAfterAnswer } from '../listener/answer';
import { HeadCheck, isOriginForm, type Refusal } from '../listener/head-check';
import { nodeRemoteAddress } from '../listener/remote-address';

/** Open tunnels of one daemon, so its shutdown can cut them (an exec session never ends by itself). */
export class Tunnels {
  private readonly open = new Set<Duplex>();
  add(client: Duplex): void {
    this.open.add(client);
    client.once('close', () => this.open.delete(client));
  }
  get size(): number {
    return this.open.size;
  }
  destroyAll(): void {
    for (const t of this.open) t.destroy();
  }
}

export interface UpgradeOptions {
  target: URL;
  tls: TLSFiles | undefined;
  log: Logger;
  tunnels: Tunnels;
  /** The user of the client's verified certificate, forwarded as front-proxy headers. */
  identity?: Identity;
  identityRules: IdentityHeaderRules;
  /** Counts a head the writer refused (mvproxy_upstream_writes_refused_total). */
  metrics: Pick<Metrics, 'upstreamWritesRefused'>;
  /** The longest wait for the upstream's answer to the upgrade request (--request-timeout): then 504. */
  headTimeoutMs: number;
  /** The listener is draining: answered 429 (as any request on the client listener then). */
  draining: boolean;
  /**
   * The peer hop (issue 30: a new exec/attach/port-forward while the local apiserver is not
   * serving goes to a peer's peer listener): x-kubernetes-peer-proxied: true is set and the proxy
   * client certificate is always presented (the peer listener requires it).
   */
  peerHop?: boolean;
  /** The request's headers as [lowercased name, value, …], when the caller has built them already (one array per upgrade). */
  incoming?: string[];
  /** From the peer listener: the source mvproxy's identity headers are passed on (the connection is a verified peer). */
  trustIdentityHeaders?: boolean;
}

/**
 * Why an upgrade request is refused before anything is sent upstream, or undefined. node:http hands
 * an upgrade over without a ServerResponse, so the checks of every request (listener/head-check.ts:
 * what Go's server refuses) run here, then the upgrade's own: only an HTTP/1.1 request without a
 * body may switch protocols here:
 * - HTTP/1.0 has no Upgrade (RFC 9110 §7.8 applies to 1.1);
 * - `h2c` is not an upgrade any apiserver offers (Go's net/http ignores it; RFC 9113 deprecated it),
 *   and a tunnel opened for it would carry HTTP/2 requests past every header rule;
 * - a body (Content-Length other than 0, Transfer-Encoding) would have to be framed before the
 *   101; exec/attach/port-forward requests carry none, and ambiguous bytes are what smuggling uses.
 */
export function upgradeRefusal(req: http.IncomingMessage): Refusal | undefined {
  if (req.httpVersion !== '1.1') return { code: ErrorCode.MVP_ERR_UPGRADE_REFUSED, message: `protocol upgrades need HTTP/1.1, got HTTP/${req.httpVersion}` };
  const check = new HeadCheck(false);
  check.requestLine(req.method ?? '', req.url ?? '');
  let why: string | undefined;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    const value = check.field(name, raw[i + 1]);
    if (name === 'upgrade') {
      for (const t of value.split(',')) if (t.trim().toLowerCase() === 'h2c') why ??= 'the h2c upgrade is not supported (use HTTP/2 over TLS, or HTTP/1.1)';
    } else if (name === 'transfer-encoding' || (name === 'content-length' && value.trim() !== '0')) why ??= 'an upgrade request must not carry a body';
  }
  const refusal = check.verdict(true);
  if (refusal !== undefined) return refusal.code === ErrorCode.MVP_ERR_BAD_FRAMING || refusal.code === ErrorCode.MVP_ERR_UNSUPPORTED_TRANSFER_ENCODING ? { code: ErrorCode.MVP_ERR_UPGRADE_REFUSED, message: 'an upgrade request must not carry a body' } : refusal;
  return why === undefined ? undefined : { code: ErrorCode.MVP_ERR_UPGRADE_REFUSED, message: why };
}

export function tunnelUpgrade(req: http.IncomingMessage, client: Duplex, clientHead: Buffer, o: UpgradeOptions): void {
  o.tunnels.add(client);
  client.on('error', () => undefined);
  if (o.draining) return answerStatus(client, ErrorCode.MVP_ERR_SHUTTING_DOWN);
  // The tunnel dials the configured origin and sends the target verbatim (path: req.url); a target
  // that is not origin-form is refused as on any request (listener/head-check.ts isOriginForm).
  if (!isOriginForm(req.url ?? '')) return answerStatus(client, ErrorCode.MVP_ERR_BAD_REQUEST_TARGET);
  const refused = upgradeRefusal(req);
  if (refused !== undefined) {
    o.log.info(2, 'upgrade refused', { path: req.url, reason: refused.message ?? refused.code });
    return answerStatus(client, refused.code, refused.message);
  }
  // Nothing the client sends from here on is read until the upstream has switched protocols.
  client.pause();

  const incoming = o.incoming ?? lowercasedHeaders(req.rawHeaders);
  let headers: string[];
  try {
    headers = forwardRequestHeaders(req.method ?? '', req.url ?? '', incoming, { remoteAddress: nodeRemoteAddress(req.socket.remoteAddress), peerHop: o.peerHop ?? false, upgrade: true, identity: o.identity, identityRules: o.identityRules, trustIdentityHeaders: o.trustIdentityHeaders });
  } catch (e) {
    if (!(e instanceof UnsafeFieldError)) throw e;
    o.metrics.upstreamWritesRefused.inc({ part: e.part });
    o.log.info(1, `${e.code}: ${e.message}`, { path: req.url });
    return answerStatus(client, e.code);
  }
  // The front-proxy certificate: to a peer always, to the local apiserver only with identity headers (carriesIdentity).
  const presentCert = o.peerHop === true || carriesIdentity(headers, o.identityRules);
  headers.unshift('host', o.target.host);
  // No body (upgradeRefusal saw to it): said so. Without a length node:http frames a POST's missing
  // body as chunked (`0` CRLF CRLF), and a peer listener refuses an upgrade with a body: no SPDY
  // exec, attach or port-forward (kubectl <= 1.29, all POST) went through the peer route.
  if (req.method !== 'GET' && req.method !== 'HEAD') headers.push('content-length', '0');

  const target = o.target;
  const secure = target.protocol === 'https:';
  const options: https.RequestOptions = {
    host: target.hostname,
    port: Number(target.port || (secure ? 443 : 80)),
    method: req.method,
    path: req.url,
    headers,
    agent: false, // a connection of its own: after a 101 it belongs to the tunnel
    ...(secure ? { ca: o.tls?.ca, ...(presentCert ? { cert: o.tls?.cert, key: o.tls?.key } : {}), servername: o.tls?.servername ?? (net.isIP(target.hostname) ? undefined : target.hostname), checkServerIdentity, ...o.tls?.policy } : {}),
  };
  const upReq = (secure ? https : http).request(options);
  let settled = false;
  const timer = setTimeout(() => {
    if (settled) return;
    settled = true;
    upReq.destroy();
    answerStatus(client, ErrorCode.MVP_ERR_UPSTREAM_TIMEOUT);
  }, o.headTimeoutMs);
  const settle = (): boolean => {
    if (settled) return false;
    settled = true;
    clearTimeout(timer);
    return true;
  };
  client.once('close', () => {
    if (settle()) upReq.destroy();
  });

  upReq.on('upgrade', (res: http.IncomingMessage, upstream: net.Socket, upstreamHead: Buffer) => {
    if (!settle() || client.destroyed) {
      upstream.destroy();
      return;
    }
    // The switch is the upstream's: relay its 101 head as it sent it (Sec-WebSocket-Accept, the
    // negotiated sub-protocol), then the bytes already read on either side, then raw both ways.
    let lines = `HTTP/1.1 101 ${res.statusMessage || 'Switching Protocols'}\r\n`;
    for (let i = 0; i < res.rawHeaders.length; i += 2) lines += `${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}\r\n`;
    client.write(lines + '\r\n');
    if (upstreamHead.length) client.write(upstreamHead);
    if (clientHead.length) upstream.write(clientHead);
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    upstream.pipe(client);
    client.pipe(upstream);
    client.resume();
  });

  upReq.on('response', (res: http.IncomingMessage) => {
    if (!settle() || client.destroyed) {
      res.destroy();
      return;
    }
    // Not switched: an ordinary response, and the end of this client connection. Held-back bytes
    // (a pipelined request, say) are dropped with it: they were never read as a request.
    const head = responseHeadFrom(res.rawHeaders);
    let lines = `HTTP/1.1 ${res.statusCode} ${res.statusMessage || http.STATUS_CODES[res.statusCode ?? 0] || ''}\r\n`;
    for (let i = 0; i < head.headers.length; i += 2) lines += `${head.headers[i]}: ${head.headers[i + 1]}\r\n`;
    if (head.contentLength >= 0) lines += `content-length: ${head.contentLength}\r\n`;
    client.write(lines + 'connection: close\r\n\r\n');
    res.on('error', () => client.destroy());
    res.on('end', () => closeAfterAnswer(client));
    res.pipe(client, { end: false });
    o.log.info(2, 'upgrade not switched by the apiserver', { path: req.url, status: res.statusCode });
  });

  upReq.on('error', (err) => {
    if (!settle()) {
      client.destroy();
      return;
    }
    o.log.info(2, 'upgrade request to the local apiserver failed', { err: err.message, path: req.url });
    answerStatus(client, ErrorCode.MVP_ERR_LOCAL_UNAVAILABLE);
  });
  upReq.end();
}

/** rawHeaders as [lowercased name, value, …], the shape the header rules read. */
export function lowercasedHeaders(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) out.push(raw[i]!.toLowerCase(), raw[i + 1]!);
  return out;
}
