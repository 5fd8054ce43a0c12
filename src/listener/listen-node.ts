// Client listener (node front end) and peer listener, both on node:http/https. With TLS the client
// listener is node:http2 with HTTP/1.1 beside it (ALPN h2, http/1.1), as kube-apiserver offers
// both: client-go speaks HTTP/2 by default, and upgrades (exec/attach/port-forward) need HTTP/1.1.
//
// The peer listener here is node:http2 (HTTP/1.1 beside it) with requestCert (uws.ts listenPeerUWS serves it on the uWS
// front end when that build reads client certificates): a peer must present a client
// certificate that verifies against --requestheader-client-ca-file (else the TLS handshake fails)
// and whose CN is in --requestheader-allowed-names, an empty list allowing any CN from that CA
// (else 401 Status), exactly as kube-apiserver's request-header authenticator (docs/kubernetes-mvp.md §2.5).

import { NO_RENEGOTIATION, type TLSPolicy } from '../config/tls-policy';
import http from 'node:http';
import http2 from 'node:http2';
import net, { type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { ListenerState, MAX_HEADER_BYTES, MAX_HEADER_FIELDS, type Exchange, type RunningListener } from './exchange';
import { NodeExchange, behindRefusal, isHTTP2 } from './node-http';
import { ErrorCode } from '../api/errors';
import { CertificateUsers, type CertificateUser } from '../api/identity';
import type { ClientCA } from '../api/client-ca';
import { answerStatus, closeAfterAnswer } from './answer';
import { peerCertificateProblem, PeerVerdicts } from './peer-auth';
import type { ConnectionCount } from '../telemetry/connections';

export interface NodeListenerOptions {
  host: string;
  port: number;
  /**
   * `clientCA`: ask clients for a certificate (optional: bearer tokens still work) and forward a
   * verified one's user, read by `certificateUsers` (default: from clientCA, without a UID header).
   */
  tls?: { cert: Buffer; key: string | Buffer; clientCA?: Buffer; policy?: TLSPolicy; certificateUsers?: CertificateUsers };
  onRequest(ex: Exchange): void;
  /** The daemon's lifecycle (lifecycle/state.ts): responses close their connections once it drains. */
  lifecycle?: { readonly draining: boolean };
  /** HTTP Upgrade (exec/attach/port-forward over WebSocket or SPDY); absent = refused with a Status. */
  onUpgrade?(req: http.IncomingMessage, socket: Socket, head: Buffer): void;
  /** Counts open connections (lifecycle/memory.ts). */
  connections?: ConnectionCount;
  /** SO_REUSEPORT (--reuse-port). */
  reusePort?: boolean;
}

/** Long-lived keep-alive like kube-apiserver's clients expect; 16 KiB of headers fits bearer JWTs plus Impersonate-*. */
const SERVER_OPTIONS: http.ServerOptions = { keepAliveTimeout: 30_000, maxHeaderSize: MAX_HEADER_BYTES, requestTimeout: 0, headersTimeout: 60_000 };

export function listenNode(o: NodeListenerOptions): Promise<NodeRunningListener> {
  const state = new ListenerState(o.lifecycle);
  const clientCA = o.tls?.clientCA;
  const users = clientCA ? (o.tls?.certificateUsers ?? new CertificateUsers({ uidHeader: false }, clientCA)) : null;
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (behindRefusal(req)) return;
    dispatch(req, new NodeExchange(req, res, state, handshakeUser(connectionSocket(req))), o.onRequest);
  };
  const server = o.tls
    ? (http2.createSecureServer(
        {
          cert: o.tls.cert,
          key: o.tls.key,
          ...(clientCA ? { ca: clientCA, requestCert: true, rejectUnauthorized: false } : {}),
          ...o.tls.policy,
          secureOptions: (o.tls.policy?.secureOptions ?? 0) | NO_RENEGOTIATION,
          allowHTTP1: true,
          // HTTP/2 streams of one client share its connection: as many as Go's server allows (250), and a
          // header list the size node:http allows on HTTP/1.1.
          settings: { maxConcurrentStreams: 250, maxHeaderListSize: MAX_HEADER_BYTES },
          maxHeaderListPairs: MAX_HEADER_FIELDS,
        },
        handler as unknown as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
      ) as unknown as http.Server)
    : http.createServer(SERVER_OPTIONS, handler);
  if (users !== null) {
    // A certificate is optional (bearer-token clients send none), but one that is sent must verify:
    // another CA, expired, or not for client auth ends the connection before any request is read,
    // as the uWS front end's handshake refuses it (uSockets SSL_VERIFY_PEER). Never served as anonymous.
    // The user is read here, once, from the handshake that verified it: every request and upgrade of
    // the connection is that user's, whatever the socket reports later (NO_RENEGOTIATION).
    server.on('secureConnection', (sock: TLSSocket) => {
      if (!sock.authorized) {
        const presented = sock.getPeerCertificate();
        if (presented && Object.keys(presented).length > 0) return void sock.destroy();
      }
      (sock as Verified)[HANDSHAKE_USER] = socketUser(sock, users);
    });
  }
  const onUpgrade = o.onUpgrade;
  if (onUpgrade) {
    server.on('upgrade', (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
      if (behindRefusal(req)) return closeBehindRefusal(socket);
      onUpgrade(req, socket, head);
    });
  }
  answerExpectations(server, handler);
  return start(server, o.host, o.port, state, o.connections, o.reusePort);
}

export interface PeerListenerOptions {
  host: string;
  port: number;
  /** Serving certificate and key: peers check it against their --peer-ca-file as kubernetes.default.svc. */
  cert: Buffer;
  key: Buffer;
  /** --requestheader-client-ca-file: the CA peers' proxy client certificates must chain to (the handshake's, OpenSSL). */
  clientCA: Buffer;
  /** The same file as Go reads it: a peer's certificate must be one of its CAs signed directly (listener/peer-auth.ts). */
  ca: ClientCA;
  /** --tls-min-version / --tls-cipher-suites. */
  policy?: TLSPolicy;
  /** --requestheader-allowed-names; empty = any CN signed by clientCA. */
  allowedNames: readonly string[];
  onRequest(ex: Exchange): void;
  onRejected(ex: Exchange, why: string): void;
  /**
   * A protocol upgrade from a verified peer (issue 30: an exec/attach/port-forward its local
   * apiserver could not take); absent: refused with a Status.
   */
  onUpgrade?(req: http.IncomingMessage, socket: Socket, head: Buffer): void;
  /** The daemon's lifecycle (lifecycle/state.ts): responses close their connections once it drains. */
  lifecycle?: { readonly draining: boolean };
  /** Counts open connections (lifecycle/memory.ts). */
  connections?: ConnectionCount;
  /** SO_REUSEPORT (--reuse-port). */
  reusePort?: boolean;
}

export function listenPeer(o: PeerListenerOptions): Promise<NodeRunningListener> {
  const allowed = new Set(o.allowedNames);
  const state = new ListenerState(o.lifecycle);
  // The certificate is the one of the connection's handshake (secureConnection below), judged per
  // request (peer-auth.ts PeerVerdicts): null = allowed, else why not.
  const verdicts = new PeerVerdicts(allowed, o.ca);
  const verdictOf = (sock: TLSSocket): string | null => {
    const v = (sock as Verified)[PEER_VERDICT];
    if (v === undefined) return 'no verified TLS handshake on this connection';
    return typeof v === 'string' ? v : verdicts.of(v.fingerprint, () => v.der);
  };
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (behindRefusal(req)) return;
    const why = verdictOf(connectionSocket(req));
    const ex = new NodeExchange(req, res, state);
    if (why === null) dispatch(req, ex, o.onRequest);
    else o.onRejected(ex, why);
  };
  // HTTP/2 beside HTTP/1.1 (ALPN h2, http/1.1), as the client listener: a source mvproxy sends its
  // long-running requests (peer-routed watches) as streams of a few shared connections
  // (upstream/h2), everything else on HTTP/1.1.
  const server = http2.createSecureServer(
    {
      cert: o.cert,
      key: o.key,
      ca: o.clientCA,
      requestCert: true,
      rejectUnauthorized: true,
      ...o.policy,
      secureOptions: (o.policy?.secureOptions ?? 0) | NO_RENEGOTIATION,
      allowHTTP1: true,
      settings: { maxConcurrentStreams: 250, maxHeaderListSize: MAX_HEADER_BYTES },
      maxHeaderListPairs: MAX_HEADER_FIELDS,
    },
    handler as unknown as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
  ) as unknown as http.Server;
  server.on('secureConnection', (sock: TLSSocket) => ((sock as Verified)[PEER_VERDICT] = peerCertificate(sock, allowed)));
  answerExpectations(server, handler);
  // Upgrades between peers: in-tree never proxies them (they would arrive without identity,
  // docs/kubernetes-mvp.md §2.3); mvproxy's own failover (issue 30) sends them with the front-proxy
  // identity, and they are taken from a peer whose certificate may use this listener. Otherwise a
  // Status, and the connection closes; nothing after the upgrade request is read.
  server.on('upgrade', (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
    if (behindRefusal(req)) return closeBehindRefusal(socket);
    socket.on('error', () => undefined);
    const why = verdictOf(req.socket as TLSSocket);
    if (o.onUpgrade !== undefined && why === null) return o.onUpgrade(req, socket, head);
    socket.pause();
    if (why !== null) return answerStatus(socket, ErrorCode.MVP_ERR_PEER_UNAUTHORIZED, why);
    answerStatus(socket, ErrorCode.MVP_ERR_PEER_UPGRADE);
  });
  return start(server, o.host, o.port, state, o.connections, o.reusePort);
}

/**
 * Hands a request to the proxy. An HTTP/2 stream waits one turn: node calls the handler as it
 * parses the stream's HEADERS, before the frames read with them, so a RST_STREAM right behind
 * (rapid reset, CVE-2023-44487) was not seen yet and the request went upstream anyway: 1,000 reset
 * streams sent ~320 requests the apiserver ran in full and opened 512 upstream connections
 * (test/security/h2-floods.test.ts). One turn later the rest of the read is parsed, and a stream
 * the client reset is never sent. HTTP/1.1 has nothing to reset a request with.
 */
function dispatch(req: http.IncomingMessage, ex: NodeExchange, onRequest: (ex: Exchange) => void): void {
  if (!isHTTP2(req)) return onRequest(ex);
  const stream = (req as unknown as http2.Http2ServerRequest).stream;
  setImmediate(() => {
    if (stream.closed || stream.destroyed || ex.clientClosed) return;
    onRequest(ex);
  });
}

/**
 * kube-apiserver's timeouts for a connection with no request under way (k8s.io/apiserver
 * secure_serving.go: ReadHeaderTimeout 32 s before the first request, IdleTimeout 90 s after the
 * last one). node's http2 server has none: a client that sent its preface and nothing more, or a
 * HEADERS frame a byte at a time, held a connection for ever (test/slow/idle-connections.test.ts).
 */
const H2_FIRST_REQUEST_MS = 32_000;
const H2_IDLE_MS = 90_000;
/** After the GOAWAY, how long an idle session has to go before it is destroyed. */
const H2_CLOSE_GRACE_MS = 1_000;

/** Ends an HTTP/2 session that has no stream open for H2_FIRST_REQUEST_MS at first, H2_IDLE_MS later. */
function closeWhenIdle(sess: http2.Http2Session): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = (ms: number) => {
    timer = setTimeout(() => {
      if (sess.closed || sess.destroyed) return;
      sess.close(); // GOAWAY: no stream is open
      setTimeout(() => sess.destroy(), H2_CLOSE_GRACE_MS).unref();
    }, ms);
    timer.unref();
  };
  arm(H2_FIRST_REQUEST_MS);
  sess.on('stream', (stream: http2.ServerHttp2Stream) => {
    open++;
    clearTimeout(timer);
    stream.once('close', () => {
      if (--open === 0 && !sess.closed) arm(H2_IDLE_MS);
    });
  });
  sess.once('close', () => clearTimeout(timer));
}

/** An upgrade pipelined behind a refused request: never read; the connection ends after the refusal's answer. */
function closeBehindRefusal(socket: Socket): void {
  socket.on('error', () => undefined);
  socket.pause();
  closeAfterAnswer(socket);
}

/**
 * Requests with an Expect header reach the same handler, which answers as Go's net/http does
 * (NodeExchange): node:http would otherwise send `100 Continue` before anyone reads the body, and
 * answer any other expectation with a plain-text 417 instead of a Status.
 */
function answerExpectations(server: http.Server, handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): void {
  server.on('checkContinue', handler);
  server.on('checkExpectation', handler);
}

/** At the handshake: the connection's client certificate if node:tls verified it, read by CertificateUsers per request (api/identity.ts), else null. */
function socketUser(sock: TLSSocket, users: CertificateUsers): HandshakeCertificate | null {
  if (!sock.authorized) return null;
  const cert = sock.getPeerCertificate();
  return cert?.raw ? { der: cert.raw, fingerprint: cert.fingerprint256, users } : null;
}

/** A certificate a connection's handshake verified; who it makes a request's user is asked per request. */
interface HandshakeCertificate {
  readonly der: Buffer;
  readonly fingerprint: string;
  readonly users?: CertificateUsers;
}

/**
 * What a TLS connection's handshake verified, kept on its socket: an HTTP/2 request reaches its
 * connection through proxies node makes (req.socket per request, session.socket per session), which
 * read such a property from the socket itself, where a WeakMap keyed by the socket would miss.
 */
const HANDSHAKE_USER = Symbol('mvproxy handshake user');
const PEER_VERDICT = Symbol('mvproxy peer verdict');
type Verified = TLSSocket & { [HANDSHAKE_USER]?: HandshakeCertificate | null; [PEER_VERDICT]?: string | HandshakeCertificate };

/**
 * The user of the certificate a connection was verified with at its handshake (null: none, or a
 * connection of no listener that reads certificates), now: kube-apiserver verifies per request, so
 * an expired certificate or one of a CA no longer in the file has no user on an open connection
 * either (helper 28). Requests and upgrades read this, never the socket's certificate of the moment.
 */
export function handshakeUser(sock: TLSSocket): CertificateUser {
  const c = (sock as Verified)[HANDSHAKE_USER];
  return c?.users ? c.users.ofDER(c.der, c.fingerprint) : null;
}

/** The TLS connection of a request: on HTTP/2, req.socket is a proxy made per request; the session's socket is the one. */
function connectionSocket(req: http.IncomingMessage): TLSSocket {
  return ((req as unknown as http2.Http2ServerRequest).stream?.session?.socket ?? req.socket) as TLSSocket;
}

/** At the handshake: why the connection may not use the peer listener at all, or its verified certificate (judged per request). */
function peerCertificate(sock: TLSSocket, allowed: ReadonlySet<string>): string | HandshakeCertificate {
  if (!sock.authorized) return peerCertificateProblem(false, String(sock.authorizationError), undefined, allowed)!;
  const cert = sock.getPeerCertificate();
  return cert?.raw ? { der: cert.raw, fingerprint: cert.fingerprint256 } : 'client certificate unreadable';
}

export interface NodeRunningListener extends RunningListener {
  readonly server: http.Server;
}

function start(server: http.Server, host: string, port: number, state: ListenerState, connections: ConnectionCount | undefined, reusePort = false): Promise<NodeRunningListener> {
  if (connections) server.on('connection', (sock: Socket) => connections.track(sock));
  // HTTP/2 sessions (client listener with TLS): GOAWAY when the listener stops accepting (streams in
  // flight finish, the client opens new ones elsewhere), destroyed at close.
  const sessions = new Set<http2.Http2Session>();
  // node:http2's secure server sets TCP_NODELAY on its HTTP/2 connections only: an HTTP/1.1 one
  // (allowHTTP1) kept Nagle, and a small answer could wait for the client's delayed ACK (strace,
  // bench/rate.ts). node:http sets it itself.
  server.on('secureConnection', (sock: Socket) => sock.setNoDelay(true));
  server.on('session', (sess: http2.Http2Session) => {
    sessions.add(sess);
    sess.once('close', () => sessions.delete(sess));
    closeWhenIdle(sess);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, reusePort }, () => {
      server.off('error', reject);
      const addr = server.address();
      resolve({
        server,
        port: typeof addr === 'object' && addr ? addr.port : port,
        stopAccepting: () => {
          state.stopAccepting();
          // Stop listening, and only that. http.Server.close() would also destroy the idle keep-alive
          // connections at once (Node >= 19), and a request a client sent on one in that instant got
          // ECONNRESET (test/integration/shutdown.test.ts, seen once under load). Left open, such a
          // request gets the drain's 429 Status with Connection: close, which clients retry
          // (client-go honours its Retry-After); uWS's us_listen_socket_close behaves the same way.
          // close() ends what is left.
          if (server.listening) net.Server.prototype.close.call(server);
          for (const sess of sessions) if (!sess.closed) sess.close();
        },
        close: () => {
          if (server.listening) server.close();
          for (const sess of sessions) sess.destroy();
          // http2's server has no closeAllConnections: its HTTP/1.1 connections end with the process.
          if (typeof server.closeAllConnections === 'function') server.closeAllConnections();
        },
      });
    });
  });
}
