// The health checks mvproxy registers (observability/healthz.ts has the format), in the order
// /readyz?verbose lists them: ping, shutdown, local-discovery, discovery-snapshot-published,
// discovery-complete, one informational check per peer, identity-lease (lease mode), local-apiserver (--local-failover).
// run.ts registers them before any listener opens; a membership change replaces the peers' checks.

import { ping, type HealthChecks } from '../observability/healthz';
import type { Lifecycle } from '../lifecycle/state';
import type { Peering } from '../peers/peering';
import type { SnapshotHolder } from '../snapshot/holder';
import type { SnapshotPublisher } from '../snapshot/publisher';
import type { LocalAPIServer } from '../snapshot/local-apiserver';

/** What the checks read (daemon/build.ts Components). */
export interface Checked {
  health: HealthChecks;
  lifecycle: Lifecycle;
  publisher: SnapshotPublisher;
  snapshots: SnapshotHolder;
  peering: Peering | undefined;
  localAPIServer: LocalAPIServer | undefined;
}

export function registerHealthChecks(p: Checked, proxyEnabled: boolean): void {
  const { health, lifecycle, publisher, snapshots, peering, localAPIServer } = p;
  health.add('both', 'ping', ping);
  health.add('readyz', 'shutdown', () => (lifecycle.shuttingDown ? new Error('process is shutting down') : null));
  health.add('readyz', 'local-discovery', () => (publisher.localSynced ? null : new Error('the local apiserver\'s discovery has not been fetched yet')));
  health.add('readyz', 'discovery-snapshot-published', () => {
    const s = snapshots.current;
    return s.table.synced && (!proxyEnabled || s.discovery !== undefined) ? null : new Error('no discovery snapshot published yet');
  });
  // Until the first complete snapshot (every known peer merged, or --peer-discovery-startup-timeout):
  // a load balancer sends nothing here while discovery would be answered 503.
  if (proxyEnabled) health.add('readyz', 'discovery-complete', () => (snapshots.current.complete ? null : new Error('waiting for the first discovery merge with every known peer (--peer-discovery-startup-timeout)')));
  replacePeerChecks(health, peering?.peers() ?? [], peering, publisher);
  if (peering?.mode === 'lease') health.addInformational('readyz', 'identity-lease', () => peering.ownLeaseProblem());
  if (localAPIServer) health.addInformational('readyz', 'local-apiserver', () => (localAPIServer.state === 'serving' ? null : new Error(`the local apiserver is ${localAPIServer.state} (${localAPIServer.reason}): requests a peer can answer go to a peer`)));
}

/** One dead peer is what this daemon exists to survive: peers are informational, never failing readiness. */
export function replacePeerChecks(health: HealthChecks, peers: readonly { id: string }[], peering: Peering | undefined, publisher: SnapshotPublisher): void {
  for (const n of health.names('readyz')) if (n.startsWith('peer-')) health.remove('readyz', n);
  for (const p of peers) {
    health.addInformational('readyz', `peer-${p.id}`, () => {
      const why = peering?.problem(p.id);
      if (why) return new Error(why);
      return publisher.peerUp(p.id) === false ? new Error(`peer ${p.id} did not answer its last discovery fetch`) : null;
    });
  }
}
