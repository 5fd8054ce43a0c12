// Shutdown, in one place: the graceful sequence (README "Shutdown"; the SIGTERM path) and close(),
// which releases everything the daemon holds in the reverse order of its creation: first what
// run.ts started, then what build.ts made. Every step tolerates a start that never happened, so the
// same close() undoes a start that failed half-way.

import { setTimeout as sleep } from 'node:timers/promises';
import type { DaemonConfig } from '../config/types';
import type { Components } from './build';
import type { Started } from './run';

/** Graceful shutdown waits at most this long for the identity Lease deletion (kubernetes#140242: never hang on the apiserver). */
const LEASE_RELEASE_TIMEOUT_MS = 2_000;

/**
 * /readyz fails, serve on for --shutdown-delay-duration, stop accepting, end watches cleanly, drain
 * in-flight requests for at most --shutdown-drain-timeout, then close(). Never blocks longer than
 * delay + drain + 1 s.
 */
export async function shutdownGracefully(config: DaemonConfig, p: Components, started: Started): Promise<void> {
  const { lifecycle, log, handler } = p;
  if (!lifecycle.to('terminating')) return;
  log.info(0, 'shutting down: /readyz fails from now on', { delayMs: config.shutdownDelayMs, drainTimeoutMs: config.shutdownDrainTimeoutMs });
  // Leave the membership first (lease mode: delete the identity Lease), so peers stop routing
  // here while this node still serves; bounded, and overlapping the delay and the drain.
  const left = p.peering?.release(LEASE_RELEASE_TIMEOUT_MS) ?? Promise.resolve();
  if (config.shutdownDelayMs > 0) await sleep(config.shutdownDelayMs);
  lifecycle.to('draining');
  for (const l of started.listeners) l.stopAccepting();
  const streams = handler.inflight.endStreams();
  const drainEnd = Date.now() + config.shutdownDrainTimeoutMs;
  while (handler.inflight.size > 0 && Date.now() < drainEnd) await sleep(20);
  log.info(0, 'drained', { endedStreams: streams, unfinished: handler.inflight.size });
  await left;
  await close(p, started);
}

/**
 * Closes everything at once, open connections included: every listener, loop, timer, file
 * watcher, worker and upstream connection the daemon made (test/integration/daemon-close.test.ts).
 */
export async function close(p: Components, started: Started): Promise<void> {
  p.lifecycle.to('stopped');
  // What run.ts started, last first. Synchronous up to the first await: no request is served between the steps.
  const discovery = p.publisher.stop(); // its refresh timer now; the merge worker below, once a merge in progress ended
  started.ops?.close();
  p.memory.stop();
  started.certReload?.stop();
  p.localAPIServer?.stop();
  p.peering?.stop(); // probes, Lease renewal and watch, the peers file
  for (const l of [...started.listeners].reverse()) l.close();
  p.token?.stop();
  // What build.ts made, last first: the upgrade tunnels, the request path's deadline sweep, the
  // discovery pipeline (its merge worker), then every upstream connection, busy ones included.
  p.tunnels.destroyAll();
  p.handler.close();
  await discovery;
  p.relayLocalPlain.destroy();
  p.relayLocal.destroy();
  await Promise.all([p.peerPools.close(), p.localPlainPool.destroy().catch(() => undefined)]);
}
