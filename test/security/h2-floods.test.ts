// HTTP/2 floods on the node front end (issue 38, item 5), named after the attacks: raw frames
// (test/support/h2-flood.ts) on one connection to the client listener (TLS, HTTP/2 by ALPN, anyone
// may connect) and to the peer listener (mTLS: a verified peer), with a counting fake apiserver
// behind the daemon. For each flood: another client is still answered while it runs and after it,
// the process's memory stays bounded (peak growth, and what is left after a GC), what reaches the
// apiserver is counted, and the flooding connection is closed (GOAWAY, or a close) where node:http2
// (nghttp2 1.70 in Node 24) closes it. Cases:
//   1. rapid reset (CVE-2023-44487): HEADERS for a resource, each followed at once by RST_STREAM;
//   2. CONTINUATION flood (CVE-2024-27983 / CVE-2024-28182): HEADERS without END_HEADERS, then
//      endless CONTINUATION frames, with fields and empty;
//   3. SETTINGS and PING floods (each frame asks for an ACK), dense (more than a TLS record of them
//      in one write), paced by a reading client, and PINGs from a client that reads nothing; a
//      WINDOW_UPDATE flood (connection and stream) and an empty-DATA flood on an open upload;
//   4. streams beyond the advertised SETTINGS_MAX_CONCURRENT_STREAMS (250).
// What node does is what mvproxy does here: nothing of it is mvproxy's code, except what the handler
// does with a stream the client has already reset (case 1, the one bug: a reset stream's request is
// written to the apiserver when an idle upstream connection is at hand, and each other reset
// stream dials one; node hands the handler the request before it reads the RST_STREAM that follows
// it in the same read).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startTestDaemon } from '../support/daemon';
import { startFakeUpstream } from '../support/fake-upstream';
import { eventually } from '../support/poll';
import { FLAG, FloodClient, H2_ERROR, continuation, data, describeGoAway, getFields, headerBlock, headers, indexedField, indexedLiteralField, ping, rstStream, settings, windowUpdate, type FloodClientOptions } from '../support/h2-flood';
import { createClusterPKI } from '../../src/pki/bundle';
import type { Daemon } from '../../src/daemon';

const PATH = '/api/v1/namespaces/default/configmaps';
const MIB = 1024 * 1024;
/** Another client's request, during a flood and after it, is answered within this. */
const ANSWER_MS = 2000;
/** Peak growth of the process's heap (daemon and attacker share it) while a flood runs, and RSS. */
const PEAK_HEAP_MIB = 64;
const PEAK_RSS_MIB = 128;
/** What is left on the heap after a GC once the flood ended and its requests settled. */
const RETAINED_HEAP_MIB = 16;
/** nghttp2's budget of streams reset per connection before it sends GOAWAY (a burst of 1000, then 33/s). */
const RESET_BURST = 1000;
/** The advertised SETTINGS_MAX_CONCURRENT_STREAMS of both listeners (src/listener/listen-node.ts). */
const MAX_STREAMS = 250;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** What the fake apiserver saw of one flood's requests (its query carries `flood=<marker>`). */
interface Seen {
  requests: number;
  /** Still unanswered and connected. */
  open: number;
  /** Closed by mvproxy before the answer was written: the request was cancelled. */
  cancelled: number;
}

describe('HTTP/2 floods on the node front end', () => {
  let tmp: string;
  let d: Daemon;
  let up: Awaited<ReturnType<typeof startFakeUpstream>>;
  let peerCred: { cert: string; key: string };
  const seen = new Map<string, Seen>();
  /** Connections the daemon opened to the fake apiserver. */
  let upstreamConnections = 0;
  let seq = 0;

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'mvproxy-h2-floods-'));
    const pki = await createClusterPKI(join(tmp, 'pki'));
    const certs = await pki.node('a');
    peerCred = { cert: readFileSync(certs.proxyClientCert, 'utf8'), key: readFileSync(certs.proxyClientKey, 'utf8') };
    up = await startFakeUpstream((req, res) => {
      if (!req.url?.startsWith(PATH)) return false;
      const q = new URLSearchParams(req.url.slice(PATH.length + 1));
      const marker = q.get('flood') ?? 'probe';
      let s = seen.get(marker);
      if (!s) seen.set(marker, (s = { requests: 0, open: 0, cancelled: 0 }));
      const st = s;
      st.requests++;
      st.open++;
      let answered = false;
      const answer = () => {
        if (answered || res.destroyed) return;
        answered = true;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}');
      };
      res.on('close', () => {
        st.open--;
        if (!res.writableFinished) st.cancelled++;
      });
      req.resume(); // an upload's body (the empty-DATA flood) is read and dropped
      const hold = Number(q.get('hold') ?? 0);
      if (hold > 0) setTimeout(answer, hold).unref();
      else answer();
      return true;
    });
    up.server.on('connection', () => upstreamConnections++);
    d = await startTestDaemon({
      frontend: 'node',
      bindAddress: '127.0.0.1',
      tlsCertFile: certs.servingCert,
      tlsPrivateKeyFile: certs.servingKey,
      peerTLSCertFile: certs.servingCert,
      peerTLSPrivateKeyFile: certs.servingKey,
      localAPIServer: up.url,
      proxyClientCertFile: certs.proxyClientCert,
      proxyClientKeyFile: certs.proxyClientKey,
      peerCAFile: pki.clusterCAFile,
      requestheaderClientCAFile: pki.frontProxyCAFile,
      requestheaderAllowedNames: ['front-proxy-client'],
      requestTimeoutMs: 5000,
      connectTimeoutMs: 1000,
      discoveryRefreshIntervalMs: 60_000,
    });
    await d.publisher.refresh();
  });
  after(async () => {
    await d?.close();
    await up?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const LISTENERS = [
    { name: 'client listener (TLS, anonymous)', port: () => d.clientPort, tls: (): FloodClientOptions => ({}) },
    { name: 'peer listener (mTLS, a verified peer)', port: () => d.peerPort, tls: (): FloodClientOptions => peerCred },
  ];
  type Listener = (typeof LISTENERS)[number];

  const seenOf = (marker: string): Seen => seen.get(marker) ?? { requests: 0, open: 0, cancelled: 0 };
  const fresh = (what: string) => `${what}-${++seq}`;

  async function gauge(name: string, labels: Record<string, string> = {}): Promise<number> {
    const m = await d.metrics.registry.getSingleMetric(name)!.get();
    return m.values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
  }

  /** A GET on a connection of its own, as another client: its status (0: no answer within ANSWER_MS) and how long it took. */
  async function probe(l: Listener): Promise<{ status: number; ms: number }> {
    const t0 = Date.now();
    const s = http2.connect(`https://127.0.0.1:${l.port()}`, { rejectUnauthorized: false, ...l.tls() });
    s.on('error', () => undefined);
    try {
      return await new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ status: 0, ms: Date.now() - t0 }), ANSWER_MS);
        const r = s.request({ ':path': `${PATH}?flood=probe` });
        r.on('response', (h) => {
          r.resume();
          r.on('end', () => {
            clearTimeout(timer);
            resolve({ status: Number(h[':status']), ms: Date.now() - t0 });
          });
        });
        r.on('error', () => {
          clearTimeout(timer);
          resolve({ status: -1, ms: Date.now() - t0 });
        });
        r.end();
      });
    } finally {
      s.destroy();
    }
  }

  /** `n` GETs at once on one connection, each held `holdMs` by the apiserver: the relay's idle pool then holds n connections, as on a busy node. */
  async function warmPool(l: Listener, n: number, holdMs: number): Promise<void> {
    const s = http2.connect(`https://127.0.0.1:${l.port()}`, { rejectUnauthorized: false, ...l.tls() });
    s.on('error', () => undefined);
    const statuses = await Promise.all(
      Array.from({ length: n }, () =>
        new Promise<number>((resolve) => {
          const r = s.request({ ':path': `${PATH}?flood=warm&hold=${holdMs}` });
          let status = 0;
          r.on('response', (h) => (status = Number(h[':status'])));
          r.resume();
          r.on('close', () => resolve(status));
          r.end();
        }),
      ),
    );
    s.close();
    assert.deepEqual(new Set(statuses), new Set([200]), 'the warm-up requests are answered');
  }

  /**
   * Runs a flood beside two other clients (one while it runs, one after), samples the process's
   * memory every 20 ms, then waits until no request is in flight and takes the heap after a GC.
   */
  async function underFlood<T>(l: Listener, flood: () => Promise<T>): Promise<{ result: T; during: { status: number; ms: number }; after: { status: number; ms: number }; peakHeapMiB: number; peakRssMiB: number; retainedHeapMiB: number }> {
    gc();
    const base = process.memoryUsage();
    let peakHeap = base.heapUsed;
    let peakRss = base.rss;
    const sampler = setInterval(() => {
      const m = process.memoryUsage();
      peakHeap = Math.max(peakHeap, m.heapUsed);
      peakRss = Math.max(peakRss, m.rss);
    }, 20);
    let result: T;
    let during: { status: number; ms: number };
    try {
      [result, during] = await Promise.all([flood(), probe(l)]);
    } finally {
      clearInterval(sampler);
    }
    const afterProbe = await probe(l);
    await eventually(async () => (await gauge('mvproxy_inflight_requests')) === 0, { what: 'no request in flight after the flood', timeoutMs: 4000 });
    gc();
    const retained = process.memoryUsage().heapUsed - base.heapUsed;
    return { result, during, after: afterProbe, peakHeapMiB: (peakHeap - base.heapUsed) / MIB, peakRssMiB: (peakRss - base.rss) / MIB, retainedHeapMiB: retained / MIB };
  }

  /** The bounds every flood is held to: others answered, memory bounded. */
  function assertHeld(r: Awaited<ReturnType<typeof underFlood>>, what: string): void {
    assert.equal(r.during.status, 200, `${what}: another client's GET while the flood runs: ${JSON.stringify(r.during)}`);
    assert.equal(r.after.status, 200, `${what}: another client's GET after the flood: ${JSON.stringify(r.after)}`);
    assert.ok(r.peakHeapMiB < PEAK_HEAP_MIB, `${what}: heap grew by ${r.peakHeapMiB.toFixed(1)} MiB during the flood (bound ${PEAK_HEAP_MIB})`);
    assert.ok(r.peakRssMiB < PEAK_RSS_MIB, `${what}: RSS grew by ${r.peakRssMiB.toFixed(1)} MiB during the flood (bound ${PEAK_RSS_MIB})`);
    assert.ok(r.retainedHeapMiB < RETAINED_HEAP_MIB, `${what}: ${r.retainedHeapMiB.toFixed(1)} MiB of heap left after the flood and a GC (bound ${RETAINED_HEAP_MIB})`);
  }

  /** HEADERS then RST_STREAM(CANCEL) for streams first, first+2, ... in one write of `pairs` pairs. */
  function resetPairs(block: Buffer, first: number, pairs: number): Buffer {
    const out: Buffer[] = [];
    for (let k = 0; k < pairs; k++) {
      const id = first + 2 * k;
      out.push(headers(id, block), rstStream(id));
    }
    return Buffer.concat(out);
  }

  for (const l of LISTENERS) {
    describe(l.name, () => {
      test(`rapid reset (CVE-2023-44487): HEADERS then RST_STREAM, up to 3,000 times on one connection: GOAWAY after nghttp2's budget of ${RESET_BURST} resets, every upstream request the flood caused is cancelled, the idle upstream pool stays at its bound of 256, memory bounded, others answered`, async (t) => {
        const marker = fresh('rapid-reset');
        // Held by the apiserver for 3 s: a request still open after the flood would be one mvproxy did not cancel.
        const block = headerBlock(getFields(`${PATH}?flood=${marker}&hold=3000`));
        let c!: FloodClient;
        const r = await underFlood(l, async () => {
          c = await FloodClient.open(l.port(), l.tls());
          const batches = await c.flood((i) => resetPairs(block, 1 + 20 * i, 10), { count: 300, maxMs: 3000 });
          return { streams: batches * 10, closed: await c.whenClosed(2000) };
        });
        const s = seenOf(marker);
        t.diagnostic(`${r.result.streams} streams written, ${describeGoAway(c.stats.goaway)}, closed ${r.result.closed}; apiserver: ${s.requests} requests, ${s.cancelled} cancelled; heap +${r.peakHeapMiB.toFixed(1)} MiB peak, +${r.retainedHeapMiB.toFixed(1)} retained; RSS +${r.peakRssMiB.toFixed(1)} MiB; others ${r.during.ms} ms, ${r.after.ms} ms`);
        assertHeld(r, 'rapid reset');
        assert.ok(c.stats.goaway, `nghttp2 sends GOAWAY past its reset budget: ${describeGoAway(c.stats.goaway)}`);
        assert.ok(c.stats.goaway.lastStreamId <= 2 * (RESET_BURST + 50) + 1, `streams taken before the GOAWAY: up to ${c.stats.goaway.lastStreamId}`);
        assert.ok(r.result.closed, 'the flooding connection is closed');
        assert.equal(c.stats.responded.size, 0, 'no reset stream is answered');
        // Every request the flood got to the apiserver is cancelled (its connection closed), never left waiting for its answer.
        assert.ok(s.requests <= RESET_BURST + 50, `at most one request per stream taken: ${s.requests}`);
        await eventually(() => seenOf(marker).open === 0, { what: 'every upstream request of the flood cancelled', timeoutMs: 2000 });
        assert.equal(seenOf(marker).cancelled, s.requests, 'each was cancelled before its answer');
        await eventually(async () => (await gauge('mvproxy_upstream_connections', { route: 'local', protocol: 'http/1.1' })) <= 256 + 4, { what: 'upstream connections back to the idle bound (256)', timeoutMs: 3000 });
      });

      test(`rapid reset amplification: a stream reset in the same read as its HEADERS costs the apiserver no request and no new connection (it cost ~320 requests and 512 connections per 1,000 resets before listen-node.ts dispatch waited a turn)`, async (t) => {
        // A busy node's relay holds idle upstream connections: 64 here.
        await warmPool(l, 64, 100);
        const marker = fresh('rapid-reset-amplification');
        const block = headerBlock(getFields(`${PATH}?flood=${marker}`));
        const dialsBefore = upstreamConnections;
        const c = await FloodClient.open(l.port(), l.tls());
        // Exactly nghttp2's burst: no GOAWAY, every stream is handed to mvproxy.
        const batches = await c.flood((i) => resetPairs(block, 1 + 20 * i, 10), { count: RESET_BURST / 10, maxMs: 3000 });
        await eventually(async () => (await gauge('mvproxy_inflight_requests')) === 0, { what: 'no request in flight after the flood', timeoutMs: 4000 });
        await new Promise((r) => setTimeout(r, 300)); // dials still under way land
        const dials = upstreamConnections - dialsBefore;
        const s = seenOf(marker);
        c.destroy();
        t.diagnostic(`${batches * 10} streams reset, ${describeGoAway(c.stats.goaway)}; apiserver: ${s.requests} requests (${s.cancelled} cancelled), ${dials} connections opened`);
        const problems: string[] = [];
        if (s.requests > 10) problems.push(`${s.requests} of ${batches * 10} reset streams reached the apiserver as requests (${s.cancelled} of them cancelled before its answer, the rest run and answered)`);
        if (dials > 10) problems.push(`${dials} upstream connections were opened for ${batches * 10} reset streams`);
        assert.deepEqual(problems, []);
      });

      test('HPACK amplification before the SETTINGS ACK: one 4,000-byte field in the dynamic table, then referenced 500 times (a 4.6 KB header block that decodes to 2 MB): 431 on that stream, nothing reaches the apiserver, the connection serves on (node:http2 applies the 16 KiB list it advertises only once acknowledged; it went upstream and the apiserver ended the shared connection with every watch on it: helper 10)', async (t) => {
        const marker = fresh('hpack-bomb');
        const block = Buffer.concat([headerBlock(getFields(`${PATH}?flood=${marker}`)), indexedLiteralField('x-big', 'v'.repeat(4000)), ...Array.from({ length: 500 }, () => indexedField(62))]);
        const c = await FloodClient.open(l.port(), { ...l.tls(), ackSettings: false });
        try {
          c.send(headers(1, block));
          await eventually(() => c.stats.ended.has(1) || c.stats.resets.has(1) || c.closed, { what: 'stream 1 answered', timeoutMs: 3000 });
          // The same connection still serves a request of the ordinary size (the dynamic table holds x-big: not referenced).
          c.send(headers(3, headerBlock(getFields(`${PATH}?flood=${marker}-small`))));
          await eventually(() => c.stats.ended.has(3) || c.stats.resets.has(3) || c.closed, { what: 'stream 3 answered', timeoutMs: 3000 });
          t.diagnostic(`${block.length} bytes of header block; stream 1 ${c.stats.statuses.get(1) ?? `reset ${c.stats.resets.get(1)}`}, stream 3 ${c.stats.statuses.get(3) ?? `reset ${c.stats.resets.get(3)}`}; ${describeGoAway(c.stats.goaway)}; apiserver: ${seenOf(marker).requests} requests`);
          assert.equal(seenOf(marker).requests, 0, 'the amplified request reaches no apiserver');
          assert.equal(c.stats.statuses.get(1), '431', 'answered 431 Request Header Fields Too Large, as Go answers a header list over its limit');
          assert.equal(c.stats.statuses.get(3), '200', 'the connection serves on');
          assert.equal(seenOf(`${marker}-small`).requests, 1);
        } finally {
          c.destroy();
        }
      });

      test('CONTINUATION flood (CVE-2024-27983, CVE-2024-28182): HEADERS without END_HEADERS, then CONTINUATION frames with a field each, or empty: the connection gets GOAWAY at once, no request reaches the apiserver, memory bounded, others answered', async (t) => {
        for (const [kind, fragment] of [['a field each', headerBlock([['x-a', 'b']])], ['empty', Buffer.alloc(0)]] as const) {
          const marker = fresh('continuation');
          let c!: FloodClient;
          const r = await underFlood(l, async () => {
            c = await FloodClient.open(l.port(), l.tls());
            c.send(headers(1, headerBlock(getFields(`${PATH}?flood=${marker}`)), FLAG.END_STREAM));
            const batches = await c.flood(() => Buffer.concat(Array.from({ length: 16 }, () => continuation(1, fragment))), { count: 100_000, maxMs: 2000 });
            return { frames: batches * 16, closed: await c.whenClosed(1000) };
          });
          const s = seenOf(marker);
          t.diagnostic(`${kind}: ${r.result.frames} CONTINUATION frames written (${c.bytesOut} bytes), ${describeGoAway(c.stats.goaway)}, closed ${r.result.closed}; apiserver: ${s.requests} requests; heap +${r.peakHeapMiB.toFixed(1)} MiB peak`);
          assertHeld(r, `CONTINUATION (${kind})`);
          assert.ok(c.stats.goaway, `CONTINUATION (${kind}): GOAWAY: ${describeGoAway(c.stats.goaway)}`);
          assert.ok(r.result.closed, `CONTINUATION (${kind}): the connection is closed`);
          assert.equal(s.requests, 0, `CONTINUATION (${kind}): the unfinished header block reaches no apiserver`);
        }
      });

      test('SETTINGS flood: 2,000 in one write (more ACKs than nghttp2 queues) closes the connection at once; 100,000 paced by a client that reads its ACKs are each acknowledged and the connection stays open; memory bounded, others answered, nothing upstream', async (t) => {
        const frame = settings([[4 /* INITIAL_WINDOW_SIZE */, 65535]]);
        const dense = await underFlood(l, async () => {
          const c = await FloodClient.open(l.port(), l.tls());
          c.send(Buffer.concat(Array.from({ length: 2000 }, () => frame)));
          return { c, closed: await c.whenClosed(1000) };
        });
        t.diagnostic(`dense: ${describeGoAway(dense.result.c.stats.goaway)}, closed ${dense.result.closed}, ${dense.result.c.stats.settingsAcks} ACKs`);
        assertHeld(dense, 'SETTINGS (dense)');
        assert.ok(dense.result.closed, 'SETTINGS (dense): the connection is closed');
        assert.ok(dense.result.c.stats.settingsAcks < 1000, `SETTINGS (dense): fewer ACKs than frames (${dense.result.c.stats.settingsAcks})`);

        const paced = await underFlood(l, async () => {
          const c = await FloodClient.open(l.port(), l.tls());
          const sent = await c.flood(() => frame, { count: 100_000, maxMs: 3000 });
          await eventually(() => c.stats.settingsAcks >= sent || c.closed, { what: 'the ACKs of the paced SETTINGS', timeoutMs: 2000 });
          return { c, sent };
        });
        const c = paced.result.c;
        t.diagnostic(`paced: ${paced.result.sent} SETTINGS, ${c.stats.settingsAcks} ACKs, ${describeGoAway(c.stats.goaway)}, closed ${c.closed}; heap +${paced.peakHeapMiB.toFixed(1)} MiB peak, RSS +${paced.peakRssMiB.toFixed(1)} MiB`);
        assertHeld(paced, 'SETTINGS (paced)');
        assert.ok(paced.result.sent >= 50_000, `SETTINGS (paced): the flood went out (${paced.result.sent})`);
        assert.equal(c.closed, false, 'SETTINGS (paced): node acknowledges each and keeps the connection (as Go does)');
        assert.ok(c.stats.settingsAcks >= paced.result.sent, `SETTINGS (paced): each acknowledged (${c.stats.settingsAcks} of ${paced.result.sent})`);
        c.destroy();
      });

      test('PING flood: 2,000 in one write closes the connection at once; 100,000 paced by a reading client are each answered, the connection stays open; from a client that reads nothing, the connection is cut once the ACKs pile up; memory bounded, others answered', async (t) => {
        const dense = await underFlood(l, async () => {
          const c = await FloodClient.open(l.port(), l.tls());
          c.send(Buffer.concat(Array.from({ length: 2000 }, (_, i) => ping(i))));
          return { c, closed: await c.whenClosed(1000) };
        });
        t.diagnostic(`dense: ${describeGoAway(dense.result.c.stats.goaway)}, closed ${dense.result.closed}, ${dense.result.c.stats.pingAcks} ACKs`);
        assertHeld(dense, 'PING (dense)');
        assert.ok(dense.result.closed, 'PING (dense): the connection is closed');
        assert.ok(dense.result.c.stats.pingAcks < 2000, `PING (dense): fewer ACKs than PINGs (${dense.result.c.stats.pingAcks})`);

        const paced = await underFlood(l, async () => {
          const c = await FloodClient.open(l.port(), l.tls());
          const sent = await c.flood((i) => ping(i), { count: 100_000, maxMs: 3000 });
          await eventually(() => c.stats.pingAcks >= sent || c.closed, { what: 'the ACKs of the paced PINGs', timeoutMs: 2000 });
          return { c, sent };
        });
        t.diagnostic(`paced, reading: ${paced.result.sent} PINGs, ${paced.result.c.stats.pingAcks} ACKs, closed ${paced.result.c.closed}; heap +${paced.peakHeapMiB.toFixed(1)} MiB peak`);
        assertHeld(paced, 'PING (paced, reading)');
        assert.ok(paced.result.sent >= 50_000, `PING (paced): the flood went out (${paced.result.sent})`);
        assert.equal(paced.result.c.closed, false, 'PING (paced, reading): every PING answered, the connection kept');
        assert.ok(paced.result.c.stats.pingAcks >= paced.result.sent, `PING (paced, reading): each answered (${paced.result.c.stats.pingAcks} of ${paced.result.sent})`);
        paced.result.c.destroy();

        const deaf = await underFlood(l, async () => {
          const c = await FloodClient.open(l.port(), { ...l.tls(), read: false });
          const sent = await c.flood((i) => ping(i), { count: 400_000, maxMs: 3000 });
          return { c, sent, closed: await c.whenClosed(1000) };
        });
        t.diagnostic(`paced, not reading: ${deaf.result.sent} PINGs written before the close, closed ${deaf.result.closed}; heap +${deaf.peakHeapMiB.toFixed(1)} MiB peak, RSS +${deaf.peakRssMiB.toFixed(1)} MiB`);
        assertHeld(deaf, 'PING (not reading)');
        assert.ok(deaf.result.closed, `PING (not reading): the connection is cut (after ${deaf.result.sent} PINGs)`);
        assert.ok(deaf.result.sent < 400_000, `PING (not reading): cut before the flood's end (${deaf.result.sent})`);
      });

      test('WINDOW_UPDATE flood (1.6 million increments of 1, on the connection and on a stream) and an empty-DATA flood on an open upload: window updates cost nothing and close nothing (an overflowing one gets GOAWAY FLOW_CONTROL_ERROR); empty DATA frames get GOAWAY after node\'s 1,000 invalid frames, the upload reaches the apiserver once and is cancelled; memory bounded, others answered', async (t) => {
        const marker = fresh('window-update');
        const wu = await underFlood(l, async () => {
          const c = await FloodClient.open(l.port(), l.tls());
          c.send(headers(1, headerBlock(getFields(`${PATH}?flood=${marker}`))));
          const batches = await c.flood((i) => Buffer.concat(Array.from({ length: 16 }, () => windowUpdate(i % 2 === 0 ? 0 : 1, 1))), { count: 100_000, maxMs: 3000 });
          return { c, frames: batches * 16 };
        });
        const c = wu.result.c;
        t.diagnostic(`WINDOW_UPDATE: ${wu.result.frames} frames (${c.bytesOut} bytes), ${describeGoAway(c.stats.goaway)}, closed ${c.closed}; apiserver ${seenOf(marker).requests} request; heap +${wu.peakHeapMiB.toFixed(1)} MiB peak, RSS +${wu.peakRssMiB.toFixed(1)} MiB`);
        assertHeld(wu, 'WINDOW_UPDATE');
        assert.ok(wu.result.frames >= 200_000, `WINDOW_UPDATE: the flood went out (${wu.result.frames} frames)`);
        assert.equal(c.closed, false, 'WINDOW_UPDATE: increments within the window limit close nothing');
        assert.ok(c.stats.ended.has(1), 'WINDOW_UPDATE: the GET on the flooding connection was answered');
        assert.equal(seenOf(marker).requests, 1, 'WINDOW_UPDATE: its GET reached the apiserver once');
        // One increment past 2^31-1 on the connection is a connection error.
        c.send(windowUpdate(0, 0x7fffffff));
        assert.ok(await c.whenClosed(1000), 'WINDOW_UPDATE overflow: the connection is closed');
        assert.equal(c.stats.goaway && H2_ERROR[c.stats.goaway.code], 'FLOW_CONTROL_ERROR', describeGoAway(c.stats.goaway));

        const upload = fresh('empty-data');
        const ed = await underFlood(l, async () => {
          const c = await FloodClient.open(l.port(), l.tls());
          c.send(headers(1, headerBlock([[':method', 'POST'], [':scheme', 'https'], [':authority', '127.0.0.1'], [':path', `${PATH}?flood=${upload}&hold=3000`], ['content-type', 'application/json']]), FLAG.END_HEADERS));
          const sent = await c.flood(() => data(1), { count: 100_000, maxMs: 3000 });
          return { c, sent, closed: await c.whenClosed(1000) };
        });
        const e = ed.result.c;
        t.diagnostic(`empty DATA: ${ed.result.sent} frames written, ${describeGoAway(e.stats.goaway)}, closed ${ed.result.closed}; apiserver ${seenOf(upload).requests} request, ${seenOf(upload).cancelled} cancelled`);
        assertHeld(ed, 'empty DATA');
        assert.ok(ed.result.closed, 'empty DATA: the connection is closed');
        assert.ok(e.stats.goaway, `empty DATA: GOAWAY: ${describeGoAway(e.stats.goaway)}`);
        assert.ok(ed.result.sent < 100_000, `empty DATA: cut before the flood's end (${ed.result.sent})`);
        assert.ok(seenOf(upload).requests <= 1, `empty DATA: the upload reached the apiserver at most once (${seenOf(upload).requests})`);
        await eventually(() => seenOf(upload).open === 0, { what: 'the upload cancelled upstream', timeoutMs: 2000 });
      });

      test(`streams beyond SETTINGS_MAX_CONCURRENT_STREAMS (${MAX_STREAMS}): 400 at once get GOAWAY PROTOCOL_ERROR once the limit is acknowledged, REFUSED_STREAM for the 150 over it before that; never more than ${MAX_STREAMS} requests upstream; memory bounded, others answered`, async (t) => {
        // The client acknowledged the server's SETTINGS (as every client does): the limit is in force.
        const acked = fresh('streams-acked');
        const a = await underFlood(l, async () => {
          const c = await FloodClient.open(l.port(), l.tls());
          await eventually(() => c.stats.settingsAcks > 0 && (c.stats.frames[4] ?? 0) >= 2, { what: 'SETTINGS exchanged', timeoutMs: 2000 });
          const block = headerBlock(getFields(`${PATH}?flood=${acked}&hold=1500`));
          c.send(Buffer.concat(Array.from({ length: 400 }, (_, i) => headers(1 + 2 * i, block))));
          return { c, closed: await c.whenClosed(2000) };
        });
        t.diagnostic(`acknowledged: ${describeGoAway(a.result.c.stats.goaway)}, closed ${a.result.closed}; apiserver ${seenOf(acked).requests} requests, ${seenOf(acked).cancelled} cancelled`);
        assertHeld(a, 'streams (limit acknowledged)');
        assert.ok(a.result.closed, 'streams (limit acknowledged): the connection is closed');
        assert.equal(a.result.c.stats.goaway && H2_ERROR[a.result.c.stats.goaway.code], 'PROTOCOL_ERROR', describeGoAway(a.result.c.stats.goaway));
        assert.ok(a.result.c.stats.goaway!.lastStreamId <= 2 * MAX_STREAMS - 1, `no stream past the limit taken (last ${a.result.c.stats.goaway!.lastStreamId})`);
        assert.ok(seenOf(acked).requests <= MAX_STREAMS, `streams (limit acknowledged): ${seenOf(acked).requests} requests upstream`);
        await eventually(() => seenOf(acked).open === 0, { what: 'the streams cut by the GOAWAY cancelled upstream', timeoutMs: 2000 });

        // A client that never acknowledges: the limit is pending, nghttp2 refuses the streams over it.
        const pending = fresh('streams-pending');
        const p = await underFlood(l, async () => {
          const c = await FloodClient.open(l.port(), { ...l.tls(), ackSettings: false });
          const block = headerBlock(getFields(`${PATH}?flood=${pending}&hold=1500`));
          c.send(Buffer.concat(Array.from({ length: 400 }, (_, i) => headers(1 + 2 * i, block))));
          await eventually(() => c.stats.ended.size + c.stats.resets.size >= 400 || c.closed, { what: 'every stream answered or refused', timeoutMs: 4000 });
          return { c };
        });
        const pc = p.result.c;
        const refused = [...pc.stats.resets.values()].filter((code) => H2_ERROR[code] === 'REFUSED_STREAM').length;
        t.diagnostic(`pending: ${pc.stats.ended.size} answered, ${refused} REFUSED_STREAM, ${describeGoAway(pc.stats.goaway)}, closed ${pc.closed}; apiserver ${seenOf(pending).requests} requests`);
        assertHeld(p, 'streams (limit pending)');
        assert.ok(seenOf(pending).requests <= MAX_STREAMS, `streams (limit pending): ${seenOf(pending).requests} requests upstream`);
        assert.ok(pc.stats.ended.size <= MAX_STREAMS, `streams (limit pending): ${pc.stats.ended.size} answered`);
        assert.ok(refused >= 400 - MAX_STREAMS, `streams (limit pending): ${refused} refused`);
        pc.destroy();
      });
    });
  }
});
