// A certificate that expires while its connection is open (helper 28). kube-apiserver's x509 and
// requestheader authenticators run Go's Verify on every request, at that request's time, so the
// next request of an open connection (or of a resumed TLS session) after the certificate expired is
// a 401 there. The TLS library checks the validity period once, at the handshake: mvproxy kept
// asserting the user (client listener) and believing the peer's identity headers (peer listener) on
// that connection. Now both are judged per request (api/client-ca.ts ClientCA.check).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { createClusterPKI, PROXY_CLIENT_CN, type ClusterPKI } from '../../src/pki/bundle';
import { capturingLogger, startTestDaemon } from '../support/daemon';
import { startFakeUpstream } from '../support/fake-upstream';
import { FRONTENDS } from '../support/frontends';

const PATH = '/api/v1/namespaces/default/configmaps';
/** How long the short-lived certificates are valid: long enough for the first request on a loaded machine. */
const VALID_MS = 4000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  body: string;
  reused: boolean;
}

function get(agent: https.Agent, port: number, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path: PATH, servername: 'kubernetes.default.svc', agent, headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error('no answer in 5 s')));
    req.end();
  });
}

describe('a certificate that expires while its connection is open', () => {
  let tmp: string;
  let pki: ClusterPKI;
  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'mvproxy-expiry-'));
    pki = await createClusterPKI(join(tmp, 'pki'));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  for (const frontend of FRONTENDS) {
    test(`${frontend} front end: the next request on the same connection is refused (401) on the client and the peer listener, as kube-apiserver verifies per request`, async () => {
      const dir = mkdtempSync(join(tmp, `${frontend}-`));
      const serving = await pki.clusterCA.issue({ commonName: 'expiry', dnsNames: ['kubernetes.default.svc'], usage: 'server' });
      writeFileSync(join(dir, 'serving.crt'), serving.cert);
      writeFileSync(join(dir, 'serving.key'), serving.key);
      const [user, peer] = await Promise.all([
        pki.clusterCA.issue({ commonName: 'short-lived-user', organization: ['devs'], usage: 'client', validForMs: VALID_MS }),
        pki.frontProxyCA.issue({ commonName: PROXY_CLIENT_CN, usage: 'client', validForMs: VALID_MS }),
      ]);
      const seen: string[] = [];
      const local = await startFakeUpstream((req, res) => {
        if (req.url !== PATH) return false;
        seen.push(String(req.headers['x-remote-user'] ?? ''));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}');
        return true;
      });
      const files = { tlsCertFile: join(dir, 'serving.crt'), tlsPrivateKeyFile: join(dir, 'serving.key'), peerTLSCertFile: join(dir, 'serving.crt'), peerTLSPrivateKeyFile: join(dir, 'serving.key'), clientCAFile: pki.clusterCAFile };
      const log = capturingLogger();
      const d = await startTestDaemon({ frontend, peerFrontend: frontend === 'uws' ? 'uws' : 'auto', localAPIServer: local.url, peerCAFile: pki.clusterCAFile, requestheaderClientCAFile: pki.frontProxyCAFile, ...files }, { log }).catch(async (e: unknown) => {
        await local.close();
        throw e;
      });
      // One kept-alive connection each, no session resumption: the second request rides the first's connection.
      const agent = (c: { cert: string; key: string }) => new https.Agent({ keepAlive: true, maxSockets: 1, ca: pki.clusterCA.cert, cert: c.cert, key: c.key, maxCachedSessions: 0 });
      const userAgent = agent(user);
      const peerAgent = agent(peer);
      try {
        assert.equal(d.peerFrontend, frontend, 'the peer listener runs on this front end');
        const first = await get(userAgent, d.clientPort);
        const firstPeer = await get(peerAgent, d.peerPort, { 'x-kubernetes-peer-proxied': 'true' });
        assert.equal(first.status, 200, first.body);
        assert.equal(firstPeer.status, 200, firstPeer.body);
        assert.deepEqual(seen, ['short-lived-user', ''], 'the user asserted while the certificate is valid; the peer request as sent (no identity of its own)');
        // Past notAfter (whole seconds in the certificate), with a second to spare.
        const notAfter = Math.max(Date.parse(new X509Certificate(user.cert).validTo), Date.parse(new X509Certificate(peer.cert).validTo));
        await sleep(Math.max(0, notAfter - Date.now()) + 1100);
        const second = await get(userAgent, d.clientPort);
        const secondPeer = await get(peerAgent, d.peerPort, { 'x-kubernetes-peer-proxied': 'true' });
        assert.ok(second.reused && secondPeer.reused, 'the same connections');
        assert.equal(second.status, 401, second.body);
        assert.match(second.body, /MVP_ERR_CERTIFICATE_USER|certificate has expired/);
        assert.equal(secondPeer.status, 401, secondPeer.body);
        assert.match(secondPeer.body, /MVP_ERR_PEER_UNAUTHORIZED/);
        assert.ok(log.lines.some((l) => l.includes('peer request rejected') && l.includes('the certificate has expired')), 'the log says why');
        assert.equal(seen.length, 2, 'nothing reached the apiserver after the certificates expired');
      } finally {
        userAgent.destroy();
        peerAgent.destroy();
        await d.close();
        await local.close();
      }
    });
  }
});
