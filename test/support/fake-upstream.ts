// A minimal "kube-apiserver" for data-path tests that the simulated one is not built for (huge
// bodies, stalls, slow answers): aggregated discovery from a fixture, and whatever routes a test adds.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { readFixture } from './fixtures';

const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const API = Buffer.from(JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{ metadata: { name: '' }, versions: [{ version: 'v1', resources: [{ resource: 'configmaps', scope: 'Namespaced', singularResource: 'configmap', verbs: ['create', 'get', 'list'] }] }] }] }));
const APIS = readFixture('v1.33-0b1dcaba/aggregated_v2.json');
const etagOf = (b: Buffer) => `"${createHash('sha512').update(b).digest('hex').toUpperCase()}"`;
const API_ETAG = etagOf(API);
const APIS_ETAG = etagOf(APIS);

export type Route = (req: http.IncomingMessage, res: http.ServerResponse) => boolean;

export async function startFakeUpstream(route: Route): Promise<{ url: string; server: http.Server; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.url === '/api' || req.url === '/apis') {
      // With an ETag, and a 304 for a request that names it, as kube-apiserver answers aggregated
      // discovery: an unchanged document costs mvproxy no decode, so its merge worker exits when idle.
      const etag = req.url === '/api' ? API_ETAG : APIS_ETAG;
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, { etag });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': AGG, etag });
      res.end(req.url === '/api' ? API : APIS);
      return;
    }
    if (!route(req, res)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
