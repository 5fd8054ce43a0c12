// mvproxy never alters a body it relays (issue 33). kube-apiserver 1.37 gzips a watch-list for a
// client that sends Accept-Encoding: gzip (Go's transport, so client-go, sends it by default): the
// simulated v1.37 apiserver does the same (SimApiserverOptions.watchListCompression), and the bytes
// a client gets through mvproxy must be the bytes the apiserver wrote, on both front ends and both
// routes. The uWS front end used to write one space before every JSON watch body (to push its head
// out before the first event): a gzip body then began 20 1f 8b, and client-go failed every such
// watch with "gzip: invalid header".
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { FRONTENDS } from '../support/frontends';
import { eventually } from '../support/poll';
import { twoVersionPlane, call, AUTH, OLD, NEW } from '../support/plane';
import { startTestDaemon } from '../support/daemon';
import type { Daemon } from '../../src/daemon';
import type { Frontend } from '../../src/config/types';

const NEW_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads';
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';
/** A watch-list as client-go's reflector asks for it (WatchListClient, on by default from client-go 1.35). */
const WATCH_LIST = '?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=60';

/** A watch with Accept-Encoding: gzip, read as raw bytes (node:http never decodes a body). */
function rawWatch(base: string, path: string, auditId: string, gzip = true) {
  const u = new URL(base);
  const chunks: Buffer[] = [];
  let head: http.IncomingMessage | undefined;
  const req = http.get({ host: u.hostname, port: u.port, path, agent: false, headers: { ...AUTH, ...(gzip ? { 'accept-encoding': 'gzip' } : {}), 'audit-id': auditId } }, (res) => {
    head = res;
    res.on('data', (d: Buffer) => chunks.push(d));
    res.on('error', () => undefined);
  });
  req.on('error', () => undefined);
  return { head: () => head, body: () => Buffer.concat(chunks), destroy: () => req.destroy() };
}

const CASES = [
  { route: 'local, gzip (v1.37)', via: NEW, served: NEW, path: CONFIGMAPS, gzip: true },
  { route: 'peer, gzip (v1.37)', via: OLD, served: NEW, path: NEW_ONLY, gzip: true },
  { route: 'local, identity (v1.33 does not gzip)', via: OLD, served: OLD, path: CONFIGMAPS, gzip: false },
] as const;

// The peer listener is node:http2 by default; on uWS it may be uWS too (--peer-frontend=uws), which
// wrote the same space.
const PAIRS: [Frontend, Frontend][] = FRONTENDS.flatMap((f): [Frontend, Frontend][] => (f === 'uws' ? [[f, 'node'], [f, 'uws']] : [[f, 'node']]));
for (const [frontend, peerFrontend] of PAIRS) {
  describe(`relayed watch bodies are byte for byte the apiserver's (${frontend} front end, ${peerFrontend} peer listener)`, () => {
    let plane: Awaited<ReturnType<typeof twoVersionPlane>>;
    before(async () => {
      plane = await twoVersionPlane(frontend, {
        simRecordStreams: true,
        configure: (c) => {
          c.connectTimeoutMs = 1000;
          c.discoveryRefreshIntervalMs = 60_000;
          c.peerFrontend = peerFrontend;
        },
      });
    });
    after(async () => plane?.close());

    for (const c of CASES) {
      test(`a watch-list asked with Accept-Encoding: gzip, ${c.route}: the bytes relayed equal the bytes sent, and they decode to every event`, async () => {
        const auditId = randomUUID();
        const sim = plane.member(c.served).sim;
        const w = rawWatch(plane.member(c.via).url, c.path + WATCH_LIST, auditId);
        try {
          const sent = () => Buffer.concat(sim.streamBodies.get(auditId) ?? []);
          const decode = (b: Buffer) => (c.gzip ? gunzipSync(b) : b).toString();
          // The initial events end with the initial-events-end bookmark: one flush, at once.
          // uWS starts an identity-encoded JSON watch with one space so that its head goes out at
          // once (src/listener/uws.ts JSON_STREAM_LEAD); nothing else is ever added.
          const lead = Buffer.from(frontend === 'uws' && !c.gzip ? ' ' : '');
          const same = () => assert.ok(sent().length > 0 && w.body().equals(Buffer.concat([lead, sent()])), `relayed ${w.body().length} bytes, ${w.body().subarray(0, 6).toString('hex')}…; sent ${sent().length}, ${sent().subarray(0, 6).toString('hex')}…`);
          await eventually(() => (same(), true), { what: 'the initial events relayed as sent', timeoutMs: 5000 });
          assert.match(decode(w.body()), /"k8s.io\/initial-events-end":"true"/);
          const name = `relayed-${frontend}-${c.via}-${c.path === NEW_ONLY ? 'wl' : 'cm'}`;
          const obj = c.path === NEW_ONLY ? { apiVersion: 'scheduling.k8s.io/v1beta1', kind: 'Workload', metadata: { name } } : { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { k: 'v' } };
          const made = await call(plane.member(c.served).url, c.path, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify(obj) });
          assert.equal(made.status, 201, made.text);
          await eventually(() => (same(), decode(w.body()).includes(`"name":"${name}"`)), { what: `the ADDED event of ${name} relayed as sent`, timeoutMs: 5000 });
          const head = w.head()!;
          assert.equal(head.statusCode, 200);
          assert.equal(head.headers['content-encoding'], c.gzip ? 'gzip' : undefined);
          if (c.gzip) assert.deepEqual([...w.body().subarray(0, 2)], [0x1f, 0x8b], 'the body starts with the gzip magic');
          const events = decode(w.body()).trim().split('\n').map((l) => JSON.parse(l) as { type: string; object: { metadata: { name?: string } } });
          assert.equal(events.at(-1)!.type, 'ADDED');
          assert.equal(events.at(-1)!.object.metadata.name, name);
        } finally {
          w.destroy();
        }
      });
    }
  });
}

for (const frontend of FRONTENDS) {
  describe(`a watch's head goes out at once, as kube-apiserver sends it (${frontend} front end)`, () => {
    let plane: Awaited<ReturnType<typeof twoVersionPlane>>;
    before(async () => {
      plane = await twoVersionPlane(frontend, { simRecordStreams: true });
    });
    after(async () => plane?.close());

    // Go's client returns from Watch() only with the head: a head held until the first event kept
    // a watch-then-write client waiting up to timeoutSeconds (test/kube/routing.test.ts, uWS).
    for (const [what, via, path] of [['local', OLD, CONFIGMAPS], ['peer', OLD, NEW_ONLY]] as const) {
      test(`a JSON watch of a quiet resource (${what} route): 200 and its headers before any event`, async () => {
        const w = rawWatch(plane.member(via).url, `${path}?watch=true&timeoutSeconds=60`, randomUUID(), false);
        try {
          await eventually(() => w.head() !== undefined, { what: 'the watch head', timeoutMs: 3000 });
          assert.equal(w.head()!.statusCode, 200);
          assert.match(String(w.head()!.headers['content-type']), /^application\/json/);
          assert.equal(w.body().toString().trim(), '', 'no event yet');
        } finally {
          w.destroy();
        }
      });
    }

    // uWS pushed a JSON watch's head out with a lead byte, sent as a chunk even after a HEAD's head:
    // a keep-alive client read it as the start of its next answer (helper 7).
    test('a HEAD of a JSON watch: the head, no body; the next request on the connection gets its own answer', async () => {
      const u = new URL(plane.member(OLD).url);
      const sock = net.connect(Number(u.port), u.hostname);
      let text = '';
      sock.on('data', (d: Buffer) => (text += d.toString('latin1')));
      sock.on('error', () => undefined);
      try {
        const auth = Object.entries(AUTH).map(([k, v]) => `${k}: ${v}\r\n`).join('');
        sock.write(`HEAD ${CONFIGMAPS}?watch=true&timeoutSeconds=1 HTTP/1.1\r\nHost: x\r\n${auth}\r\n`);
        await eventually(() => text.includes('\r\n\r\n'), { what: 'the HEAD answer', timeoutMs: 5000 });
        await new Promise((r) => setTimeout(r, 1500)); // the watch's timeout passes: anything after the head would be here
        sock.write(`GET /version HTTP/1.1\r\nHost: x\r\n${auth}\r\n`);
        await eventually(() => text.split('HTTP/1.1 ').length > 2, { what: 'the next answer', timeoutMs: 5000 });
        const afterHead = text.slice(text.indexOf('\r\n\r\n') + 4);
        assert.ok(afterHead.startsWith('HTTP/1.1 '), `bytes after the HEAD's head: ${JSON.stringify(afterHead.slice(0, 40))}`);
      } finally {
        sock.destroy();
      }
    });
  });
}

/** GET through a daemon: status, headers and the body's bytes. */
function get(port: number, path: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

const CHUNKS = ['{"kind":"ConfigMapList",', '"items":[', ']}'];

for (const frontend of FRONTENDS) {
  describe(`relayed answers without a body, and chunked bodies (${frontend} front end)`, () => {
    let up: http.Server;
    let d: Daemon;
    before(async () => {
      up = http.createServer((req, res) => {
        const url = req.url ?? '';
        if (url.endsWith('/nocontent')) return void res.writeHead(204, { 'x-upstream': 'a' }).end();
        if (url.endsWith('/notmodified')) return void res.writeHead(304, { etag: '"e1"' }).end();
        if (url.endsWith('/chunked')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          let i = 0;
          const next = (): void => {
            if (i === CHUNKS.length) return void res.end();
            res.write(CHUNKS[i++]);
            setTimeout(next, 20);
          };
          return next();
        }
        res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
      });
      await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
      d = await startTestDaemon({ frontend, localAPIServer: `http://127.0.0.1:${(up.address() as { port: number }).port}` });
    });
    after(async () => {
      await d?.close();
      up?.close();
    });

    test('a 204 and a 304 go out without a Content-Length, as the apiserver sent them (RFC 9110 §8.6), with its headers', async () => {
      const nc = await get(d.clientPort, '/api/v1/namespaces/default/configmaps/nocontent');
      assert.equal(nc.status, 204);
      assert.equal(nc.headers['content-length'], undefined, JSON.stringify(nc.headers));
      assert.equal(nc.headers['x-upstream'], 'a');
      const nm = await get(d.clientPort, '/api/v1/namespaces/default/configmaps/notmodified');
      assert.equal(nm.status, 304);
      assert.equal(nm.headers['content-length'], undefined, JSON.stringify(nm.headers));
      assert.equal(nm.headers.etag, '"e1"');
    });

    test('a chunked body that arrives in pieces is relayed as the same bytes', async () => {
      const r = await get(d.clientPort, '/api/v1/namespaces/default/configmaps/chunked');
      assert.equal(r.status, 200);
      assert.equal(r.body.toString(), CHUNKS.join(''));
    });
  });
}
