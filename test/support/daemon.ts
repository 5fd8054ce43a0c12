// In-process daemons for tests: DEFAULTS plus what a test sets, ephemeral ports, silent logs
// (or a capturing logger).
import { before, after } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDaemon, type Daemon, type DaemonDeps } from '../../src/daemon';
import { DEFAULTS, type DaemonConfig, type Frontend } from '../../src/config/types';
import { Metrics } from '../../src/telemetry/metrics';
import { createLogger, silentLogger, type Logger } from '../../src/telemetry/log';

export function testConfig(over: Partial<DaemonConfig>): DaemonConfig {
  return {
    ...DEFAULTS,
    serverID: 'mvproxy-test',
    securePort: 0,
    peerPort: 0,
    peerBindAddress: '127.0.0.1',
    metricsBindAddress: '127.0.0.1:0',
    localAPIServer: 'http://127.0.0.1:1',
    requestheaderAllowedNames: [],
    staticPeers: [],
    featureGates: { UnknownVersionInteroperabilityProxy: true },
    ...over,
  };
}

export function capturingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return Object.assign(createLogger(4, 'json', (l) => lines.push(l)), { lines });
}

export function startTestDaemon(over: Partial<DaemonConfig>, deps: DaemonDeps = {}): Promise<Daemon> {
  return startDaemon(testConfig(over), { log: silentLogger, metrics: new Metrics(), ...deps });
}

/** An apiserver a test starts on TLS: its origin, the CA file that verifies it (name `localhost`), and how to stop it. */
export interface TLSUpstream {
  url: string;
  caFile: string;
  close(): Promise<void>;
}

/**
 * Registers the suite's before/after hooks: `start` runs an apiserver in a directory of its own, a
 * test daemon on `frontend` goes in front of it and has fetched discovery; both stop, and the
 * directory goes, after the suite. Read `up` and `d` inside tests.
 */
export function daemonInFront<U extends TLSUpstream>(frontend: Frontend, start: (dir: string) => Promise<U>): { readonly up: U; readonly d: Daemon } {
  let dir: string | undefined;
  const s = {} as { up: U; d: Daemon };
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mvproxy-upstream-'));
    s.up = await start(dir);
    s.d = await startTestDaemon({ frontend, localAPIServer: s.up.url, localAPIServerCAFile: s.up.caFile, localAPIServerServerName: 'localhost' });
    await s.d.publisher.refresh();
  });
  after(async () => {
    await s.d?.close();
    await s.up?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return s;
}
