// Large client certificates (issue 27, item 3). A 49 KB or 82 KB client certificate used to connect
// to the uWS front end and never be answered, holding the connection until uWS's 12 s idle
// timeout: this uWS build cannot write to a TLS 1.3 connection whose client sent a certificate
// flight over ~32 KiB (src/listener/uws.ts UWS_MAX_CLIENT_CERTIFICATE_BYTES, measured). Now such a
// connection is closed at once (no Status can be written on it) and the daemon logs why; the node
// front end answers them (past 64 KiB node:tls fails the handshake at once, as Go's crypto/tls in
// kube-apiserver would). A certificate under the bound is answered on both, as its user.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { FRONTENDS } from '../support/frontends';
import { capturingLogger } from '../support/daemon';
import { startClientCADaemon, type ClientCADaemon } from '../support/client-ca-daemon';
import { createCA, type PemPair } from '../../src/pki/throwaway';
import { UWS_MAX_CLIENT_CERTIFICATE_BYTES } from '../../src/listener/uws';
import type { Daemon } from '../../src/daemon';

const CM = '/api/v1/namespaces/default/configmaps/x';

/** A client certificate for `user` whose DER is about `bytes` long (padded with DNS names). */
async function clientCert(ca: Awaited<ReturnType<typeof createCA>>, user: string, bytes: number): Promise<PemPair & { der: number }> {
  const names = Math.max(0, Math.round((bytes - 600) / 23));
  const pair = await ca.issue({ commonName: user, organization: ['devs'], usage: 'client', dnsNames: Array.from({ length: names }, (_, i) => `h${String(i).padStart(5, '0')}.example.com`) });
  const der = Buffer.from(pair.cert.replace(/-----[^-]+-----|\s/g, ''), 'base64').length;
  return { ...pair, der };
}

function get(port: number, ca: string, client: PemPair): Promise<{ status: number; user?: string } | { error: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const r = https.request({ host: '127.0.0.1', port, path: CM, ca, cert: client.cert, key: client.key, servername: 'localhost', agent: false }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, user: (JSON.parse(body) as Record<string, string>)['x-remote-user'] }));
    });
    r.setTimeout(15_000, () => r.destroy(new Error('no answer in 15 s')));
    r.on('error', (e) => resolve({ error: e.message, ms: Date.now() - t0 }));
    r.end();
  });
}

for (const frontend of FRONTENDS) {
  describe(`large client certificates (${frontend} front end)`, () => {
    let ca: Awaited<ReturnType<typeof createCA>>;
    let s: ClientCADaemon;
    let d: Daemon;
    const log = capturingLogger();
    before(async () => {
      s = await startClientCADaemon(frontend, CM, { log });
      ({ ca, d } = s);
    });
    after(async () => {
      await s?.close();
    });

    test('a 20 KB certificate is answered as its user', async () => {
      const c = await clientCert(ca, 'alice', 20_000);
      assert.deepEqual(await get(d.clientPort, ca.cert, c), { status: 200, user: 'alice' });
    });

    for (const size of [49_000, 82_000]) {
      test(`a ${size / 1000} KB certificate: answered (node), or its connection closed at once, logged, never left hanging (uWS)`, async () => {
        const c = await clientCert(ca, 'bob', size);
        assert.ok(c.der > UWS_MAX_CLIENT_CERTIFICATE_BYTES);
        const r = await get(d.clientPort, ca.cert, c);
        if (frontend === 'node' && size < 64 * 1024) assert.deepEqual(r, { status: 200, user: 'bob' });
        else if (frontend === 'node') {
          // node:tls refuses a certificate message this large in the handshake (alert 80), as
          // kube-apiserver would: Go's crypto/tls caps a handshake message at 64 KiB (maxHandshake).
          if ('error' in r) assert.ok(r.ms < 5000, `failed after ${r.ms} ms`);
          else assert.deepEqual(r, { status: 200, user: 'bob' });
        } else {
          assert.ok('error' in r, JSON.stringify(r));
          assert.ok(r.ms < 5000, `closed after ${r.ms} ms: left hanging until the idle timeout`);
          assert.ok(log.lines.some((l) => l.includes('client certificate is larger') && l.includes(String(c.der))), 'the daemon logs why');
        }
        // The listener still serves.
        assert.deepEqual(await get(d.clientPort, ca.cert, await clientCert(ca, 'carol', 2000)), { status: 200, user: 'carol' });
      });
    }
  });
}
