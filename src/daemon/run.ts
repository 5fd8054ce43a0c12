// Run (kube-apiserver's PrepareRun().Run()): what makes the built daemon serve, in this order: the
// watched files (token, peers file), the health checks, the client and peer listeners, membership
// and peer probes, the local apiserver's probe, certificate reload, the memory check, the ops
// listener, the first discovery; then the phase moves to serving. Each start is recorded in Started
// as it happens, so a start that fails half-way is undone by shutdown.ts close() (index.ts).

import pkg from '../../package.json';
import type { RunningListener } from '../listener/exchange';
import { listenOps } from '../observability/ops-server';
import { routesReport } from '../observability/routes';
import { startCertReload } from '../lifecycle/reload';
import type { CompletedConfig } from './complete';
import type { Components } from './build';
import { listenClient, listenPeerListener } from './listen';
import { registerHealthChecks } from './readiness';

/** What run() has started so far: shutdown.ts stops exactly these. */
export interface Started {
  /** Client listener first, then the peer listener. */
  readonly listeners: RunningListener[];
  certReload?: ReturnType<typeof startCertReload>;
  ops?: RunningListener;
  /** What the Daemon handle reports, once run() returned. */
  clientPort: number;
  peerPort: number;
  frontend: 'uws' | 'node';
  peerFrontend: 'uws' | 'node';
}

export function nothingStarted(): Started {
  return { listeners: [], clientPort: 0, peerPort: 0, frontend: 'node', peerFrontend: 'node' };
}

export async function run(c: CompletedConfig, p: Components, started: Started): Promise<void> {
  const { config } = c;
  const { log, metrics, handler, peerPools, publisher, peering, snapshots } = p;
  p.token?.start();
  // A bad peers file is a configuration error here, before anything listens.
  peering?.load();
  registerHealthChecks(p, c.proxyEnabled);

  const client = await listenClient(c, p);
  started.listeners.push(client.listener);
  started.clientPort = client.listener.port;
  started.frontend = client.frontend;
  metrics.buildInfo.set({ version: pkg.version, node_version: process.version, frontend: client.frontend }, 1);
  const peer = c.proxyEnabled ? await listenPeerListener(c, p, client.frontend) : undefined;
  if (peer) {
    started.listeners.push(peer.listener);
    started.peerPort = peer.listener.port;
    started.peerFrontend = peer.frontend;
  }

  // Membership (static list or identity Leases) and peer health: lease mode advertises the peer listener's port.
  peering?.start(started.peerPort);
  p.localAPIServer?.start();
  started.certReload = startCertReload({
    config,
    log,
    certificateUsers: p.certificateUsers,
    peerPools: c.proxyEnabled ? peerPools : undefined,
    peerTLS: c.peerTLS,
    peerServer: peer?.server,
    peerUWS: peer?.uws,
    peerCA: peer?.ca,
    clientServer: client.server,
    clientUWS: client.uws,
    local: [p.localPlainPool, { swap: () => c.localTLS && p.relayLocal.setTLS(c.localTLS) }, { swap: () => c.localTLS && p.relayLocalPlain.setTLS(c.localPlainTLS()!) }],
    localTLS: c.localTLS,
  });
  p.memory.start();
  const certReload = started.certReload;
  metrics.readFrom({
    inFlight: () => handler.inflight.inFlight(),
    heldBodies: () => handler.heldBodies,
    localState: () => snapshots.current.local,
    peerDiscoverySuccess: () => publisher.lastSuccess(),
    upstreamConnections: () => {
      const peer = peerPools.relayConnections();
      const local = [p.relayLocal, p.relayLocalPlain];
      return [
        { route: 'local', protocol: 'http/1.1', connections: local.reduce((n, r) => n + r.open, 0) },
        { route: 'local', protocol: 'h2', connections: local.reduce((n, r) => n + (r.h2?.sessionCount ?? 0), 0), streams: local.reduce((n, r) => n + (r.h2?.streamCount ?? 0), 0) },
        { route: 'peer', protocol: 'http/1.1', connections: peer.h1 },
        { route: 'peer', protocol: 'h2', connections: peer.h2, streams: peer.streams },
      ];
    },
    certificates: () => certReload.certificates(),
    peerCertificates: () => peerPools.certificateExpiry,
  });
  const peerStatus = () => (peering?.peers() ?? []).map((x) => ({ id: x.id, address: x.address, up: peering!.reachable(x.id), ...(peering!.problem(x.id) ? { problem: peering!.problem(x.id) } : {}) }));
  started.ops = await listenOps({ address: config.metricsBindAddress, metrics, health: p.health, routes: () => routesReport(snapshots.current, peerStatus), connections: p.connections, reusePort: config.reusePort });

  // Not awaited: the listeners answer (locally, fail open) while the first discovery runs.
  void publisher.start().catch((e) => log.error('discovery start failed', e));

  p.lifecycle.to('serving');
  log.info(0, 'mvproxy started', { serverID: config.serverID, frontend: client.frontend, clientPort: started.clientPort, peerPort: started.peerPort, metricsPort: started.ops.port, proxyEnabled: c.proxyEnabled });
}
