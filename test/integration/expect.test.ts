// Expect (RFC 9110 §10.1.1) as kube-apiserver's Go net/http server answers it: `100-continue` works
// (curl adds it by itself to uploads over 1 MB; it used to get a 503 because the upstream client
// refuses the header), any other expectation gets a 417 Status and the connection closes. Nothing
// is forwarded with an Expect header.
import { describe, test, before, after } from 'node:test';
import { FRONTENDS } from '../support/frontends';
import { eventually } from '../support/poll';
import assert from 'node:assert/strict';
import { startLenientUpstream, sendRaw, type LenientUpstream } from '../support/lenient-upstream';
import { startTestDaemon } from '../support/daemon';
import type { Daemon } from '../../src/daemon';

const CM = '/api/v1/namespaces/default/configmaps';
const BODY = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'expect' }, data: { k: 'x'.repeat(2000) } });

for (const frontend of FRONTENDS) {
  describe(`Expect on the ${frontend} front end`, () => {
    let up: LenientUpstream;
    let d: Daemon;
    before(async () => {
      up = await startLenientUpstream();
      d = await startTestDaemon({ frontend, localAPIServer: up.url });
      await d.publisher.refresh();
    });
    after(async () => {
      await d?.close();
      await up?.close();
    });

    for (const value of ['100-continue', '100-Continue']) {
      test(`Expect: ${value}: the client gets 100 Continue, sends its body after it, and the upload is forwarded whole without the header`, async () => {
        up.reset();
        const head = `POST ${CM} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\nExpect: ${value}\r\n\r\n`;
        const r = await sendRaw(d.clientPort, head, { keepOpen: true, waitMs: 500 });
        if (frontend === 'uws' && value !== '100-continue') {
          // This uWS build sends the interim 100 itself, only for the exact lowercase token (the
          // header is case-insensitive); a client then sends its body after its own wait (curl: 1 s).
          assert.equal(r.out, '', 'nothing before the body');
        } else assert.match(r.out, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, 'only the interim 100 before the body is sent');
        const s = r.socket!;
        let out = '';
        s.on('data', (b) => (out += b.toString('latin1')));
        s.write(BODY);
        try {
          await eventually(() => /\r\n\r\n\{/.test(out), { what: 'the final response', timeoutMs: 2000, intervalMs: 20 });
        } finally {
          s.destroy();
        }
        assert.match(out, /^HTTP\/1\.1 200 /, out);
        assert.match(out, new RegExp(`"bodyBytes":${BODY.length}`));
        const [q] = up.appRequests();
        assert.doesNotMatch(q.head, /\r\nexpect:/i);
        assert.equal(q.body.length, BODY.length);
      });
    }

    for (const value of ['foo', '200-ok', '100-continue, foo']) {
      test(`Expect: ${value}: 417 Status, the connection closes, nothing forwarded`, async () => {
        up.reset();
        const r = await sendRaw(d.clientPort, `POST ${CM} HTTP/1.1\r\nHost: x\r\nContent-Length: ${BODY.length}\r\nExpect: ${value}\r\n\r\n${BODY}`, { waitMs: 1500 });
        assert.equal(r.status, 417, r.out);
        assert.match(r.out, /"kind":"Status"/);
        assert.match(r.out, /MVP_ERR_EXPECTATION_FAILED/);
        assert.ok(r.closed, 'closed after the answer');
        assert.deepEqual(up.appRequests(), []);
      });
    }

    test('Expect: foo on a GET without a body: 417 too', async () => {
      up.reset();
      const r = await sendRaw(d.clientPort, `GET ${CM} HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n`, { waitMs: 1500 });
      assert.equal(r.status, 417, r.out);
      assert.deepEqual(up.appRequests(), []);
    });
  });
}
