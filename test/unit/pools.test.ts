// The upstream pools speak HTTP/1.1 to an apiserver that offers h2 (kube-apiserver does, by ALPN):
// undici 8 negotiates h2 by default, and through a real kube-apiserver every response header but
// Date was then lost (the forwarder reads raw header lines, which h2 does not have).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { createCA } from '../../src/pki/throwaway';
import { createPool } from '../../src/upstream/pools';
import { ForwardHandler } from '../../src/upstream/forward';
import type { Exchange } from '../../src/listener/exchange';

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
    const pool = createPool(`https://127.0.0.1:${port}`, { connectTimeoutMs: 2000, tls: { ca: Buffer.from(ca) } });
    const r = await pool.request({ path: '/apis', method: 'GET' });
    await r.body.dump();
    await pool.close();
    assert.equal(versions.at(-1), '1.1');
    assert.equal(r.headers['content-type'], 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    assert.equal(r.headers.etag, '"abc"');
  });

  test('forward(): the response head reaches the client with its content type, ETag and Audit-Id', async () => {
    const pool = createPool(`https://127.0.0.1:${port}`, { connectTimeoutMs: 2000, tls: { ca: Buffer.from(ca) } });
    const head = await new Promise<string[]>((resolve, reject) => {
      let got: string[] = [];
      const ex = {
        method: 'GET',
        path: '/apis',
        query: '',
        body: null,
        clientClosed: false,
        onClientClose: null,
        res: {
          headersSent: false,
          writeHead(_status: number, h: { headers: string[] }) {
            got = h.headers;
          },
          write: () => true,
          end: () => resolve(got),
          destroy: () => reject(new Error('destroyed')),
          onDrain: null,
        },
      } as unknown as Exchange;
      new ForwardHandler(ex, { headers: ['accept', '*/*'], longRunning: false, requestTimeoutMs: 5000 }, { attemptDone: () => undefined, attemptFailed: (e) => reject(e), attemptHeld: () => reject(new Error('nothing is held')) }).dispatch(pool);
    });
    await pool.close();
    assert.equal(versions.at(-1), '1.1');
    const names = head.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    for (const n of ['content-type', 'etag', 'audit-id']) assert.ok(names.includes(n), `${n} in ${names.join(', ')}`);
  });
});
