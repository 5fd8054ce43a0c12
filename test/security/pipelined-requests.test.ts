// Pipelined HTTP/1.1 requests (issue 27, item 3): three requests in one write. The node front end
// answers all three, in order. This uWS build closes a connection on which a request arrives while
// the previous answer is still pending (uWebSockets denies asynchronous pipelining in native code,
// before JavaScript sees the second request, so no Status can be written): the client sees the
// connection close, never an answer mixed up with another request's, and the daemon keeps serving.
// No Kubernetes client pipelines (Go's transport, client-go, kubectl, python's urllib3 never do);
// README "Security" documents the limit and points such a client at --frontend=node.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FRONTENDS } from '../support/frontends';
import { startFakeUpstream } from '../support/fake-upstream';
import { sendRaw } from '../support/lenient-upstream';
import { startTestDaemon } from '../support/daemon';
import type { Daemon } from '../../src/daemon';

const CM = '/api/v1/namespaces/default/configmaps/';
const req = (n: number) => `GET ${CM}c${n} HTTP/1.1\r\nHost: x\r\n\r\n`;

for (const frontend of FRONTENDS) {
  describe(`pipelined requests (${frontend} front end)`, () => {
    let up: Awaited<ReturnType<typeof startFakeUpstream>>;
    let d: Daemon;
    const seen: string[] = [];
    before(async () => {
      up = await startFakeUpstream((r, res) => {
        if (!r.url?.startsWith(CM)) return false;
        seen.push(`${r.method} ${r.url}`);
        if (r.method === 'POST') {
          r.resume();
          r.on('end', () => {
            res.writeHead(201, { 'content-type': 'application/json' });
            res.end('{"name":"created"}');
          });
          return true;
        }
        // Answered out of order on purpose: a proxy that mixed up pipelined answers would show it.
        const n = Number(r.url.slice(CM.length + 1));
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(`{"name":"c${n}"}`);
        }, 30 - n * 10);
        return true;
      });
      d = await startTestDaemon({ frontend, localAPIServer: up.url });
      await d.publisher.refresh();
    });
    after(async () => {
      await d?.close();
      await up?.close();
    });

    test('three GETs in one write: three answers in request order (node), or the connection closed with no answer mixed up (uWS); the daemon keeps serving', async () => {
      const r = await sendRaw(d.clientPort, req(1) + req(2) + req(3), { waitMs: 1500 });
      const names = [...r.out.matchAll(/"name":"(c\d)"/g)].map((m) => m[1]);
      if (frontend === 'node') assert.deepEqual(names, ['c1', 'c2', 'c3'], r.out);
      else {
        assert.deepEqual(names, ['c1', 'c2', 'c3'].slice(0, names.length), `answers out of order: ${r.out}`);
        assert.ok(r.closed, 'the connection is closed');
      }
      const one = await sendRaw(d.clientPort, `GET ${CM}c1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, { waitMs: 1500 });
      assert.equal(one.status, 200);
    });

    test('a create with a GET pipelined behind it in one write: both answered in order (node), or never sent at all (uWS: it cannot run without its client hearing of it)', async () => {
      seen.length = 0;
      const body = '{"kind":"ConfigMap"}';
      const r = await sendRaw(d.clientPort, `POST ${CM} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` + req(1), { waitMs: 1500 });
      if (frontend === 'node') {
        assert.deepEqual([...r.out.matchAll(/"name":"(\w+)"/g)].map((m) => m[1]), ['created', 'c1'], r.out);
      } else {
        assert.equal(r.out, '', 'no answer: uWS closes the connection when a request arrives behind a pending one');
        assert.ok(r.closed);
        await new Promise((res) => setTimeout(res, 200));
        assert.ok(!seen.some((x) => x.startsWith('POST')), `the create was never sent upstream: ${JSON.stringify(seen)}`);
      }
    });

    for (const [name, first] of [
      ['an unsupported Transfer-Encoding (501)', `POST ${CM} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n`],
      ['Expect: 100-nope (417)', `POST ${CM} HTTP/1.1\r\nHost: x\r\nExpect: 100-nope\r\nContent-Length: 2\r\n\r\n{}`],
      ['a target with DEL (400)', `GET ${CM}?a=\x7f HTTP/1.1\r\nHost: x\r\n\r\n`],
      ['a header value with a control byte (400)', `GET ${CM} HTTP/1.1\r\nHost: x\r\nX-A: a\x01\r\n\r\n`],
    ]) {
      test(`nothing pipelined behind ${name} is read, as Go's server closes the connection (issue 38)`, async () => {
        seen.length = 0;
        const smuggled = `GET ${CM}smuggled HTTP/1.1\r\nHost: x\r\nX-Remote-User: system:admin\r\n\r\n`;
        const r = await sendRaw(d.clientPort, first + smuggled, { waitMs: 1500 });
        await new Promise((res) => setTimeout(res, 200));
        assert.deepEqual(seen, [], `nothing reached the upstream: ${JSON.stringify(seen)}`);
        assert.ok(r.closed, 'the connection closed');
        if (r.status !== 0) assert.ok([400, 417, 501].includes(r.status), r.out.slice(0, 200));
      });
    }
  });
}
