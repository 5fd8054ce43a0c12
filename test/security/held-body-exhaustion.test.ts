// Memory exhaustion through bodies held for the retry after a local 404 (issue 27, item 3), named
// after the attack. A request for a resource no snapshot lists has its body (up to 1 MiB with a
// Content-Length) read whole so that it can be sent again to a peer. Measured before the bound:
// 1,000 HTTP/2 streams that each sent 1 MiB − 1 of a 1 MiB body and stopped took RSS from 184 to
// 1,209 MiB, with no timeout, and kept it. Now (src/proxy/held-bodies.ts): the bytes held at once
// stay within --held-request-body-bytes (past it a request streams and gets the local answer), a
// held body that stops arriving gets a 408 Status within --request-timeout, and the budget is given
// back whatever ends the request.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { FRONTENDS } from '../support/frontends';
import { twoVersionPlane, OLD } from '../support/plane';
import { eventually } from '../support/poll';
import type { Plane } from '../../src/demo/topology';

const THINGS = '/apis/nope.example.com/v1/namespaces/default/things'; // nobody serves it: held for peers
const MIB = 1024 * 1024;
const BUDGET = 3 * MIB;
const TIMEOUT_MS = 2000;

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : NaN;
}

/** Opens a connection, sends a POST announcing 1 MiB and all of it but the last byte; resolves with the socket and what it reads. */
async function stalledUpload(port: number): Promise<{ socket: net.Socket; out: () => string }> {
  const socket = net.connect(port, '127.0.0.1');
  let out = '';
  socket.on('data', (b) => (out += b.toString('latin1')));
  socket.on('error', () => undefined);
  await new Promise((r) => socket.once('connect', r));
  socket.write(`POST ${THINGS} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-token-123\r\nContent-Type: application/json\r\nContent-Length: ${MIB}\r\n\r\n`);
  socket.write(Buffer.alloc(MIB - 1, 0x20));
  return { socket, out: () => out };
}

for (const frontend of FRONTENDS) {
  describe(`held request bodies cannot exhaust memory (${frontend} front end)`, () => {
    let plane: Plane & { tmp: string };
    let metrics: string;
    before(async () => {
      plane = await twoVersionPlane(frontend, {
        configure: (c) => {
          c.connectTimeoutMs = 1000;
          c.discoveryRefreshIntervalMs = 60_000;
          c.heldRequestBodyBytes = BUDGET;
          c.requestTimeoutMs = TIMEOUT_MS;
        },
      });
      metrics = plane.member(OLD).metricsUrl;
    });
    after(async () => plane?.close());

    test('eight stalled 1 MiB uploads: at most the budget is held, the rest stream; held ones get 408 within the request timeout; the budget comes back', async () => {
      const port = Number(new URL(plane.member(OLD).url).port);
      const uploads = await Promise.all(Array.from({ length: 8 }, () => stalledUpload(port)));
      let most = 0;
      await eventually(async () => {
        const held = await metric(metrics, 'mvproxy_held_request_body_bytes');
        most = Math.max(most, held);
        assert.ok(held <= BUDGET, `held ${held} bytes, budget ${BUDGET}`);
        assert.ok((await metric(metrics, 'mvproxy_held_request_body_refused_total')) >= 5, 'the requests past the budget streamed');
        return true;
      }, { what: 'five requests past the budget streamed', timeoutMs: 5000 });
      assert.ok(most <= BUDGET);
      // The held ones stop arriving: 408 with the Status code, within the request timeout (+ slack).
      await eventually(() => uploads.filter((u) => /^HTTP\/1\.1 408 /.test(u.out())).length === 3, { what: 'three 408 answers', timeoutMs: TIMEOUT_MS + 4000 });
      for (const u of uploads.filter((x) => /^HTTP\/1\.1 408 /.test(x.out()))) assert.match(u.out(), /MVP_ERR_REQUEST_BODY_TIMEOUT/);
      await eventually(async () => (await metric(metrics, 'mvproxy_held_request_body_bytes')) === 0, { what: 'nothing held', timeoutMs: 3000 });
      for (const u of uploads) u.socket.destroy();
    });

    test('a client that goes away mid-body gives its reservation back at once', async () => {
      const port = Number(new URL(plane.member(OLD).url).port);
      const u = await stalledUpload(port);
      await eventually(async () => (await metric(metrics, 'mvproxy_held_request_body_bytes')) === MIB, { what: '1 MiB held', timeoutMs: 3000 });
      u.socket.destroy();
      await eventually(async () => (await metric(metrics, 'mvproxy_held_request_body_bytes')) === 0, { what: 'the reservation given back', timeoutMs: 1500 });
    });
  });
}
