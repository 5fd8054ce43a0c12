// A minimal "kube-apiserver" for data-path tests that the simulated one is not built for (huge
// bodies, stalls, slow answers): aggregated discovery from a fixture, and whatever routes a test adds.
import http from 'node:http';
import { readFixture } from './fixtures';

const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const API = Buffer.from(JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{ metadata: { name: '' }, versions: [{ version: 'v1', resources: [{ resource: 'configmaps', scope: 'Namespaced', singularResource: 'configmap', verbs: ['create', 'get', 'list'] }] }] }] }));
const APIS = readFixture('v1.33-0b1dcaba/aggregated_v2.json');

export type Route = (req: http.IncomingMessage, res: http.ServerResponse) => boolean;

export async function startFakeUpstream(route: Route): Promise<{ url: string; server: http.Server; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.url === '/api' || req.url === '/apis') {
      res.writeHead(200, { 'content-type': AGG });
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
