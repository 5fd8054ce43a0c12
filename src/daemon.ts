// Wiring only: configuration → components → listeners. Returns a handle tests and main() use.

import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import type http from 'node:http';
import type { Dispatcher } from 'undici';
import type { DaemonConfig } from './config/types';
import { isLoopback } from './config/values';
import { createPool, localRelay, PeerPools, PEER_SERVER_NAME, type TLSFiles } from './upstream/pools';
import { IdentityHeaderRules, ownPeerIdentityHeaders } from './upstream/headers';
import { SnapshotHolder } from './snapshot/holder';
import { ProxyHandler } from './proxy/handler';
import { writeStatus } from './respond/write';
import { Lifecycle } from './lifecycle/state';
import { SnapshotPublisher } from './snapshot/publisher';
import { Metrics } from './telemetry/metrics';
import { createLogger, type Logger } from './telemetry/log';
import { listenNode, listenPeer, socketUser } from './listener/listen-node';
import { CertificateUsers, certificateRefusal, isRefusal } from './api/identity';
import { answerStatus } from './listener/answer';
import { firstValue } from './proxy/proxied';
import { PeerProxiedHeader } from './api/headers';
import { ErrorCode } from './api/errors';
import type { TLSSocket } from 'node:tls';
import { listenPeerUWS, listenUWS, loadUWS, UWS_MAX_CLIENT_CERTIFICATE_BYTES, type UwsRunningListener } from './listener/uws';
import type { Exchange, RunningListener } from './listener/exchange';
import { webSocketDialer } from './upstream/websocket';
import { chooseFrontend, choosePeerFrontend } from './listener/frontend';
import { Tunnels, tunnelUpgrade } from './upstream/upgrade';
import { HealthChecks, ping } from './observability/healthz';
import { routesReport } from './observability/routes';
import { tlsPolicy } from './config/tls-policy';
import { setTimeout as sleep } from 'node:timers/promises';
import { listenOps } from './observability/ops-server';
import pkg from '../package.json';
import type https from 'node:https';
import { Peering } from './peers/peering';
import { ReloadablePool } from './lifecycle/certs';
import { startCertReload } from './lifecycle/reload';
import { BearerTokenFile, withBearerToken } from './lifecycle/token';
import { LocalAPIServer } from './snapshot/local-apiserver';
import { readOpenFilesLimit } from './api/fd-limit';
import { MemoryReturn } from './lifecycle/memory';

/** Graceful shutdown waits at most this long for the identity Lease deletion (kubernetes#140242: never hang on the apiserver). */
const LEASE_RELEASE_TIMEOUT_MS = 2_000;

export interface Daemon {
  readonly config: DaemonConfig;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly metricsPort: number;
  readonly frontend: 'uws' | 'node';
  /** The peer listener's front end (listener/frontend.ts choosePeerFrontend); node when the proxy is off. */
  readonly peerFrontend: 'uws' | 'node';
  /** The published snapshot (route table, discovery documents, exclusions, peer addresses). */
  readonly snapshots: SnapshotHolder;
  readonly lifecycle: Lifecycle;
  readonly publisher: SnapshotPublisher;
  readonly metrics: Metrics;
  /** Membership and peer health (undefined when the proxy is off). */
  readonly peering: Peering | undefined;
  /** Replaces the static peer list and refreshes discovery now (resolves when the new table is published). */
  setStaticPeers(peers: { id: string; address: string }[]): Promise<void>;
  /**
   * The graceful shutdown sequence (README "Shutdown"): /readyz fails, serve on for
   * --shutdown-delay-duration, stop accepting, end watches cleanly, drain in-flight requests for at
   * most --shutdown-drain-timeout, then close. Never blocks longer than delay + drain + 1 s.
   */
  shutdown(): Promise<void>;
  /** Closes everything at once. */
  close(): Promise<void>;
}

export class ConfigError extends Error {
  readonly code = ErrorCode.MVP_ERR_CONFIG;
}

export interface DaemonDeps {
  log?: Logger;
  metrics?: Metrics;
  /** Loads the uWebSockets.js module (replaceable to exercise the fallback). */
  loadUWS?: typeof loadUWS;
}

export async function startDaemon(config: DaemonConfig, deps: DaemonDeps = {}): Promise<Daemon> {
  const log = deps.log ?? createLogger(config.verbosity, config.loggingFormat);
  const metrics = deps.metrics ?? new Metrics({ defaultMetrics: true });
  const read = (f: string | undefined) => (f ? readFileSync(f) : undefined);

  logOpenFilesLimit(log);

  const gateOn = config.featureGates.UnknownVersionInteroperabilityProxy !== false;
  // As kube-apiserver 1.36: the proxy needs --peer-ca-file; without it, serve local-only (and say so).
  const proxyEnabled = gateOn && !!config.peerCAFile;
  if (gateOn && !config.peerCAFile) log.info(0, '--peer-ca-file is not set: the mixed version proxy is off and every request goes to the local apiserver');

  // --tls-min-version / --tls-cipher-suites: every listener and every upstream connection.
  const policy = tlsPolicy(config.tlsMinVersion, config.tlsCipherSuites);
  const clientTLS = config.tlsCertFile && config.tlsPrivateKeyFile ? { cert: read(config.tlsCertFile)!, key: read(config.tlsPrivateKeyFile)!, clientCA: read(config.clientCAFile), policy } : undefined;
  const choice = chooseFrontend(config.frontend, { clientCertificates: !!clientTLS?.clientCA, tlsMinVersion: clientTLS ? policy.minVersion : undefined }, deps.loadUWS ?? loadUWS);
  if ('error' in choice) throw new ConfigError(choice.error);
  if (!clientTLS && !isLoopback(config.bindAddress)) {
    throw new ConfigError(`--bind-address=${config.bindAddress} is not a loopback address: plain HTTP is only served on loopback; set --tls-cert-file and --tls-private-key-file`);
  }

  const localURL = new URL(config.localAPIServer);
  // The proxy client certificate goes to the local apiserver too: it is what makes the identity
  // headers of certificate users (--client-ca-file) and of peers' users trusted there.
  const localTLS: TLSFiles | undefined =
    localURL.protocol === 'https:' ? { ca: read(config.localAPIServerCAFile), servername: config.localAPIServerServerName, cert: read(config.proxyClientCertFile), key: read(config.proxyClientKeyFile), policy } : undefined;
  // Reloadable: a new --local-apiserver-ca-file (or proxy client pair) makes a new pool, the old one drains.
  const localPool = new ReloadablePool(() => createPool(localURL.origin, { connectTimeoutMs: config.connectTimeoutMs, tls: localTLS }));
  const local: Dispatcher = localPool;
  // The same apiserver without the client certificate: requests with no front-proxy identity
  // (bearer tokens, anonymous, mvproxy's own token) must reach it as they would directly (carriesIdentity).
  const localPlainPool = new ReloadablePool(() => createPool(localURL.origin, { connectTimeoutMs: config.connectTimeoutMs, tls: localTLS && { ca: localTLS.ca, servername: localTLS.servername, policy } }));
  const localPlain: Dispatcher = localPlainPool;
  // The relay's own client for proxied requests (upstream/h1/origin.ts); the undici pools above
  // stay for mvproxy's own calls (discovery, CRD and Lease lists, probes).
  const localPlainTLS = () => localTLS && { ca: localTLS.ca, servername: localTLS.servername, policy };
  const relayLocal = localRelay(localURL, config.connectTimeoutMs, localTLS, config.upstreamHTTP2);
  const relayLocalPlain = localRelay(localURL, config.connectTimeoutMs, localPlainTLS(), config.upstreamHTTP2);
  const peerTLS: TLSFiles = { ca: read(config.peerCAFile), cert: read(config.proxyClientCertFile), key: read(config.proxyClientKeyFile), servername: PEER_SERVER_NAME, policy };
  const peerPools = new PeerPools({ connectTimeoutMs: config.connectTimeoutMs, tls: peerTLS, http2: config.upstreamHTTP2 });
  const snapshots = new SnapshotHolder();
  const lifecycle = new Lifecycle();
  // Beyond in-tree: answer legacy discovery for peer-only groups (kubectl 1.27–1.29, python clients).
  const legacyDiscoveryFix = config.legacyDiscoveryFix;
  const identityRules = new IdentityHeaderRules(config.requestheaderUsernameHeaders, config.requestheaderGroupHeaders, config.requestheaderExtraHeadersPrefix, config.requestheaderUidHeaders);
  // Certificate users are read as kube-apiserver reads them (api/identity.ts), by both front ends
  // and the upgrade paths; the client CA bundle is given again on a reload (lifecycle/reload.ts).
  const certificateUsers = clientTLS?.clientCA ? new CertificateUsers({ uidHeader: identityRules.uidHeader !== undefined }, clientTLS.clientCA) : undefined;
  // Whether the local apiserver serves (issue 30, --local-failover): /readyz every second, and what
  // the request path sees. Its `onServing` refreshes discovery once the publisher exists.
  let onLocalServing = () => undefined as unknown;
  const localAPIServer =
    proxyEnabled && config.localFailover
      ? new LocalAPIServer({
          snapshots,
          log,
          probe: async () => {
            const res = await ownLocalForProbe().request({ path: '/readyz', method: 'GET', headersTimeout: 2_000, bodyTimeout: 2_000 });
            await res.body.dump();
            return res.statusCode;
          },
          onServing: () => onLocalServing(),
        })
      : undefined;
  metrics.localStateSource = () => snapshots.current.local;
  const handler = new ProxyHandler({ local: relayLocal, localPlain: relayLocalPlain, peers: peerPools, snapshots, lifecycle, proxyEnabled, legacyDiscoveryFix, identityRules, requestTimeoutMs: config.requestTimeoutMs, heldRequestBodyBytes: config.heldRequestBodyBytes, metrics, log, localFailover: localAPIServer !== undefined, localHealth: localAPIServer });

  // mvproxy's own calls to the local apiserver (discovery, CRD lists, identity Leases) carry its token; clients' requests never do.
  const token = config.localAPIServerTokenFile ? new BearerTokenFile(config.localAPIServerTokenFile, { log }) : undefined;
  token?.start();
  const ownLocal = token ? withBearerToken(localPlain, () => token.current) : localPlain;
  const ownLocalForProbe = () => ownLocal;
  // Membership (static list or identity Leases) and peer health; started once the peer listener is up.
  const peerIdentityHeaders = ownPeerIdentityHeaders(identityRules);
  const peering = proxyEnabled
    ? new Peering({ config, local: ownLocal, peerPools, peerIdentityHeaders, metrics, log, onMembershipChange: (peers) => { addPeerChecks(peers); void publisher.refresh(); }, onReachabilityChange: () => peerReachabilityChanged() })
    : undefined;
  peering?.load();
  // A peer out of routing (its probe failed): republish; requests still waiting on a peer that stopped
  // answering fail now (503 or failover) rather than at --request-timeout: a stalled peer never closes
  // its connections. Not on a peer that answered its probe with a status (its apiserver restarting):
  // it answers what it took, and cutting a create there made a 503 of a request that may have run
  // (npm run upgrade-scenario, SIGKILL: one ClusterTrustBundle create per run).
  const peerReachabilityChanged = () => {
    publisher.republish();
    if (!peering) return;
    for (const p of peering.peers()) {
      if (peering.unresponsive(p.id)) handler.inflight.abandonPeer(p.address, peering.problem(p.id) ?? 'unreachable');
    }
  };
  const publisher = new SnapshotPublisher({
    localID: config.serverID,
    local: ownLocal,
    peerPools,
    peerIdentityHeaders,
    snapshots,
    peers: () => peering?.peers() ?? [],
    peerReachable: (id) => peering?.reachable(id) ?? true,
    refreshIntervalMs: config.discoveryRefreshIntervalMs,
    peerGraceMs: config.peerDiscoveryGraceMs,
    fetchTimeoutMs: Math.min(config.requestTimeoutMs, 10_000),
    metrics,
    log,
  });

  const listeners: RunningListener[] = [];
  const tunnels = new Tunnels();
  // Exec, attach and port-forward: to the local apiserver, or (--local-failover, issue 30) while it
  // is not serving, to a peer's peer listener, which tunnels them to its own apiserver.
  const onUpgrade = (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
    const user = certificateUsers ? socketUser(req.socket as TLSSocket, certificateUsers) : null;
    const incoming: string[] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) incoming.push(req.rawHeaders[i]!.toLowerCase(), req.rawHeaders[i + 1]!);
    const refused = certificateRefusal(user, incoming);
    if (refused !== undefined) return answerStatus(socket, ErrorCode.MVP_ERR_CERTIFICATE_USER, refused);
    const peer = handler.upgradePeer(req.method ?? 'GET', req.url ?? '/', firstValue(incoming, PeerProxiedHeader));
    tunnelUpgrade(req, socket, head, {
      ...(peer === undefined ? { target: localURL, tls: localTLS } : { target: new URL(`https://${peer}`), tls: peerTLS, peerHop: true }),
      log,
      tunnels,
      identity: user === null || isRefusal(user) ? undefined : user,
      identityRules,
      headTimeoutMs: config.requestTimeoutMs,
      draining: lifecycle.draining,
    });
  };
  // From a verified peer (listen-node.ts listenPeer checks its certificate): to the local apiserver,
  // its identity headers passed on as on any peer request.
  const onPeerUpgrade = (req: http.IncomingMessage, socket: Socket, head: Buffer) =>
    tunnelUpgrade(req, socket, head, { target: localURL, tls: localTLS, log, tunnels, identityRules, trustIdentityHeaders: true, headTimeoutMs: config.requestTimeoutMs, draining: lifecycle.draining });

  let frontend = choice.frontend;
  let frontendReason = choice.reason;
  let clientPort: number;
  let clientServer: https.Server | undefined;
  let peerServer: https.Server | undefined;
  let peerUWS: UwsRunningListener | undefined;
  let clientUWS: UwsRunningListener | undefined;
  if (choice.frontend === 'uws') {
    try {
      const l = await listenUWS(choice.uws, {
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
          headTimeoutMs: config.requestTimeoutMs,
          peerFor: (method, url, headers) => handler.upgradePeer(method, url, firstValue(headers, PeerProxiedHeader)),
          peerTLS,
        }),
        onOversizedCertificate: (bytes, remote) =>
          log.info(1, 'connection closed unanswered: its client certificate is larger than the uWebSockets.js front end can answer over TLS 1.3 (use --frontend=node for such certificates)', { remote, certificateBytes: bytes, limit: UWS_MAX_CLIENT_CERTIFICATE_BYTES }),
      });
      listeners.push(l);
      clientPort = l.port;
      if (clientTLS) clientUWS = l;
    } catch (e) {
      // This uWS build binds without SO_REUSEADDR: after a restart, connections it closed itself
      // sit in TIME_WAIT for up to 60 s and block the port. node:http (libuv) can bind: keep serving.
      // Asked for uWS: never switch; the listen failure is a runtime one (exit 1, main.ts says which flag).
      if (config.frontend === 'uws') throw e;
      frontendReason = `uWebSockets.js could not listen (${(e as Error).message})`;
      frontend = 'node';
    }
  }
  log.info(0, `client listener front end: ${frontend === 'uws' ? 'uWebSockets.js' : 'node:http/https'}`, { frontend, setting: config.frontend, reason: frontendReason });
  if (frontend === 'node') {
    const l = await listenNode({ host: config.bindAddress, port: config.securePort, tls: clientTLS && { ...clientTLS, certificateUsers }, lifecycle, onRequest: (ex) => handler.handleClient(ex), onUpgrade });
    if (clientTLS) clientServer = l.server as https.Server;
    listeners.push(l);
    clientPort = l.port;
  }
  metrics.buildInfo.set({ version: pkg.version, node_version: process.version, frontend }, 1);

  let peerPort = 0;
  if (proxyEnabled) {
    const cert = read(config.peerTLSCertFile ?? config.tlsCertFile);
    const key = read(config.peerTLSPrivateKeyFile ?? config.tlsPrivateKeyFile);
    const clientCA = read(config.requestheaderClientCAFile);
    if (!cert || !key || !clientCA) {
      throw new ConfigError('the peer listener needs a serving certificate (--peer-tls-cert-file/--peer-tls-private-key-file or --tls-cert-file/--tls-private-key-file) and --requestheader-client-ca-file');
    }
    const onRejected = (ex: Exchange, why: string) => {
      log.info(2, 'peer request rejected', { remote: ex.remoteAddress, reason: why });
      writeStatus(ex, ErrorCode.MVP_ERR_PEER_UNAUTHORIZED);
    };
    const peerChoice = choosePeerFrontend(frontend, policy.minVersion, undefined, config.peerFrontend);
    if (peerChoice.frontend === 'uws' && choice.frontend === 'uws') {
      const l = await listenPeerUWS(choice.uws, {
        host: config.peerBindAddress,
        port: config.peerPort,
        files: { certFile: (config.peerTLSCertFile ?? config.tlsCertFile)!, keyFile: (config.peerTLSPrivateKeyFile ?? config.tlsPrivateKeyFile)!, caFile: config.requestheaderClientCAFile! },
        ciphers: policy.ciphers,
        allowedNames: config.requestheaderAllowedNames,
        onRequest: (ex) => handler.handlePeer(ex),
        onRejected,
        // Upgrades between peers are not proxied (in-tree they would arrive without identity, docs/kubernetes-mvp.md §2.3).
        onUpgradeRefused: (ex) => writeStatus(ex, ErrorCode.MVP_ERR_PEER_UPGRADE),
        lifecycle,
      });
      listeners.push(l);
      peerPort = l.port;
      peerUWS = l;
    } else {
      const l = await listenPeer({
        host: config.peerBindAddress,
        port: config.peerPort,
        cert,
        key,
        clientCA,
        policy,
        allowedNames: config.requestheaderAllowedNames,
        onRequest: (ex) => handler.handlePeer(ex),
        onUpgrade: onPeerUpgrade,
        lifecycle,
        onRejected,
      });
      listeners.push(l);
      peerPort = l.port;
      peerServer = l.server as https.Server;
    }
    log.info(0, `peer listener front end: ${peerChoice.frontend === 'uws' ? 'uWebSockets.js' : 'node:https'}`, { frontend: peerChoice.frontend, reason: peerChoice.reason });
  }

  const health = new HealthChecks({ log });
  health.add('both', 'ping', ping);
  health.add('readyz', 'shutdown', () => (lifecycle.shuttingDown ? new Error('process is shutting down') : null));
  health.add('readyz', 'local-discovery', () => (publisher.localSynced ? null : new Error('the local apiserver\'s discovery has not been fetched yet')));
  health.add('readyz', 'discovery-snapshot-published', () => {
    const s = snapshots.current;
    return s.table.synced && (!proxyEnabled || s.discovery !== undefined) ? null : new Error('no discovery snapshot published yet');
  });
  handler.health = health;
  // One dead peer is what this daemon exists to survive: peers are informational, never failing readiness.
  const addPeerChecks = (peers: readonly { id: string }[]) => {
    for (const n of health.names('readyz')) if (n.startsWith('peer-')) health.remove('readyz', n);
    for (const p of peers) {
      health.addInformational('readyz', `peer-${p.id}`, () => {
        const why = peering?.problem(p.id);
        if (why) return new Error(why);
        return publisher.peerUp(p.id) === false ? new Error(`peer ${p.id} did not answer its last discovery fetch`) : null;
      });
    }
  };
  addPeerChecks(peering?.peers() ?? []);
  if (peering?.mode === 'lease') health.addInformational('readyz', 'identity-lease', () => peering.ownLeaseProblem());
  peering?.start(peerPort);
  onLocalServing = () => void publisher.refresh();
  localAPIServer?.start();
  if (localAPIServer) health.addInformational('readyz', 'local-apiserver', () => (localAPIServer.state === 'serving' ? null : new Error(`the local apiserver is ${localAPIServer.state} (${localAPIServer.reason}): requests a peer can answer go to a peer`)));
  const certReload = startCertReload({ config, log, certificateUsers, peerPools: proxyEnabled ? peerPools : undefined, peerTLS, peerServer, peerUWS, clientServer, clientUWS, local: [localPool, localPlainPool, { swap: () => localTLS && relayLocal.setTLS(localTLS) }, { swap: () => localTLS && relayLocalPlain.setTLS(localPlainTLS()!) }], localTLS });
  metrics.certificatesSource = () => certReload.certificates();
  metrics.peerCertificatesSource = () => peerPools.certificateExpiry;
  metrics.inFlightSource = () => handler.inflight.inFlight();
  // What a burst of requests held is given back once it ended (lifecycle/memory.ts).
  const memory = new MemoryReturn({ inFlight: () => handler.inflight.size, peak: () => handler.inflight.peak(), log });
  memory.start();
  metrics.heldBodiesSource = () => handler.heldBodies;
  metrics.peerDiscoverySuccessSource = () => publisher.lastSuccess();
  metrics.upstreamConnectionsSource = () => {
    const peer = peerPools.relayConnections();
    const local = [relayLocal, relayLocalPlain];
    return [
      { route: 'local', protocol: 'http/1.1', connections: local.reduce((n, p) => n + p.open, 0) },
      { route: 'local', protocol: 'h2', connections: local.reduce((n, p) => n + (p.h2?.sessionCount ?? 0), 0), streams: local.reduce((n, p) => n + (p.h2?.streamCount ?? 0), 0) },
      { route: 'peer', protocol: 'http/1.1', connections: peer.h1 },
      { route: 'peer', protocol: 'h2', connections: peer.h2, streams: peer.streams },
    ];
  };
  const peerStatus = () => (peering?.peers() ?? []).map((p) => ({ id: p.id, address: p.address, up: peering!.reachable(p.id), ...(peering!.problem(p.id) ? { problem: peering!.problem(p.id) } : {}) }));
  const ops = await listenOps({ address: config.metricsBindAddress, metrics, health, routes: () => routesReport(snapshots.current, peerStatus) });

  // Not awaited: the listeners answer (locally, fail open) while the first discovery runs.
  const first = publisher.start().catch((e) => log.error('discovery start failed', e));
  void first;

  lifecycle.to('serving');
  log.info(0, 'mvproxy started', { serverID: config.serverID, frontend, clientPort: clientPort!, peerPort, metricsPort: ops.port, proxyEnabled });

  const daemon: Daemon = {
    config,
    clientPort: clientPort!,
    peerPort,
    metricsPort: ops.port,
    frontend,
    peerFrontend: peerUWS ? 'uws' : 'node',
    snapshots,
    lifecycle,
    publisher,
    metrics,
    peering,
    setStaticPeers(peers) {
      peering?.setStaticPeers(peers); // a change calls addPeerChecks and refreshes (onMembershipChange)
      return publisher.refresh();
    },
    async shutdown() {
      if (!lifecycle.to('terminating')) return;
      log.info(0, 'shutting down: /readyz fails from now on', { delayMs: config.shutdownDelayMs, drainTimeoutMs: config.shutdownDrainTimeoutMs });
      // Leave the membership first (lease mode: delete the identity Lease), so peers stop routing
      // here while this node still serves; bounded, and overlapping the delay and the drain.
      const left = peering?.release(LEASE_RELEASE_TIMEOUT_MS) ?? Promise.resolve();
      if (config.shutdownDelayMs > 0) await sleep(config.shutdownDelayMs);
      lifecycle.to('draining');
      for (const l of listeners) l.stopAccepting();
      const streams = handler.inflight.endStreams();
      const drainEnd = Date.now() + config.shutdownDrainTimeoutMs;
      while (handler.inflight.size > 0 && Date.now() < drainEnd) await sleep(20);
      log.info(0, 'drained', { endedStreams: streams, unfinished: handler.inflight.size });
      await left;
      await close();
    },
    close,
  };
  return daemon;

  async function close(): Promise<void> {
      lifecycle.to('stopped');
      peering?.stop();
      localAPIServer?.stop();
      memory.stop();
      certReload.stop();
      token?.stop();
      for (const l of listeners) l.close();
      ops.close();
      tunnels.destroyAll();
      handler.close();
      await publisher.stop();
      relayLocal.destroy();
      relayLocalPlain.destroy();
      await Promise.all([peerPools.close(), local.destroy().catch(() => undefined), localPlain.destroy().catch(() => undefined)]);
  }
}

/**
 * RLIMIT_NOFILE at start (issue 33 §3): every HTTP/1.1 watch holds up to two descriptors (the
 * client's socket and, to an HTTP/1.1 upstream, its own), so the limit bounds the watches a node
 * serves. Node.js has already raised the soft limit to the hard one (node.cc, at start, as Go's
 * runtime does since 1.19); a soft limit still below the hard one means it could not.
 */
function logOpenFilesLimit(log: Logger): void {
  const l = readOpenFilesLimit();
  if (l === undefined) return log.info(0, 'open files limit (RLIMIT_NOFILE) unknown: /proc/self/limits could not be read');
  // With an unlimited hard limit Node.js raises the soft one as far as the kernel takes (fs.nr_open).
  const note =
    l.soft === l.hard ? 'the Node.js runtime raised the soft limit to the hard limit at start' : !Number.isFinite(l.hard) ? 'the Node.js runtime raised the soft limit as far as the kernel allows (fs.nr_open)' : 'the soft limit is below the hard limit: the Node.js runtime could not raise it';
  log.info(0, 'open files limit (RLIMIT_NOFILE)', { soft: Number.isFinite(l.soft) ? l.soft : 'unlimited', hard: Number.isFinite(l.hard) ? l.hard : 'unlimited', note });
}
