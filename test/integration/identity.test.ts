// Identity across the hop (issues 5, 12): a client-certificate user is verified by mvproxy's front
// end — node:https, or uWebSockets.js where its build can read certificates (Node 22+, glibc >= 2.38)
// — and reaches the serving apiserver, local or a peer's, as that user, via front-proxy headers;
// what a client writes into those headers itself is never believed. Same code path, same tests on
// both front ends.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { twoVersionPlane, OLD, NEW } from '../support/plane';
import type { Plane } from '../../src/demo/topology';
import { FRONTENDS, UWS_UNAVAILABLE } from '../support/frontends';
import { createCA } from '../../src/pki/throwaway';
import { chooseFrontend, choosePeerFrontend, uwsReadsClientCertificates } from '../../src/listener/frontend';

const NEW_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads';
const LOCAL = '/api/v1/namespaces/default/configmaps';

for (const frontend of FRONTENDS) describe(`identity across the hop (${frontend} front end)`, () => {
  let plane: Plane & { tmp: string };
  let jane: Agent;
  let anonymous: Agent;
  before(async () => {
    plane = await twoVersionPlane('node', {
      configure: (c, m) => {
        if (m.name !== OLD) return;
        // The old member's client listener: TLS, and client certificates from the cluster CA.
        c.frontend = frontend;
        c.tlsCertFile = c.peerTLSCertFile;
        c.tlsPrivateKeyFile = c.peerTLSPrivateKeyFile;
        c.clientCAFile = c.peerCAFile;
      },
    });
    const cert = await plane.pki.clusterCA.issue({ commonName: 'jane', organization: ['devs', 'ops'], usage: 'client' });
    jane = new Agent({ connect: { ca: plane.pki.clusterCA.cert, cert: cert.cert, key: cert.key } });
    anonymous = new Agent({ connect: { ca: plane.pki.clusterCA.cert } });
  });
  after(async () => {
    await jane?.close();
    await anonymous?.close();
    await plane?.close();
  });

  async function echo(agent: Agent, path: string, headers: Record<string, string> = {}) {
    const r = await request(plane.member(OLD).url + path, { dispatcher: agent, headers });
    await r.body.dump();
    assert.equal(r.statusCode, 200);
    return { server: r.headers['x-sim-server'], id: JSON.parse(String(r.headers['x-sim-request-identity'])) };
  }

  test("a certificate user's request for a peer-only resource reaches the peer's apiserver as that user", async () => {
    const { server, id } = await echo(jane, NEW_ONLY);
    assert.equal(server, NEW);
    assert.equal(id.remoteUser, 'jane');
    assert.deepEqual(id.remoteGroups, ['devs', 'ops']);
    assert.deepEqual(id.peerProxied, ['true']);
  });

  test('the same user on a locally served resource reaches the local apiserver as that user', async () => {
    const { server, id } = await echo(jane, LOCAL);
    assert.equal(server, OLD);
    assert.equal(id.remoteUser, 'jane');
    assert.deepEqual(id.remoteGroups, ['devs', 'ops']);
  });

  test('a certificate user cannot add to its identity with its own X-Remote-* headers', async () => {
    const { id } = await echo(jane, NEW_ONLY, { 'x-remote-user': 'system:admin', 'x-remote-group': 'system:masters' });
    assert.equal(id.remoteUser, 'jane');
    assert.deepEqual(id.remoteGroups, ['devs', 'ops']);
  });

  test('a client without a certificate sending X-Remote-User is not believed; its bearer token passes through', async () => {
    for (const path of [NEW_ONLY, LOCAL]) {
      const { id } = await echo(anonymous, path, { 'x-remote-user': 'system:admin', 'x-remote-group': 'system:masters', authorization: 'Bearer abc' });
      assert.equal(id.remoteUser, null);
      assert.deepEqual(id.remoteGroups, []);
      assert.equal(id.authorization, 'Bearer abc');
    }
  });

  test('the listener runs on the front end asked for', () => {
    assert.equal(plane.member(OLD).daemon.frontend, frontend);
  });

  test('a client certificate that does not verify (another CA, expired, server-only usage) fails the TLS handshake; nothing reaches an apiserver', async () => {
    const foreign = await createCA('foreign-ca');
    const hour = 3600_000;
    const bad = {
      'another CA': await foreign.issue({ commonName: 'mallory', organization: ['system:masters'], usage: 'client' }),
      expired: await plane.pki.clusterCA.issue({ commonName: 'mallory', usage: 'client', notBeforeOffsetMs: -2 * hour, validForMs: -hour }),
      'server-only usage': await plane.pki.clusterCA.issue({ commonName: 'mallory', usage: 'server' }),
    };
    const before = plane.members.reduce((n, m) => n + m.sim.requests.length, 0);
    for (const [what, cert] of Object.entries(bad)) {
      const agent = new Agent({ connect: { ca: plane.pki.clusterCA.cert, cert: cert.cert, key: cert.key } });
      try {
        const r = await request(plane.member(OLD).url + LOCAL, { dispatcher: agent }).then(
          async (res) => `HTTP ${res.statusCode}: ${await res.body.text()}`,
          (e: Error & { code?: string }) => e.code ?? e.message,
        );
        assert.doesNotMatch(r, /^HTTP/, `${what}: ${r}`);
      } finally {
        await agent.close();
      }
    }
    const reached = plane.members.flatMap((m) => m.sim.requests.slice(0)).filter((q) => String(q.headers['x-remote-user'] ?? '') === 'mallory');
    assert.deepEqual(reached, [], 'no request of a refused certificate reached an apiserver');
    assert.ok(plane.members.reduce((n, m) => n + m.sim.requests.length, 0) >= before);
  });
});

describe('client certificates and the front-end choice', () => {
  test('--client-ca-file with --frontend=uws where the uWS build cannot read certificates: refused at start, naming why', () => {
    const r = chooseFrontend('uws', { clientCertificates: true }, () => ({ uws: {} as never }), 115);
    assert.ok('error' in r && /ABI 115/.test(r.error) && /--frontend=node/.test(r.error), JSON.stringify(r));
  });

  test('--client-ca-file with --frontend=auto: uWS where its build reads certificates, else node, with the reason', () => {
    const old = chooseFrontend('auto', { clientCertificates: true }, () => ({ uws: {} as never }), 115);
    assert.equal('frontend' in old && old.frontend, 'node');
    assert.match((old as { reason: string }).reason, /cannot read/);
    const modern = chooseFrontend('auto', { clientCertificates: true }, () => ({ uws: {} as never }), 137);
    assert.equal('frontend' in modern && modern.frontend, 'uws');
    const none = chooseFrontend('auto', { clientCertificates: false }, () => ({ error: new Error('x\n/lib/libc.so.6: version `GLIBC_2.38\' not found') }), 137);
    assert.equal('frontend' in none && none.frontend, 'node');
    assert.match((none as { reason: string }).reason, /GLIBC_2\.38/);
  });

  test(`this runtime (Node ${process.version}, ABI ${process.versions.modules}): auto with --client-ca-file serves ${FRONTENDS.includes('uws') && uwsReadsClientCertificates() ? 'uWS' : 'node'}${UWS_UNAVAILABLE ? ` (uWS: ${UWS_UNAVAILABLE})` : ''}`, async () => {
    const plane = await twoVersionPlane('auto', {
      configure: (c, m) => {
        if (m.name !== OLD) return;
        c.tlsCertFile = c.peerTLSCertFile;
        c.tlsPrivateKeyFile = c.peerTLSPrivateKeyFile;
        c.clientCAFile = c.peerCAFile;
      },
    });
    try {
      assert.equal(plane.member(OLD).daemon.frontend, FRONTENDS.includes('uws') && uwsReadsClientCertificates() ? 'uws' : 'node');
      const cert = await plane.pki.clusterCA.issue({ commonName: 'jane', organization: ['devs'], usage: 'client' });
      const agent = new Agent({ connect: { ca: plane.pki.clusterCA.cert, cert: cert.cert, key: cert.key } });
      const r = await request(plane.member(OLD).url + LOCAL, { dispatcher: agent });
      await r.body.dump();
      await agent.close();
      assert.equal(JSON.parse(String(r.headers['x-sim-request-identity'])).remoteUser, 'jane');
    } finally {
      await plane.close();
    }
  });

  test('the peer listener: uWS beside a uWS client listener where its build reads certificates and the TLS floor is 1.2, else node:https, with the reason', () => {
    assert.deepEqual(choosePeerFrontend('uws', 'TLSv1.2', 137, 'uws').frontend, 'uws');
    assert.deepEqual(choosePeerFrontend('uws', 'TLSv1.2', 137).frontend, 'node', 'auto: node:http2, for shared peer-routed watches');
    const old = choosePeerFrontend('uws', 'TLSv1.2', 115, 'uws');
    assert.equal(old.frontend, 'node');
    assert.match(old.reason, /ABI 115/);
    assert.equal(choosePeerFrontend('uws', 'TLSv1.3', 137, 'uws').frontend, 'node');
    assert.equal(choosePeerFrontend('node', 'TLSv1.2', 137).frontend, 'node');
  });

  for (const setting of ['auto', 'uws'] as const) {
    test(`this runtime (Node ${process.version}, ABI ${process.versions.modules}), --peer-frontend=${setting}: the peer listener serves on ${setting === 'uws' && FRONTENDS.includes('uws') && uwsReadsClientCertificates() ? 'uWS' : 'node:http2'}, and a peer's proxied request crosses it`, async () => {
      const plane = await twoVersionPlane('auto', { configure: (c) => ((c.connectTimeoutMs = 1000), (c.discoveryRefreshIntervalMs = 60_000), (c.peerFrontend = setting)) });
      try {
        const uws = setting === 'uws' && FRONTENDS.includes('uws') && uwsReadsClientCertificates();
        for (const m of plane.members) assert.equal(m.daemon.peerFrontend, uws ? 'uws' : 'node');
        await plane.member(OLD).daemon.publisher.refresh();
        const r = await request(plane.member(OLD).url + NEW_ONLY);
        await r.body.dump();
        assert.equal(r.statusCode, 200);
        assert.equal(r.headers['x-sim-server'], NEW);
      } finally {
        await plane.close();
      }
    });
  }
});
