// --tls-min-version and --tls-cipher-suites (issue 15 §3), kube-apiserver's names: the client
// listener on both front ends and mvproxy's own connections to the local apiserver. Each refusal is
// paired with the same client accepted under a policy that allows it, so no refusal can come from
// the test client itself. (Our certificates are EC: the suites in play are ECDHE-ECDSA ones.)
import { describe, test, before } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import tls from 'node:tls';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request, Agent } from 'undici';
import { FRONTENDS } from '../support/frontends';
import { ROOT, startChildDaemon } from '../support/child-daemon';
import { startFakeUpstream } from '../support/fake-upstream';
import { createCA } from '../../src/pki/throwaway';
import { spawnSync } from 'node:child_process';

const dir = mkdtempSync(join(tmpdir(), 'mvproxy-tls-policy-'));
let cert = '';
let key = '';
let ca = '';

/** A TLS handshake with the given client limits: 'ok' with the negotiated version and suite, or the error code. */
function handshake(port: number, o: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost', ...o }, () => {
      const r = `ok ${s.getProtocol()} ${s.getCipher().name}`;
      s.destroy();
      resolve(r);
    });
    s.once('error', (e: Error & { code?: string }) => resolve(`refused ${e.code ?? e.message}`));
  });
}

// Go's TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: a Go "insecure" suite, not in the defaults.
const NOT_DEFAULT = { maxVersion: 'TLSv1.2' as const, ciphers: 'ECDHE-ECDSA-AES128-SHA256' };
const DEFAULT_ONE = { maxVersion: 'TLSv1.2' as const, ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' };

describe('TLS policy flags', () => {
  before(async () => {
    const authority = await createCA('tls-policy-ca');
    const leaf = await authority.issue({ commonName: 'localhost', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], usage: 'server' });
    ca = authority.cert;
    cert = join(dir, 'tls.crt');
    key = join(dir, 'tls.key');
    writeFileSync(cert, leaf.cert);
    writeFileSync(key, leaf.key);
  });

  for (const frontend of FRONTENDS) {
    test(`client listener (${frontend} front end): Go's defaults without the flag, the listed suites with it`, async () => {
      const upstream = await startFakeUpstream(() => false);
      const base = [`--frontend=${frontend}`, '--secure-port=0', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${upstream.url}`, `--tls-cert-file=${cert}`, `--tls-private-key-file=${key}`];
      const d1 = await startChildDaemon(base);
      const d2 = await startChildDaemon([...base, '--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256']);
      try {
        assert.match(await handshake(d1.clientPort, DEFAULT_ONE), /^ok TLSv1\.2 ECDHE-ECDSA-AES128-GCM-SHA256/);
        assert.match(await handshake(d1.clientPort, NOT_DEFAULT), /^refused/, 'a suite outside Go\'s defaults is refused by default');
        assert.match(await handshake(d1.clientPort, { minVersion: 'TLSv1.3' }), /^ok TLSv1\.3/);
        assert.match(await handshake(d2.clientPort, NOT_DEFAULT), /^ok TLSv1\.2 ECDHE-ECDSA-AES128-SHA256/, 'listed: accepted');
        assert.match(await handshake(d2.clientPort, DEFAULT_ONE), /^refused/, 'not listed: refused');
      } finally {
        await d1.stop('SIGKILL');
        await d2.stop('SIGKILL');
        await upstream.close();
      }
    });
  }

  test('--tls-min-version=VersionTLS13: TLS 1.2 clients refused (node front end); uWS cannot apply it: --frontend=uws exits 2, auto serves with node', async () => {
    const upstream = await startFakeUpstream(() => false);
    const d = await startChildDaemon(['--frontend=auto', '--secure-port=0', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${upstream.url}`, `--tls-cert-file=${cert}`, `--tls-private-key-file=${key}`, '--tls-min-version=VersionTLS13']);
    try {
      assert.match(await handshake(d.clientPort, DEFAULT_ONE), /^refused/);
      assert.match(await handshake(d.clientPort, { minVersion: 'TLSv1.3' }), /^ok TLSv1\.3/);
      assert.match(d.stderr(), /"frontend":"node"/);
    } finally {
      await d.stop('SIGKILL');
      await upstream.close();
    }
    if (FRONTENDS.includes('uws')) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), '--frontend=uws', '--secure-port=0', '--local-apiserver=http://127.0.0.1:1', `--tls-cert-file=${cert}`, `--tls-private-key-file=${key}`, '--tls-min-version=VersionTLS13'], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /--tls-min-version/);
    }
  });

  test('unknown names exit 2 naming the flag', () => {
    for (const [flag, name] of [['--tls-cipher-suites=TLS_RSA_WITH_NOPE', 'tls-cipher-suites'], ['--tls-min-version=VersionTLS14', 'tls-min-version']] as const) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), '--secure-port=0', '--local-apiserver=http://127.0.0.1:1', flag], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`--${name}`));
    }
  });

  test('connections to the local apiserver follow the policy too: an apiserver offering only a non-default suite is unreachable by default, reachable when it is listed', async () => {
    const server = https.createServer({ cert: readFileSync(cert), key: readFileSync(key), maxVersion: 'TLSv1.2', ciphers: NOT_DEFAULT.ciphers }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"kind":"ConfigMap"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const caFile = join(dir, 'ca.crt');
    writeFileSync(caFile, ca);
    const url = `https://localhost:${(server.address() as { port: number }).port}`;
    const agent = new Agent();
    try {
      for (const [extra, want] of [[[], 503], [['--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256'], 200]] as const) {
        const d = await startChildDaemon(['--frontend=node', '--secure-port=0', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${url}`, `--local-apiserver-ca-file=${caFile}`, ...extra]);
        try {
          const r = await request(`http://127.0.0.1:${d.clientPort}/api/v1/namespaces/default/configmaps/x`, { dispatcher: agent });
          await r.body.dump();
          assert.equal(r.statusCode, want, `with ${extra.join(' ') || 'the defaults'}`);
        } finally {
          await d.stop('SIGKILL');
        }
      }
    } finally {
      await agent.close();
      server.close();
    }
  });
});
