// Identity across the hop (issue 5): a client-certificate user is verified by mvproxy's node front
// end and reaches the serving apiserver — local or a peer's — as that user, via front-proxy
// headers; what a client writes into those headers itself is never believed.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { twoVersionPlane, OLD, NEW } from '../support/plane';
import type { Plane } from '../../src/demo/topology';
import { startTestDaemon } from '../support/daemon';
import { ConfigError } from '../../src/daemon';

const NEW_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads';
const LOCAL = '/api/v1/namespaces/default/configmaps';

describe('identity across the hop', () => {
  let plane: Plane & { tmp: string };
  let jane: Agent;
  let anonymous: Agent;
  before(async () => {
    plane = await twoVersionPlane('node', {
      configure: (c, m) => {
        if (m.name !== OLD) return;
        // The old member's client listener: TLS, and client certificates from the cluster CA.
        c.frontend = 'node';
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

  test('--client-ca-file on the uWebSockets.js front end is refused at start, naming the front end that can', async () => {
    await assert.rejects(
      startTestDaemon({ frontend: 'uws', tlsCertFile: plane.member(OLD).daemon.config.tlsCertFile, tlsPrivateKeyFile: plane.member(OLD).daemon.config.tlsPrivateKeyFile, clientCAFile: plane.pki.clusterCAFile }),
      (e: Error) => e instanceof ConfigError && /--frontend=node/.test(e.message),
    );
  });
});
