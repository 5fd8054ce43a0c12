// TLS renegotiation on the client listener (found by the attack of helper 20, 2026-12-07): on the node
// front end a client holding any certificate of the client CA shook hands with it, renegotiated (TLS
// 1.2) with a self-signed certificate naming system:admin in system:masters, and mvproxy sent that user
// upstream as its identity: node keeps a socket `authorized` after a renegotiation, and the user was
// read from the certificate of the moment. kube-apiserver's audit log named system:admin. Go's server
// never renegotiates; now neither listener does (config/tls-policy.ts NO_RENEGOTIATION), and the user
// is the one the handshake verified (listen-node.ts handshakeUser). uWS refused it already.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import tls from 'node:tls';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FRONTENDS } from '../support/frontends';
import { startFakeUpstream } from '../support/fake-upstream';
import { startTestDaemon } from '../support/daemon';
import { createCA, type PemPair } from '../../src/pki/throwaway';
import type { Daemon } from '../../src/daemon';

const CM = '/api/v1/namespaces/default/configmaps/x';

/** A TLS 1.2 connection with `client`'s certificate; renegotiates, then sends one GET. */
function renegotiateThenGet(port: number, ca: string, client: PemPair): Promise<{ renegotiated: string; answer: string }> {
  return new Promise((resolve) => {
    let renegotiated = 'pending';
    let answer = '';
    const s = tls.connect({ host: '127.0.0.1', port, ca, cert: client.cert, key: client.key, servername: 'localhost', maxVersion: 'TLSv1.2', ALPNProtocols: ['http/1.1'] }, () => {
      const asked = s.renegotiate({ rejectUnauthorized: true }, (err) => {
        renegotiated = err ? `refused: ${err.message}` : 'done';
        if (!s.destroyed) s.write(`GET ${CM} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
      });
      if (!asked) renegotiated = 'not started';
    });
    s.setTimeout(10_000, () => s.destroy());
    s.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    s.on('error', (e) => (renegotiated = renegotiated === 'pending' ? `connection failed: ${e.message}` : renegotiated));
    s.on('close', () => resolve({ renegotiated, answer }));
  });
}

for (const frontend of FRONTENDS) {
  describe(`TLS renegotiation on the client listener (${frontend} front end)`, () => {
    let dir: string;
    let ca: Awaited<ReturnType<typeof createCA>>;
    let up: Awaited<ReturnType<typeof startFakeUpstream>>;
    let d: Daemon;
    /** The identity of every request the apiserver got. */
    const users: (string | string[] | undefined)[] = [];
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'mvproxy-reneg-'));
      ca = await createCA('client-ca');
      const server = await ca.issue({ commonName: 'localhost', usage: 'server', ipAddresses: ['127.0.0.1'], dnsNames: ['localhost'] });
      writeFileSync(join(dir, 'ca.crt'), ca.cert);
      writeFileSync(join(dir, 'tls.crt'), server.cert);
      writeFileSync(join(dir, 'tls.key'), server.key);
      up = await startFakeUpstream((req, res) => {
        if (!req.url?.startsWith(CM)) return false;
        users.push(req.headers['x-remote-user']);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(req.headers));
        return true;
      });
      d = await startTestDaemon({ frontend, localAPIServer: up.url, tlsCertFile: join(dir, 'tls.crt'), tlsPrivateKeyFile: join(dir, 'tls.key'), clientCAFile: join(dir, 'ca.crt'), bindAddress: '127.0.0.1' });
      await d.publisher.refresh();
    });
    after(async () => {
      await d?.close();
      await up?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test("a client's renegotiation is refused, and nothing on that connection reaches the apiserver as anyone else", async () => {
      const alice = await ca.issue({ commonName: 'alice', organization: ['devs'], usage: 'client' });
      const r = await renegotiateThenGet(d.clientPort, ca.cert, alice);
      assert.match(r.renegotiated, /^(refused|connection failed)/, `renegotiation: ${r.renegotiated}`);
      // Whatever the client sent after the refusal went nowhere, or went as alice.
      for (const u of users) assert.equal(u, 'alice');
    });
  });
}
