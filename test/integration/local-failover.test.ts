// While this node's apiserver is not serving, its clients are served by the peers (issue 30,
// --local-failover). Two members share one object store, as real apiservers share etcd; the old
// member's apiserver is stopped (as in a restart: connections refused) and started again.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { DEFAULT_FRONTEND, FRONTENDS } from '../support/frontends';
import { findKubectl, kubectl } from '../support/kubectl';
import { sendRaw } from '../support/lenient-upstream';
import { twoVersionPlane, call, AUTH, OLD, NEW } from '../support/plane';
import { eventually } from '../support/poll';
import { startSimApiserver } from '../../src/sim';
import type { Plane } from '../../src/demo/topology';
import type { Frontend } from '../../src/config/types';

const CM = '/api/v1/namespaces/default/configmaps';

/** Two members sharing one store; a stopped apiserver is refused within 1 s; discovery does not refresh during the test. */
const failoverPlane = (frontend: Frontend, failover: boolean) =>
  twoVersionPlane(frontend, {
    configure: (c) => {
      c.connectTimeoutMs = 1000;
      c.discoveryRefreshIntervalMs = 60_000;
      c.localFailover = failover;
    },
  });

for (const failover of [true, false]) {
  describe(`the local apiserver stops and comes back, --local-failover=${failover} (${DEFAULT_FRONTEND} front end)`, () => {
    let plane: Plane & { tmp: string };
    before(async () => {
      plane = await failoverPlane(DEFAULT_FRONTEND, failover);
      const r = await call(plane.member(OLD).url, CM, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `before-${failover}` } }) });
      assert.equal(r.status, 201, r.text);
    });
    after(async () => plane?.close());

    test(failover ? 'requests a peer can answer are served by the peer at once; /healthz stays local; a create runs once; back to local when the apiserver is back' : 'the local 503 stands, as before', async () => {
      const old = plane.member(OLD);
      const port = old.sim.port;
      await old.sim.close();
      // The first request after the stop: refused at once, so it goes to a peer (or gets the 503).
      const get = await call(old.url, `${CM}/before-${failover}`, { headers: AUTH });
      if (!failover) {
        assert.equal(get.status, 503, get.text);
        assert.match(get.text, /MVP_ERR_LOCAL_UNAVAILABLE/);
        old.sim = await startSimApiserver({ name: OLD, kubernetesVersion: 'v1.33', store: plane.store, port });
        return;
      }
      assert.equal(get.status, 200, get.text);
      assert.equal(get.headers['x-sim-server'], NEW, 'answered by the peer');
      const state = async () => (await (await fetch(old.metricsUrl)).text()).match(/^mvproxy_local_apiserver_state\{state="(\w+)"\} 1$/m)?.[1];
      await eventually(async () => (await state()) === 'down', { what: 'the local apiserver seen down', timeoutMs: 3000 });
      const list = await call(old.url, CM, { headers: AUTH });
      assert.equal(list.status, 200);
      assert.equal(list.headers['x-sim-server'], NEW);
      const version = await call(old.url, '/version', { headers: AUTH });
      assert.equal(version.status, 200, 'non-resource paths every apiserver answers alike go to a peer');
      // A resource nobody serves by discovery: the peers' 404 at once (a 503 here is retried by
      // client-go until its own timeout: the newer release's kinds while this node's apiserver restarts).
      const unknown = await call(old.url, '/apis/nowhere.example.com/v1/things', { headers: AUTH });
      assert.equal(unknown.status, 404, unknown.text);
      assert.equal(unknown.headers['x-sim-server'], NEW, 'answered by the peer');
      const created = await call(old.url, CM, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'during' } }) });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.headers['x-sim-server'], NEW);
      const healthz = await call(old.url, '/healthz');
      assert.notEqual(healthz.headers['x-sim-server'], NEW, '/healthz describes this node: never a peer\'s');
      // One hop: a request that already came from a peer is never sent on.
      const hop = await call(old.url, `${CM}/during`, { headers: { ...AUTH, 'x-kubernetes-peer-proxied': 'true' } });
      assert.equal(hop.status, 503);
      const metrics = await (await fetch(old.metricsUrl)).text();
      assert.match(metrics, /^mvproxy_local_failover_requests_total\{reason="(refused|down)"\} [1-9]/m);
      // Back: /readyz answers, routing returns to the local apiserver within about a second.
      old.sim = await startSimApiserver({ name: OLD, kubernetesVersion: 'v1.33', store: plane.store, port });
      await eventually(async () => (await state()) === 'serving', { what: 'the local apiserver seen serving again', timeoutMs: 5000 });
      const back = await call(old.url, `${CM}/during`, { headers: AUTH });
      assert.equal(back.status, 200);
      assert.equal(back.headers['x-sim-server'], OLD);
      const all = await call(old.url, CM, { headers: AUTH });
      assert.equal((all.json().items as { metadata: { name: string } }[]).filter((i) => i.metadata.name === 'during').length, 1, 'created once');
    });
  });
}

// Exec, attach and port-forward (issue 30 item 3): one already open ends with the local apiserver;
// a new one while it is not serving goes to a peer (its peer listener tunnels it to its apiserver),
// decided before anything is sent, so it runs once; one hop.
const k133 = findKubectl(33);
describe(`a peer whose apiserver is down answers "not sent" at once (${DEFAULT_FRONTEND} front end, --local-failover)`, () => {
  let plane: Plane & { tmp: string };
  let hanging: net.Server | undefined;
  const reached: string[] = [];
  before(async () => {
    // No peer probe during the test: the peer stays in routing, as in the seconds before a probe
    // notices its apiserver went (npm run upgrade-scenario, SIGKILL).
    plane = await twoVersionPlane(DEFAULT_FRONTEND, { configure: (c) => Object.assign(c, { connectTimeoutMs: 1000, discoveryRefreshIntervalMs: 60_000, peerProbeIntervalMs: 60_000, localFailover: true }) });
  });
  after(async () => {
    await plane?.close();
    await new Promise((r) => (hanging ? hanging.close(r) : r(undefined)));
  });

  test('a create asked of it after the local 404 is never sent to its restarting apiserver: the client gets the local 404, not a 503 for a create that may have run', async () => {
    const old = plane.member(OLD);
    const port = old.sim.port;
    await old.sim.close();
    // Refused once: the member sees its apiserver down; then a "restarting" apiserver on its port
    // accepts connections and never answers (as kube-apiserver before it serves).
    await call(old.url, CM, { headers: AUTH });
    const state = async () => (await (await fetch(old.metricsUrl)).text()).match(/^mvproxy_local_apiserver_state\{state="(\w+)"\} 1$/m)?.[1];
    await eventually(async () => (await state()) === 'down', { what: 'the local apiserver seen down', timeoutMs: 3000 });
    hanging = net.createServer((sock) => sock.on('data', (d) => reached.push(d.toString('latin1').split('\r\n')[0]!)));
    await new Promise<void>((r) => hanging!.listen(port, '127.0.0.1', r));
    const t0 = performance.now();
    const created = await call(plane.member(NEW).url, '/apis/nowhere.example.com/v1/things', { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: '{"apiVersion":"nowhere.example.com/v1","kind":"Thing","metadata":{"name":"t"}}' });
    assert.equal(created.status, 404, created.text);
    assert.equal(created.headers['x-sim-server'], NEW, "the asking member's own 404");
    assert.ok(performance.now() - t0 < 5000, 'answered at once, not after a timeout');
    assert.ok((await state()) === 'down', 'still down: the restarting apiserver does not answer its /readyz');
    assert.deepEqual(reached.filter((l) => l.includes('nowhere')), [], 'nothing of the create reached the restarting apiserver');
  });
});

for (const frontend of FRONTENDS) {
  describe(`a new kubectl exec while the local apiserver is down (${frontend} front end, --local-failover)`, () => {
    let plane: Plane & { tmp: string };
    before(async () => {
      plane = await failoverPlane(frontend, true);
      const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'shell', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'busybox' }] }, status: { phase: 'Running' } };
      const r = await call(plane.member(OLD).url, '/api/v1/namespaces/default/pods', { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify(pod) });
      assert.equal(r.status, 201, r.text);
    });
    after(async () => plane?.close());

    test('kubectl 1.33 exec through the member whose apiserver is stopped is served by the peer; an upgrade already marked peer-proxied is not sent on', { skip: 'skip' in k133 && k133.skip }, async () => {
      const old = plane.member(OLD);
      const port = old.sim.port;
      await old.sim.close();
      const state = async () => (await (await fetch(old.metricsUrl)).text()).match(/^mvproxy_local_apiserver_state\{state="(\w+)"\} 1$/m)?.[1];
      await eventually(async () => (await state()) === 'down', { what: 'the local apiserver seen down', timeoutMs: 3000 });
      try {
        // The old member's apiserver is gone: only the peer's can have run it.
        const r = await kubectl((k133 as { bin: string }).bin, old.url, ['exec', 'shell', '-n', 'default', '--', 'echo', 'via', 'the', 'peer']);
        assert.equal(r.stdout, 'via the peer\n', r.stderr);
        assert.match(await (await fetch(old.metricsUrl)).text(), /^mvproxy_local_failover_requests_total\{reason="down"\} [1-9]/m);
        // One hop: an upgrade that already came from a peer stays local (refused there: a 503 Status).
        const hop = await sendRaw(Number(new URL(old.url).port), 'GET /api/v1/namespaces/default/pods/shell/exec?command=echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\nx-kubernetes-peer-proxied: true\r\n\r\n', { waitMs: 1500 });
        assert.ok(hop.status === 502 || hop.status === 503, hop.out);
      } finally {
        old.sim = await startSimApiserver({ name: OLD, kubernetesVersion: 'v1.33', store: plane.store, port });
      }
    });
  });
}
