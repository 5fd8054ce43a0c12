// The upstream pools speak HTTP/1.1 to an apiserver that offers h2 (kube-apiserver does, by ALPN):
// undici 8 negotiates h2 by default, and through a real kube-apiserver every response header but
// Date was then lost (the forwarder reads raw header lines, which h2 does not have).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createCA } from '../../src/pki/throwaway';
import { createPool, localRelay, PeerPools, PEER_SERVER_NAME } from '../../src/upstream/pools';
import { UpstreamAttempt, type AttemptReport } from '../../src/upstream/h1/attempt';
import { NO_BODY, requestHead } from '../../src/upstream/request-head';
import type { AttemptHead } from '../../src/upstream/h1/attempt';
import { IdentityHeaderRules } from '../../src/upstream/headers';

describe('upstream pools against a server that offers h2 and http/1.1 (as kube-apiserver)', () => {
  let server: http2.Http2SecureServer;
  let port = 0;
  let ca = '';
  const versions: string[] = [];
  before(async () => {
    const authority = await createCA('test-ca');
    const leaf = await authority.issue({ commonName: 'kube-apiserver', ipAddresses: ['127.0.0.1'], usage: 'server' });
    ca = authority.cert;
    server = http2.createSecureServer({ cert: leaf.cert, key: leaf.key, allowHTTP1: true }, (req, res) => {
      versions.push(req.httpVersion);
      res.setHeader('content-type', 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
      res.setHeader('etag', '"abc"');
      res.setHeader('audit-id', 'a1');
      res.end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  after(() => server.close());

  test('request(): HTTP/1.1, with every header', async () => {
    const pool = createPool(new URL(`https://127.0.0.1:${port}`), { connectTimeoutMs: 2000, tls: { ca: Buffer.from(ca) } });
    const r = await pool.request({ path: '/apis', method: 'GET' });
    await r.body.dump();
    await pool.close();
    assert.equal(versions.at(-1), '1.1');
    assert.equal(r.headers['content-type'], 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    assert.equal(r.headers.etag, '"abc"');
  });

  test('the relay\'s own client: HTTP/1.1 by ALPN, the head reaches the client with its content type, ETag and Audit-Id', async () => {
    const pool = localRelay(new URL(`https://127.0.0.1:${port}`), 2000, { ca: Buffer.from(ca) });
    const got = await new Promise<{ head: AttemptHead; body: string }>((resolve, reject) => {
      let head: AttemptHead | undefined;
      let body = '';
      const report: AttemptReport = {
        upstreamHead: (h) => void (head = h),
        upstreamBody: (c) => ((body += c.toString()), true),
        upstreamEnd: () => resolve({ head: head!, body }),
        upstreamFailed: (e) => reject(e),
      };
      new UpstreamAttempt(report, pool, { head: requestHead('GET', '/apis', [], { host: pool.name, remoteAddress: '127.0.0.1', rules: new IdentityHeaderRules(), trustIdentityHeaders: false, identity: undefined, peerHop: false, bodyLength: NO_BODY }), body: null, chunked: false, noBody: false, fromAPIServer: true, replayable: true }).start();
    });
    pool.destroy();
    assert.equal(versions.at(-1), '1.1');
    assert.equal(got.head.status, 200);
    assert.equal(got.head.contentType, 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    assert.equal(got.head.get('etag'), '"abc"');
    assert.equal(got.head.get('audit-id'), 'a1');
    assert.equal(got.body, '{}');
  });

  test("the relay's client refuses a peer certificate whose name is only in its CN, as Go does: the request is not sent", async () => {
    const authority = await createCA('peer-ca');
    const leaf = await authority.issue({ commonName: PEER_SERVER_NAME, usage: 'server' }); // no SAN
    let requests = 0;
    const peer = https.createServer({ cert: leaf.cert, key: leaf.key }, (req, res) => void (requests++, res.end('{}')));
    await new Promise<void>((r) => peer.listen(0, '127.0.0.1', () => r()));
    const pools = new PeerPools({ connectTimeoutMs: 2000, tls: { ca: Buffer.from(authority.cert), servername: PEER_SERVER_NAME } });
    const address = `127.0.0.1:${(peer.address() as AddressInfo).port}`;
    try {
      const failed = await new Promise<{ err: Error; notSent: boolean }>((resolve, reject) => {
        const report: AttemptReport = { upstreamHead: () => reject(new Error('answered')), upstreamBody: () => true, upstreamEnd: () => reject(new Error('answered')), upstreamFailed: (err, notSent) => resolve({ err, notSent }) };
        const pool = pools.relay(address);
        new UpstreamAttempt(report, pool, { head: requestHead('GET', '/apis', [], { host: pool.name, remoteAddress: '127.0.0.1', rules: new IdentityHeaderRules(), trustIdentityHeaders: false, identity: undefined, peerHop: true, bodyLength: NO_BODY }), body: null, chunked: false, noBody: false, fromAPIServer: false, replayable: true }).start();
      });
      assert.match(failed.err.message, /no DNS subject alternative name/);
      assert.equal(failed.notSent, true);
      assert.equal(requests, 0);
    } finally {
      await pools.close();
      peer.close();
    }
  });
});
