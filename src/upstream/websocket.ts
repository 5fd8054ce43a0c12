// WebSocket upgrades on the uWebSockets.js front end (exec, attach, port-forward and cp of
// kubectl >= 1.30; WebSocket watches). uWS terminates the client's WebSocket itself, so mvproxy
// bridges two WebSockets message by message: client ⇄ uWS ⇄ mvproxy ⇄ ws client ⇄ apiserver.
//
// The same rule as the node front end's raw tunnel (upgrade.ts, issue 19): nothing reaches the
// upstream except the upgrade request under the header rules until the upstream has answered
// `101 Switching Protocols`. Only then is the client's upgrade accepted (with the sub-protocol the
// upstream chose: v5.channel.k8s.io, …); any other answer is relayed to the client as an ordinary
// response and its connection closed. Messages are forwarded whole, binary or text as sent, and
// never parsed (the channel byte of the exec protocols passes through).
//
// The bridge itself, with its backpressure and close codes, is the front end's
// (listener/uws-websocket.ts): the daemon hands it webSocketDialer(target), so the listener never
// imports this stage.

import type { WebSocket as WsClient } from 'ws';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { ErrorCode } from '../api/errors';
import { responseHeadFrom, type IdentityHeaderRules } from './headers';
import { forwardRequestHeaders, UnsafeFieldError } from './request-head';
import type { Metrics } from '../telemetry/metrics';
import { checkServerIdentity, type TLSFiles } from './tls-files';
import { isOriginForm } from '../listener/head-check';
import type { BridgeCallbacks, WebSocketDialer, WebSocketUpgradeRequest } from '../listener/uws-websocket';

export interface WebSocketTarget {
  target: URL;
  tls: TLSFiles | undefined;
  identityRules: IdentityHeaderRules;
  /** Counts a head the writer refused (mvproxy_upstream_writes_refused_total). */
  metrics: Pick<Metrics, 'upstreamWritesRefused'>;
  /** The longest wait for the upstream's answer to the upgrade (--request-timeout): then 504. */
  headTimeoutMs: number;
  /**
   * --local-failover (issue 30): the address of a peer's peer listener to take this upgrade while
   * the local apiserver is not serving (ProxyHandler.upgradePeer), else undefined; with the TLS
   * to peers (the proxy client certificate, always presented there).
   */
  peerFor?(method: string, url: string, headers: readonly string[]): string | undefined;
  peerTLS?: TLSFiles;
}

/** The headers the ws client must not be given: it writes its own handshake. */
const HANDSHAKE = new Set(['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-extensions', 'sec-websocket-protocol', 'connection', 'upgrade', 'host']);

/**
 * The upstream URL of a WebSocket upgrade: the configured origin (the local apiserver), then the
 * client's request target exactly as sent. Never resolved against the origin (`new URL(target,
 * origin)` dialled `//HOST:PORT/...` at HOST:PORT with mvproxy's front-proxy identity: issue 27).
 * undefined, answered 400, when the target is not origin-form or the URL parser would not keep it
 * byte for byte (dot segments, backslashes, characters it escapes): the ws client sends
 * url.pathname + url.search, and the apiserver must read the path routing read.
 */
export function upstreamWebSocketURL(origin: URL, target: string): URL | undefined {
  if (!isOriginForm(target)) return undefined;
  let url: URL;
  try {
    url = new URL((origin.protocol === 'https:' ? 'wss://' : 'ws://') + origin.host + target);
  } catch {
    return undefined;
  }
  return url.host === origin.host && url.pathname + url.search === target ? url : undefined;
}

/** The uWS front end's way to the local apiserver's WebSockets (UwsListenerOptions.webSocket). */
export function webSocketDialer(t: WebSocketTarget): WebSocketDialer {
  return (req, cb) => openUpstreamWebSocket(req, t, cb);
}

/** Opens the upstream WebSocket for a client's upgrade; returns a function that abandons it. */
export function openUpstreamWebSocket(req: WebSocketUpgradeRequest, t: WebSocketTarget, cb: BridgeCallbacks): () => void {
  const peer = t.peerFor?.(req.method, req.url, req.headers);
  const origin = peer === undefined ? t.target : new URL(`https://${peer}`);
  const tls = peer === undefined ? t.tls : t.peerTLS;
  let forwarded: string[];
  try {
    forwarded = forwardRequestHeaders(req.method, req.url, req.headers, { remoteAddress: req.remoteAddress, peerHop: peer !== undefined, identity: req.identity, identityRules: t.identityRules });
  } catch (e) {
    if (!(e instanceof UnsafeFieldError)) throw e;
    t.metrics.upstreamWritesRefused.inc({ part: e.part });
    queueMicrotask(() => cb.fail(e.code));
    return () => undefined;
  }
  // Repeated fields stay separate lines (node:http writes an array value as one line each): the
  // apiserver reads every X-Remote-Group / Impersonate-Group line as one group, never a joined list.
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i < forwarded.length; i += 2) {
    const name = forwarded[i];
    if (HANDSHAKE.has(name)) continue;
    const prev = headers[name];
    headers[name] = prev === undefined ? forwarded[i + 1] : Array.isArray(prev) ? [...prev, forwarded[i + 1]] : [prev, forwarded[i + 1]];
  }
  // The client's sub-protocols are offered upstream verbatim, in one header line, and the server's
  // choice is checked here: Kubernetes' names are not all RFC 7230 tokens (port-forward's tunnel is
  // "SPDY/3.1+portforward.k8s.io", kubectl >= 1.31), which the ws client refuses to send (it throws).
  const protocols: string[] = [];
  for (let i = 0; i < req.headers.length; i += 2) {
    if (req.headers[i] === 'sec-websocket-protocol') for (const p of req.headers[i + 1].split(',')) if (p.trim()) protocols.push(p.trim());
  }
  if (protocols.length) headers['sec-websocket-protocol'] = protocols.join(', ');
  let chosen = '';
  const url = upstreamWebSocketURL(origin, req.url);
  if (url === undefined) {
    queueMicrotask(() => cb.fail(ErrorCode.MVP_ERR_BAD_REQUEST_TARGET));
    return () => undefined;
  }
  let settled = false;
  let upstream: WsClient;
  try {
    // ws is loaded with the first WebSocket (~1 MiB of an idle daemon's memory otherwise; bench/README, "Memory at rest").
    const { WebSocket } = require('ws') as typeof import('ws');
    upstream = new WebSocket(url, [], {
      headers: headers as Record<string, string>, // arrays reach node:http as they are (ws copies the object)
      perMessageDeflate: false, // messages pass through as they are; the client's extensions are not negotiated upstream
      handshakeTimeout: t.headTimeoutMs,
      maxPayload: 64 * 1024 * 1024,
      ca: tls?.ca,
      // The front-proxy certificate: to a peer always, to the local apiserver only with identity headers (carriesIdentity says why).
      ...(req.identity || peer !== undefined ? { cert: tls?.cert, key: tls?.key } : {}),
      followRedirects: false,
      ...({ servername: tls?.servername, checkServerIdentity, ...tls?.policy } as object), // passed on to tls.connect like ca/cert/key
    });
  } catch {
    // Nothing a client sends may throw out of the request path (an invalid URL, a header value
    // node:http refuses): the client gets a Status, the daemon keeps running.
    queueMicrotask(() => cb.fail(ErrorCode.MVP_ERR_UPGRADE_REFUSED));
    return () => undefined;
  }
  // ws checks the 101 right after this event: it must see no sub-protocol (none was passed to it),
  // so the server's choice is taken out here and checked against what the client offered.
  upstream.on('upgrade', (res: IncomingMessage) => {
    const p = res.headers['sec-websocket-protocol'];
    delete res.headers['sec-websocket-protocol'];
    if (p === undefined) return;
    if (!protocols.includes(p)) {
      settled = true;
      upstream.terminate();
      cb.fail(ErrorCode.MVP_ERR_UPGRADE_FAILED);
      return;
    }
    chosen = p;
  });
  upstream.on('open', () => {
    if (settled) {
      upstream.terminate();
      return;
    }
    settled = true;
    cb.accept(chosen, upstream);
  });
  upstream.on('unexpected-response', (_r: ClientRequest, res: IncomingMessage) => {
    if (settled) {
      res.destroy();
      return;
    }
    settled = true;
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      if ((size += c.length) <= 1024 * 1024) chunks.push(c);
    });
    res.on('end', () => {
      const head = responseHeadFrom(res.rawHeaders);
      cb.refuse(res.statusCode ?? 502, head.headers, Buffer.concat(chunks));
    });
    res.on('error', () => cb.fail(ErrorCode.MVP_ERR_LOCAL_UNAVAILABLE));
  });
  upstream.on('error', (err: Error) => {
    if (settled) return;
    settled = true;
    // ws reports a bad 101 (wrong Sec-WebSocket-Accept, a sub-protocol not offered) as an Error
    // whose message names it; a socket error carries a code (ECONNREFUSED, a TLS failure).
    const code = (err as Error & { code?: string }).code;
    cb.fail(/timed out/i.test(err.message) ? ErrorCode.MVP_ERR_UPSTREAM_TIMEOUT : code === undefined || code.startsWith('WS_ERR') ? ErrorCode.MVP_ERR_UPGRADE_FAILED : ErrorCode.MVP_ERR_LOCAL_UNAVAILABLE);
  });
  return () => {
    settled = true;
    upstream.terminate();
  };
}
