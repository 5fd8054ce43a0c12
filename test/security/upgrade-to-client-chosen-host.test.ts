// An upgrade that leaves for a host the client picks (issue 27, item 1), named after the attack. A
// client with no credentials sends `GET //HOST:PORT/api/v1/.../exec` with `Upgrade: websocket`. The
// uWS front end used to resolve that target against the local apiserver's URL (`new URL(target,
// origin)`), which reads `//HOST:PORT` as an authority: mvproxy dialled HOST:PORT, sending it the
// client's Authorization and, for certificate users, the front-proxy identity. Here HOST:PORT is a
// trap that records every connection. The rule (src/listener/framing.ts isOriginForm): the upstream
// is always the configured origin; the target goes there verbatim or is refused with 400.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { FRONTENDS } from '../support/frontends';
import { startLenientUpstream, sendRaw, type LenientUpstream } from '../support/lenient-upstream';
import { startTestDaemon } from '../support/daemon';
import type { Daemon } from '../../src/daemon';

const EXEC = '/api/v1/namespaces/default/pods/x/exec?command=id&stdout=true';
const wsUpgrade = (target: string) =>
  `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret-token\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n`;
const spdyUpgrade = (target: string) => `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret-token\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n`;

for (const frontend of FRONTENDS) {
  describe(`upgrade to a client-chosen host (${frontend} front end)`, () => {
    let up: LenientUpstream;
    let d: Daemon;
    let trap: net.Server;
    let trapPort = 0;
    const trapped: string[] = [];

    before(async () => {
      trap = net.createServer((s) => {
        s.on('data', (b) => trapped.push(b.toString('latin1')));
        s.on('error', () => undefined);
      });
      await new Promise<void>((r) => trap.listen(0, '127.0.0.1', r));
      trapPort = (trap.address() as net.AddressInfo).port;
      // The apiserver refuses every upgrade (a 403 Status): what matters is where mvproxy dials.
      up = await startLenientUpstream({ answer: (r) => (r.target.includes('exec') ? { status: 403, body: '{"kind":"Status","apiVersion":"v1","status":"Failure","code":403}' } : { status: 200, body: '{}' }) });
      d = await startTestDaemon({ frontend, localAPIServer: up.url, requestTimeoutMs: 3000 });
      await d.publisher.refresh();
    });
    after(async () => {
      await d?.close();
      await up?.close();
      await new Promise((r) => trap.close(r));
    });

    const cases = [
      { name: 'scheme-relative //HOST:PORT/ target, WebSocket upgrade', bytes: () => wsUpgrade(`//127.0.0.1:${trapPort}${EXEC}`) },
      { name: 'scheme-relative //HOST:PORT/ target, SPDY upgrade', bytes: () => spdyUpgrade(`//127.0.0.1:${trapPort}${EXEC}`) },
      { name: 'absolute-form http://HOST:PORT/ target, WebSocket upgrade', bytes: () => wsUpgrade(`http://127.0.0.1:${trapPort}${EXEC}`) },
      { name: 'absolute-form ws://HOST:PORT/ target, WebSocket upgrade', bytes: () => wsUpgrade(`ws://127.0.0.1:${trapPort}${EXEC}`) },
      { name: 'dot segments that climb to //HOST:PORT, WebSocket upgrade', bytes: () => wsUpgrade(`/..//127.0.0.1:${trapPort}${EXEC}`) },
      { name: 'backslashes (a URL parser reads them as slashes), WebSocket upgrade', bytes: () => wsUpgrade(`/\\\\127.0.0.1:${trapPort}${EXEC}`) },
      { name: 'scheme-relative target, plain GET', bytes: () => `GET //127.0.0.1:${trapPort}/api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret-token\r\nConnection: close\r\n\r\n` },
    ];
    for (const c of cases) {
      test(`${c.name}: nothing reaches HOST:PORT; the target goes verbatim to the local apiserver or is refused`, async () => {
        trapped.length = 0;
        up.reset();
        const bytes = c.bytes();
        const target = bytes.split(' ')[1]!;
        const r = await sendRaw(d.clientPort, bytes, { waitMs: 1500, endOnResponse: true });
        assert.deepEqual(trapped, [], `mvproxy dialled the client-chosen host:\n${trapped.join('\n')}`);
        const app = up.appRequests();
        for (const a of app) assert.equal(a.target, target, 'forwarded to the configured origin, target as sent');
        if (app.length === 0) assert.ok([400, 505].includes(r.status) || (r.status === 0 && r.closed), `refused: ${JSON.stringify(r.out.slice(0, 200))}`);
        if (r.status === 400) assert.match(r.out, /MVP_ERR_BAD_REQUEST_TARGET|MVP_ERR_UPGRADE/);
      });
    }
  });
}
