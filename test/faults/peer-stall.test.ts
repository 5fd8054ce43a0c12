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
import { eventually } from '../support/poll';

const REQUEST_TIMEOUT_MS = 60_000; // far beyond the client's patience below: only the probe can end these requests
const CLIENT_WAIT_MS = 15_000;

for (const frontend of FRONTENDS) {
  describe(`a peer that stalls with requests in flight (${frontend} front end)`, () => {
    let o: Observed;
    let stalled = false;
    let notReady = false;
    before(async () => {
      o = await startObserved({
        frontend,
        requestTimeoutMs: REQUEST_TIMEOUT_MS,
        peerProbeIntervalMs: 300,
        peerRoute: (req, res) => {
          if (req.url?.includes('stall')) return true; // sent, never answered
          if (stalled && req.url?.startsWith('/readyz')) return true; // its probe times out too
          if (notReady && req.url?.startsWith('/readyz')) {
            // Its apiserver restarting: the peer mvproxy answers its probe, with the apiserver's 403.
            res.writeHead(403, { 'content-type': 'application/json' });
            res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}');
            return true;
          }
          if (req.url?.includes('slow=1')) {
            setTimeout(() => {
              res.writeHead(201, { 'content-type': 'application/json' });
              res.end('{"kind":"Workload","apiVersion":"scheduling.k8s.io/v1beta1","metadata":{"name":"slow"}}');
            }, 1500);
            return true;
          }
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

    test('a POST waiting on a peer whose probe is answered with a status (its apiserver restarting) gets its answer, not a 503: only a peer that stopped answering is given up', async () => {
      const agent = new Agent({ headersTimeout: CLIENT_WAIT_MS, bodyTimeout: CLIENT_WAIT_MS });
      try {
        // In routing again after the test before (its probe answers 200 again).
        const routed = async () => {
          const r = await request(`${o.base}${PEER_ONLY}`, { dispatcher: agent });
          await r.body.dump();
          return r.statusCode !== 503;
        };
        await eventually(routed, { what: 'the peer routed to again', timeoutMs: 5000 });
        const pending = request(`${o.base}${PEER_ONLY}?slow=1`, { dispatcher: agent, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"kind":"Workload","apiVersion":"scheduling.k8s.io/v1beta1","metadata":{"name":"slow"}}' });
        await new Promise((r) => setTimeout(r, 200));
        notReady = true; // probed every 300 ms: failed while the POST waits 1.5 s for its answer
        const r = await pending;
        const text = await r.body.text();
        assert.equal(r.statusCode, 201, text);
        assert.match(text, /"name":"slow"/);
      } finally {
        notReady = false;
        await agent.close();
      }
    });
  });
}
