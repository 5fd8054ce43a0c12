// Build (kube-apiserver's New()): every component of the daemon, each complete when its constructor
// returns: whatever it calls is handed to it there, none is set on it afterwards. Nothing listens,
// reads a file or starts a loop here (run.ts does); the only timers are the two sweeps the relay's
// classes keep from construction (upstream/h1/origin.ts, proxy/inflight.ts), ended by shutdown.ts.
//
// Callbacks may name a component built further down (peering's and the local apiserver's name the
// publisher, the health checks and the handler): none of them is called before run.ts starts the
// component that calls it, when all exist. Membership and the publisher need each other (who are the
// peers / refresh now); the publisher, built first, asks peering through a function.

import type { OwnDispatcher } from '../api/own-requests';
import type { PeerEndpoint } from '../peers/membership';
import { createPool, localRelay, PeerPools } from '../upstream/pools';
import { ownPeerIdentityHeaders } from '../upstream/headers';
import type { OriginPool } from '../upstream/h1/origin';
import { Tunnels } from '../upstream/upgrade';
import { CertificateUsers } from '../api/identity';
import { SnapshotHolder } from '../snapshot/holder';
import { SnapshotPublisher } from '../snapshot/publisher';
import { LocalAPIServer } from '../snapshot/local-apiserver';
import { ProxyHandler } from '../proxy/handler';
import { Lifecycle } from '../lifecycle/state';
import { ReloadablePool } from '../lifecycle/certs';
import { BearerTokenFile, withBearerToken } from '../lifecycle/token';
import { MemoryReturn } from '../lifecycle/memory';
import { ConnectionCount } from '../telemetry/connections';
import { Peering } from '../peers/peering';
import { HealthChecks } from '../observability/healthz';
import type { Metrics } from '../telemetry/metrics';
import type { Logger } from '../telemetry/log';
import type { CompletedConfig } from './complete';
import { replacePeerChecks } from './readiness';

export interface Components {
  readonly log: Logger;
  readonly metrics: Metrics;
  /**
   * mvproxy's own calls to the local apiserver (discovery, CRD and APIService lists, identity Leases,
   * the /readyz probe), without the client certificate. Reloadable: a new --local-apiserver-ca-file
   * makes a new pool, the old one drains.
   */
  readonly localPlainPool: ReloadablePool;
  /** The relay's client for proxied requests to the local apiserver (upstream/h1/origin.ts): with the proxy client certificate, and without. */
  readonly relayLocal: OriginPool;
  readonly relayLocalPlain: OriginPool;
  readonly peerPools: PeerPools;
  readonly snapshots: SnapshotHolder;
  readonly lifecycle: Lifecycle;
  /** Reads certificate users as kube-apiserver does (api/identity.ts), for both front ends and the upgrade paths. */
  readonly certificateUsers: CertificateUsers | undefined;
  /** --local-apiserver-token-file: carried by mvproxy's own calls only, never by clients' requests. */
  readonly token: BearerTokenFile | undefined;
  readonly publisher: SnapshotPublisher;
  /** /livez, /readyz, /healthz on the ops listener and the client port (checks: readiness.ts). */
  readonly health: HealthChecks;
  /** --local-failover (issue 30): whether the local apiserver serves, probed every second. */
  readonly localAPIServer: LocalAPIServer | undefined;
  readonly handler: ProxyHandler;
  /** Membership and peer health (undefined when the proxy is off). */
  readonly peering: Peering | undefined;
  /** The upgrade tunnels of the node front end (upstream/upgrade.ts). */
  readonly tunnels: Tunnels;
  readonly memory: MemoryReturn;
  /** Open connections of the node:http listeners (telemetry/connections.ts). */
  readonly connections: ConnectionCount;
}

export function build(c: CompletedConfig, log: Logger, metrics: Metrics): Components {
  const { config, localURL, localTLS, identityRules } = c;
  const localPlainPool = new ReloadablePool(() => createPool(localURL, { connectTimeoutMs: config.connectTimeoutMs, tls: c.localPlainTLS() }));
  const relayLocal = localRelay(localURL, config.connectTimeoutMs, localTLS, config.upstreamHTTP2);
  const relayLocalPlain = localRelay(localURL, config.connectTimeoutMs, c.localPlainTLS(), config.upstreamHTTP2);
  const peerPools = new PeerPools({ connectTimeoutMs: config.connectTimeoutMs, tls: c.peerTLS, http2: config.upstreamHTTP2 });
  const snapshots = new SnapshotHolder();
  const lifecycle = new Lifecycle();
  // The client CA bundle is given again on a reload (lifecycle/reload.ts).
  const certificateUsers = c.clientTLS?.clientCA ? new CertificateUsers({ uidHeader: identityRules.uidHeader !== undefined }, c.clientTLS.clientCA) : undefined;
  const token = config.localAPIServerTokenFile ? new BearerTokenFile(config.localAPIServerTokenFile, { log }) : undefined;
  const ownLocal: OwnDispatcher = token ? withBearerToken(localPlainPool, () => token.current) : localPlainPool;
  const peerIdentityHeaders = ownPeerIdentityHeaders(identityRules);

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
    startupTimeoutMs: c.proxyEnabled ? config.peerDiscoveryStartupTimeoutMs : 0,
    membershipKnown: () => peering?.membershipKnown ?? true,
    fetchTimeoutMs: Math.min(config.requestTimeoutMs, 10_000),
    metrics,
    log,
  });
  const health = new HealthChecks({ log });
  const localAPIServer =
    c.proxyEnabled && config.localFailover
      ? new LocalAPIServer({
          snapshots,
          log,
          probe: async () => {
            const res = await ownLocal.request({ path: '/readyz', method: 'GET', headersTimeout: 2_000, bodyTimeout: 2_000 });
            await res.body.dump();
            return res.statusCode;
          },
          // It serves again: a restarted apiserver may be a new release, so discovery is fetched now.
          onServing: () => void publisher.refresh(),
        })
      : undefined;
  const handler = new ProxyHandler({
    local: relayLocal,
    localPlain: relayLocalPlain,
    peers: peerPools,
    snapshots,
    lifecycle,
    proxyEnabled: c.proxyEnabled,
    // Beyond in-tree: answer legacy discovery for peer-only groups (kubectl 1.27–1.29, python clients).
    legacyDiscoveryFix: config.legacyDiscoveryFix,
    discoveryAccessTTLMs: config.discoveryAccessTTLMs,
    identityRules,
    requestTimeoutMs: config.requestTimeoutMs,
    heldRequestBodyBytes: config.heldRequestBodyBytes,
    metrics,
    log,
    localFailover: localAPIServer !== undefined,
    localHealth: localAPIServer,
    health,
  });
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
  const peering: Peering | undefined = c.proxyEnabled
    ? new Peering({
        config,
        local: ownLocal,
        peerPools,
        peerIdentityHeaders,
        metrics,
        log,
        onMembershipChange: (peers: readonly PeerEndpoint[]) => {
          replacePeerChecks(health, peers, peering, publisher);
          void publisher.refresh();
        },
        onReachabilityChange: peerReachabilityChanged,
      })
    : undefined;
  // What a burst of requests held is given back once it ended (lifecycle/memory.ts).
  // Open connections count too: idle ones are no request, and what they held is garbage once closed.
  const connections = new ConnectionCount();
  const memory = new MemoryReturn({ inFlight: () => handler.inflight.size + connections.current, peak: () => handler.inflight.peak() + connections.peak(), log });
  return { log, metrics, localPlainPool, relayLocal, relayLocalPlain, peerPools, snapshots, lifecycle, certificateUsers, token, publisher, health, localAPIServer, handler, peering, tunnels: new Tunnels(), memory, connections };
}
