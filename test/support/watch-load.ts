// Many watches against a TLS "apiserver" in the test process (test/slow/watch-memory.test.ts):
// the server offers h2 and http/1.1 by ALPN with 250 streams per connection, as kube-apiserver
// (Go's default), and broadcasts one ConfigMap-sized event to every watch on demand; the clients
// open n watches over HTTP/1.1 (a TLS connection each) or HTTP/2 (streams of connections of 250,
// as client-go opens another connection when one is full).
import http2 from 'node:http2';
import https from 'node:https';
import type http from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCA } from '../../src/pki/throwaway';

export const WATCH = '/api/v1/namespaces/default/configmaps?watch=1';
const API = JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{ metadata: { name: '' }, versions: [{ version: 'v1', resources: [{ resource: 'configmaps', scope: 'Namespaced', singularResource: 'configmap', verbs: ['get', 'list', 'watch'] }] }] }] });
const APIS = JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [] });
/** One watch event of a ConfigMap, about the size kube-apiserver sends for a small one. */
const EVENT = JSON.stringify({ type: 'MODIFIED', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'cm', namespace: 'default', resourceVersion: '1', uid: '00000000-0000-0000-0000-000000000000' }, data: { k: 'x'.repeat(200) } } }) + '\n';

/** The TLS "apiserver": h2 and http/1.1 by ALPN, 250 streams per connection (Go's default), watches broadcast to. */
export async function apiserver(dir: string) {
  const ca = await createCA('apiserver-ca');
  const leaf = await ca.issue({ commonName: 'kube-apiserver', usage: 'server', ipAddresses: ['127.0.0.1'], dnsNames: ['localhost'] });
  writeFileSync(join(dir, 'ca.crt'), ca.cert);
  const watchers = new Set<http.ServerResponse>();
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = req.url ?? '';
    if (url === '/api' || url === '/apis') {
      res.writeHead(200, { 'content-type': 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
      return void res.end(url === '/api' ? API : APIS);
    }
    if (url.includes('watch=1')) {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
      res.flushHeaders();
      watchers.add(res);
      res.on('close', () => watchers.delete(res));
      return;
    }
    res.writeHead(404);
    res.end();
  };
  const server = http2.createSecureServer({ cert: leaf.cert, key: leaf.key, allowHTTP1: true, settings: { maxConcurrentStreams: 250 } }, handler as never);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as { port: number }).port}`,
    caFile: join(dir, 'ca.crt'),
    watchers: () => watchers.size,
    broadcast: () => {
      for (const w of watchers) w.write(EVENT);
    },
    close: () => new Promise<void>((r) => {
      for (const w of watchers) w.destroy();
      server.close(() => r());
    }),
  };
}

export interface Clients {
  /** Events read by every watch so far. */
  events(): number;
  close(): void;
}

/** n watches over HTTP/1.1, a TLS connection each. */
export function h1Watches(port: number, ca: string, n: number): Clients {
  let events = 0;
  const reqs: http.ClientRequest[] = [];
  for (let i = 0; i < n; i++) {
    const req = https.get({ host: '127.0.0.1', port, path: WATCH, agent: false, ca, servername: 'localhost' }, (res) => {
      res.on('data', (d: Buffer) => {
        for (const b of d) if (b === 10) events++;
      });
      res.on('error', () => undefined);
    });
    req.on('error', () => undefined);
    reqs.push(req);
  }
  return { events: () => events, close: () => reqs.forEach((r) => r.destroy()) };
}

/** n watches over HTTP/2: streams of connections of 250 each (client-go opens another when one is full). */
export function h2Watches(port: number, ca: string, n: number): Clients {
  let events = 0;
  const sessions: http2.ClientHttp2Session[] = [];
  for (let i = 0; i < n; i++) {
    if (i % 250 === 0) {
      const s = http2.connect(`https://127.0.0.1:${port}`, { ca, servername: 'localhost' });
      s.on('error', () => undefined);
      sessions.push(s);
    }
    const st = sessions.at(-1)!.request({ ':path': WATCH });
    st.on('data', (d: Buffer) => {
      for (const b of d) if (b === 10) events++;
    });
    st.on('error', () => undefined);
  }
  return { events: () => events, close: () => sessions.forEach((s) => s.destroy()) };
}

