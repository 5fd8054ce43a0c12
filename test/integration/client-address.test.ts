// The client's address mvproxy writes upstream (X-Forwarded-For: what kube-apiserver's audit log
// records as the request's source) is spelled as Go spells a client it accepts itself, on both front
// ends, for requests and upgrades, on a dual-stack listener too: "127.0.0.1" for a v4 client
// (uWS spelled it "0000:0000:0000:0000:0000:ffff:7f00:0001", node "::ffff:127.0.0.1"), "::1".
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { FRONTENDS } from '../support/frontends';
import { startLenientUpstream, type LenientUpstream } from '../support/lenient-upstream';
import { startTestDaemon } from '../support/daemon';
import { createCA } from '../../src/pki/throwaway';
import type { Daemon } from '../../src/daemon';

/** One request from a client at `host`, answered or not: the upstream records what arrived. */
function send(ca: string, host: string, port: number, path: string, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve) => {
    const req = https.request({ host, port, path, ca, servername: 'localhost', headers: { authorization: 'Bearer t', ...headers }, agent: false }, (res) => {
      res.resume();
      res.on('end', resolve);
      res.on('error', () => resolve());
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      resolve();
    });
    req.on('error', () => resolve());
    req.end();
  });
}

const forwardedFor = (up: LenientUpstream, tag: string) =>
  up.appRequests().filter((r) => r.target.includes(tag)).map((r) => /\r\nx-forwarded-for: ([^\r]*)\r\n/i.exec(r.head)?.[1]);

for (const frontend of FRONTENDS) {
  describe(`the client's address upstream (${frontend} front end, dual-stack listener)`, () => {
    let up: LenientUpstream;
    let d: Daemon;
    let ca: string;
    const dir = mkdtempSync(join(tmpdir(), 'mvproxy-client-address-'));
    before(async () => {
      // A listener off loopback serves TLS only.
      const authority = await createCA('client-address');
      const serving = await authority.issue({ commonName: 'localhost', usage: 'server', ipAddresses: ['127.0.0.1', '::1'], dnsNames: ['localhost'] });
      ca = authority.cert;
      writeFileSync(join(dir, 'tls.crt'), serving.cert);
      writeFileSync(join(dir, 'tls.key'), serving.key);
      up = await startLenientUpstream();
      d = await startTestDaemon({ frontend, localAPIServer: up.url, bindAddress: '::', tlsCertFile: join(dir, 'tls.crt'), tlsPrivateKeyFile: join(dir, 'tls.key') });
      await d.publisher.refresh();
    });
    after(async () => {
      await d?.close();
      await up?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    for (const [client, want, tag] of [['127.0.0.1', '127.0.0.1', 'from-v4'], ['::1', '::1', 'from-v6']] as const) {
      test(`a client at ${client} is forwarded as ${want}, on a request and on an upgrade`, async () => {
        await send(ca, client, d.clientPort, `/api/v1/namespaces/${tag}/configmaps`, {});
        await send(ca, client, d.clientPort, `/api/v1/namespaces/${tag}/pods/p/exec?command=id&stdout=true`, {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
          'sec-websocket-version': '13',
        });
        assert.deepEqual(forwardedFor(up, tag), [want, want]);
      });
    }
  });
}
