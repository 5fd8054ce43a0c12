// The uWS front end's WebSocket route: a client's WebSocket upgrade is held (uWS lets the upgrade
// handler answer later) while mvproxy opens the upstream WebSocket under the header rules
// (upstream/websocket.ts); only when the upstream switched does uWS accept the client's upgrade.
// Then messages are bridged with backpressure both ways. Everything the handler needs is read
// from the HttpRequest synchronously (uWS frees it when the handler returns). The upstream side is
// a WebSocketDialer the daemon passes in (upstream/websocket.ts webSocketDialer), so this stage
// never imports the upstream one.
//
// Backpressure both ways:
// - upstream → client: when uWS buffers more than HIGH_WATER for the client, the upstream socket is
//   paused until uWS's drain brings it under LOW_WATER;
// - client → upstream: when the ws client buffers more than HIGH_WATER for the upstream, the client
//   connection stops being read (uWS WebSocket pause(), where the build has it) until the upstream
//   socket drains; without pause() the client is closed with 1009 past MAX_BUFFERED rather than
//   growing memory without bound.
// Close codes are mirrored both ways (1005/1006, which may not be sent, become 1000/1011).

import { STATUS_CODES } from 'node:http';
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, us_socket_context_t } from 'uwebsockets';
import type { WebSocket as WsClient } from 'ws';
import { ErrorCode, errorResponse, type AnsweredCode } from '../api/errors';
import { certificateRefusal, isRefusal, type CertificateUser, type Identity } from '../api/identity';
import type { ListenerState } from './exchange';
import { HeadCheck, isOriginForm } from './head-check';
import { uwsRemoteAddress } from './remote-address';

/** Per-connection buffering that pauses the other side (bytes). */
export const HIGH_WATER = 1024 * 1024;
export const LOW_WATER = 256 * 1024;
/** Client → upstream bytes buffered before a client that cannot be paused is closed (1009). */
export const MAX_BUFFERED = 16 * 1024 * 1024;

/** What the front end read from the client's upgrade request (synchronously, before any await). */
export interface WebSocketUpgradeRequest {
  method: string;
  /** The request target as the client's bytes (path?query, still percent-encoded). */
  url: string;
  /** flat [name, value, ...], names lowercased, wire order, values as bytes */
  headers: string[];
  remoteAddress: string;
  identity?: Identity;
}

/** The two ends the front end drives once the upstream answered. */
export interface BridgeCallbacks {
  /** The upstream switched: accept the client's upgrade with this sub-protocol, then bridge. */
  accept(protocol: string, upstream: WsClient): void;
  /** The upstream answered without switching: relay this response, then close the client connection. */
  refuse(status: number, headers: string[], body: Buffer): void;
  /** No answer from the upstream (unreachable, TLS, timeout): mvproxy's own Status. */
  fail(code: DialFailure): void;
}

/** The codes a dialer fails with (api/errors.ts). */
type DialFailure =
  | typeof ErrorCode.MVP_ERR_LOCAL_UNAVAILABLE
  | typeof ErrorCode.MVP_ERR_UPSTREAM_TIMEOUT
  | typeof ErrorCode.MVP_ERR_UPGRADE_FAILED
  | typeof ErrorCode.MVP_ERR_UPGRADE_REFUSED
  | typeof ErrorCode.MVP_ERR_BAD_REQUEST_TARGET
  | typeof ErrorCode.MVP_ERR_UNSAFE_REQUEST_FIELD
  | typeof ErrorCode.MVP_ERR_UNSAFE_UPSTREAM_ADDRESS;

/** Opens the upstream WebSocket for a client's upgrade; returns a function that abandons it. */
export type WebSocketDialer = (req: WebSocketUpgradeRequest, cb: BridgeCallbacks) => () => void;

interface Bridge {
  upstream: WsClient;
  /** Client → upstream bytes handed to the ws client and not yet written to its socket. */
  pendingUp: number;
  clientPaused: boolean;
  upstreamPaused: boolean;
  closed: boolean;
}

/** The pieces of the listener this route reads (through the holder: see uws.ts routeAll). */
export interface WebSocketRouteHolder {
  readonly state: ListenerState;
  webSocket: WebSocketDialer | null;
  /** What the connection's verified client certificate makes of a request (null: none, or the listener does not read them). */
  userOf(res: HttpResponse): CertificateUser;
}

export function routeWebSockets(app: TemplatedApp, holder: WebSocketRouteHolder): void {
  app.ws<Bridge>('/*', {
    compression: 0, // uWS.DISABLED: messages pass through as the upstream sent them
    maxPayloadLength: 64 * 1024 * 1024,
    maxBackpressure: 64 * 1024 * 1024, // never drop: backpressure pauses the upstream at HIGH_WATER instead
    idleTimeout: 0, // exec sessions sit idle for hours; the protocols above keep their own heartbeats
    sendPingsAutomatically: false,
    upgrade: (res, req, context) => {
      // An exception out of a uWS handler ends the process: whatever a client sent, it gets a Status.
      try {
        upgradeOne(holder, res, req, context);
      } catch {
        try {
          answer(res, ErrorCode.MVP_ERR_UPGRADE_REFUSED);
        } catch {
          res.close(); // already answered or gone
        }
      }
    },
    open: (ws) => {
      const b = ws.getUserData();
      const up = b.upstream;
      up.on('message', (data: Buffer, isBinary: boolean) => {
        if (b.closed) return;
        ws.send(data, isBinary);
        if (!b.upstreamPaused && ws.getBufferedAmount() > HIGH_WATER) {
          b.upstreamPaused = true;
          up.pause();
        }
      });
      up.on('close', (code: number, reason: Buffer) => {
        if (b.closed) return;
        b.closed = true;
        ws.end(sendableCloseCode(code, 1011), reason);
      });
      up.on('error', () => {
        if (b.closed) return;
        b.closed = true;
        ws.end(1011, 'upstream error');
      });
    },
    message: (ws, message, isBinary) => {
      const b = ws.getUserData();
      if (b.closed) return;
      const copy = Buffer.from(new Uint8Array(message)); // uWS neuters the ArrayBuffer after this callback
      b.pendingUp += copy.length;
      b.upstream.send(copy, { binary: isBinary }, () => {
        b.pendingUp -= copy.length;
        if (b.clientPaused && b.pendingUp < LOW_WATER && !b.closed) {
          b.clientPaused = false;
          (ws as WebSocket<Bridge> & { resume?(): void }).resume?.();
        }
      });
      if (b.pendingUp > HIGH_WATER && !b.clientPaused) {
        const pausable = ws as WebSocket<Bridge> & { pause?(): void };
        if (pausable.pause) {
          b.clientPaused = true;
          pausable.pause();
        } else if (b.pendingUp > MAX_BUFFERED) {
          b.closed = true;
          b.upstream.terminate();
          ws.end(1009, 'upstream too slow');
        }
      }
    },
    drain: (ws) => {
      const b = ws.getUserData();
      if (b.upstreamPaused && ws.getBufferedAmount() < LOW_WATER) {
        b.upstreamPaused = false;
        b.upstream.resume();
      }
    },
    close: (ws, code, message) => {
      const b = ws.getUserData();
      if (b.closed) return;
      b.closed = true;
      const up = b.upstream;
      if (up.readyState === up.OPEN) up.close(sendableCloseCode(code, 1000), Buffer.from(new Uint8Array(message)));
      else up.terminate();
    },
  });
}

/** One WebSocket upgrade: held until the upstream WebSocket has switched, then accepted (or answered). */
function upgradeOne(holder: WebSocketRouteHolder, res: HttpResponse, req: HttpRequest, context: us_socket_context_t): void {
  const dial = holder.webSocket;
  const key = req.getHeader('sec-websocket-key');
  // The same checks and the same bytes as any request (listener/head-check.ts): uWS decoded the
  // target and each value as UTF-8.
  const check = new HeadCheck(true);
  const method = req.getCaseSensitiveMethod();
  const query = req.getQuery();
  const url = check.requestLine(method, query === undefined ? req.getUrl() : req.getUrl() + '?' + query);
  const headers: string[] = [];
  req.forEach((k, v) => {
    headers.push(k, check.field(k, v));
  });
  const refusal = check.verdict(true);
  const user = holder.userOf(res);
  const upgrade: WebSocketUpgradeRequest = {
    method,
    url,
    headers,
    remoteAddress: uwsRemoteAddress(res),
    identity: user === null || isRefusal(user) ? undefined : user,
  };
  let aborted = false;
  let abandon: (() => void) | null = null;
  res.onAborted(() => {
    aborted = true;
    abandon?.();
  });
  if (dial === null) return answer(res, ErrorCode.MVP_ERR_UPGRADE_UNSUPPORTED);
  if (refusal !== undefined) return answer(res, refusal.code, refusal.message);
  const refused = certificateRefusal(user, headers);
  if (refused !== undefined) return answer(res, ErrorCode.MVP_ERR_CERTIFICATE_USER, refused);
  if (holder.state.draining) return answer(res, ErrorCode.MVP_ERR_SHUTTING_DOWN);
  if (hasBody(headers)) return answer(res, ErrorCode.MVP_ERR_UPGRADE_REFUSED, 'an upgrade request must not carry a body');
  // The dialer sends the target verbatim to the configured origin (upstream/websocket.ts); one that
  // is not origin-form is refused here first, as on any request (head-check.ts isOriginForm).
  if (!isOriginForm(upgrade.url)) return answer(res, ErrorCode.MVP_ERR_BAD_REQUEST_TARGET);
  abandon = dial(upgrade, {
    accept(protocol, upstream) {
      if (aborted) return upstream.terminate();
      const bridge: Bridge = { upstream, pendingUp: 0, clientPaused: false, upstreamPaused: false, closed: false };
      res.cork(() => res.upgrade(bridge, key, protocol, '', context as us_socket_context_t));
    },
    refuse(status, head, body) {
      if (aborted) return;
      res.cork(() => {
        res.writeStatus(`${status} ${STATUS_CODES[status] ?? 'Unknown'}`);
        for (let i = 0; i < head.length; i += 2) {
          const n = head[i].toLowerCase();
          if (n !== 'date' && n !== 'content-length') res.writeHeader(head[i], head[i + 1]);
        }
        res.end(body, true);
      });
    },
    fail(code) {
      if (!aborted) answer(res, code);
    },
  });
}

function answer(res: HttpResponse, code: AnsweredCode, message?: string): void {
  const r = errorResponse(code, message);
  res.cork(() => {
    res.writeStatus(`${r.status} ${STATUS_CODES[r.status] ?? 'Unknown'}`);
    for (let i = 0; i < r.headers.length; i += 2) res.writeHeader(r.headers[i], r.headers[i + 1]);
    res.end(r.body, true);
  });
}

function hasBody(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) {
    const n = headers[i];
    if (n === 'transfer-encoding' || (n === 'content-length' && headers[i + 1].trim() !== '0')) return true;
  }
  return false;
}

/** A close code that may be sent in a Close frame (RFC 6455 §7.4): 1005/1006/1015 and out-of-range ones may not. */
export function sendableCloseCode(code: number, fallback: number): number {
  if (code === 1005) return 1000;
  if (code === 1006 || code === 1015) return fallback;
  if ((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999)) return code;
  return fallback;
}
