// In-process daemons for tests: DEFAULTS plus what a test sets, ephemeral ports, silent logs
// (or a capturing logger).
import { startDaemon, type Daemon, type DaemonDeps } from '../../src/daemon';
import { DEFAULTS, type DaemonConfig } from '../../src/config/types';
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
