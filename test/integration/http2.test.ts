// HTTP/2 on the node front end (issue 12): with TLS the client listener offers h2 and http/1.1 by
// ALPN, as kube-apiserver does (client-go negotiates h2 by default). Over h2: local and peer-routed
// requests, a client-certificate user, a watch with its events, a create, client-sent X-Remote-*
// stripped; HTTP/1.1 on the same port still serves and still upgrades; at shutdown the session gets
// a GOAWAY.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { twoVersionPlane, AUTH, OLD, NEW } from '../support/plane';
import type { Plane } from '../../src/demo/topology';

const NEW_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads';
const LOCAL = '/api/v1/namespaces/default/configmaps';

interface H2Reply {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: string;
}

function h2get(session: http2.ClientHttp2Session, path: string, headers: http2.OutgoingHttpHeaders = {}, body?: string): Promise<H2Reply> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':path': path, ':method': body === undefined ? 'GET' : 'POST', authorization: AUTH.authorization, ...headers });
    let status = 0;
    let h: http2.IncomingHttpHeaders = {};
    let text = '';
    req.on('response', (r) => {
      status = Number(r[':status']);
      h = r;
    });
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => resolve({ status, headers: h, body: text }));
    req.on('error', reject);
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

describe('HTTP/2 on the node front end (TLS)', () => {
  let plane: Plane & { tmp: string };
  let cert: { cert: string; key: string };
  before(async () => {
    plane = await twoVersionPlane('node', {
      configure: (c, m) => {
        if (m.name !== OLD) return;
        c.frontend = 'node';
        c.tlsCertFile = c.peerTLSCertFile;
        c.tlsPrivateKeyFile = c.peerTLSPrivateKeyFile;
        c.clientCAFile = c.peerCAFile;
      },
    });
    cert = await plane.pki.clusterCA.issue({ commonName: 'jane', organization: ['devs', 'ops'], usage: 'client' });
  });
  after(async () => {
    await plane?.close();
  });

  const connect = (withCert: boolean) =>
    http2.connect(plane.member(OLD).url, { ca: plane.pki.clusterCA.cert, servername: 'kubernetes.default.svc', ...(withCert ? cert : {}) });

  test('ALPN negotiates h2; local and peer-routed GETs are served on one connection; the certificate user is forwarded on both routes', async () => {
    const s = connect(true);
    try {
      const [local, peer] = await Promise.all([h2get(s, LOCAL, { 'x-remote-user': 'system:admin' }), h2get(s, NEW_ONLY, { 'x-remote-group': 'system:masters' })]);
      assert.equal(s.alpnProtocol, 'h2');
      assert.equal(local.status, 200, local.body);
      assert.equal(local.headers['x-sim-server'], OLD);
      assert.equal(peer.status, 200, peer.body);
      assert.equal(peer.headers['x-sim-server'], NEW);
      for (const r of [local, peer]) {
        const id = JSON.parse(String(r.headers['x-sim-request-identity']));
        assert.equal(id.remoteUser, 'jane', 'the certificate user, not the header the client sent');
        assert.deepEqual(id.remoteGroups, ['devs', 'ops']);
      }
    } finally {
      s.close();
    }
  });

  test('over h2: a create, then a watch that sees it, ended by timeoutSeconds', async () => {
    const s = connect(false);
    try {
      const name = `h2-${process.pid}`;
      const created = await h2get(s, NEW_ONLY, { 'content-type': 'application/json' }, JSON.stringify({ apiVersion: 'scheduling.k8s.io/v1beta1', kind: 'Workload', metadata: { name } }));
      assert.equal(created.status, 201, created.body);
      const w = await h2get(s, `${NEW_ONLY}?watch=true&timeoutSeconds=1`);
      assert.equal(w.status, 200);
      assert.match(w.body, new RegExp(`"name":"${name}"`));
    } finally {
      s.close();
    }
  });

  test('HTTP/1.1 on the same port still serves, and still carries a WebSocket upgrade', async () => {
    const agent = new Agent({ connect: { ca: plane.pki.clusterCA.cert, servername: 'kubernetes.default.svc' } });
    try {
      const r = await request(plane.member(OLD).url + LOCAL, { dispatcher: agent, headers: AUTH });
      await r.body.dump();
      assert.equal(r.statusCode, 200);
    } finally {
      await agent.close();
    }
    await call201Pod(plane);
    const ws = new WebSocket(plane.member(OLD).url.replace(/^https/, 'wss') + '/api/v1/namespaces/default/pods/h2pod/exec?command=echo&command=over-http1&stdout=true', ['v5.channel.k8s.io'], { ca: plane.pki.clusterCA.cert, headers: AUTH, ...({ servername: 'kubernetes.default.svc' } as object) });
    const out = await new Promise<string>((resolve, reject) => {
      let text = '';
      ws.on('message', (m: Buffer) => {
        if (m[0] === 1) text += m.subarray(1).toString();
      });
      ws.on('close', () => resolve(text));
      ws.on('error', reject);
    });
    assert.equal(out, 'over-http1\n');
  });

  test('shutdown: an open h2 session gets a GOAWAY', async () => {
    const s = connect(false);
    const r = await h2get(s, LOCAL);
    assert.equal(r.status, 200);
    const goaway = new Promise<boolean>((resolve) => {
      s.once('goaway', () => resolve(true));
      setTimeout(() => resolve(false), 5000);
    });
    await plane.member(OLD).daemon.shutdown();
    assert.equal(await goaway, true);
    s.destroy();
  });
});

async function call201Pod(plane: Plane): Promise<void> {
  const s = http2.connect(plane.member(OLD).url, { ca: plane.pki.clusterCA.cert, servername: 'kubernetes.default.svc' });
  try {
    const r = await h2get(s, '/api/v1/namespaces/default/pods', { 'content-type': 'application/json' }, JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'h2pod', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'x' }] } }));
    assert.ok(r.status === 201 || r.status === 409, r.body);
  } finally {
    s.close();
  }
}
