// Slow and unfinished clients against both front ends: slowloris (headers one byte at a time), a
// body that stops half-way, and an unauthenticated upload the apiserver refuses before reading it.
// The daemon runs as a separate process here: an attack that crashes it must fail a test, not the
// test runner (and the process's own fds are counted from /proc). In test/slow (`npm run
// test:slow`, scripts/test.sh): ~12 s per front end, measured (the slowloris drip alone is 3 s).
import { describe, test, before, after } from 'node:test';
import { FRONTENDS } from '../support/frontends';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { startLenientUpstream, sendRaw, type LenientUpstream } from '../support/lenient-upstream';
import { startChildDaemon, type ChildDaemon } from '../support/child-daemon';
import { eventually, GiveUp } from '../support/poll';

const CM = '/api/v1/namespaces/default/configmaps';
const REQUEST_TIMEOUT_MS = 2000;

function fds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

for (const frontend of FRONTENDS) {
  describe(`slow and unfinished clients on the ${frontend} front end (mvproxy in its own process)`, () => {
    let up: LenientUpstream;
    let child: ChildDaemon | undefined;

    /** The daemon, restarted if an earlier attack killed it (that test has failed already). */
    async function daemon(): Promise<ChildDaemon> {
      if (child && child.proc.exitCode === null && child.proc.signalCode === null) return child;
      child = await startChildDaemon([`--frontend=${frontend}`, '--secure-port=0', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${up.url}`, `--request-timeout=${REQUEST_TIMEOUT_MS / 1000}s`, '--v=0']);
      return child;
    }
    const alive = (c: ChildDaemon) => c.proc.exitCode === null && c.proc.signalCode === null;

    async function honest(c: ChildDaemon, tag: string): Promise<{ status: number; ms: number }> {
      const r = await sendRaw(c.clientPort, `GET ${CM}?honest=${tag} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, { waitMs: 3000 });
      return { status: r.status, ms: r.ms };
    }

    before(async () => {
      up = await startLenientUpstream({
        // kube-apiserver authenticates before it reads a body: a request without credentials gets its
        // 401 while the upload is still coming, and Go's server then closes the connection.
        early: (head) => (head.includes('unauthenticated=1') ? { status: 401, body: '{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}' } : undefined),
      });
    });
    after(async () => {
      await child?.stop('SIGKILL');
      await up?.close();
    });

    test('slowloris: 20 connections send their headers one byte every 100 ms; others are served meanwhile, nothing partial is forwarded', async (t) => {
      const c = await daemon();
      assert.equal((await honest(c, 'warm-up')).status, 200);
      await sleep(1000); // the first discovery merge starts a worker thread (its own fds): after that, count
      up.reset();
      const fdsBefore = fds(c.proc.pid!);
      // The request line goes in one segment (uWS's Node 20 build answered 505 to a split request
      // line, docs/dependencies.md §3, which would end the attack at once); then the headers, one
      // byte at a time.
      const line = `GET ${CM}?slowloris=1 HTTP/1.1\r\n`;
      const head = `Host: x\r\nX-Pad: ${'p'.repeat(200)}\r\n`; // never finished
      const sockets: net.Socket[] = [];
      let closedByServer = 0;
      for (let i = 0; i < 20; i++) {
        const s = net.connect(c.clientPort, '127.0.0.1', () => s.write(line));
        s.setNoDelay(true);
        s.on('error', () => undefined);
        s.on('close', () => closedByServer++);
        sockets.push(s);
      }
      await sleep(100);
      let pos = 0;
      const drip = setInterval(() => {
        if (pos < head.length) for (const s of sockets) if (!s.destroyed) s.write(head[pos]);
        pos++;
      }, 100);
      try {
        // Bounded: 3 s of dripping, honest requests all the while.
        const honestResults: { status: number; ms: number }[] = [];
        const end = Date.now() + 3000;
        let i = 0;
        while (Date.now() < end) {
          honestResults.push(await honest(c, `sl${i++}`));
          await sleep(200);
        }
        assert.ok(honestResults.every((r) => r.status === 200), JSON.stringify(honestResults));
        assert.ok(Math.max(...honestResults.map((r) => r.ms)) < 1000, `slowest honest request ${Math.max(...honestResults.map((r) => r.ms))} ms`);
        assert.equal(up.appRequests().filter((r) => r.target.includes('slowloris')).length, 0, 'nothing partial forwarded');
        t.diagnostic(`${honestResults.length} honest requests served during the attack; ${closedByServer} of 20 slow connections closed by the daemon within 3 s (node: headersTimeout 60 s; uWS: ~10 s idle timeout, reset by every byte)`);
      } finally {
        clearInterval(drip);
        for (const s of sockets) s.destroy();
      }
      await sleep(500);
      assert.ok(alive(c));
      assert.ok(fds(c.proc.pid!) <= fdsBefore + 2, `daemon fds ${fdsBefore} → ${fds(c.proc.pid!)}`);
    });

    test('a body that stops half-way, then the client goes away: the upstream request is aborted and its connection never reused', async () => {
      const c = await daemon();
      up.reset();
      const s = net.connect(c.clientPort, '127.0.0.1');
      s.on('error', () => undefined);
      await new Promise((r) => s.once('connect', r));
      s.write(`POST ${CM}?halfbody=1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n`);
      s.write(Buffer.alloc(300_000, 'h'));
      // Wait until the upstream got the head and some of the body.
      const connOf = () => up.raw.findIndex((b) => b !== undefined && b.includes('halfbody=1'));
      await eventually(() => connOf() >= 0, { what: 'the head was forwarded at once (streaming)', timeoutMs: 3000, intervalMs: 20 });
      const conn = connOf();
      s.destroy();
      await eventually(() => up.closed.has(conn), { what: 'the upstream connection carrying the half body is closed, not returned to the pool', timeoutMs: 3000, intervalMs: 20 });
      assert.equal(up.requests.filter((r) => r.target.includes('halfbody')).length, 0, 'the upstream never saw a complete request');
      const after = await honest(c, 'after-half');
      assert.equal(after.status, 200);
      assert.ok(!up.raw[conn].includes('after-half'), 'the next request did not land inside the half body');
      assert.ok(alive(c));
    });

    test(
      'a body that stops half-way is answered (504) or cut within --request-timeout',
      async () => {
        const c = await daemon();
        const r = await sendRaw(c.clientPort, [`POST ${CM}?stalled=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n`, Buffer.alloc(500, 's')], { waitMs: REQUEST_TIMEOUT_MS + 2000 });
        const at = r.status === 504 ? r.firstByteMs : r.closed ? r.ms : Infinity;
        assert.ok(at < REQUEST_TIMEOUT_MS + 1500, `${Number.isFinite(at) ? `ended after ${at} ms` : 'still open'}: ${JSON.stringify(r.out.slice(0, 100))}`);
        assert.ok(alive(c));
      },
    );

    test(
      'an unauthenticated client streaming 8 MiB into an early 401 cannot crash the daemon (early-response upload DoS)',
      async () => {
        const c = await daemon();
        // Three rounds: whether uWS still delivers body bytes after the response ended depends on timing.
        for (let round = 0; round < 3 && alive(c); round++) {
          const s = net.connect(c.clientPort, '127.0.0.1');
          s.on('error', () => undefined);
          await new Promise((r) => s.once('connect', r));
          let reply = '';
          s.on('data', (d) => (reply += d.toString('latin1')));
          s.write(`POST ${CM}?unauthenticated=1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${8 * 1024 * 1024}\r\n\r\n`);
          const chunk = Buffer.alloc(64 * 1024, 'u');
          for (let i = 0; i < 128 && !s.destroyed; i++) {
            s.write(chunk);
            await sleep(2);
          }
          await sleep(300);
          s.destroy();
          assert.ok(alive(c), `the daemon died in round ${round + 1}:\n${c.stderr().slice(-600)}`);
          assert.match(reply, /^HTTP\/1\.1 401/, 'the apiserver\'s early 401 reached the client');
        }
        assert.ok(alive(c), `the daemon died:\n${c.stderr().slice(-600)}`);
        assert.equal((await honest(c, 'after-401')).status, 200);
      },
    );

    test(
      'unauthenticated uploads into an early 401, abandoned by the client: no connection is left behind (fd exhaustion)',
      async () => {
        const c = await daemon();
        assert.equal((await honest(c, 'warm-up-leak')).status, 200);
        await sleep(500);
        const before = fds(c.proc.pid!);
        for (let k = 0; k < 5; k++) {
          const s = net.connect(c.clientPort, '127.0.0.1');
          s.on('error', () => undefined);
          await new Promise((r) => s.once('connect', r));
          s.write(`POST ${CM}?unauthenticated=1 HTTP/1.1\r\nHost: x\r\nContent-Length: ${8 * 1024 * 1024}\r\n\r\n`);
          for (let i = 0; i < 40 && !s.destroyed; i++) {
            s.write(Buffer.alloc(64 * 1024));
            await sleep(2);
          }
          await sleep(200);
          s.destroy();
        }
        await eventually(
          () => {
            if (!alive(c)) throw new GiveUp(`the daemon died:\n${c.stderr().slice(-600)}`);
            const after = fds(c.proc.pid!);
            assert.ok(after <= before, `daemon fds ${before} → ${after}`);
            return true;
          },
          { what: 'the daemon\'s fds back within five seconds after five abandoned uploads', timeoutMs: 5000, intervalMs: 200 },
        );
      },
    );
  });
}
