// Certificates and keys reloaded when their files change (issue 5; docs/operating.md §3), without a
// restart and without dropping what is in flight:
//   - the proxy client certificate re-issued by the same CA is used for the next peer connection;
//     one from a foreign CA is refused and the last good pair keeps working;
//   - a mismatched certificate/key pair is refused until both files agree;
//   - the peer listener's and the client listener's serving certificates (both front ends) and the
//     local apiserver's CA bundle are swapped too;
//   - --local-apiserver-token-file: mvproxy's own calls carry the token (re-read on change), clients' never.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import http from 'node:http';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClusterPKI, PROXY_CLIENT_CN, type ClusterPKI } from '../../src/pki/bundle';
import { createCA, type PemPair } from '../../src/pki/throwaway';
import { chainsTo, checkKeyPair, parseCertificates } from '../../src/lifecycle/certs';
import { startTestDaemon, capturingLogger } from '../support/daemon';
import { startFakeUpstream } from '../support/fake-upstream';
import { readFixture } from '../support/fixtures';
import { call } from '../support/plane';
import { eventually } from '../support/poll';
import { FRONTENDS } from '../support/frontends';
import type { Daemon } from '../../src/daemon';
import { buildCert, CA_EXTS, ecKey, pem, san, tlv } from '../support/cert-cases/builder';
import { CN, nameDER } from '../support/der-cert';

const NEW_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads';
const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** Writes like kubelet's atomic writer: a temporary file renamed over the target. */
function atomicWrite(file: string, content: string): void {
  writeFileSync(file + '.tmp', content, { mode: 0o600 });
  renameSync(file + '.tmp', file);
}

/** Every wait below: a file change shows in the log within 5 s, checked every 20 ms. */
const POLL = { timeoutMs: 5000, intervalMs: 20 };

const serial = (pem: string) => new X509Certificate(pem).serialNumber;

/**
 * A peer's peer listener stand-in: mutual TLS against the front-proxy CA, v1.37 discovery, and for
 * anything else the serial number of the client certificate that connection presented. Every
 * response closes its connection, so every request is a new TLS handshake.
 */
async function recordingPeer(pki: ClusterPKI): Promise<{ address: string; close(): Promise<void> }> {
  const serving = await pki.clusterCA.issue({ commonName: 'rec', dnsNames: ['kubernetes.default.svc'], usage: 'server' });
  const apis = readFixture('v1.37.0-dev-6732d913/aggregated_v2.json');
  const api = Buffer.from(JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [] }));
  const server = https.createServer({ cert: serving.cert, key: serving.key, ca: pki.frontProxyCA.cert, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const peer = (req.socket as tls.TLSSocket).getPeerCertificate();
    res.setHeader('connection', 'close');
    if (req.url === '/apis' || req.url === '/api') {
      res.writeHead(200, { 'content-type': AGG, etag: '"x"' });
      res.end(req.url === '/api' ? api : apis);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'WorkloadList', apiVersion: 'scheduling.k8s.io/v1beta1', metadata: {}, items: [], clientSerial: peer.serialNumber, clientCN: peer.subject?.CN }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    address: `127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => new Promise((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

describe('certificate reload', () => {
  let tmp: string;
  let pki: ClusterPKI;
  let foreign: Awaited<ReturnType<typeof createCA>>;
  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'mvproxy-certs-'));
    pki = await createClusterPKI(join(tmp, 'pki'));
    foreign = await createCA('foreign-ca');
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  test('the proxy client pair: re-issued by the same CA → used for new peer connections; a foreign one → refused, the last good keeps working', async () => {
    const dir = mkdtempSync(join(tmp, 'a-'));
    const first = await pki.frontProxyCA.issue({ commonName: PROXY_CLIENT_CN, usage: 'client' });
    const serving = await pki.clusterCA.issue({ commonName: 'a', dnsNames: ['kubernetes.default.svc'], usage: 'server' });
    const f = (n: string, c: string) => {
      const p = join(dir, n);
      writeFileSync(p, c, { mode: 0o600 });
      return p;
    };
    const certFile = f('proxy-client.crt', first.cert);
    const keyFile = f('proxy-client.key', first.key);
    const peer = await recordingPeer(pki);
    const local = await startFakeUpstream(() => false);
    const log = capturingLogger();
    const d = await startTestDaemon(
      {
        frontend: 'node',
        localAPIServer: local.url,
        peerCAFile: pki.clusterCAFile,
        requestheaderClientCAFile: pki.frontProxyCAFile,
        proxyClientCertFile: certFile,
        proxyClientKeyFile: keyFile,
        peerTLSCertFile: f('serving.crt', serving.cert),
        peerTLSPrivateKeyFile: f('serving.key', serving.key),
        staticPeers: [{ id: 'rec', address: peer.address }],
        discoveryRefreshIntervalMs: 60_000,
      },
      { log },
    );
    const base = `http://127.0.0.1:${d.clientPort}`;
    const seen = async () => {
      const r = await call(base, NEW_ONLY);
      assert.equal(r.status, 200, r.text);
      return r.json().clientSerial as string;
    };
    try {
      await d.publisher.refresh();
      assert.equal(await seen(), serial(first.cert));

      // 1. Re-issued by the same CA: the next connection presents it, no restart.
      const second = await pki.frontProxyCA.issue({ commonName: PROXY_CLIENT_CN, usage: 'client' });
      atomicWrite(keyFile, second.key);
      atomicWrite(certFile, second.cert);
      await eventually(() => log.lines.some((l) => l.includes('Loaded a new cert/key pair') && l.includes(serial(second.cert))), { ...POLL, what: 'reloaded' });
      assert.equal(await seen(), serial(second.cert));
      const loaded = JSON.parse(log.lines.find((l) => l.includes('Loaded a new cert/key pair'))!);
      assert.equal(loaded.v, 2, 'logged at V(2)');
      assert.equal(loaded.name, 'proxy-client');

      // 2. From a foreign CA (the peers trust only the front-proxy CA): refused; the last good pair keeps working.
      const alien = await foreign.issue({ commonName: PROXY_CLIENT_CN, usage: 'client' });
      atomicWrite(keyFile, alien.key);
      atomicWrite(certFile, alien.cert);
      await eventually(() => log.lines.some((l) => l.includes('keeping the last good pair') && l.includes('does not chain to')), { ...POLL, what: 'refused' });
      for (let i = 0; i < 3; i++) assert.equal(await seen(), serial(second.cert), 'new connections still use the last good pair');

      // 3. A certificate without its key (one file replaced, not yet the other): refused until both agree.
      const third = await pki.frontProxyCA.issue({ commonName: PROXY_CLIENT_CN, usage: 'client' });
      const before = log.lines.length;
      atomicWrite(certFile, third.cert); // the key on disk is still the foreign one
      await eventually(() => log.lines.slice(before).some((l) => l.includes('the private key does not match the certificate')), { ...POLL, what: 'mismatch refused' });
      assert.equal(await seen(), serial(second.cert));
      atomicWrite(keyFile, third.key);
      await eventually(() => log.lines.some((l) => l.includes('Loaded a new cert/key pair') && l.includes(serial(third.cert))), { ...POLL, what: 'pair loaded' });
      assert.equal(await seen(), serial(third.cert));
    } finally {
      await d.close();
      await peer.close();
      await local.close();
    }
  });

  test('the peer listener\'s serving certificate: new handshakes get the new one; a foreign one is refused', async () => {
    const dir = mkdtempSync(join(tmp, 'b-'));
    const issue = (ca: { issue: typeof pki.clusterCA.issue }) => ca.issue({ commonName: 'b', dnsNames: ['kubernetes.default.svc'], usage: 'server' });
    const first = await issue(pki.clusterCA);
    const client = await pki.frontProxyCA.issue({ commonName: PROXY_CLIENT_CN, usage: 'client' });
    const servingCert = join(dir, 'serving.crt');
    const servingKey = join(dir, 'serving.key');
    writeFileSync(servingCert, first.cert);
    writeFileSync(servingKey, first.key);
    const local = await startFakeUpstream(() => false);
    const log = capturingLogger();
    const d = await startTestDaemon({ localAPIServer: local.url, peerCAFile: pki.clusterCAFile, requestheaderClientCAFile: pki.frontProxyCAFile, peerTLSCertFile: servingCert, peerTLSPrivateKeyFile: servingKey }, { log });
    const presented = () =>
      new Promise<string>((resolve, reject) => {
        const s = tls.connect({ host: '127.0.0.1', port: d.peerPort, servername: 'kubernetes.default.svc', ca: [pki.clusterCA.cert, foreign.cert], cert: client.cert, key: client.key }, () => {
          resolve(s.getPeerCertificate().serialNumber);
          s.destroy();
        });
        s.on('error', reject);
      });
    try {
      assert.equal(await presented(), serial(first.cert));
      const second = await issue(pki.clusterCA);
      atomicWrite(servingKey, second.key);
      atomicWrite(servingCert, second.cert);
      await eventually(() => log.lines.some((l) => l.includes('Loaded a new cert/key pair') && l.includes('peer-serving')), { ...POLL, what: 'reloaded' });
      assert.equal(await presented(), serial(second.cert));
      const alien = await issue(foreign);
      atomicWrite(servingKey, alien.key);
      atomicWrite(servingCert, alien.cert);
      await eventually(() => log.lines.some((l) => l.includes('does not chain to')), { ...POLL, what: 'refused' });
      assert.equal(await presented(), serial(second.cert), 'peers (which verify with --peer-ca-file) keep getting a certificate they accept');
    } finally {
      await d.close();
      await local.close();
    }
  });

  for (const frontend of FRONTENDS) {
    test(`--requestheader-client-ca-file (${frontend} front end): a CA rotated in the file lets its peers in once reloaded, and the one taken out no longer, as Go reads the new file`, async () => {
      const dir = mkdtempSync(join(tmp, 'rh-'));
      const caFile = join(dir, 'front-proxy-ca.crt');
      writeFileSync(caFile, pki.frontProxyCA.cert);
      const added = await createCA('added-front-proxy-ca');
      const peerCert = await added.issue({ commonName: PROXY_CLIENT_CN, usage: 'client' });
      const oldPeer = await pki.frontProxyCA.issue({ commonName: PROXY_CLIENT_CN, usage: 'client' });
      const seen: string[] = [];
      const local = await startFakeUpstream((req, res) => {
        if (req.url !== '/api/v1/namespaces/default/configmaps') return false;
        seen.push(String(req.url));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}');
        return true;
      });
      const log = capturingLogger();
      const serving = await pki.clusterCA.issue({ commonName: 'rh', dnsNames: ['kubernetes.default.svc'], usage: 'server' });
      writeFileSync(join(dir, 'serving.crt'), serving.cert);
      writeFileSync(join(dir, 'serving.key'), serving.key);
      const files = { peerTLSCertFile: join(dir, 'serving.crt'), peerTLSPrivateKeyFile: join(dir, 'serving.key'), tlsCertFile: join(dir, 'serving.crt'), tlsPrivateKeyFile: join(dir, 'serving.key'), clientCAFile: pki.clusterCAFile };
      const d = await startTestDaemon({ frontend, peerFrontend: frontend === 'uws' ? 'uws' : 'auto', localAPIServer: local.url, peerCAFile: pki.clusterCAFile, requestheaderClientCAFile: caFile, ...files }, { log }).catch(async (e: unknown) => {
        await local.close();
        throw e;
      });
      assert.equal(d.peerFrontend, frontend, 'the peer listener runs on this front end');
      const ask = (pair = peerCert) =>
        new Promise<string>((resolve) => {
          const req = https.request(
            { host: '127.0.0.1', port: d.peerPort, path: '/api/v1/namespaces/default/configmaps', servername: 'kubernetes.default.svc', ca: pki.clusterCA.cert, cert: pair.cert, key: pair.key, agent: false, headers: { 'x-kubernetes-peer-proxied': 'true' } },
            (res) => {
              res.resume();
              res.on('end', () => resolve(String(res.statusCode)));
            },
          );
          req.on('error', (e: Error & { code?: string }) => resolve(`refused: ${e.code ?? e.message}`));
          req.setTimeout(2000, () => req.destroy(new Error('no answer in 2 s')));
          req.end();
        });
      try {
        assert.match(await ask(), /^refused|^401$/, 'a CA not in the file: no way in');
        assert.equal(await ask(oldPeer), '200');
        // The old CA out, the new one in, and a block Go's reader skips (a PEM header: client-go's
        // ParseCertsPEM passes over it) that OpenSSL's reader fails on: the reload used to refuse
        // the whole file and keep trusting the CA taken out (helper 29).
        const headered = pki.frontProxyCA.cert.replace('-----BEGIN CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----\nComment: skipped by Go\n\n');
        atomicWrite(caFile, added.cert + headered);
        await eventually(() => log.lines.some((l) => l.includes('Loaded a new CA bundle') && l.includes('peer-serving')), { ...POLL, what: 'reloaded' });
        // The TLS library takes the new file at once; mvproxy's own reading of it (api/client-ca.ts)
        // must follow, or the peer is let through the handshake and then refused with a 401.
        await eventually(async () => (await ask()) === '200', { ...POLL, what: 'the added CA\'s peer answered 200' });
        assert.match(await ask(oldPeer), /^refused|^401$/, 'the CA taken out of the file: no way in');
        assert.equal(seen.length, 2, "the old CA's peer once before the rotation, the new one's once after: nothing else reached the apiserver");
        // The added CA taken out again, beside a CA whose URI name Go parses and mvproxy's port does
        // not (https://[::1]/): kube-apiserver loads that file; mvproxy's reload used to refuse it
        // and keep trusting the CA taken out (helper 30). Now it takes no peer under the file.
        const k = ecKey();
        const n = nameDER([CN('uri-ca')]);
        const uriCA = pem(buildCert({ issuer: n, subject: n, spki: k.spki, signer: k.priv, extensions: [...CA_EXTS, san(false, tlv(0x86, Buffer.from('https://[::1]/')))] }));
        const reloads = () => log.lines.filter((l) => l.includes('Loaded a new CA bundle') && l.includes('peer-serving')).length;
        const before = reloads();
        atomicWrite(caFile, pki.frontProxyCA.cert + uriCA);
        await eventually(() => reloads() > before, { ...POLL, what: 'reloaded' });
        await eventually(async () => /^refused|^401$/.test(await ask()), { ...POLL, what: "the CA taken out: its peer refused" });
        assert.equal(seen.length, 2, 'nothing else reached the apiserver');
      } finally {
        await d.close();
        await local.close();
      }
    });
  }

  for (const frontend of FRONTENDS) {
    test(`the client listener's serving certificate (${frontend} front end): new handshakes get the new one, an open connection keeps serving`, async () => {
      const dir = mkdtempSync(join(tmp, `client-${frontend}-`));
      const issue = () => pki.clusterCA.issue({ commonName: 'mvproxy', ipAddresses: ['127.0.0.1'], usage: 'server' });
      const first = await issue();
      const certFile = join(dir, 'tls.crt');
      const keyFile = join(dir, 'tls.key');
      writeFileSync(certFile, first.cert);
      writeFileSync(keyFile, first.key);
      const local = await startFakeUpstream(() => false);
      const log = capturingLogger();
      const d = await startTestDaemon({ frontend, localAPIServer: local.url, tlsCertFile: certFile, tlsPrivateKeyFile: keyFile, peerCAFile: pki.clusterCAFile, requestheaderClientCAFile: pki.frontProxyCAFile }, { log });
      const connect = () =>
        new Promise<tls.TLSSocket>((resolve, reject) => {
          const s = tls.connect({ host: '127.0.0.1', port: d.clientPort, ca: pki.clusterCA.cert, ALPNProtocols: ['http/1.1'] }, () => resolve(s));
          s.on('error', reject);
        });
      const answer = (s: tls.TLSSocket) =>
        new Promise<string>((resolve) => {
          let out = '';
          s.on('data', (b: Buffer) => (out += b.toString('latin1')));
          s.on('close', () => resolve(out));
          s.write('GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        });
      try {
        assert.equal(d.frontend, frontend);
        const open = await connect();
        assert.equal(open.getPeerCertificate().serialNumber, serial(first.cert));
        const second = await issue();
        atomicWrite(keyFile, second.key);
        atomicWrite(certFile, second.cert);
        await eventually(() => log.lines.some((l) => l.includes('Loaded a new cert/key pair') && l.includes('"serving"') && l.includes(serial(second.cert))), { ...POLL, what: 'reloaded' });
        const { value: fresh } = await eventually(async () => {
          const s = await connect();
          if (s.getPeerCertificate().serialNumber === serial(second.cert)) return s;
          s.destroy();
          return undefined;
        }, { ...POLL, what: 'the new certificate served' });
        assert.match(await answer(fresh), /^HTTP\/1\.1 \d{3} /);
        // The connection opened before the swap still answers, with the certificate it started with.
        assert.match(await answer(open), /^HTTP\/1\.1 \d{3} /);
      } finally {
        await d.close();
        await local.close();
      }
    });
  }

  test('the local apiserver\'s CA bundle: a new bundle makes new connections trust the new serving certificate', async () => {
    const dir = mkdtempSync(join(tmp, 'c-'));
    const ca1 = await createCA('local-ca-1');
    const ca2 = await createCA('local-ca-2');
    const s1 = await ca1.issue({ commonName: 'apiserver', ipAddresses: ['127.0.0.1'], usage: 'server' });
    const s2 = await ca2.issue({ commonName: 'apiserver', ipAddresses: ['127.0.0.1'], usage: 'server' });
    const caFile = join(dir, 'ca.crt');
    writeFileSync(caFile, ca1.cert);
    const api = Buffer.from(JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [] }));
    const upstream = https.createServer({ cert: s1.cert, key: s1.key }, (req, res) => {
      res.setHeader('connection', 'close');
      if (req.url === '/api' || req.url === '/apis') {
        res.writeHead(200, { 'content-type': AGG });
        res.end(api);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}');
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const log = capturingLogger();
    const d = await startTestDaemon({ localAPIServer: `https://127.0.0.1:${(upstream.address() as { port: number }).port}`, localAPIServerCAFile: caFile }, { log });
    const base = `http://127.0.0.1:${d.clientPort}`;
    try {
      assert.equal((await call(base, '/api/v1/namespaces/default/configmaps')).status, 200);
      upstream.setSecureContext({ cert: s2.cert, key: s2.key }); // the apiserver's certificate rotated to a new CA
      assert.equal((await call(base, '/api/v1/namespaces/default/configmaps')).status, 503, 'not trusted yet');
      atomicWrite(caFile, ca1.cert + ca2.cert);
      await eventually(() => log.lines.some((l) => l.includes('Loaded a new CA bundle') && l.includes('local-apiserver')), { ...POLL, what: 'reloaded' });
      assert.equal((await call(base, '/api/v1/namespaces/default/configmaps')).status, 200);
      atomicWrite(caFile, 'not a certificate\n');
      await eventually(() => log.lines.some((l) => l.includes('keeping the last good one')), { ...POLL, what: 'refused' });
      assert.equal((await call(base, '/api/v1/namespaces/default/configmaps')).status, 200);
    } finally {
      await d.close();
      upstream.closeAllConnections();
      await new Promise((r) => upstream.close(r));
    }
  });

  test('--local-apiserver-token-file: mvproxy\'s own requests carry it (re-read on change), clients\' requests never do', async () => {
    const dir = mkdtempSync(join(tmp, 'd-'));
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'first-token\n');
    const seen: { url: string; auth: string | undefined; ua: string | undefined }[] = [];
    const local = await startFakeUpstream((req: http.IncomingMessage, res: http.ServerResponse) => {
      seen.push({ url: req.url!, auth: req.headers.authorization, ua: req.headers['user-agent'] });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}');
      return true;
    });
    // fake-upstream answers /api and /apis itself: record the CRD/APIService lists, which go through the route.
    const log = capturingLogger();
    const d: Daemon = await startTestDaemon({ localAPIServer: local.url, localAPIServerTokenFile: tokenFile, peerCAFile: undefined }, { log });
    try {
      await d.publisher.refresh();
      const own = () => seen.filter((s) => s.url.includes('customresourcedefinitions') || s.url.includes('apiservices'));
      await eventually(() => own().length > 0, { ...POLL, what: 'exclusion lists fetched' });
      assert.ok(own().every((s) => s.auth === 'Bearer first-token'), JSON.stringify(own()));
      await call(`http://127.0.0.1:${d.clientPort}`, '/api/v1/namespaces/default/configmaps', { headers: { authorization: 'Bearer client-token' } });
      await call(`http://127.0.0.1:${d.clientPort}`, '/api/v1/namespaces/default/secrets');
      const clients = seen.filter((s) => s.url.startsWith('/api/v1/'));
      assert.deepEqual(clients.map((s) => s.auth), ['Bearer client-token', undefined], 'a client\'s own credentials, or none: never mvproxy\'s token');
      atomicWrite(tokenFile, 'second-token\n');
      await eventually(() => log.lines.some((l) => l.includes('Loaded a new bearer token')), { ...POLL, what: 'token reloaded' });
      seen.length = 0;
      await d.publisher.refresh();
      assert.ok(own().length > 0 && own().every((s) => s.auth === 'Bearer second-token'), JSON.stringify(own()));
    } finally {
      await d.close();
      await local.close();
    }
  });
});

test('pair and chain checks', async () => {
  const ca = await createCA('ca');
  const inter = await createCA('other');
  const a: PemPair = await ca.issue({ commonName: 'a', usage: 'client' });
  const b: PemPair = await ca.issue({ commonName: 'b', usage: 'client' });
  assert.equal(checkKeyPair(Buffer.from(a.cert), Buffer.from(a.key))[0].subject, 'CN=a');
  assert.throws(() => checkKeyPair(Buffer.from(a.cert), Buffer.from(b.key)), /the private key does not match the certificate/);
  assert.throws(() => checkKeyPair(Buffer.from('junk'), Buffer.from(a.key)), /no PEM certificate found/);
  assert.throws(() => checkKeyPair(Buffer.from(a.cert), Buffer.from('junk')), /the private key cannot be read/);
  const roots = parseCertificates(ca.cert, 'ca');
  assert.equal(chainsTo(parseCertificates(a.cert, 'a'), roots), true);
  assert.equal(chainsTo(parseCertificates((await inter.issue({ commonName: 'x', usage: 'client' })).cert, 'x'), roots), false);
  assert.equal(chainsTo(parseCertificates(a.cert, 'a'), parseCertificates(inter.cert + ca.cert, 'bundle')), true, 'any root of a bundle');
});
