// Identity spoofing through the client listener, named after the attack. Builds on
// test/integration/proxy.test.ts (X-Remote-User/Group/Extra on GET) and identity.test.ts
// (certificate users): here every spelling of the front-proxy headers, on both routes, on both
// front ends, on writes and on protocol upgrades, checked against the raw headers each simulated
// apiserver recorded, not against its identity summary.
import { describe, test, before, after } from 'node:test';
import { FRONTENDS } from '../support/frontends';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { twoVersionPlane, AUTH, OLD, NEW } from '../support/plane';
import { startLenientUpstream, sendRaw, type LenientUpstream } from '../support/lenient-upstream';
import { startTestDaemon } from '../support/daemon';
import type { Plane } from '../../src/demo/topology';
import type { Daemon } from '../../src/daemon';

const NEW_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads';
const LOCAL = '/api/v1/namespaces/default/configmaps';

/** Every way a client might spell a front-proxy identity header (kube-apiserver's defaults, docs/kubernetes-mvp.md §2.5). */
const SPOOFED: [string, string][] = [
  ['X-Remote-User', 'system:admin'],
  ['x-remote-user', 'system:admin'],
  ['X-REMOTE-USER', 'system:admin'],
  ['X-Remote-Group', 'system:masters'],
  ['x-remote-group', 'system:masters'],
  ['X-Remote-Uid', '0'],
  ['X-Remote-Extra-Scopes', 'all'],
  ['X-Remote-Extra-Authentication.kubernetes.io%2Fcredential-Id', 'x'],
  ['x-remote-extra-', 'empty-key'],
];

/** Every spelling on both front ends (the Node 20 uWS build took only [A-Za-z0-9-] in field names; the Node 24 build takes them all, request-line.test.ts). */
const spoofedFor = (_frontend: 'uws' | 'node') => SPOOFED;

let seq = 0;
const tag = () => `spoof-${process.pid}-${++seq}`;

/** Headers (lower-cased) of the one request carrying x-test-id: id, across every sim. */
function recorded(plane: Plane, id: string): { server: string; headers: Record<string, string | string[]> }[] {
  const out: { server: string; headers: Record<string, string | string[]> }[] = [];
  for (const m of plane.members) for (const r of m.sim.requests) if (r.headers['x-test-id'] === id) out.push({ server: m.spec.name, headers: r.headers });
  return out;
}

for (const frontend of FRONTENDS) {
  describe(`identity spoofing on the ${frontend} front end`, () => {
    let plane: Plane & { tmp: string };
    before(async () => {
      plane = await twoVersionPlane(frontend);
    });
    after(async () => {
      await plane?.close();
    });

    for (const [route, path, server] of [
      ['local', LOCAL, OLD],
      ['peer', NEW_ONLY, NEW],
    ] as const) {
      for (const method of ['GET', 'POST'] as const) {
        test(`X-Remote-* spoofing in ${spoofedFor(frontend).length} spellings (${method}, ${route} route): none reaches an apiserver`, async () => {
          const id = tag();
          const headers: [string, string][] = [['authorization', AUTH.authorization], ['x-test-id', id], ...spoofedFor(frontend)];
          const body = method === 'POST' ? JSON.stringify({ apiVersion: route === 'peer' ? 'scheduling.k8s.io/v1beta1' : 'v1', kind: route === 'peer' ? 'Workload' : 'ConfigMap', metadata: { name: id } }) : undefined;
          if (body) headers.push(['content-type', 'application/json']);
          const r = await request(plane.member(OLD).url + path, { method, headers: headers.flat(), body });
          await r.body.dump();
          assert.ok(r.statusCode < 300, `status ${r.statusCode}`);
          const seen = recorded(plane, id);
          assert.equal(seen.length, 1, 'one request reached one apiserver');
          assert.equal(seen[0].server, server);
          const leaked = Object.keys(seen[0].headers).filter((k) => k.startsWith('x-remote-'));
          assert.deepEqual(leaked, [], `identity headers reached ${server}`);
          assert.equal(seen[0].headers.authorization, AUTH.authorization, 'the bearer token passes through (the apiserver authenticates it)');
        });
      }
    }

    test('X-Remote-User named in Connection (a hop-by-hop trick) still never reaches an apiserver, and the peer hop keeps its own markers', async () => {
      const id = tag();
      const r = await request(plane.member(OLD).url + NEW_ONLY, {
        headers: ['authorization', AUTH.authorization, 'x-test-id', id, 'connection', 'keep-alive, x-forwarded-for, x-kubernetes-peer-proxied', 'x-remote-user', 'system:admin', 'x-kubernetes-peer-proxied', 'false'],
      });
      await r.body.dump();
      assert.equal(r.statusCode, 200);
      const [seen] = recorded(plane, id);
      assert.equal(seen.server, NEW);
      assert.equal(seen.headers['x-remote-user'], undefined);
      assert.equal(seen.headers['x-kubernetes-peer-proxied'], 'true', 'exactly one value, ours');
      assert.ok(seen.headers['x-forwarded-for'], 'X-Forwarded-For is still added');
    });

    test('x-kubernetes-peer-proxied: true with X-Remote-User from a client: served locally, and the identity header still stripped (only the peer listener trusts it)', async () => {
      const id = tag();
      const r = await request(plane.member(OLD).url + LOCAL, { headers: { ...AUTH, 'x-test-id': id, 'x-kubernetes-peer-proxied': 'true', 'x-remote-user': 'system:admin', 'x-remote-group': 'system:masters' } });
      await r.body.dump();
      const [seen] = recorded(plane, id);
      assert.equal(seen.server, OLD);
      assert.deepEqual(Object.keys(seen.headers).filter((k) => k.startsWith('x-remote-')), []);
    });
  });
}

describe('identity spoofing on protocol upgrades (exec, attach, port-forward)', () => {
  for (const frontend of FRONTENDS) {
    describe(`${frontend} front end, lenient upstream`, () => {
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

      test('X-Remote-* spoofing on an upgrade request: the same rules as any request', async () => {
        up.reset();
        const head =
          'GET /api/v1/namespaces/default/pods/p/exec?command=id&stdout=true HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer t\r\n' +
          spoofedFor(frontend).map(([k, v]) => `${k}: ${v}\r\n`).join('') +
          'X-Kubernetes-Peer-Proxied: false\r\n\r\n';
        const r = await sendRaw(d.clientPort, head, { waitMs: 800 });
        const seen = up.requests.filter((q) => q.target.includes('/exec'));
        // The lenient upstream answers 200 (not a 101): relayed as an ordinary response on both front
        // ends (node: raw tunnel refused; uWS: WebSocket bridge refused), the upgrade request forwarded once.
        assert.equal(r.status, 200, r.out);
        assert.equal(seen.length, 1, 'the upgrade request reached the local apiserver once');
        const h = seen[0].head.toLowerCase();
        assert.doesNotMatch(h, /\r\nx-remote-/, `identity headers in the tunnelled head:\n${seen[0].head}`);
        assert.match(h, /\r\nauthorization: bearer t\r\n/);
        assert.match(h, /\r\nx-forwarded-for: 127\.0\.0\.1\r\n/);
        assert.match(h, /\r\nupgrade: websocket\r\n/);
      });
    });
  }
});
