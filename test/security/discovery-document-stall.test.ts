// A peer's discovery document stalling every client (issue 27, item 3), named after the attack. A
// valid 15.9 MiB peer /apis with 400,000 tiny groups (under the 16 MiB fetch cap) took RSS from 133
// to 756 MiB and stalled client /apis answers for up to 991 ms; 60,000 groups: a merge of over 5 s,
// stalls of 283-885 ms. The main thread spent it receiving the decoded list from the worker,
// building the route table (its name index quadratic in names that share length, first and last
// byte) and collecting the garbage. Now: a peer's document is refused past PEER_DISCOVERY_LIMITS
// where it is decoded (src/aggregation/decode.ts), only names cross to the main thread, and the route
// table is built a slice at a time (src/routing/routetable.ts buildSliced).
//
// What is asserted cannot flake on a busy machine (tests never time things: issue 40 item 5): for
// the worst document the limits let through (4,000 groups, 10,000 versions, 20,000 resources, all
// names alike in length, first and last byte, padded to 15.9 MiB, served as both /api and /apis),
// while a client keeps asking for /apis, the decode and merge run in the worker (the document's
// build says so), the main thread keeps turning while the document is published (the route table
// is built a slice at a time: counted turns of the event loop, not milliseconds), and the client is
// answered meanwhile. The longest the event loop was held (perf_hooks monitorEventLoopDelay) is
// printed, not asserted: on this 2-core machine under no other load it stays under 50 ms; the
// bound is measured by `npm run native-bench -- --only merge-load` (event-loop delay while merges
// run under a request load). The daemon runs in this process; the fake peer in a worker thread, so
// that writing its 16 MiB over TLS is not counted against the daemon.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { once } from 'node:events';
import { createClusterPKI } from '../../src/pki/bundle';
import { PEER_DISCOVERY_LIMITS } from '../../src/aggregation/decode';
import type { Daemon } from '../../src/daemon';
import { capturingLogger, startTestDaemon } from '../support/daemon';
import { DEFAULT_FRONTEND } from '../support/frontends';
import { readFixture } from '../support/fixtures';
import { startFakeServer, APIS_V133, AGG, type FakeServer } from '../faults/harness';

/** Turns of the event loop the publication must leave the daemon at least (it is chunked and waits on the worker). */
const MIN_TURNS = 20;
const PEER_ID = 'mvproxy-big-peer';

// The fake peer: an HTTPS peer listener in a worker thread serving /api and /apis from documents it
// builds itself (JSON text, so that nothing large crosses threads), chosen by a message.
const PEER_WORKER = `
const https = require('node:https');
const { readFileSync } = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const list = (items) => '{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[' + items.join(',') + ']}';
const pad = (i) => String(i).padStart(6, '0');
// G groups, V versions, R resources spread evenly, every name of a kind alike in length, first and
// last byte (one hash in the route table's name index), each resource padded to fill 'bytes'.
function atLimits(G, V, R, bytes, g0) {
  const build = (fill) => {
    const filler = 'c'.repeat(fill);
    const items = [];
    let v = 0, r = 0;
    for (let g = 0; g < G; g++) {
      const vs = [];
      for (let nv = Math.floor((V * (g + 1)) / G) - Math.floor((V * g) / G); nv > 0; nv--, v++) {
        const rs = [];
        for (let nr = Math.floor((R * (v + 1)) / V) - Math.floor((R * v) / V); nr > 0; nr--, r++)
          rs.push('{"resource":"r' + pad(r) + 's","scope":"Namespaced","singularResource":"r' + pad(r) + 's","verbs":["get","list"],"categories":["' + filler + '"]}');
        vs.push('{"version":"v' + pad(v) + 'z","resources":[' + rs.join(',') + ']}');
      }
      items.push('{"metadata":{"name":"' + g0 + pad(g) + '.x"},"versions":[' + vs.join(',') + ']}');
    }
    return list(items);
  };
  return Buffer.from(build(Math.max(0, Math.floor((bytes - build(0).length) / R))));
}
// The issue's document: n groups of one name each, nothing else.
function tinyGroups(n) {
  const items = [];
  for (let g = 0; g < n; g++) items.push('{"metadata":{"name":"g' + g + '"}}');
  return Buffer.from(list(items));
}
let api = Buffer.from(workerData.api);
let apis = Buffer.from(workerData.apis);
const server = https.createServer({ cert: readFileSync(workerData.cert), key: readFileSync(workerData.key), keepAliveTimeout: 30000 }, (req, res) => {
  if (req.url === '/api' || req.url === '/apis') {
    res.writeHead(200, { 'content-type': AGG });
    res.end(req.url === '/api' ? api : apis);
  } else if (req.url === '/readyz') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  } else {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}');
  }
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
parentPort.on('message', (m) => {
  apis = m.kind === 'atLimits' ? atLimits(m.groups, m.versions, m.resources, m.bytes, 'g') : tinyGroups(m.groups);
  // /api as large, with other groups (its own 20,000 GVRs)
  if (m.api) api = atLimits(m.groups, m.versions, m.resources, m.bytes, 'h');
  parentPort.postMessage({ bytes: apis.length });
});
`;

interface PeerThread {
  address: string;
  /** Serves a new document as /apis (and /api when `api`); resolves with its size in bytes. */
  serve(doc: { kind: 'atLimits'; groups: number; versions: number; resources: number; bytes: number } | { kind: 'tinyGroups'; groups: number }, api: boolean): Promise<number>;
  close(): Promise<void>;
}

async function startPeerThread(cert: string, key: string): Promise<PeerThread> {
  const api = '{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[]}';
  const w = new Worker(PEER_WORKER, { eval: true, workerData: { cert, key, api, apis: readV137() } });
  const next = () => new Promise<{ port?: number; bytes?: number }>((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  const { port } = await next();
  return {
    address: `127.0.0.1:${port}`,
    async serve(doc, withApi) {
      const reply = next();
      w.postMessage({ ...doc, api: withApi });
      return (await reply).bytes!;
    },
    async close() {
      await w.terminate();
    },
  };
}

function readV137(): string {
  // The fake local apiserver serves v1.33; the peer starts as v1.37 would (its scheduling.k8s.io/v1beta1 is peer-only).
  return readFixture('v1.37.0-dev-6732d913/aggregated_v2.json').toString();
}

async function scrape(d: Daemon, name: string): Promise<string[]> {
  const text = await (await fetch(`http://127.0.0.1:${d.metricsPort}/metrics`)).text();
  return text.split('\n').filter((l) => l.startsWith(name));
}

/**
 * Runs `work` while a client asks for /apis again and again, and measures the event loop: its
 * longest delay (ms), and the answers the client got meanwhile. The client is one keep-alive
 * connection, a request every few ms, that only counts the body's bytes: a client reading 32 MiB
 * answers through undici's async iterator cost this thread more (promises under the test runner's
 * hooks) than the daemon's own work.
 */
async function whileClientAsks(port: number, work: () => Promise<void>): Promise<{ maxStallMs: number; answers: number; statuses: Set<number>; turns: number }> {
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const ask = `GET /apis HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: ${AGG}\r\n\r\n`;
  let running = true;
  let answers = 0;
  const statuses = new Set<number>();
  // The reader: a head, then a Content-Length body or a chunked one (the uWS front end answers a
  // document written over several turns, over 1 MiB, chunked: src/listener/uws.ts TRYEND_STREAMS_RELIABLY).
  let pending = Buffer.alloc(0); // bytes not yet consumed (a head or a chunk-size line in pieces)
  let state: 'head' | 'body' | 'size' | 'crlf' | 'trailer' = 'head';
  let remaining = 0; // bytes left of a Content-Length body or of the current chunk
  let chunked = false;
  const answered = (): boolean => {
    state = 'head';
    answers++;
    // The next one a moment later, as a busy client would: not every turn of the loop.
    if (running && answers < 100_000) setTimeout(() => socket.write(ask), 2);
    else return true;
    return false;
  };
  const stopped = new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`the connection closed after ${answers} answers`)));
    socket.on('data', (data: Buffer) => {
      const buf = pending.length > 0 ? Buffer.concat([pending, data]) : data;
      pending = Buffer.alloc(0);
      let off = 0;
      while (off < buf.length) {
        if (state === 'body') {
          const take = Math.min(remaining, buf.length - off);
          remaining -= take;
          off += take;
          if (remaining > 0) continue;
          if (!chunked) {
            if (answered()) return resolve();
          } else state = 'crlf';
          continue;
        }
        // head, chunk size, the CRLF after a chunk and the trailer are lines: wait for a whole one
        const sep = state === 'head' ? '\r\n\r\n' : '\r\n';
        const end = buf.indexOf(sep, off, 'latin1');
        if (end < 0) {
          pending = Buffer.from(buf.subarray(off));
          return;
        }
        const line = buf.toString('latin1', off, end);
        off = end + sep.length;
        if (state === 'head') {
          statuses.add(Number(line.slice(9, 12)));
          chunked = /\r\ntransfer-encoding: *chunked/i.test(line);
          remaining = chunked ? 0 : Number(/\r\ncontent-length: *(\d+)/i.exec(line)?.[1] ?? 0);
          state = chunked ? 'size' : 'body';
          if (!chunked && remaining === 0 && answered()) return resolve();
        } else if (state === 'size') {
          remaining = parseInt(line, 16);
          state = remaining === 0 ? 'trailer' : 'body';
        } else if (state === 'crlf') state = 'size';
        else if (line === '' && answered()) return resolve(); // the trailer's end: the answer is complete
      }
    });
  });
  socket.write(ask);
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  // Turns of the event loop while the work runs: a setImmediate that schedules itself again.
  let turns = 0;
  let turning = true;
  const turn = (): void => {
    turns++;
    if (turning) setImmediate(turn);
  };
  setImmediate(turn);
  try {
    await work();
  } finally {
    turning = false;
    h.disable();
    running = false;
    await stopped.finally(() => socket.destroy());
  }
  return { maxStallMs: h.max / 1e6, answers, statuses, turns };
}

describe(`a peer's discovery document can stall clients (${DEFAULT_FRONTEND})`, () => {
  let tmp: string;
  let local: FakeServer;
  let peer: PeerThread;
  let daemon: Daemon;
  const log = capturingLogger();

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'mvproxy-stall-'));
    const pki = await createClusterPKI(join(tmp, 'pki'));
    const [certs, peerCerts] = await Promise.all([pki.node('observed'), pki.node('big-peer')]);
    local = await startFakeServer({ apis: APIS_V133 });
    peer = await startPeerThread(peerCerts.servingCert, peerCerts.servingKey);
    daemon = await startTestDaemon(
      {
        serverID: 'mvproxy-observed',
        frontend: DEFAULT_FRONTEND,
        localAPIServer: local.url,
        peerCAFile: pki.clusterCAFile,
        proxyClientCertFile: certs.proxyClientCert,
        proxyClientKeyFile: certs.proxyClientKey,
        peerTLSCertFile: certs.servingCert,
        peerTLSPrivateKeyFile: certs.servingKey,
        requestheaderClientCAFile: pki.frontProxyCAFile,
        requestheaderAllowedNames: ['front-proxy-client'],
        staticPeers: [{ id: PEER_ID, address: peer.address }],
        discoveryRefreshIntervalMs: 600_000, // refreshed by the test only
        peerDiscoveryGraceMs: 600_000,
        peerProbeIntervalMs: 600_000,
      },
      { log },
    );
    await daemon.publisher.refresh();
    await daemon.publisher.mergesDone();
  });

  after(async () => {
    await daemon?.close();
    await peer?.close();
    await local?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  test('the largest document the limits let through, as /api and /apis, is decoded and merged in the worker, and published while the event loop keeps turning and the client is answered', async (t) => {
    const L = PEER_DISCOVERY_LIMITS;
    const bytes = await peer.serve({ kind: 'atLimits', groups: L.groups, versions: L.versions, resources: L.resources, bytes: 15.9 * 1024 * 1024 }, true);
    assert.ok(bytes > 15.5 * 1024 * 1024 && bytes < 16 * 1024 * 1024, `document of ${bytes} bytes`);
    const before = daemon.snapshots.current.generation;
    const run = await whileClientAsks(daemon.clientPort, async () => {
      await daemon.publisher.refresh();
      await daemon.publisher.mergesDone();
    });
    const snap = daemon.snapshots.current;
    assert.ok(snap.generation > before, 'a new snapshot was published');
    assert.ok(snap.table.lookup('g000000.x', 'v000000z', 'r000000s')?.peers.includes(PEER_ID), 'the peer-only resources are routed to the peer');
    assert.ok(snap.table.size >= 2 * L.resources, `route table of ${snap.table.size} GVRs`);
    assert.ok(snap.discovery!.counts.groups >= L.groups, 'the merged document lists the peer\'s groups');
    assert.deepEqual([...run.statuses], [200]);
    assert.ok(run.answers > 0, 'the client was answered meanwhile');
    assert.equal(snap.discovery!.build.thread, 'worker', 'decoded and merged off the main thread');
    assert.ok(run.turns >= MIN_TURNS, `the event loop kept turning while the document was published (${run.turns} turns)`);
    t.diagnostic(`longest hold of the event loop ${run.maxStallMs.toFixed(1)} ms (not asserted), ${run.turns} turns, ${run.answers} /apis answers meanwhile`);
  });

  test("the issue's 400,000 tiny groups are refused where they are decoded: counted, logged, the last good view kept, the event loop turning meanwhile", async (t) => {
    const bytes = await peer.serve({ kind: 'tinyGroups', groups: 400_000 }, false);
    assert.ok(bytes < 16 * 1024 * 1024, `document of ${bytes} bytes`);
    const refusedBefore = await scrape(daemon, 'mvproxy_peer_discovery_refused_total{limit="groups"}');
    const tableBefore = daemon.snapshots.current.table;
    const run = await whileClientAsks(daemon.clientPort, async () => {
      await daemon.publisher.refresh();
      await daemon.publisher.mergesDone();
    });
    assert.deepEqual(await scrape(daemon, 'mvproxy_peer_discovery_refused_total{limit="groups"}'), [refusedBefore[0]!.replace(/ (\d+)$/, (_, n: string) => ` ${Number(n) + 1}`)]);
    const line = log.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l['msg']).startsWith('peer discovery document refused') && l['limit'] === 'groups');
    assert.ok(line, 'the refusal is logged');
    assert.match(String(line['err']), /400000 groups, more than the 4000 groups a peer's document may list/);
    assert.equal(line['peer'], PEER_ID);
    const table = daemon.snapshots.current.table;
    assert.equal(table.size, tableBefore.size, "the peer's last good view stays routed");
    assert.ok(table.lookup('g000000.x', 'v000000z', 'r000000s')?.peers.includes(PEER_ID));
    assert.deepEqual([...run.statuses], [200]);
    assert.ok(run.turns >= MIN_TURNS, `the event loop kept turning while the document was refused (${run.turns} turns)`);
    t.diagnostic(`longest hold of the event loop ${run.maxStallMs.toFixed(1)} ms (not asserted), ${run.turns} turns, ${run.answers} /apis answers meanwhile`);
  });
});
