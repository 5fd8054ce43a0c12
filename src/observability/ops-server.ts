// The daemon's own endpoints on their own listener (default 127.0.0.1:10290, like kube-proxy's
// loopback metrics port), never mixed with the proxied API: /metrics, and /healthz, /livez,
// /readyz (+ /livez/<check>, /readyz/<check>) in Kubernetes' format (healthz.ts). Anything else
// is 404.

import http from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionCount } from '../telemetry/connections';
import type { RoutesReport } from './routes';
import pkg from '../../package.json';
import type { Metrics } from '../telemetry/metrics';
import type { RunningListener } from '../listener/exchange';
import { HealthChecks, ping } from './healthz';

export interface OpsOptions {
  /** host:port */
  address: string;
  metrics: Metrics;
  /**
   * The health checks behind /livez, /readyz, /healthz. The caller registers them and may add or
   * remove checks while the listener runs (e.g. per-peer informational checks).
   */
  health?: HealthChecks;
  /** /debug/routes: the route table as JSON (observability/routes.ts). */
  routes?: () => RoutesReport;
  /** Counts open connections (lifecycle/memory.ts). */
  connections?: ConnectionCount;
  /** SO_REUSEPORT (--reuse-port). */
  reusePort?: boolean;
  /**
   * @deprecated pass `health`. Without `health`, the checks are livez+readyz `ping` and readyz
   * `discovery-snapshot-published` (= this function).
   */
  ready?(): boolean;
}

const OPENMETRICS = 'application/openmetrics-text';

/** The checks used when OpsOptions has no `health` (the listener's behaviour before healthz.ts). */
export function defaultHealthChecks(ready?: () => boolean): HealthChecks {
  const h = new HealthChecks().add('both', 'ping', ping);
  if (ready) h.add('readyz', 'discovery-snapshot-published', () => (ready() ? null : new Error('no discovery snapshot published yet')));
  return h;
}

function json(res: http.ServerResponse, v: unknown): void {
  const body = JSON.stringify(v, null, 2) + '\n';
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-cache, private' });
  res.end(body);
}

/** /version in kube-apiserver's shape (version.Info), for mvproxy's own release; Node stands where Go does. */
export function versionInfo(): Record<string, string> {
  const [major = '0', minor = '0'] = pkg.version.split('.');
  return { major, minor, gitVersion: `v${pkg.version}`, gitCommit: '', gitTreeState: '', buildDate: '', goVersion: '', compiler: 'node', platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`, nodeVersion: process.version };
}

export function listenOps(o: OpsOptions): Promise<RunningListener> {
  const colon = o.address.lastIndexOf(':');
  const host = o.address.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(o.address.slice(colon + 1));
  const health = o.health ?? defaultHealthChecks(o.ready);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      o.metrics.scrape((req.headers.accept ?? '').includes(OPENMETRICS)).then(
        ({ contentType, text }) => {
          res.writeHead(200, { 'content-type': contentType });
          res.end(text);
        },
        (err: Error) => {
          res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
          res.end(err.message);
        },
      );
      return;
    }
    if (path === '/debug/routes' && o.routes) return json(res, o.routes());
    if (path === '/version') return json(res, versionInfo());
    if (health.handle(req, res)) return;
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
    res.end('404 page not found\n');
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const connections = o.connections;
    if (connections) server.on('connection', (sock: Socket) => connections.track(sock));
    server.listen({ port, host, reusePort: o.reusePort ?? false }, () => {
      const addr = server.address();
      resolve({
        port: typeof addr === 'object' && addr ? addr.port : port,
        stopAccepting: () => undefined, // /readyz and /metrics stay up until the very end of a shutdown
        close: () => {
          server.close();
          server.closeAllConnections();
        },
      });
    });
  });
}
