// The daemon's own endpoints on their own listener (default 127.0.0.1:10290, like kube-proxy's
// loopback metrics port), never mixed with the proxied API: /metrics, /healthz, /livez, /readyz.

import http from 'node:http';
import type { Metrics } from './metrics';
import type { RunningListener } from '../listener/uws';

export interface OpsOptions {
  /** host:port */
  address: string;
  metrics: Metrics;
  /** Ready once the first discovery snapshot is published. */
  ready(): boolean;
}

const OPENMETRICS = 'application/openmetrics-text';

export function listenOps(o: OpsOptions): Promise<RunningListener> {
  const colon = o.address.lastIndexOf(':');
  const host = o.address.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(o.address.slice(colon + 1));
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      const reg = o.metrics.registry;
      const open = (req.headers.accept ?? '').includes(OPENMETRICS);
      // prom-client's typings know only the Prometheus text type; the OpenMetrics one is supported at runtime.
      reg.setContentType((open ? 'application/openmetrics-text; version=1.0.0; charset=utf-8' : 'text/plain; version=0.0.4; charset=utf-8') as 'text/plain; version=0.0.4; charset=utf-8');
      reg.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': reg.contentType });
          res.end(text);
        },
        (err: Error) => {
          res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
          res.end(err.message);
        },
      );
      return;
    }
    if (path === '/healthz' || path === '/livez' || path === '/readyz') {
      const ok = path !== '/readyz' || o.ready();
      res.writeHead(ok ? 200 : 500, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
      res.end(ok ? 'ok' : '[-]discovery-snapshot-published failed: reason withheld\nreadyz check failed');
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('404 page not found\n');
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const addr = server.address();
      resolve({ port: typeof addr === 'object' && addr ? addr.port : port, close: () => { server.close(); server.closeAllConnections(); } });
    });
  });
}
