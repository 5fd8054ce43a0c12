// startDaemon: configuration → a running daemon, in kube-apiserver's stages (cmd/kube-apiserver/app/
// server.go): validate.ts (refuse what cannot be served) → complete.ts (derived values, files read)
// → build.ts (every component, complete when constructed, nothing listening) → run.ts (listeners,
// loops, first discovery); shutdown.ts is the reverse, in one place. Returns the handle tests and
// main() use.

import type { DaemonConfig } from '../config/types';
import type { SnapshotHolder } from '../snapshot/holder';
import type { SnapshotPublisher } from '../snapshot/publisher';
import type { Lifecycle } from '../lifecycle/state';
import type { Peering } from '../peers/peering';
import { loadUWS } from '../listener/uws';
import { readOpenFilesLimit } from '../api/fd-limit';
import { Metrics } from '../telemetry/metrics';
import { createLogger, type Logger } from '../telemetry/log';
import { validate } from './validate';
import { complete } from './complete';
import { build } from './build';
import { nothingStarted, run } from './run';
import { close, shutdownGracefully } from './shutdown';

export { ConfigError } from './validate';

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
  /** Closes everything at once: every listener, timer, file watcher, worker and connection (shutdown.ts). */
  close(): Promise<void>;
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
  logOpenFilesLimit(log);
  validate(config);
  const c = complete(config, log, deps.loadUWS ?? loadUWS);
  const p = build(c, log, metrics);
  const started = nothingStarted();
  try {
    await run(c, p, started);
  } catch (e) {
    await close(p, started).catch(() => undefined);
    throw e;
  }
  const { snapshots, lifecycle, publisher, peering } = p;
  return {
    config,
    clientPort: started.clientPort,
    peerPort: started.peerPort,
    metricsPort: started.ops!.port,
    frontend: started.frontend,
    peerFrontend: started.peerFrontend,
    snapshots,
    lifecycle,
    publisher,
    metrics,
    peering,
    setStaticPeers(peers) {
      peering?.setStaticPeers(peers); // a change replaces the peers' checks and refreshes (build.ts onMembershipChange)
      return publisher.refresh();
    },
    shutdown: () => shutdownGracefully(config, p, started),
    close: () => close(p, started),
  };
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
