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
    before(async () => {
      up = await startFakeUpstream((r, res) => {
        if (!r.url?.startsWith(CM)) return false;
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
  });
}
