// A mixed-version control plane on 127.0.0.1: one simulated kube-apiserver per member (sharing
// one object store, as real apiservers share etcd), an mvproxy beside each, mutual TLS between
// the proxies from a throwaway PKI. Used by the embedded demo, the integration tests and bench/.

import { join } from 'node:path';
import { startSimApiserver, ObjectStore, type SimApiserver } from '../sim';
import { startDaemon, type Daemon } from '../daemon';
import { createClusterPKI, type ClusterPKI } from '../pki/bundle';
import { DEFAULTS, type DaemonConfig, type FrontendSetting, type PeerDiscoveryMode } from '../config/types';
import type { Logger } from '../telemetry/log';
import { silentLogger } from '../telemetry/log';
import { Metrics } from '../telemetry/metrics';

export interface MemberSpec {
  name: string;
  kubernetesVersion: 'v1.33' | 'v1.37';
  runtimeConfig?: string[];
}

export interface Member {
  spec: MemberSpec;
  sim: SimApiserver;
  daemon: Daemon;
  /** Plain-HTTP client listener of this member's mvproxy. */
  readonly url: string;
  readonly metricsUrl: string;
  readonly peerAddress: string;
}

export interface PlaneOptions {
  dir: string;
  frontend: FrontendSetting;
  members: MemberSpec[];
  /** Consecutive ports from here (client, peer, metrics per member), or 0 for ephemeral ports. */
  basePort?: number;
  log?: Logger;
  /** Per-member config overrides (e.g. short refresh intervals in tests). */
  configure?(c: DaemonConfig, member: MemberSpec): void;
  /**
   * static (default): the plane hands each proxy the others' peer addresses. lease: every proxy
   * writes an identity Lease into the shared store through its own apiserver and finds the others
   * there, as in a real cluster (short durations belong in `configure`).
   */
  peerDiscovery?: PeerDiscoveryMode;
  /** Events the shared store keeps for watch resumption (ObjectStore default 10,000). */
  storeHistoryLimit?: number;
  /** Requests each simulated apiserver records for tests (default 10,000; 0: none). */
  simRecordLimit?: number;
  /** Each simulated apiserver keeps the body bytes of its watches (SimApiserver.streamBodies), for tests. */
  simRecordStreams?: boolean;
}

export interface Plane {
  readonly pki: ClusterPKI;
  readonly store: ObjectStore;
  readonly members: Member[];
  member(name: string): Member;
  /** Restarts a member's apiserver on the same port with another API set (an upgrade or a rollback). */
  replaceApiserver(name: string, spec: Partial<Omit<MemberSpec, 'name'>>): Promise<void>;
  /** Stops a member's mvproxy at once, like a crash: no graceful shutdown, its Lease stays until it expires (its apiserver keeps running). */
  stopProxy(name: string): Promise<void>;
  /** The graceful shutdown sequence of a member's mvproxy (lease mode: it deletes its Lease). */
  shutdownProxy(name: string): Promise<void>;
  /** Starts a new member (its own apiserver and mvproxy) after the plane is up: lease mode finds it by itself (not awaited here). */
  addMember(spec: MemberSpec): Promise<Member>;
  /** Starts a stopped member's mvproxy again on the same ports. */
  startProxy(name: string): Promise<void>;
  close(): Promise<void>;
}

export async function startPlane(o: PlaneOptions): Promise<Plane> {
  const pki = await createClusterPKI(o.dir);
  const store = new ObjectStore({ historyLimit: o.storeHistoryLimit });
  const members: Member[] = [];
  const configs = new Map<string, DaemonConfig>();
  const base = o.basePort ?? 0;
  const port = (i: number, k: number) => (base ? base + i * 3 + k : 0);

  const mode = o.peerDiscovery ?? 'static';
  const startMember = async (spec: MemberSpec, i: number): Promise<Member> => {
    const sim = await startSimApiserver({ name: spec.name, kubernetesVersion: spec.kubernetesVersion, runtimeConfig: spec.runtimeConfig, store, recordLimit: o.simRecordLimit, recordStreams: o.simRecordStreams });
    const certs = await pki.node(spec.name);
    const config: DaemonConfig = {
      ...DEFAULTS,
      serverID: `mvproxy-${spec.name}`,
      frontend: o.frontend,
      bindAddress: '127.0.0.1',
      securePort: port(i, 0),
      peerBindAddress: '127.0.0.1',
      peerPort: port(i, 1),
      metricsBindAddress: `127.0.0.1:${port(i, 2)}`,
      tlsCertFile: undefined,
      tlsPrivateKeyFile: undefined,
      peerTLSCertFile: certs.servingCert,
      peerTLSPrivateKeyFile: certs.servingKey,
      localAPIServer: sim.url,
      proxyClientCertFile: certs.proxyClientCert,
      proxyClientKeyFile: certs.proxyClientKey,
      peerCAFile: pki.clusterCAFile,
      requestheaderClientCAFile: pki.frontProxyCAFile,
      requestheaderAllowedNames: ['front-proxy-client'],
      staticPeers: [],
      peerDiscovery: mode,
      featureGates: { UnknownVersionInteroperabilityProxy: true },
    };
    o.configure?.(config, spec);
    configs.set(spec.name, config);
    const daemon = await startDaemon(config, { log: o.log ?? silentLogger, metrics: new Metrics() });
    // Fixed ports from now on, so a restarted proxy comes back where its peers expect it.
    config.securePort = daemon.clientPort;
    config.peerPort = daemon.peerPort;
    config.metricsBindAddress = `127.0.0.1:${daemon.metricsPort}`;
    const m: Member = {
      spec,
      sim,
      daemon,
      url: `${config.tlsCertFile ? 'https' : 'http'}://127.0.0.1:${daemon.clientPort}`,
      metricsUrl: `http://127.0.0.1:${daemon.metricsPort}/metrics`,
      peerAddress: `127.0.0.1:${daemon.peerPort}`,
    };
    members.push(m);
    return m;
  };
  for (const [i, spec] of o.members.entries()) await startMember(spec, i);
  const peersOf = (m: Member) => members.filter((x) => x !== m).map((x) => ({ id: x.daemon.config.serverID, address: x.peerAddress }));
  if (mode === 'static') await Promise.all(members.map((m) => m.daemon.setStaticPeers(peersOf(m))));
  else await seeEachOther(members);

  const byName = (name: string) => {
    const m = members.find((x) => x.spec.name === name);
    if (!m) throw new Error(`no member ${name}`);
    return m;
  };
  return {
    pki,
    store,
    members,
    member: byName,
    async replaceApiserver(name, spec) {
      const m = byName(name);
      const port = m.sim.port;
      await m.sim.close();
      Object.assign(m.spec, spec);
      m.sim = await startSimApiserver({ name, kubernetesVersion: m.spec.kubernetesVersion, runtimeConfig: m.spec.runtimeConfig, store, port, recordLimit: o.simRecordLimit, recordStreams: o.simRecordStreams });
    },
    async stopProxy(name) {
      await byName(name).daemon.close();
    },
    async shutdownProxy(name) {
      await byName(name).daemon.shutdown();
    },
    async addMember(spec) {
      const m = await startMember(spec, members.length);
      if (mode === 'static') await Promise.all(members.map((x) => x.daemon.setStaticPeers(peersOf(x))));
      return m;
    },
    async startProxy(name) {
      const m = byName(name);
      const config = configs.get(name)!;
      if (mode === 'static') config.staticPeers = peersOf(m);
      m.daemon = await startDaemon(config, { log: o.log ?? silentLogger, metrics: new Metrics() });
      await m.daemon.publisher.refresh();
    },
    async close() {
      await Promise.all(members.map((m) => m.daemon.close().catch(() => undefined)));
      await Promise.all(members.map((m) => m.sim.close().catch(() => undefined)));
    },
  };
}

/** Lease mode: resolves once every member lists all the others as peers and has fetched their discovery (at most 10 s). */
async function seeEachOther(members: readonly Member[]): Promise<void> {
  const end = Date.now() + 10_000;
  const complete = () => members.every((m) => (m.daemon.peering?.peers().length ?? 0) >= members.length - 1);
  while (!complete()) {
    if (Date.now() > end) throw new Error('plane: the members did not find each other through their identity Leases within 10 s');
    await new Promise((r) => setTimeout(r, 20));
  }
  await Promise.all(members.map((m) => m.daemon.publisher.refresh()));
}

export function planeDir(root: string, name = 'pki'): string {
  return join(root, name);
}
