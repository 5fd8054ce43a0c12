// Watches share HTTP/2 connections into the apiserver (issue 29): through mvproxy, N watches from
// HTTP/1.1 clients become streams of a few HTTP/2 sessions to a TLS upstream that offers h2 (as
// kube-apiserver does), not N connections; every event reaches every watcher; the head a client
// gets spells its headers as an HTTP/1.1 answer would; a client that goes away releases its stream
// at once; an upstream that offers only http/1.1 still serves every watch, one connection each.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FRONTENDS } from '../support/frontends';
import { daemonInFront } from '../support/daemon';
import { eventually } from '../support/poll';
import { twoVersionPlane, OLD, NEW, AUTH } from '../support/plane';
import { createCA } from '../../src/pki/throwaway';

const WATCH = '/api/v1/namespaces/default/configmaps?watch=1';
const API = JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{ metadata: { name: '' }, versions: [{ version: 'v1', resources: [{ resource: 'configmaps', scope: 'Namespaced', singularResource: 'configmap', verbs: ['get', 'list', 'watch'] }] }] }] });
const APIS = JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [] });
const N = Number(process.env.N ?? 300);
const MAX_STREAMS = 100;
/** The upstream's SETTINGS_MAX_HEADER_LIST_SIZE: below the front ends' 16 KiB, so a client can ask for more than it takes. */
const UPSTREAM_MAX_HEADER_LIST = 12 * 1024;

/** A TLS "apiserver" offering h2 (or only http/1.1): counts connections, open watch streams, and broadcasts events. */
async function watchServer(dir: string, h2: boolean) {
  const ca = await createCA('apiserver-ca');
  const leaf = await ca.issue({ commonName: 'kube-apiserver', usage: 'server', ipAddresses: ['127.0.0.1'], dnsNames: ['localhost'] });
  writeFileSync(join(dir, 'ca.crt'), ca.cert);
  let connections = 0;
  const watchers = new Set<http.ServerResponse>();
  // One handler for both servers: node:http2's compatibility API has node:http's shape.
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = req.url ?? '';
    if (url === '/api' || url === '/apis') {
      res.writeHead(200, { 'content-type': 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
      return void res.end(url === '/api' ? API : APIS);
    }
    if (url.includes('watch=1')) {
      // As Go's server sets them (lowercase on h2, canonical on HTTP/1.1 by its Header map).
      // X-Obs: obs-text (a byte above 0x7F, RFC 9110 §5.5), which Go lets through and mvproxy relays as its bytes.
      res.writeHead(200, { 'Audit-Id': 'a-1', 'Cache-Control': 'no-cache, private', 'Content-Type': 'application/json', 'X-Kubernetes-Pf-Flowschema-Uid': 'f', 'X-Obs': 'caf\xe9' });
      // The head goes out with an empty Buffer: node:http's flushHeaders() writes it as UTF-8 (X-Obs as C3 A9).
      res.write(Buffer.alloc(0));
      watchers.add(res);
      res.on('close', () => watchers.delete(res));
      return;
    }
    res.writeHead(404);
    res.end();
  };
  const options = { cert: leaf.cert, key: leaf.key, allowHTTP1: true, settings: { maxConcurrentStreams: MAX_STREAMS, maxHeaderListSize: UPSTREAM_MAX_HEADER_LIST } };
  const server = h2 ? http2.createSecureServer(options, handler as never) : (await import('node:https')).createServer(options, handler as never);
  server.on('secureConnection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as { port: number }).port}`,
    caFile: join(dir, 'ca.crt'),
    connections: () => connections,
    watchers: () => watchers.size,
    broadcast(event: string) {
      for (const w of watchers) w.write(event + '\n');
    },
    close: () => new Promise<void>((r) => {
      for (const w of watchers) w.destroy();
      (server as http2.Http2SecureServer).close(() => r());
    }),
  };
}

/**
 * An HTTP/1.1 watch client: its response head (once it came) and the lines it has read. Not waited
 * for: the uWS front end sends a watch's head with its first event (it adds no byte to get it out).
 */
function watchClient(port: number): { raw: string[]; lines: string[]; destroy(): void } {
  const c = { raw: [] as string[], lines: [] as string[], destroy: () => req.destroy() };
  const req = http.get({ host: '127.0.0.1', port, path: WATCH, agent: false }, (res) => {
    c.raw = res.rawHeaders;
    let buf = '';
    res.on('data', (d: Buffer) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        c.lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
    res.on('error', () => undefined);
  });
  req.on('error', () => undefined);
  return c;
}

for (const frontend of FRONTENDS) {
  for (const h2 of [true, false]) {
    describe(`watches into an apiserver that offers ${h2 ? 'h2' : 'only http/1.1'} (${frontend} front end)`, () => {
      const s = daemonInFront(frontend, (dir) => watchServer(dir, h2));

      test(`${N} watches: ${h2 ? `at most ${N / MAX_STREAMS + 2} connections` : 'one connection each'} into the apiserver; every event reaches every watcher; the head as HTTP/1.1 spells it; closed clients release their streams at once`, async () => {
        const connectionsBefore = s.up.connections();
        const clients = Array.from({ length: N }, () => watchClient(s.d.clientPort));
        await eventually(() => s.up.watchers() === N, { what: `${N} watches open at the apiserver`, timeoutMs: 10_000 });
        const opened = s.up.connections() - connectionsBefore;
        if (h2) assert.ok(opened <= N / MAX_STREAMS + 2, `${opened} connections into the apiserver for ${N} watches`);
        else assert.ok(opened >= N, `${opened} connections`);
        for (let e = 0; e < 3; e++) s.up.broadcast(`{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"${e}"}}}`);
        await eventually(() => clients.every((c) => c.lines.length === 3), { what: 'every watcher got the three events', timeoutMs: 10_000 });
        const head = clients[0]!.raw;
        const names = head.filter((_, i) => i % 2 === 0);
        for (const n of ['Audit-Id', 'Cache-Control', 'Content-Type', 'X-Kubernetes-Pf-Flowschema-Uid']) assert.ok(names.includes(n), `${n} spelled as HTTP/1.1 would: ${JSON.stringify(head)}`);
        // node's client reads header bytes as latin1: the one byte 0xE9, not its UTF-8 spelling C3 A9.
        assert.equal(head[head.findIndex((n, i) => i % 2 === 0 && n.toLowerCase() === 'x-obs') + 1], 'caf\xe9', `obs-text relayed as its bytes: ${JSON.stringify(head)}`);
        for (const c of clients.slice(0, N / 2)) c.destroy();
        await eventually(() => s.up.watchers() === N / 2, { what: 'the closed clients\' streams released at the apiserver', timeoutMs: 2000 });
        for (const c of clients.slice(N / 2)) c.destroy();
        await eventually(() => s.up.watchers() === 0, { what: 'all released', timeoutMs: 2000 });
      });
    });
  }
}

for (const frontend of FRONTENDS) {
  describe(`a watch whose header list the apiserver would not take (${frontend} front end)`, () => {
    const s = daemonInFront(frontend, (dir) => watchServer(dir, true));

    test(`larger than the apiserver's SETTINGS_MAX_HEADER_LIST_SIZE (${UPSTREAM_MAX_HEADER_LIST} bytes): answered 431 alone, never sent; the other watches on the shared HTTP/2 connection go on (sent, a server may end the whole connection for it: Go's did, with every client's watch on it, helper 10)`, async () => {
      const other = watchClient(s.d.clientPort);
      await eventually(() => s.up.watchers() === 1, { what: 'an ordinary watch open at the apiserver', timeoutMs: 5000 });
      const big = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port: s.d.clientPort, path: WATCH, agent: false, headers: { 'x-big': 'v'.repeat(UPSTREAM_MAX_HEADER_LIST) } }, (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.setTimeout(5000, () => req.destroy(new Error('no answer within 5 s')));
      });
      assert.equal(big.status, 431, big.body);
      assert.equal((JSON.parse(big.body) as { kind: string; code: number }).code, 431, 'a metav1.Status');
      assert.equal(s.up.watchers(), 1, 'the large watch never reached the apiserver');
      s.up.broadcast('{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"9"}}}');
      await eventually(() => other.lines.length === 1, { what: 'the other watch got the event after it', timeoutMs: 5000 });
      other.destroy();
    });
  });
}

// The peer hop: a node peer listener offers h2, so a source mvproxy sends its peer-routed watches
// as streams of one connection; a uWS peer listener (HTTP/1.1 only) gets one connection per watch.
for (const frontend of FRONTENDS) {
  describe(`peer-routed watches (${frontend} front end, ${frontend === 'node' ? 'node:http2' : 'uWS'} peer listener)`, () => {
    let plane: Awaited<ReturnType<typeof twoVersionPlane>>;
    before(async () => {
      // The uWS case pins the uWS peer listener (--peer-frontend=auto picks node:http2 since issue 30 part 2).
      plane = await twoVersionPlane(frontend, {
        configure: (c) => {
          c.connectTimeoutMs = 1000;
          c.discoveryRefreshIntervalMs = 60_000;
          c.peerFrontend = frontend;
        },
      });
    });
    after(async () => plane?.close());

    test('100 watches of a kind only the peer serves: over HTTP/2, one or two connections between the peers; over HTTP/1.1 one each; all released when the clients go', async () => {
      const base = plane.member(OLD).url;
      const port = Number(new URL(base).port);
      const path = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads?watch=1';
      const clients = Array.from({ length: 100 }, () => watchOn(port, path));
      const gauge = async (protocol: string) => Number((await (await fetch(plane.member(OLD).metricsUrl)).text()).match(new RegExp(`^mvproxy_upstream_connections\\{route="peer",protocol="${protocol}"\\} (\\d+)`, 'm'))?.[1] ?? NaN);
      if (frontend === 'node') {
        await eventually(async () => (await gauge('h2')) >= 1, { what: 'an h2 connection to the peer', timeoutMs: 5000 });
        assert.ok((await gauge('h2')) <= 2, `${await gauge('h2')} h2 connections for 100 watches`);
      } else await eventually(async () => (await gauge('http/1.1')) >= 100, { what: '100 HTTP/1.1 connections to the uWS peer listener', timeoutMs: 5000 });
      // Every watch reached the peer's apiserver (a connection still being made when its client went
      // would go to the idle pool instead, and idle out there).
      await eventually(() => plane.member(NEW).sim.openStreams() === 100, { what: '100 watches at the peer\'s apiserver', timeoutMs: 5000 });
      for (const c of clients) c.destroy();
      await eventually(async () => (await gauge('h2')) + (await gauge('http/1.1')) <= 2, { what: 'the peer connections released (an idle one may stay)', timeoutMs: 5000 });
    });

    test('a watch with 150 header fields crosses the HTTP/2 peer hop (node:http2 resets a stream of more than 128 by default: it was a 503)', { skip: frontend !== 'node' && 'the uWS peer listener speaks HTTP/1.1' }, async () => {
      const port = Number(new URL(plane.member(OLD).url).port);
      const headers: Record<string, string> = { ...AUTH };
      for (let i = 0; i < 150; i++) headers[`x-field-${i}`] = 'v';
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads?watch=1', agent: false, headers }, (res) => {
          resolve(res.statusCode ?? 0);
          req.destroy();
        });
        req.on('error', reject);
        req.setTimeout(5000, () => req.destroy(new Error('no head within 5 s')));
      });
      assert.equal(status, 200);
    });
  });
}

/** A watch (its head not waited for: on uWS it comes with the first event, and these have none). */
function watchOn(port: number, path: string): { destroy(): void } {
  const req = http.get({ host: '127.0.0.1', port, path, agent: false, headers: AUTH }, (res) => {
    res.on('data', () => undefined);
    res.on('error', () => undefined);
  });
  req.on('error', () => undefined);
  return { destroy: () => req.destroy() };
}
