// Bodies stream both ways with backpressure: 100 MiB up and down through a real mvproxy process
// with a reader that stalls first, while the daemon's own peak RSS stays within a few MiB of
// where it started. Both front ends; the upstream is a fake apiserver in this process. In test/slow
// (`npm run test:slow`, scripts/test.sh): ~10 s per front end, measured.
import { describe, test, before, after } from 'node:test';
import { FRONTENDS } from '../support/frontends';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { startChildDaemon, type ChildDaemon } from '../support/child-daemon';
import { startFakeUpstream } from '../support/fake-upstream';

const MiB = 1024 * 1024;
const TOTAL = 100 * MiB;
/** Bytes the uploading client had handed to its socket, and that count each time the stalled upstream began to read. */
let clientSent = 0;
const sentWhenRead: number[] = [];
/**
 * What may pass mvproxy while the upstream reads nothing: socket buffers both ways (a few MiB on
 * loopback) and the streams' high-water marks. 8 MiB measured on the node front end; a proxy that
 * buffered the body would let all 100 MiB through.
 */
const STALLED_LIMIT = 32 * MiB;
const CHUNK = Buffer.alloc(64 * 1024, 'kubernetes-mvp-');
/**
 * Memory is judged twice. (1) The first 100 MiB may raise the daemon's peak RSS by at most 96 MiB:
 * buffering the body would need 100 MiB or more; what is seen (30–70 MiB on Node 20, 67–83 MiB on Node 24, measured) is V8/malloc
 * slack for transient chunks awaiting GC. (2) Three more such transfers raise that peak by at most
 * 24 MiB: memory does not grow with the bytes streamed (Node 20: 1 GiB measured +0–12 MiB over
 * 100 MiB; Node 24 settles later: +19 MiB measured over 300 MiB, then flat).
 */
const FIRST_LIMIT = 96 * MiB;
const MORE_LIMIT = 24 * MiB;

function expectedSha(): string {
  const h = createHash('sha256');
  for (let n = 0; n < TOTAL; n += CHUNK.length) h.update(CHUNK);
  return h.digest('hex');
}

/** An upload's peak may reach V8's garbage of 100 MiB of read buffers (see the upload test); twice the body would not fit. */
const UPLOAD_FIRST_LIMIT = 160 * MiB;
/**
 * And three more uploads may raise that peak by 64 MiB: the same garbage, collected at other moments
 * (+19 MiB measured here, +38.8 MiB once in CI while the backpressure check passed); a daemon that
 * kept the bodies would add 300 MiB.
 */
const UPLOAD_MORE_LIMIT = 64 * MiB;

async function judgeMemory(t: { diagnostic(s: string): void }, daemon: ChildDaemon, transfer: () => Promise<void>, firstLimit = FIRST_LIMIT, moreLimit = MORE_LIMIT): Promise<void> {
  const base = daemon.memory();
  await transfer();
  const first = daemon.memory();
  for (let i = 0; i < 3; i++) await transfer();
  const more = daemon.memory();
  t.diagnostic(`daemon RSS ${(base.rss / MiB).toFixed(1)} MiB before; peak ${(first.peak / MiB).toFixed(1)} MiB after 100 MiB, ${(more.peak / MiB).toFixed(1)} MiB after 400 MiB`);
  assert.ok(first.peak - base.rss < firstLimit, `peak RSS grew ${((first.peak - base.rss) / MiB).toFixed(1)} MiB over the first 100 MiB`);
  assert.ok(more.peak - first.peak < moreLimit, `peak RSS grew another ${((more.peak - first.peak) / MiB).toFixed(1)} MiB over 300 MiB more`);
}

for (const frontend of FRONTENDS) {
  describe(`streaming bodies (${frontend} front end, separate process)`, () => {
    let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
    let daemon: ChildDaemon;
    let base: string;
    const sha = expectedSha();

    before(async () => {
      upstream = await startFakeUpstream((req, res) => {
        if (req.method === 'POST' && req.url === '/api/v1/namespaces/default/configmaps') {
          // Stall before reading, so a proxy without backpressure would have to buffer the upload.
          req.pause();
          setTimeout(() => {
            sentWhenRead.push(clientSent);
            const h = createHash('sha256');
            let bytes = 0;
            req.on('data', (d: Buffer) => { bytes += d.length; h.update(d); });
            req.on('end', () => { res.writeHead(201, { 'content-type': 'application/json' }); res.end(JSON.stringify({ bytes, sha: h.digest('hex') })); });
            req.resume();
          }, 500);
          return true;
        }
        if (req.method === 'GET' && req.url?.startsWith('/api/v1/namespaces/default/configmaps/big')) {
          const chunked = req.url.includes('chunked');
          res.writeHead(200, chunked ? { 'content-type': 'application/octet-stream' } : { 'content-type': 'application/octet-stream', 'content-length': String(TOTAL) });
          let sent = 0;
          const pump = () => {
            while (sent < TOTAL) {
              sent += CHUNK.length;
              if (!res.write(CHUNK)) { res.once('drain', pump); return; }
            }
            res.end();
          };
          pump();
          return true;
        }
        return false;
      });
      daemon = await startChildDaemon([`--frontend=${frontend}`, '--secure-port=0', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${upstream.url}`, '--v=0']);
      base = `http://127.0.0.1:${daemon.clientPort}`;
      // Warm up (JIT, pools) before taking the baseline.
      for (let i = 0; i < 20; i++) await (await request(`${base}/api`)).body.dump();
    });
    after(async () => {
      await daemon?.stop();
      await upstream?.close();
    });

    // The uWS build for Node 24 cannot stop reading a request body (pause() does not throttle it:
    // uws.ts PAUSE_THROTTLES_BODY): an upload faster than the upstream waits in memory. What this
    // pins there is the measured limitation: the upload is whole and correct, and the daemon's peak
    // RSS grew by about the upload's size (README "Limitations"), not that it is bounded.
    const bounded = frontend === 'node';
    test(bounded ? '100 MiB uploads stream through to a stalled reader with bounded memory' : '100 MiB uploads reach a stalled reader whole; memory is NOT bounded on this uWS build (measured limitation)', async (t) => {
      const upload = async () => {
        const res = await request(`${base}/api/v1/namespaces/default/configmaps`, {
          method: 'POST',
          headers: { 'content-type': 'application/octet-stream' },
          body: Readable.from((function* () { for (let n = 0; n < TOTAL; n += CHUNK.length) { clientSent += CHUNK.length; yield CHUNK; } })()),
          headersTimeout: 60_000,
          bodyTimeout: 60_000,
        });
        const got = (await res.body.json()) as { bytes: number; sha: string };
        assert.equal(res.statusCode, 201);
        assert.equal(got.bytes, TOTAL);
        assert.equal(got.sha, sha);
      };
      if (bounded) {
        // Backpressure, the property that bounds memory: while the upstream stalls, the client gets
        // only socket buffers' worth through (asserted on the bytes, not on RSS: the peak RSS over a
        // 100 MiB stream is mostly V8's not-yet-collected read buffers, 64-92 MiB here, and passed the
        // bound once in CI while nothing was buffered).
        sentWhenRead.length = 0;
        const uploads = async () => {
          clientSent = 0;
          await upload();
        };
        await judgeMemory(t, daemon, uploads, UPLOAD_FIRST_LIMIT, UPLOAD_MORE_LIMIT);
        t.diagnostic(`the client had sent ${sentWhenRead.map((b) => (b / MiB).toFixed(1)).join(', ')} MiB when the stalled upstream began to read`);
        for (const b of sentWhenRead) assert.ok(b < STALLED_LIMIT, `${(b / MiB).toFixed(1)} MiB of the upload passed mvproxy while the upstream read nothing`);
        return;
      }
      const base0 = daemon.memory();
      await upload();
      const grew = (daemon.memory().peak - base0.rss) / MiB;
      t.diagnostic(`uWS upload: peak RSS +${grew.toFixed(1)} MiB for 100 MiB`);
      assert.ok(grew > 32, `uWS now throttles uploads (peak +${grew.toFixed(1)} MiB): re-measure PAUSE_THROTTLES_BODY and the README`);
    });

    for (const kind of ['content-length', 'chunked']) {
      test(`100 MiB downloads (${kind}) stream to a client that stalls first, with bounded memory`, async (t) => {
        await judgeMemory(t, daemon, async () => {
          const res = await request(`${base}/api/v1/namespaces/default/configmaps/big${kind === 'chunked' ? '-chunked' : ''}`, { headersTimeout: 60_000, bodyTimeout: 60_000 });
          assert.equal(res.statusCode, 200);
          // The uWS Node 24 build streams a body that arrives in pieces chunked (uws.ts TRYEND_STREAMS_RELIABLY).
          if (kind === 'content-length') assert.equal(res.headers['content-length'], frontend === 'uws' ? undefined : String(TOTAL));
          await sleep(500); // stall: the proxy must stop reading from the upstream, not buffer
          const h = createHash('sha256');
          let bytes = 0;
          for await (const d of res.body) { bytes += (d as Buffer).length; h.update(d as Buffer); }
          assert.equal(bytes, TOTAL);
          assert.equal(h.digest('hex'), sha);
        });
      });
    }
  });
}
