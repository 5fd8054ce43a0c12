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
import { FRONTENDS } from '../support/frontends';
import { startClientCADaemon, type ClientCADaemon } from '../support/client-ca-daemon';
import type { PemPair } from '../../src/pki/throwaway';

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
    let s: ClientCADaemon;
    before(async () => {
      s = await startClientCADaemon(frontend, CM);
    });
    after(async () => {
      await s?.close();
    });

    test("a client's renegotiation is refused, and nothing on that connection reaches the apiserver as anyone else", async () => {
      const alice = await s.ca.issue({ commonName: 'alice', organization: ['devs'], usage: 'client' });
      const r = await renegotiateThenGet(s.d.clientPort, s.ca.cert, alice);
      assert.match(r.renegotiated, /^(refused|connection failed)/, `renegotiation: ${r.renegotiated}`);
      // Whatever the client sent after the refusal went nowhere, or went as alice.
      for (const h of s.seen) assert.equal(h['x-remote-user'], 'alice');
    });
  });
}
