// A peer that stalls with requests in flight (the vs-in-tree row "the peer accepts connections but
// never answers", SIGSTOP): a request already sent on a kept-alive connection gets no answer and no
// error from the connection. Once the peer fails its health probe, mvproxy fails what still waits
// on it: a GET fails over (here to nobody: a 503 Status), a POST gets a 503 Status (it may have
// reached the peer, so it is not sent again); neither waits for --request-timeout.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { FRONTENDS } from '../support/frontends';
import { startObserved, PEER_ONLY, type Observed } from './harness';

const REQUEST_TIMEOUT_MS = 60_000; // far beyond the client's patience below: only the probe can end these requests
const CLIENT_WAIT_MS = 15_000;

for (const frontend of FRONTENDS) {
  describe(`a peer that stalls with requests in flight (${frontend} front end)`, () => {
    let o: Observed;
    let stalled = false;
    before(async () => {
      o = await startObserved({
        frontend,
        requestTimeoutMs: REQUEST_TIMEOUT_MS,
        peerProbeIntervalMs: 300,
        peerRoute: (req) => {
          if (req.url?.includes('stall')) return true; // sent, never answered
          if (stalled && req.url?.startsWith('/readyz')) return true; // its probe times out too
          return false;
        },
      });
    });
    after(async () => o?.close());

    test('a GET and a POST waiting on it get a 503 Status once its probe fails, long before --request-timeout', async () => {
      const agent = new Agent({ headersTimeout: CLIENT_WAIT_MS, bodyTimeout: CLIENT_WAIT_MS });
      try {
        const pending = [
          request(`${o.base}${PEER_ONLY}/stall`, { dispatcher: agent }),
          request(`${o.base}${PEER_ONLY}?stall=1`, { dispatcher: agent, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"kind":"Workload","apiVersion":"scheduling.k8s.io/v1beta1","metadata":{"name":"s"}}' }),
        ];
        await new Promise((r) => setTimeout(r, 200));
        stalled = true;
        for (const r of await Promise.all(pending)) {
          const text = await r.body.text();
          assert.equal(r.statusCode, 503, text);
          assert.match(text, /"kind":"Status"/);
        }
      } finally {
        stalled = false;
        await agent.close();
      }
    });
  });
}
