// Upstreams killed mid-upload: the serving peer, and the local apiserver. mvproxy runs as its own
// process here (the real CLI): on the uWS front end this fault used to crash it (onData after the
// response ended; fixed), and a crash must fail a test, not take the test runner down. Its file
// descriptors and RSS are read from /proc before and after.
//
// For each: the client's upload ends with a 503 Status promptly (nothing reached the client yet,
// so a Status is still possible); requests for a locally served GVR meanwhile see zero errors; the
// daemon keeps serving and its fds come back to where they were.
import { describe, test, before, after } from 'node:test';
import { FRONTENDS } from '../support/frontends';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { createClusterPKI } from '../../src/pki/bundle';
import { startChildDaemon, type ChildDaemon } from '../support/child-daemon';
import { startFakeServer, startFakePeer, APIS_V133, PEER_ONLY, LOCAL, get, localTraffic, type FakeServer } from './harness';
import { eventually } from '../support/poll';

const MiB = 1024 * 1024;
const UPLOAD = 32 * MiB;
const KILL_AFTER = 2 * MiB;

/** A body of `total` bytes produced as fast as the reader takes it; counts what was pulled. */
function uploadBody(total: number): Readable & { sent(): number } {
  let sent = 0;
  const chunk = Buffer.alloc(64 * 1024, 'u');
  const r = new Readable({
    read() {
      if (sent >= total) return void this.push(null);
      sent += chunk.length;
      this.push(chunk);
    },
  });
  return Object.assign(r, { sent: () => sent });
}

function fds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/**
 * The daemon's fds with no idle keep-alive held: the fake servers close their idle connections and
 * the count is read right after, several times (the peer health probe reopens one every 500 ms).
 */
async function quietFds(pid: number, servers: FakeServer[]): Promise<number> {
  let min = Infinity;
  for (let i = 0; i < 6; i++) {
    for (const s of servers) s.closeIdle();
    await sleep(80);
    min = Math.min(min, fds(pid));
  }
  return min;
}

for (const frontend of FRONTENDS) {
  describe(`upstreams killed mid-upload (${frontend} front end, mvproxy in its own process)`, () => {
    let tmp: string;
    let local: FakeServer;
    let peer: FakeServer;
    let args: string[];
    let child: ChildDaemon | undefined;
    let killOnUpload: 'peer' | 'local' | null = null;
    let killing: Promise<void> | null = null;

    /** A route that reads an upload and kills its own server once KILL_AFTER bytes are in. */
    const sink = (which: 'peer' | 'local') => (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): boolean => {
      if (req.method !== 'POST') return false;
      let n = 0;
      let dying = false;
      req.on('data', (d: Buffer) => {
        n += d.length;
        if (n >= KILL_AFTER && killOnUpload === which) {
          killOnUpload = null;
          dying = true;
          killing = (which === 'peer' ? peer : local).kill();
        }
      });
      req.on('end', () => {
        // The server is being killed: it never answers this upload (the rest of a fast upload could
        // arrive before kill() closed the sockets, and the test then saw a 201: one run in ~5).
        if (dying) return;
        res.writeHead(201, { 'content-type': 'application/json' });
        // Which server answered, in the failure message: CI once saw the local upload answered by the
        // peer (a false "local down": the /readyz probe failed on a kept-alive connection the fake server
        // closed under it, upstream/own-client.ts now asks again).
        res.end(JSON.stringify({ bytes: n, which, kill: killOnUpload }));
      });
      return true;
    };

    async function daemon(): Promise<ChildDaemon> {
      if (child && child.proc.exitCode === null && child.proc.signalCode === null) return child;
      child = await startChildDaemon(args);
      const agent = new Agent();
      const base = `http://127.0.0.1:${child.clientPort}`;
      try {
        await eventually(
          async () => {
            const r = await get(base, PEER_ONLY, agent);
            assert.equal('status' in r && r.status, 200, JSON.stringify(r).slice(0, 300));
            return true;
          },
          { what: 'the new daemon routes the peer-only GVR', timeoutMs: 10_000, intervalMs: 100 },
        );
      } finally {
        await agent.close();
      }
      return child;
    }
    const alive = (c: ChildDaemon) => c.proc.exitCode === null && c.proc.signalCode === null;

    before(async () => {
      tmp = mkdtempSync(join(tmpdir(), 'mvproxy-upload-faults-'));
      const pki = await createClusterPKI(join(tmp, 'pki'));
      const [certs, peerCerts] = await Promise.all([pki.node('observed'), pki.node('fake-peer')]);
      local = await startFakeServer({
        apis: APIS_V133,
        route: (req, res) => {
          if (sink('local')(req, res)) return true;
          if (req.url?.startsWith(LOCAL)) {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end('{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}');
            return true;
          }
          return false;
        },
      });
      peer = await startFakePeer(peerCerts, (req, res) => {
        if (sink('peer')(req, res)) return true;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"kind":"WorkloadList","items":[]}');
        return true;
      });
      args = [
        `--frontend=${frontend}`,
        '--secure-port=0',
        '--peer-port=0',
        '--peer-bind-address=127.0.0.1',
        '--metrics-bind-address=127.0.0.1:0',
        '--server-id=mvproxy-observed',
        `--local-apiserver=${local.url}`,
        `--peer-ca-file=${pki.clusterCAFile}`,
        `--proxy-client-cert-file=${certs.proxyClientCert}`,
        `--proxy-client-key-file=${certs.proxyClientKey}`,
        `--peer-tls-cert-file=${certs.servingCert}`,
        `--peer-tls-private-key-file=${certs.servingKey}`,
        `--requestheader-client-ca-file=${pki.frontProxyCAFile}`,
        '--requestheader-allowed-names=front-proxy-client',
        `--static-peers=mvproxy-fake-peer=${peer.address}`,
        '--request-timeout=5s',
        '--upstream-connect-timeout=1s',
        '--peer-probe-interval=60s', // no probe during a test: its connections would blur the fd count
        '--v=0',
      ];
    });
    after(async () => {
      await child?.stop('SIGKILL');
      await peer?.close().catch(() => undefined);
      await local?.close().catch(() => undefined);
      rmSync(tmp, { recursive: true, force: true });
    });

    for (const which of ['peer', 'local'] as const) {
      const path = which === 'peer' ? PEER_ONLY : LOCAL;
      test(`the ${which === 'peer' ? 'serving peer' : 'local apiserver'} killed mid-upload: a 503 Status, and the daemon serves on`, async (t) => {
        const c = await daemon();
        const base = `http://127.0.0.1:${c.clientPort}`;
        // Warm-up: one whole upload on the same route first, so what the daemon opens once and keeps
        // (the merge worker's fds a moment after start, pools) is in the baseline, not counted as a leak.
        const warm = new Agent();
        const w = await request(`${base}${path}`, { method: 'POST', body: Buffer.alloc(64 * 1024, 'w'), dispatcher: warm, headers: { 'content-type': 'application/json' } });
        const warmText = await w.body.text();
        assert.equal(w.statusCode, 201, warmText);
        await warm.close();
        await sleep(300);
        const fdsBefore = await quietFds(c.proc.pid!, [local, peer]);
        const rssBefore = c.memory().rss;
        const agent = new Agent({ keepAliveTimeout: 1000 });
        const localAgent = new Agent({ keepAliveTimeout: 1000 });
        // While the local apiserver is the one killed, local traffic cannot succeed: only then skip it.
        const traffic = which === 'peer' ? localTraffic(base, localAgent) : null;
        try {
          killOnUpload = which;
          const body = uploadBody(UPLOAD);
          const t0 = Date.now();
          const outcome = await request(`${base}${path}`, { method: 'POST', body, dispatcher: agent, headers: { 'content-type': 'application/json' }, headersTimeout: 10_000, bodyTimeout: 10_000 }).then(
            async (r) => ({ status: r.statusCode, text: await r.body.text() }),
            (e: Error & { code?: string }) => ({ error: e.code ?? e.message }),
          );
          t.diagnostic(`${JSON.stringify(outcome).slice(0, 200)} after ${Date.now() - t0} ms, ${(body.sent() / MiB).toFixed(1)} MiB of ${UPLOAD / MiB} pulled`);
          assert.ok(alive(c), `the daemon died:\n${c.stderr().slice(-800)}`);
          if ('status' in outcome) {
            assert.equal(outcome.status, 503, outcome.text.slice(0, 300));
            assert.match(outcome.text, /"reason":"ServiceUnavailable"/);
          } else {
            // The daemon answered and closed the connection while the client was still sending: the
            // client's next write fails before it reads the 503 (uWS closes such a connection at once).
            assert.ok(['EPIPE', 'ECONNRESET', 'UND_ERR_SOCKET'].includes(outcome.error), JSON.stringify(outcome));
          }
          assert.ok(Date.now() - t0 < 8000, 'within the bound');
        } finally {
          const local_ = await traffic?.stop();
          killOnUpload = null;
          if (killing) {
            await killing;
            killing = null;
            if (which === 'peer') await peer.revive();
            else await local.revive();
          }
          await agent.close();
          await localAgent.close();
          if (local_) assert.deepEqual(local_.bad, [], 'local traffic during the fault');
        }
        // Serving again: the local route at once, the peer route once the health probe has seen it back.
        const agent2 = new Agent();
        try {
          await eventually(
            async () => {
              const back = await get(base, path, agent2);
              assert.ok('status' in back && back.status === 200, JSON.stringify(back));
              return true;
            },
            { what: `the ${which} route serves again`, timeoutMs: 5000, intervalMs: 100 },
          );
        } finally {
          await agent2.close();
        }
        // Nothing left open in the daemon (idle keep-alives closed from the servers' side first).
        let after = fdsBefore;
        await eventually(
          async () => {
            after = await quietFds(c.proc.pid!, [local, peer]); // itself ~0.5 s: no pause between tries
            assert.ok(after <= fdsBefore, `daemon fds ${fdsBefore} → ${after}`);
            return true;
          },
          { what: 'the daemon\'s fds back to the baseline', timeoutMs: 5000, intervalMs: 0 },
        );
        const rssAfter = c.memory().rss;
        t.diagnostic(`daemon fds ${fdsBefore} → ${after}; RSS ${(rssBefore / MiB).toFixed(1)} → ${(rssAfter / MiB).toFixed(1)} MiB`);
        assert.ok(rssAfter - rssBefore < 64 * MiB, 'RSS back near its baseline');
      });
    }
  });
}
