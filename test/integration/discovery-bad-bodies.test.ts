// A peer (or the local apiserver) serving a bad discovery body (issue 16 §2), over HTTP:
//   - fetchDiscoveryDocument fails with the code of decode.ts for each body, reads at most
//     MAX_DISCOVERY_BODY_BYTES of a 50 MiB one (the request is aborted at the cap), and accepts
//     what Go's decoder accepts (a protobuf body with unknown fields, items: null);
//   - SnapshotPublisher counts each failed fetch as Kubernetes does (apiserver_peer_discovery_sync_
//     errors_total{type="fetch_discovery"}, once per failed path), keeps the peer's last good view
//     (its routes) for the grace period and drops it after; a body Go accepts in an unusual form
//     goes through the merge without an error.
// Two node:http servers stand in for the apiservers (the fake upstream serves /api and /apis itself).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Pool } from 'undici';
import { fetchDiscoveryDocument, type FetchOptions } from '../../src/snapshot/fetch';
import { DiscoveryFetchError } from '../../src/aggregation/errors';
import { MAX_DISCOVERY_BODY_BYTES, routingView } from '../../src/aggregation/decode';
import { SnapshotPublisher } from '../../src/snapshot/publisher';
import { DiscoveryMerger } from '../../src/aggregation/merger';
import { SnapshotHolder } from '../../src/snapshot/holder';
import { Metrics } from '../../src/telemetry/metrics';
import { createLogger } from '../../src/telemetry/log';
import type { PeerPools } from '../../src/upstream/pools';
import type { APIGroupDiscoveryList } from '../../src/aggregation/types';
import { CORE_API, V133_APIS, V137_APIS, json, list, nestedTo, protobufEnvelope, protobufListMessage, withResource } from '../support/discovery-bodies';

const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const AGG_PB = 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const MiB = 1024 * 1024;
const v137 = JSON.parse(V137_APIS.toString('utf8')) as APIGroupDiscoveryList;

type Handler = (res: http.ServerResponse) => void;
const send = (body: Buffer, contentType = AGG, status = 200): Handler => (res) => {
  res.writeHead(status, { 'content-type': contentType, 'content-length': body.length });
  res.end(body);
};

/** An apiserver stand-in: /api and /apis answered by the current handlers, anything else 404. */
async function fakeApiserver(): Promise<{ address: string; url: string; paths: Record<string, Handler>; close(): Promise<void> }> {
  const paths: Record<string, Handler> = { '/api': send(CORE_API), '/apis': send(V133_APIS) };
  const server = http.createServer((req, res) => {
    const h = paths[req.url ?? ''];
    if (h) h(res);
    else send(json({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }), 'application/json', 404)(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = `127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    address,
    url: `http://${address}`,
    paths,
    close: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/** Streams `total` bytes of `{"items":[` + spaces, with backpressure; counts what was written until the client went away. */
function stream(total: number, headers: http.OutgoingHttpHeaders, into: { written: number; closedEarly: boolean }): Handler {
  return (res) => {
    res.writeHead(res.statusCode, { 'content-type': AGG, ...headers }); // 200 unless the caller set another
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    res.on('close', () => (into.closedEarly = !res.writableFinished));
    const pump = () => {
      while (!res.destroyed && into.written < total) {
        into.written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end();
    };
    res.write('{"items":[');
    pump();
  };
}

const OPTS: FetchOptions = { peerHop: false, timeoutMs: 10_000 };

async function fetchError(pool: Pool, o: FetchOptions = OPTS): Promise<DiscoveryFetchError> {
  try {
    await fetchDiscoveryDocument(pool, '/apis', o);
  } catch (e) {
    assert.ok(e instanceof DiscoveryFetchError, String(e));
    return e;
  }
  assert.fail('the fetch succeeded');
}

describe('fetchDiscoveryDocument and a bad body', () => {
  let server: Awaited<ReturnType<typeof fakeApiserver>>;
  let pool: Pool;
  before(async () => {
    server = await fakeApiserver();
    pool = new Pool(server.url);
  });
  after(async () => {
    await pool.close();
    await server.close();
  });

  const refused: [name: string, handler: Handler, code: DiscoveryFetchError['code'], message?: RegExp][] = [
    ['a v2beta1 body', send(json({ ...v137, apiVersion: 'apidiscovery.k8s.io/v2beta1' })), 'MVP_ERR_DISCOVERY_DECODE', /^GET \/apis: not an apidiscovery\.k8s\.io\/v2 APIGroupDiscoveryList: apiVersion "apidiscovery\.k8s\.io\/v2beta1"/],
    ['a Status with status 200', send(json({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 500 })), 'MVP_ERR_DISCOVERY_DECODE', /kind "Status"/],
    ['a Status with status 503', send(json({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 503 }), 'application/json', 503), 'MVP_ERR_DISCOVERY_STATUS', /status 503/],
    ['HTML from a proxy in between (text/html)', send(json('<html><body>502 Bad Gateway</body></html>'), 'text/html'), 'MVP_ERR_DISCOVERY_NOT_AGGREGATED'],
    ['HTML labelled as aggregated discovery', send(json('<html><body>oops</body></html>')), 'MVP_ERR_DISCOVERY_DECODE', /not a JSON object/],
    ['truncated JSON', send(V137_APIS.subarray(0, 30_000)), 'MVP_ERR_DISCOVERY_DECODE'],
    ['non-UTF-8 bytes outside strings', send(Buffer.concat([Buffer.from('{"items":[]'), Buffer.from([0xc3, 0x28]), Buffer.from('}')])), 'MVP_ERR_DISCOVERY_DECODE'],
    ['JSON nested 10,001 deep', send(nestedTo(10_001)), 'MVP_ERR_DISCOVERY_DECODE', /nested deeper than 10000/],
    ['a resource name that is a number', send(withResource({ resource: 42 })), 'MVP_ERR_DISCOVERY_DECODE', /items\[0\]\.versions\[0\]\.resources\[0\]\.resource: expected a string, got a number/],
    ['an empty 200', send(Buffer.alloc(0)), 'MVP_ERR_DISCOVERY_DECODE', /empty body/],
    ['a body cut off mid-way (connection reset)', (res) => (res.writeHead(200, { 'content-type': AGG, 'content-length': V137_APIS.length }), res.write(V137_APIS.subarray(0, 1000), () => res.destroy())), 'MVP_ERR_DISCOVERY_TRANSPORT', /reading the body/],
  ];
  for (const [name, handler, code, message] of refused) {
    test(`${name}: ${code}`, async () => {
      server.paths['/apis'] = handler;
      const e = await fetchError(pool);
      assert.equal(e.code, code, e.message);
      if (message) assert.match(e.message, message);
    });
  }

  test('50 MiB streamed without Content-Length: TOO_LARGE once the cap is passed, and the client stops reading (the request is aborted)', async () => {
    const seen = { written: 0, closedEarly: false };
    server.paths['/apis'] = stream(50 * MiB, {}, seen);
    const e = await fetchError(pool);
    assert.equal(e.code, 'MVP_ERR_DISCOVERY_TOO_LARGE', e.message);
    assert.match(e.message, /more than the 16777216-byte limit/);
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(seen.closedEarly, 'the response was cut before its end');
    assert.ok(seen.written < MAX_DISCOVERY_BODY_BYTES + 8 * MiB, `the server got to write ${seen.written} bytes (socket buffers aside, about the cap)`);
  });

  test('a Content-Length of 50 MiB: TOO_LARGE before reading the body', async () => {
    const seen = { written: 0, closedEarly: false };
    server.paths['/apis'] = stream(50 * MiB, { 'content-length': 50 * MiB + 10 }, seen);
    const e = await fetchError(pool);
    assert.equal(e.code, 'MVP_ERR_DISCOVERY_TOO_LARGE', e.message);
    assert.match(e.message, /body of 52428810 bytes/);
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(seen.closedEarly);
    assert.ok(seen.written < MAX_DISCOVERY_BODY_BYTES, `wrote ${seen.written} bytes`);
  });

  test('a 500 with a 50 MiB body: STATUS, without reading it all', async () => {
    const seen = { written: 0, closedEarly: false };
    server.paths['/apis'] = (res) => {
      res.statusCode = 500;
      stream(50 * MiB, {}, seen)(res);
    };
    const e = await fetchError(pool);
    assert.equal(e.code, 'MVP_ERR_DISCOVERY_STATUS');
    assert.equal(e.status, 500);
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(seen.written < MAX_DISCOVERY_BODY_BYTES, `wrote ${seen.written} bytes`);
  });

  test('a smaller cap from the options', async () => {
    server.paths['/apis'] = send(V137_APIS);
    assert.equal((await fetchError(pool, { ...OPTS, maxBytes: 4096 })).code, 'MVP_ERR_DISCOVERY_TOO_LARGE');
  });

  test('accepted as Go accepts them: a protobuf body with unknown fields (re-encoded as JSON), items: null, JSON 10,000 deep in an unknown field', async () => {
    server.paths['/apis'] = send(protobufEnvelope('apidiscovery.k8s.io/v2', 'APIGroupDiscoveryList', protobufListMessage(v137.items, true)), AGG_PB);
    const pb = await fetchDiscoveryDocument(pool, '/apis', OPTS);
    assert.deepEqual(pb.routes, routingView(v137));
    assert.deepEqual(JSON.parse(pb.raw.toString()), v137);

    server.paths['/apis'] = send(list({ items: null }));
    assert.deepEqual((await fetchDiscoveryDocument(pool, '/apis', OPTS)).routes, []);

    server.paths['/apis'] = send(nestedTo(10_000));
    assert.deepEqual((await fetchDiscoveryDocument(pool, '/apis', OPTS)).routes, []);

    server.paths['/apis'] = send(V137_APIS);
    const good = await fetchDiscoveryDocument(pool, '/apis', OPTS);
    assert.equal(good.raw.equals(V137_APIS), true, 'a real document is kept byte for byte');
  });
});

describe('SnapshotPublisher and a peer serving bad bodies', () => {
  let local: Awaited<ReturnType<typeof fakeApiserver>>;
  let peer: Awaited<ReturnType<typeof fakeApiserver>>;
  let localPool: Pool;
  let peerPool: Pool;
  let sync: SnapshotPublisher;
  let clock = 1_000_000;
  const metrics = new Metrics();
  const routes = new SnapshotHolder();
  const logs: string[] = [];
  const GRACE_MS = 60_000;

  const fetchErrors = async () => (await metrics.peerDiscoverySyncErrors.get()).values.find((v) => v.labels.type === 'fetch_discovery')?.value ?? 0;
  /** Where a resource only the v1.37 peer serves is routed (undefined: nowhere). */
  const workloads = () => routes.current.table.lookup('scheduling.k8s.io', 'v1beta1', 'workloads')?.peers;

  before(async () => {
    local = await fakeApiserver();
    peer = await fakeApiserver();
    peer.paths['/apis'] = send(V137_APIS);
    localPool = new Pool(local.url);
    peerPool = new Pool(peer.url);
    sync = new SnapshotPublisher({
      local: localPool,
      peerPools: { get: () => peerPool, retain: () => undefined } as unknown as PeerPools,
      snapshots: routes,
      localID: 'local',
      peers: () => [{ id: 'peer-1', address: peer.address }],
      merger: new DiscoveryMerger({ inline: true }),
      refreshIntervalMs: 3_600_000,
      peerGraceMs: GRACE_MS,
      fetchTimeoutMs: 10_000,
      metrics,
      log: createLogger(0, 'json', (l) => void logs.push(l)),
      now: () => clock,
    });
    await sync.refresh();
    await sync.mergesDone();
  });
  after(async () => {
    await sync.stop();
    await localPool.close();
    await peerPool.close();
    await local.close();
    await peer.close();
  });

  test('a good peer: its resources are routed to it', () => {
    assert.equal(sync.peerUp('peer-1'), true);
    assert.deepEqual(workloads(), ['peer-1']);
  });

  const bad: [string, Handler][] = [
    ['a v2beta1 body', send(json({ ...v137, apiVersion: 'apidiscovery.k8s.io/v2beta1' }))],
    ['a Status (200)', send(json({ kind: 'Status', apiVersion: 'v1', status: 'Failure' }))],
    ['HTML', send(json('<!DOCTYPE html><title>x</title>'))],
    ['truncated JSON', send(V137_APIS.subarray(0, 20_000))],
    ['non-UTF-8 bytes outside strings', send(Buffer.concat([Buffer.from('{"items":['), Buffer.from([0xff]), Buffer.from(']}')]))],
    ['JSON nested 10,001 deep', send(nestedTo(10_001))],
    ['items that is an object', send(list({ items: {} }))],
    ['50 MiB', stream(50 * MiB, {}, { written: 0, closedEarly: false })],
    ['a protobuf Status', send(protobufEnvelope('v1', 'Status', new Uint8Array(0)), AGG_PB)],
  ];
  for (const [name, handler] of bad) {
    test(`${name} on /apis: one fetch_discovery error, the last good view kept within the grace period`, async () => {
      peer.paths['/apis'] = handler;
      const before = await fetchErrors();
      await sync.refresh();
      assert.equal(await fetchErrors(), before + 1, 'counted once (one failed path)');
      assert.equal(sync.peerUp('peer-1'), false);
      assert.deepEqual(workloads(), ['peer-1'], 'still routed: the last good view is kept');
      // Back to good: up again, for the next case.
      peer.paths['/apis'] = send(V137_APIS);
      await sync.refresh();
      assert.equal(sync.peerUp('peer-1'), true);
      assert.equal(await fetchErrors(), before + 1);
    });
  }

  test('a bad body on /api and /apis: two errors, as Kubernetes counts per path', async () => {
    peer.paths['/api'] = send(json('<html></html>'));
    peer.paths['/apis'] = send(json('<html></html>'));
    const before = await fetchErrors();
    await sync.refresh();
    assert.equal(await fetchErrors(), before + 2);
    peer.paths['/api'] = send(CORE_API);
    peer.paths['/apis'] = send(V137_APIS);
    await sync.refresh();
    assert.equal(sync.peerUp('peer-1'), true);
  });

  test('bodies Go accepts in unusual forms (protobuf with unknown fields, items: null, nulls, unknown fields) are used and merged without an error', async () => {
    const forms: Buffer[] = [
      protobufEnvelope('apidiscovery.k8s.io/v2', 'APIGroupDiscoveryList', protobufListMessage(v137.items, true)),
      list({ items: [null, ...v137.items.map((g) => ({ ...g, metadata: { ...g.metadata, unknown: [1] }, extra: { deep: [[[]]] } }))] }),
      json({ items: v137.items }), // apiVersion and kind defaulted
    ];
    for (const [i, body] of forms.entries()) {
      peer.paths['/apis'] = send(body, i === 0 ? AGG_PB : AGG);
      const generation = routes.current.discovery?.generation ?? 0;
      await sync.refresh();
      await sync.mergesDone();
      assert.equal(sync.peerUp('peer-1'), true, `form ${i}`);
      assert.deepEqual(workloads(), ['peer-1'], `form ${i}`);
      assert.ok((routes.current.discovery?.generation ?? 0) > generation, `form ${i}: a new snapshot was merged and published`);
      assert.ok(routes.current.discovery!.counts.groups >= v137.items.length, `form ${i}: with the peer's groups`);
    }
    peer.paths['/apis'] = send(list({ items: null }));
    await sync.refresh();
    await sync.mergesDone();
    assert.equal(sync.peerUp('peer-1'), true);
    assert.equal(workloads(), undefined, 'an empty list is an empty view');
    assert.deepEqual(logs.filter((l) => l.includes('merge failed')), [], 'no merge failed');
    peer.paths['/apis'] = send(V137_APIS);
    await sync.refresh();
  });

  test('still bad after the grace period: the peer leaves routing', async () => {
    peer.paths['/apis'] = send(json({ kind: 'Status', apiVersion: 'v1' }));
    await sync.refresh();
    assert.deepEqual(workloads(), ['peer-1'], 'within the grace period');
    clock += GRACE_MS + 1;
    await sync.refresh();
    assert.equal(workloads(), undefined, 'past the grace period');
  });
});
