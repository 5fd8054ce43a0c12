// Attacks on the peer listener (node:https, or uWS on the uWS front end; mutual TLS, CN allow-list; docs/kubernetes-mvp.md §2.5). Since the peer
// listener also *trusts* the X-Remote-* identity a verified peer sends, getting a request past it
// would mean choosing one's own identity: every attempt here must be refused before any byte
// reaches an apiserver. Builds on test/integration/proxy.test.ts (GET with no certificate, a
// foreign CA, a disallowed CN) with writes, pipelining, upgrades, spoofed identity headers and
// certificates that are wrong in subtler ways (the wrong one of the cluster's own CAs, the name in
// O instead of CN, expired, not yet valid, server-only usage, self-signed).
import { FRONTENDS } from '../support/frontends';
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import tls from 'node:tls';
import { twoVersionPlane, OLD, NEW } from '../support/plane';
import { createCA } from '../../src/pki/throwaway';
import type { Plane } from '../../src/demo/topology';

const LOCAL = '/api/v1/namespaces/default/configmaps';
const ALLOWED = 'front-proxy-client';

interface TLSReply {
  /** The TLS handshake (or the first read) failed: the listener refused the certificate. */
  refused: string | null;
  out: string;
}

/** Opens mutual TLS to the peer listener, sends raw bytes, collects the answer until close or waitMs. */
function tlsExchange(address: string, ca: string, cert: { cert: string; key: string } | undefined, bytes: string, waitMs = 1500): Promise<TLSReply> {
  const [host, port] = address.split(':');
  return new Promise((resolve) => {
    let out = '';
    let refused: string | null = null;
    const s = tls.connect({ host, port: Number(port), ca, servername: 'kubernetes.default.svc', ...(cert ?? {}) });
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ refused, out });
    }, waitMs);
    s.on('secureConnect', () => s.write(bytes));
    s.on('data', (d) => (out += d.toString('latin1')));
    s.on('error', (e: Error & { code?: string }) => {
      refused ??= e.code ?? e.message;
    });
    s.on('close', () => {
      clearTimeout(timer);
      // TLS 1.3: the server's verdict on our certificate arrives after our handshake completes, as
      // an alert on the first read; a close with nothing read counts as refused too.
      if (!out && !refused) refused = 'closed without a reply';
      resolve({ refused, out });
    });
  });
}

// Both peer front ends: node:http2 (the default, --peer-frontend=auto) and uWS (--peer-frontend=uws, where it loads).
for (const peerFrontend of FRONTENDS.includes('uws') ? (['auto', 'uws'] as const) : (['auto'] as const)) {
describe(`peer listener attacks (--peer-frontend=${peerFrontend})`, () => {
  let plane: Plane & { tmp: string };
  let seq = 0;
  const creds: Record<string, { cert: string; key: string } | undefined> = {};

  before(async () => {
    plane = await twoVersionPlane('auto', { configure: (c) => ((c.connectTimeoutMs = 1000), (c.discoveryRefreshIntervalMs = 60_000), (c.peerFrontend = peerFrontend)) });
    const fp = plane.pki.frontProxyCA;
    const foreign = await createCA('foreign-ca');
    const selfSigned = await createCA(ALLOWED); // a CA certificate standing in for itself
    const hour = 3600_000;
    const [good, wrongCN, nameInO, fromClusterCA, fromForeign, expired, notYetValid, serverOnly] = await Promise.all([
      fp.issue({ commonName: ALLOWED, usage: 'client' }),
      fp.issue({ commonName: 'system:admin', usage: 'client' }),
      fp.issue({ commonName: 'someone', organization: [ALLOWED], usage: 'client' }),
      plane.pki.clusterCA.issue({ commonName: ALLOWED, usage: 'client' }),
      foreign.issue({ commonName: ALLOWED, usage: 'client' }),
      fp.issue({ commonName: ALLOWED, usage: 'client', notBeforeOffsetMs: -2 * hour, validForMs: -hour }),
      fp.issue({ commonName: ALLOWED, usage: 'client', notBeforeOffsetMs: hour, validForMs: 2 * hour }),
      fp.issue({ commonName: ALLOWED, usage: 'server' }),
    ]);
    Object.assign(creds, { good, wrongCN, nameInO, fromClusterCA, fromForeign, expired, notYetValid, serverOnly, selfSigned: { cert: selfSigned.cert, key: selfSigned.key }, none: undefined });
  });
  after(async () => {
    await plane?.close();
  });

  /** Requests carrying x-test-id: id that reached any simulated apiserver. */
  const reached = (id: string) => plane.members.flatMap((m) => m.sim.requests.filter((r) => r.headers['x-test-id'] === id).map(() => m.spec.name));

  const get = (id: string, extra = '') => `GET ${LOCAL} HTTP/1.1\r\nHost: kubernetes.default.svc\r\nx-test-id: ${id}\r\nx-kubernetes-peer-proxied: true\r\n${extra}\r\n`;
  const post = (id: string) => {
    const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: id } });
    return `POST ${LOCAL} HTTP/1.1\r\nHost: kubernetes.default.svc\r\nx-test-id: ${id}\r\nx-kubernetes-peer-proxied: true\r\nX-Remote-User: system:admin\r\nX-Remote-Group: system:masters\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  };
  const upgrade = (id: string) =>
    `GET /api/v1/namespaces/default/pods/p/exec?command=sh HTTP/1.1\r\nHost: kubernetes.default.svc\r\nx-test-id: ${id}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nX-Remote-User: system:admin\r\n\r\n`;

  test('control: the proxy client certificate of a peer is served (so the refusals below are about the certificate)', async () => {
    const id = `pl-${++seq}`;
    const r = await tlsExchange(plane.member(OLD).peerAddress, plane.pki.clusterCA.cert, creds.good, get(id, 'Connection: close\r\n'));
    assert.equal(r.refused, null);
    assert.match(r.out, /^HTTP\/1\.1 200/);
    assert.deepEqual(reached(id), [OLD]);
  });

  test("a peer's TLS renegotiation is refused (Go never renegotiates; node kept a renegotiated socket `authorized`, tls-renegotiation.test.ts)", async () => {
    const [host, port] = plane.member(OLD).peerAddress.split(':');
    const outcome = await new Promise<string>((resolve) => {
      const s = tls.connect({ host, port: Number(port), ca: plane.pki.clusterCA.cert, servername: 'kubernetes.default.svc', maxVersion: 'TLSv1.2', ALPNProtocols: ['http/1.1'], ...creds.good }, () => {
        if (!s.renegotiate({ rejectUnauthorized: true }, (err) => resolve(err ? `refused: ${err.message}` : 'done'))) resolve('not started');
      });
      s.setTimeout(10_000, () => s.destroy());
      s.on('error', (e) => resolve(`refused: ${e.message}`));
      s.on('close', () => resolve('closed'));
    });
    assert.match(outcome, /^(refused|closed)/, outcome);
  });

  const TLS_REFUSED: [string, string][] = [
    ['none', 'no client certificate'],
    ['fromForeign', 'a client certificate from a foreign CA with the allowed CN'],
    ['selfSigned', 'a self-signed certificate with the allowed CN'],
    ['fromClusterCA', "a certificate from the cluster CA (the peers' *serving* CA) with the allowed CN: the wrong one of the cluster's own CAs"],
    ['expired', 'an expired certificate from the front-proxy CA with the allowed CN'],
    ['notYetValid', 'a not-yet-valid certificate from the front-proxy CA with the allowed CN'],
  ];
  for (const [key, what] of TLS_REFUSED) {
    test(`${what}: refused in the handshake (uWS, no certificate at all: one 401 Status, then closed); GET, POST with X-Remote-* and an upgrade all reach no apiserver`, async () => {
      for (const make of [get, post, upgrade]) {
        const id = `pl-${++seq}`;
        const r = await tlsExchange(plane.member(OLD).peerAddress, plane.pki.clusterCA.cert, creds[key], make(id) + get(`${id}-next`));
        if (key === 'none' && plane.member(OLD).daemon.peerFrontend === 'uws') {
          // uSockets lets a connection without a certificate through its handshake: the listener
          // answers its request 401 and closes it (with bytes behind it, aborts it unanswered);
          // the request behind it is never read.
          assert.ok(r.out === '' || /^HTTP\/1\.1 401 [^]*MVP_ERR_PEER_UNAUTHORIZED/.test(r.out), JSON.stringify(r));
          assert.ok((r.out.match(/HTTP\/1\.1 /g) ?? []).length <= 1, r.out);
          const alone = await tlsExchange(plane.member(OLD).peerAddress, plane.pki.clusterCA.cert, undefined, make(`${id}-alone`));
          assert.match(alone.out, /^HTTP\/1\.1 (401|400) /, JSON.stringify(alone));
          assert.match(alone.out, /MVP_ERR_PEER_UNAUTHORIZED/);
          assert.equal((alone.out.match(/HTTP\/1\.1 /g) ?? []).length, 1, alone.out);
          assert.deepEqual(reached(`${id}-alone`), []);
        } else assert.ok(r.refused !== null && !/^HTTP/.test(r.out), `${key}: ${JSON.stringify(r)}`);
        assert.deepEqual(reached(id), []);
        assert.deepEqual(reached(`${id}-next`), []);
      }
    });
  }

  test('a client certificate whose only usage is serverAuth, from the front-proxy CA with the allowed CN: refused (Go requires clientAuth for request-header certificates)', async () => {
    const id = `pl-${++seq}`;
    const r = await tlsExchange(plane.member(OLD).peerAddress, plane.pki.clusterCA.cert, creds.serverOnly, get(id));
    assert.ok(r.refused !== null || /^HTTP\/1\.1 401/.test(r.out), JSON.stringify(r));
    assert.deepEqual(reached(id), []);
  });

  for (const [key, what] of [
    ['wrongCN', 'a front-proxy-CA certificate with a CN outside --requestheader-allowed-names'],
    ['nameInO', 'a front-proxy-CA certificate with the allowed name in O, not in CN'],
  ] as const) {
    test(`${what}: 401 Status for GET, POST with X-Remote-User: system:admin, pipelined requests; nothing reaches an apiserver`, async () => {
      const ids = [++seq, ++seq, ++seq].map((n) => `pl-${n}`);
      // Three requests pipelined on one connection: each is judged (the verdict is per connection).
      const r = await tlsExchange(plane.member(OLD).peerAddress, plane.pki.clusterCA.cert, creds[key], get(ids[0]) + post(ids[1]) + get(ids[2], 'Connection: close\r\n'), 3000);
      assert.equal(r.refused, null);
      const statuses = [...r.out.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
      assert.deepEqual(statuses, ['401', '401', '401'], r.out.slice(0, 300));
      assert.match(r.out, /"reason":"Unauthorized"/);
      for (const id of ids) assert.deepEqual(reached(id), []);
    });
  }

  for (const [key, who] of [
    ['good', 'a verified peer'],
    ['wrongCN', 'a front-proxy-CA certificate with a CN outside --requestheader-allowed-names'],
    ['none', 'no client certificate'],
  ] as const) {
    test(`request smuggled behind an upgrade, from ${who}: a verified peer's upgrade reaches only its apiserver (node peer listener, issue 30), any other is refused without a 101; the pipelined GET with X-Remote-User: system:admin reaches no apiserver`, async () => {
      const [up, smuggled] = [`pl-${++seq}`, `pl-${++seq}`];
      const spoofed = `GET /api/v1/namespaces/kube-system/secrets HTTP/1.1\r\nHost: kubernetes.default.svc\r\nx-test-id: ${smuggled}\r\nX-Remote-User: system:admin\r\nX-Remote-Group: system:masters\r\n\r\n`;
      const r = await tlsExchange(plane.member(NEW).peerAddress, plane.pki.clusterCA.cert, creds[key], upgrade(up) + spoofed);
      if (key === 'good' && plane.member(NEW).daemon.peerFrontend === 'node') {
        // Tunnelled to the local apiserver as one upgrade request; the bytes after it are the
        // tunnel's (never read as a request), and nothing went anywhere else.
        assert.deepEqual(reached(up), [NEW]);
        assert.deepEqual(reached(smuggled), []);
        return;
      }
      assert.ok(!/^HTTP\/1\.1 101/.test(r.out), r.out);
      if (key === 'wrongCN' && plane.member(NEW).daemon.peerFrontend === 'node') {
        // Refused with a Status naming why, and the connection closed: nothing after it is read.
        assert.match(r.out, /^HTTP\/1\.1 401 /);
        assert.match(r.out, /MVP_ERR_PEER_UNAUTHORIZED/);
        assert.equal((r.out.match(/HTTP\/1\.1 /g) ?? []).length, 1, r.out);
      } else {
        // uWS: with bytes behind the refused upgrade the connection is aborted before any answer
        // (listener/uws.ts routeAll); never a second answer.
        assert.ok((r.out.match(/HTTP\/1\.1 /g) ?? []).length <= 1, r.out);
      }
      assert.deepEqual(reached(up), []);
      assert.deepEqual(reached(smuggled), []);
    });
  }

  test('the listener still serves a good peer after all of the above', async () => {
    const id = `pl-${++seq}`;
    const r = await tlsExchange(plane.member(OLD).peerAddress, plane.pki.clusterCA.cert, creds.good, get(id, 'Connection: close\r\n'));
    assert.match(r.out, /^HTTP\/1\.1 200/);
    assert.deepEqual(reached(id), [OLD]);
  });
});
}
