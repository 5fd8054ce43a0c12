// The daemon's two listeners, opened by run.ts: the client listener on the front end complete.ts
// chose (falling back to node:http when uWS cannot listen under --frontend=auto), and the peer
// listener (proxy on) on the front end choosePeerFrontend picks beside it.

import { ErrorCode } from '../api/errors';
import type { Socket } from 'node:net';
import type http from 'node:http';
import type https from 'node:https';
import type { TLSSocket } from 'node:tls';
import { handshakeUser, listenNode, listenPeer } from '../listener/listen-node';
import { listenPeerUWS, listenUWS, UWS_MAX_CLIENT_CERTIFICATE_BYTES, type UwsRunningListener } from '../listener/uws';
import { choosePeerFrontend } from '../listener/frontend';
import type { Exchange, RunningListener } from '../listener/exchange';
import { answerStatus } from '../listener/answer';
import { webSocketDialer } from '../upstream/websocket';
import { lowercasedHeaders, tunnelUpgrade } from '../upstream/upgrade';
import { writeStatus } from '../respond/write';
import { certificateRefusal, isRefusal } from '../api/identity';
import { ClientCA } from '../api/client-ca';
import { PeerProxiedHeader } from '../api/headers';
import { firstValue } from '../proxy/proxied';
import type { CompletedConfig } from './complete';
import type { Components } from './build';

export interface ClientListener {
  readonly listener: RunningListener;
  readonly frontend: 'uws' | 'node';
  /** The node front end's TLS server, for certificate reload (lifecycle/reload.ts). */
  readonly server?: https.Server;
  /** The uWS front end's listener when it serves TLS, for certificate reload. */
  readonly uws?: UwsRunningListener;
}

export async function listenClient(c: CompletedConfig, p: Components): Promise<ClientListener> {
  const { config, clientTLS, policy, localURL, localTLS, identityRules } = c;
  const { handler, lifecycle, certificateUsers, log } = p;
  let frontendReason = c.frontend.reason;
  let opened: ClientListener | undefined;
  if (c.frontend.frontend === 'uws') {
    try {
      const l = await listenUWS(c.frontend.uws, {
        host: config.bindAddress,
        port: config.securePort,
        tls: clientTLS ? { certFile: config.tlsCertFile!, keyFile: config.tlsPrivateKeyFile!, caFile: clientTLS.clientCA ? config.clientCAFile : undefined, ciphers: policy.ciphers } : undefined,
        certificateUsers,
        onRequest: (ex) => handler.handleClient(ex),
        lifecycle,
        onUpgradeRefused: (ex) => writeStatus(ex, ErrorCode.MVP_ERR_UPGRADE_UNSUPPORTED),
        webSocket: webSocketDialer({
          target: localURL,
          tls: localTLS,
          identityRules,
          metrics: p.metrics,
          headTimeoutMs: config.requestTimeoutMs,
          peerFor: (method, url, headers) => handler.upgradePeer(method, url, firstValue(headers, PeerProxiedHeader)),
          peerTLS: c.peerTLS,
        }),
        onOversizedCertificate: (bytes, remote) =>
          log.info(1, 'connection closed unanswered: its client certificate is larger than the uWebSockets.js front end can answer over TLS 1.3 (use --frontend=node for such certificates)', { remote, certificateBytes: bytes, limit: UWS_MAX_CLIENT_CERTIFICATE_BYTES }),
      });
      opened = { listener: l, frontend: 'uws', ...(clientTLS ? { uws: l } : {}) };
    } catch (e) {
      // This uWS build binds without SO_REUSEADDR: after a restart, connections it closed itself
      // sit in TIME_WAIT for up to 60 s and block the port. node:http (libuv) can bind: keep serving.
      // Asked for uWS: never switch; the listen failure is a runtime one (exit 1, main.ts says which flag).
      if (config.frontend === 'uws') throw e;
      frontendReason = `uWebSockets.js could not listen (${(e as Error).message})`;
    }
  }
  const frontend = opened?.frontend ?? 'node';
  log.info(0, `client listener front end: ${frontend === 'uws' ? 'uWebSockets.js' : 'node:http/https'}`, { frontend, setting: config.frontend, reason: frontendReason });
  if (opened) return opened;
  const l = await listenNode({ host: config.bindAddress, port: config.securePort, tls: clientTLS && { ...clientTLS, certificateUsers }, lifecycle, connections: p.connections, reusePort: config.reusePort, onRequest: (ex) => handler.handleClient(ex), onUpgrade: clientUpgrade(c, p) });
  return { listener: l, frontend: 'node', ...(clientTLS ? { server: l.server as https.Server } : {}) };
}

export interface PeerListener {
  readonly listener: RunningListener;
  readonly frontend: 'uws' | 'node';
  /** For certificate reload: the node:https server, or the uWS listener. */
  readonly server?: https.Server;
  /** --requestheader-client-ca-file as Go reads it: a reload gives it the new file. */
  readonly ca: ClientCA;
  readonly uws?: UwsRunningListener;
}

/** The peer listener (proxy on: complete.ts read its files) beside a client listener on `clientFrontend`. */
export async function listenPeerListener(c: CompletedConfig, p: Components, clientFrontend: 'uws' | 'node'): Promise<PeerListener> {
  const { config, policy } = c;
  const { handler, lifecycle, log } = p;
  const files = c.peerListener!;
  const onRejected = (ex: Exchange, why: string) => {
    log.info(2, 'peer request rejected', { remote: ex.remoteAddress, reason: why });
    writeStatus(ex, ErrorCode.MVP_ERR_PEER_UNAUTHORIZED);
  };
  const peerChoice = choosePeerFrontend(clientFrontend, policy.minVersion, undefined, config.peerFrontend);
  const ca = new ClientCA('--requestheader-client-ca-file', files.clientCA);
  let opened: PeerListener;
  if (peerChoice.frontend === 'uws' && c.frontend.frontend === 'uws') {
    const l = await listenPeerUWS(c.frontend.uws, {
      host: config.peerBindAddress,
      port: config.peerPort,
      files: { certFile: (config.peerTLSCertFile ?? config.tlsCertFile)!, keyFile: (config.peerTLSPrivateKeyFile ?? config.tlsPrivateKeyFile)!, caFile: config.requestheaderClientCAFile! },
      ciphers: policy.ciphers,
      allowedNames: config.requestheaderAllowedNames,
      ca,
      isIdentityHeader: (name) => c.identityRules.isIdentityHeader(name),
      onRequest: (ex) => handler.handlePeer(ex),
      onRejected,
      // Upgrades between peers are not proxied (in-tree they would arrive without identity, docs/kubernetes-mvp.md §2.3).
      onUpgradeRefused: (ex) => writeStatus(ex, ErrorCode.MVP_ERR_PEER_UPGRADE),
      lifecycle,
    });
    opened = { listener: l, frontend: 'uws', uws: l, ca };
  } else {
    const l = await listenPeer({
      host: config.peerBindAddress,
      port: config.peerPort,
      cert: files.cert,
      key: files.key,
      clientCA: files.clientCA,
      ca,
      policy,
      allowedNames: config.requestheaderAllowedNames,
      onRequest: (ex) => handler.handlePeer(ex),
      onUpgrade: peerUpgrade(c, p),
      lifecycle,
      connections: p.connections,
      reusePort: config.reusePort,
      onRejected,
    });
    opened = { listener: l, frontend: 'node', server: l.server as https.Server, ca };
  }
  log.info(0, `peer listener front end: ${peerChoice.frontend === 'uws' ? 'uWebSockets.js' : 'node:https'}`, { frontend: peerChoice.frontend, reason: peerChoice.reason });
  return opened;
}

type UpgradeHandler = (req: http.IncomingMessage, socket: Socket, head: Buffer) => void;

/**
 * Exec, attach and port-forward on the node front end: to the local apiserver, or (--local-failover,
 * issue 30) while it is not serving, to a peer's peer listener, which tunnels them to its own apiserver.
 */
function clientUpgrade(c: CompletedConfig, p: Components): UpgradeHandler {
  const { config, localURL, localTLS, identityRules } = c;
  const { handler, lifecycle, tunnels, log } = p;
  return (req, socket, head) => {
    // The user its TLS handshake verified (listen-node.ts handshakeUser), never the certificate of the moment.
    const user = handshakeUser(req.socket as TLSSocket);
    const incoming = lowercasedHeaders(req.rawHeaders);
    const refused = certificateRefusal(user, incoming);
    if (refused !== undefined) return answerStatus(socket, ErrorCode.MVP_ERR_CERTIFICATE_USER, refused);
    const peer = handler.upgradePeer(req.method ?? 'GET', req.url ?? '/', firstValue(incoming, PeerProxiedHeader));
    tunnelUpgrade(req, socket, head, {
      incoming,
      ...(peer === undefined ? { target: localURL, tls: localTLS } : { target: new URL(`https://${peer}`), tls: c.peerTLS, peerHop: true }),
      log,
      tunnels,
      identity: user === null || isRefusal(user) ? undefined : user,
      identityRules,
      metrics: p.metrics,
      headTimeoutMs: config.requestTimeoutMs,
      draining: lifecycle.draining,
    });
  };
}

/**
 * From a verified peer (listen-node.ts listenPeer checks its certificate): to the local apiserver,
 * its identity headers passed on as on any peer request.
 */
function peerUpgrade(c: CompletedConfig, p: Components): UpgradeHandler {
  const { config, localURL, localTLS, identityRules } = c;
  const { lifecycle, tunnels, log } = p;
  return (req, socket, head) =>
    tunnelUpgrade(req, socket, head, { target: localURL, tls: localTLS, log, tunnels, identityRules, metrics: p.metrics, trustIdentityHeaders: true, headTimeoutMs: config.requestTimeoutMs, draining: lifecycle.draining });
}
