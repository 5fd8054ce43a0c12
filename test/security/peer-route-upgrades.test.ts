// Upgrades through the peer route (issue 38 item 5), named after the attack. With --local-failover a
// new exec/attach/port-forward goes, while the local apiserver is down, to a peer's peer listener,
// which believes the X-Remote-* identity this hop sends (mvproxy presents its front-proxy client
// certificate there): whatever the client manages to get onto that hop is asserted with mvproxy's
// authority. The peer here is a hostile recording fake (support/hostile-server.ts: mutual TLS, a
// serving certificate of the cluster CA, v1.37 discovery), so every byte of the hop is seen; the
// client listener is TLS and takes client certificates of the cluster CA. Checked on both front
// ends (the uWS front end bridges WebSocket only and refuses SPDY before anything is sent):
//
// - control: a WebSocket (and, on node, SPDY) exec reaches the peer as one upgrade request,
//   marked peer-proxied, the front-proxy certificate presented, and the peer's 101 reaches the client;
// - identity: what the peer sees is exactly the certificate's user (user, groups, credential ID),
//   or no X-Remote-* at all, whatever X-Remote-* the client wrote (any case, repeated, named in
//   Connection); Authorization and Impersonate-* pass as sent;
// - a request pipelined behind an upgrade the peer refuses (403 kept alive; or a refusal with
//   ambiguous framing, a 1xx flood, a second response behind it): never reaches the peer, the
//   client gets one answer (or none) and its connection closes, never a 101;
// - targets with smuggling characters: refused before anything is sent, or sent to the configured
//   peer as the client's exact bytes; never to a host the target names (a decoy listens there);
// - the whole chain with a real peer mvproxy and its apiserver: what that apiserver is handed.
//
// The SPDY cases found a bug (issue 38), now fixed: upgrade.ts sent the upgrade with node:http,
// which framed the absent body of a POST (SPDY exec/attach/port-forward, kubectl <= 1.29) as chunked
// (`Transfer-Encoding: chunked`, then `0\r\n\r\n`): bytes the client never sent, and an upgrade
// with a body, which the peer listener refuses (400 MVP_ERR_UPGRADE_REFUSED), so no SPDY upgrade
// went through the peer route at all. It now says `Content-Length: 0`.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { FRONTENDS } from '../support/frontends';
import { eventually } from '../support/poll';
import { twoVersionPlane, OLD, NEW } from '../support/plane';
import type { Plane } from '../../src/demo/topology';
import { fields, jsonAnswer, startBesideHostilePeer, startHostileServer, webSocketAccept, field, type AfterAnswer, type BesideHostilePeer, type HostileConn, type HostileRequest, type HostileServer } from '../support/hostile-server';

const EXEC = '/api/v1/namespaces/default/pods/shell/exec?command=id&stdout=true';

const wsUpgrade = (target: string, extra = '') =>
  `GET ${target} HTTP/1.1\r\nHost: kubernetes\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n${extra}\r\n`;
const spdyUpgrade = (target: string, extra = '') =>
  `POST ${target} HTTP/1.1\r\nHost: kubernetes\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n${extra}\r\n`;
const SMUGGLED = 'GET /api/v1/namespaces/kube-system/secrets HTTP/1.1\r\nHost: kubernetes\r\nX-Remote-User: system:admin\r\nX-Remote-Group: system:masters\r\n\r\n';
/** Client-written identity headers in the spellings a reader might fold together. */
const SPOOFED = 'X-Remote-User: system:admin\r\nx-remote-user: root\r\nX-REMOTE-GROUP: system:masters\r\nX-Remote-Extra-Scopes: all\r\nX-Remote-Uid: 0\r\nImpersonate-User: jane-impersonated\r\nAuthorization: Bearer client-token\r\n';

/** The peer's honest switch: a valid WebSocket 101 (v5 chosen), or SPDY's. */
function switchProtocols(r: HostileRequest, c: HostileConn): AfterAnswer {
  if (/websocket/i.test(field(r.head, 'upgrade') ?? '')) {
    c.socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${webSocketAccept(field(r.head, 'sec-websocket-key') ?? '')}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n`);
  } else c.socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n');
  return 'tunnel';
}
const STATUS_403 = '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Forbidden","code":403}';

interface Reply {
  out: string;
  closed: boolean;
}

/** Raw bytes over TLS to the client listener, in parts `gapMs` apart; read until the server closes or `waitMs` after the last part. */
function tlsRaw(port: number, parts: string[], o: { cert?: { cert: string; key: string }; gapMs?: number; waitMs: number }): Promise<Reply> {
  return new Promise((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'], ...(o.cert ?? {}) });
    let out = '';
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ out, closed });
    };
    s.on('data', (d: Buffer) => (out += d.toString('latin1')));
    s.on('error', () => finish(true));
    s.on('close', () => finish(true));
    s.once('secureConnect', () => void (async () => {
      for (let i = 0; i < parts.length; i++) {
        if (s.destroyed) return;
        s.write(Buffer.from(parts[i]!, 'latin1'));
        if (i < parts.length - 1) await new Promise((r) => setTimeout(r, o.gapMs ?? 200));
      }
      timer = setTimeout(() => finish(false), o.waitMs);
    })());
  });
}

const statuses = (out: string) => [...out.matchAll(/(?:^|\r\n\r\n|\n)HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));

for (const frontend of FRONTENDS) {
  describe(`upgrades through the peer route (${frontend} front end, --local-failover, the local apiserver down)`, () => {
    let b: BesideHostilePeer;
    let decoy: HostileServer;
    let answer: (r: HostileRequest, c: HostileConn) => AfterAnswer = switchProtocols;
    let jane: { cert: string; key: string };
    let janeCredential: string;
    let seq = 0;

    before(async () => {
      b = await startBesideHostilePeer({ frontend, clientTLS: true, answer: (r, c) => (r.upgrade ? answer(r, c) : false) });
      decoy = await startHostileServer({ answer: (_r, c) => void c.socket.write(jsonAnswer(200, '{"kind":"Decoy"}')) });
      jane = await b.pki.clusterCA.issue({ commonName: 'jane', organization: ['devs', 'ops'], usage: 'client' });
      janeCredential = `X509SHA256=${createHashHex(jane.cert)}`;
      await b.local.close();
      const metrics = `http://127.0.0.1:${b.daemon.metricsPort}/metrics`;
      await eventually(async () => /^mvproxy_local_apiserver_state\{state="down"\} 1$/m.test(await (await fetch(metrics)).text()), { what: 'the local apiserver seen down', timeoutMs: 5000, intervalMs: 100 });
    });
    after(async () => {
      await b?.close();
      await decoy?.close();
    });

    /** A target no other case uses (its query names the case), so the peer's record of it is this case's. */
    const fresh = (target = EXEC) => `${target}${target.includes('?') ? '&' : '?'}case=${++seq}`;
    /** The client requests the peer got for exactly this target. */
    const upgradesAt = (target: string) => b.peer.clientRequests().filter((q) => q.target === target);
    /** Every X-Remote-* line of a head, as "name: value" with the name lowercased, sorted. */
    const remoteLines = (head: string) =>
      head
        .split('\r\n')
        .slice(1)
        .filter((l) => /^x-remote-/i.test(l))
        .map((l) => `${l.slice(0, l.indexOf(':')).toLowerCase()}: ${l.slice(l.indexOf(':') + 1).trim()}`)
        .sort();
    const JANE = () => [`x-remote-extra-authentication.kubernetes.io%2fcredential-id: ${janeCredential}`, 'x-remote-group: devs', 'x-remote-group: ops', 'x-remote-user: jane'];

    const shapes = frontend === 'node' ? ([['WebSocket', wsUpgrade], ['SPDY', spdyUpgrade]] as const) : ([['WebSocket', wsUpgrade]] as const);

    for (const [kind, upgrade] of shapes) {
      test(`control: a ${kind} exec of a certificate user goes to the peer as one upgrade request, peer-proxied, with the front-proxy certificate; the peer's 101 reaches the client`, async () => {
        answer = switchProtocols;
        const target = fresh();
        const r = await tlsRaw(b.daemon.clientPort, [upgrade(target)], { cert: jane, waitMs: 600 });
        assert.match(r.out, /^HTTP\/1\.1 101 /, r.out);
        const [q, ...more] = upgradesAt(target);
        assert.ok(q, 'the peer got the upgrade');
        assert.equal(more.length, 0);
        assert.equal(q.clientCN, 'front-proxy-client', 'the hop presents the front-proxy client certificate');
        assert.deepEqual(fields(q.head, 'x-kubernetes-peer-proxied'), ['true']);
        assert.deepEqual(remoteLines(q.head), JANE());
      });

      for (const who of ['a certificate user', 'a client without a certificate'] as const) {
        test(`identity: ${kind} upgrade from ${who} with X-Remote-* of its own (any case, repeated, named in Connection): the peer sees exactly the certificate's user, or none; Authorization and Impersonate-User as sent`, async (t) => {
          answer = switchProtocols;
          for (const extra of [SPOOFED, `${SPOOFED}Connection: X-Remote-User\r\n`, 'X-Remote-User: system:admin\r\nX-Remote-User: system:admin\r\n', 'X-Remote-Group: system:masters\r\n']) {
            const target = fresh();
            const r = await tlsRaw(b.daemon.clientPort, [upgrade(target, extra)], { cert: who === 'a certificate user' ? jane : undefined, waitMs: 500 });
            const got = upgradesAt(target);
            t.diagnostic(`${JSON.stringify(extra.slice(-40))}: ${JSON.stringify(r.out.split('\r\n')[0])}, ${got.length} sent`);
            // A second Connection field may be refused at the front end; nothing is sent then.
            if (got.length === 0) {
              assert.match(r.out, /^HTTP\/1\.1 4\d\d /, `${JSON.stringify(extra)}: neither sent nor refused: ${r.out.slice(0, 200)}`);
              continue;
            }
            assert.equal(got.length, 1);
            const head = got[0]!.head;
            assert.deepEqual(remoteLines(head), who === 'a certificate user' ? JANE() : [], `${JSON.stringify(extra)}:\n${head}`);
            assert.doesNotMatch(b.peer.raw[got[0]!.conn] ?? '', /system:admin|system:masters|x-remote-user: root/i);
            if (extra === SPOOFED) {
              assert.deepEqual(fields(head, 'authorization'), ['Bearer client-token']);
              assert.deepEqual(fields(head, 'impersonate-user'), ['jane-impersonated']);
            }
          }
        });
      }

      for (const [refusal, write] of [
        ['403 kept alive', (c: HostileConn) => c.socket.write(jsonAnswer(403, STATUS_403))],
        ['403 with Content-Length and Transfer-Encoding', (c: HostileConn) => c.socket.write(`HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n${STATUS_403.length.toString(16)}\r\n${STATUS_403}\r\n0\r\n\r\n`)],
        ['403 with two Content-Lengths', (c: HostileConn) => c.socket.write(`HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: ${STATUS_403.length}\r\nContent-Length: 1\r\n\r\n${STATUS_403}`)],
        ['300 heads of 100 and 103, then 403', (c: HostileConn) => c.socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n'.repeat(150) + jsonAnswer(403, STATUS_403))],
        ['403, and a second response (a 101) behind it', (c: HostileConn) => c.socket.write(jsonAnswer(403, STATUS_403) + 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\nSTRAY-TUNNEL')],
      ] as const) {
        for (const timing of ['pipelined', 'delayed'] as const) {
          test(`a request ${timing} behind a ${kind} upgrade the peer refuses (${refusal}), with X-Remote-User: system:admin: never reaches the peer; one answer at most, never a 101; the client connection closes`, async (t) => {
            answer = (_r, c) => {
              write(c);
            };
            const target = fresh();
            const parts = timing === 'pipelined' ? [upgrade(target) + SMUGGLED] : [upgrade(target), SMUGGLED];
            const r = await tlsRaw(b.daemon.clientPort, parts, { gapMs: 300, waitMs: 1500 });
            t.diagnostic(`client got: ${JSON.stringify(r.out.split('\r\n')[0])}${/MVP_ERR_\w+/.exec(r.out)?.[0] ?? ''}, closed ${r.closed}; upgrade requests at the peer: ${upgradesAt(target).length}`);
            const all = b.peer.raw.filter(Boolean).join('\n');
            assert.doesNotMatch(all, /kube-system\/secrets|system:admin|system:masters/, `smuggled bytes reached the peer:\n${all.slice(-600)}`);
            // The upgrade itself went to the peer (uWS aborts a connection with bytes behind a pending upgrade before dialling).
            if (frontend === 'node' || timing === 'delayed') assert.equal(upgradesAt(target).length, 1, 'the upgrade request, and it alone, went to the peer');
            else assert.ok(upgradesAt(target).length <= 1, 'at most the upgrade request itself');
            assert.equal(b.peer.clientRequests().filter((q) => q.target.includes('kube-system')).length, 0);
            assert.doesNotMatch(r.out, /^HTTP\/1\.1 101|\r\n\r\nHTTP\/1\.1 101/, `a 101 reached the client:\n${r.out}`);
            assert.doesNotMatch(r.out, /STRAY-TUNNEL/);
            assert.ok(statuses(r.out).length <= 1, `one answer at most:\n${r.out}`);
            for (const s of statuses(r.out)) assert.ok(s >= 400, `refused: ${r.out.slice(0, 300)}`);
            assert.ok(r.closed, `the client connection is closed:\n${r.out.slice(0, 300)}`);
          });
        }
      }

      test(`a ${kind} upgrade the peer never answers (1xx heads without end, then silence): a Status within --request-timeout, the peer connection closed`, async () => {
        let conn = -1;
        answer = (_r, c) => {
          conn = c.id;
          let n = 0;
          const t = setInterval(() => {
            if (c.socket.destroyed || ++n > 200) return clearInterval(t);
            c.socket.write('HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n');
          }, 5);
        };
        const t0 = performance.now();
        const r = await tlsRaw(b.daemon.clientPort, [upgrade(fresh())], { waitMs: 6000 });
        assert.ok(performance.now() - t0 < 5500, 'bounded by --request-timeout (3 s)');
        assert.match(r.out, /^HTTP\/1\.1 (502|503|504) /, r.out.slice(0, 300));
        assert.match(r.out, /"kind":"Status"/);
        assert.ok(r.closed);
        await eventually(() => b.peer.closed.has(conn), { what: 'the peer connection closed', timeoutMs: 2000, intervalMs: 20 });
      });
    }

    if (frontend === 'node') {
      test('a SPDY upgrade goes upstream without a body mvproxy made up: the POST upgrade reaches the peer with the client\'s framing (no body), so the peer listener does not refuse it', async (t) => {
        answer = switchProtocols;
        for (const framing of ['Content-Length: 0\r\n', '']) {
          const target = fresh();
          const r = await tlsRaw(b.daemon.clientPort, [spdyUpgrade(target).replace('Content-Length: 0\r\n', framing)], { cert: jane, waitMs: 500 });
          assert.match(r.out, /^HTTP\/1\.1 101 /, r.out);
          const [q] = upgradesAt(target);
          assert.ok(q);
          t.diagnostic(`client framing ${JSON.stringify(framing)}: the peer got ${JSON.stringify(b.peer.raw[q.conn]!.slice(b.peer.raw[q.conn]!.indexOf('x-kubernetes-peer-proxied')))}`);
          // An upgrade request carries no body (upgrade.ts upgradeRefusal): the peer listener refuses one with Transfer-Encoding.
          assert.equal(field(q.head, 'transfer-encoding'), undefined, `the hop added Transfer-Encoding: ${JSON.stringify(q.head)}`);
          assert.ok(['0', undefined].includes(field(q.head, 'content-length')));
        }
      });
    }

    if (frontend === 'uws') {
      test('SPDY on the uWS front end: refused with a Status before anything is sent; nothing pipelined behind it reaches the peer', async () => {
        answer = switchProtocols;
        const target = fresh();
        const r = await tlsRaw(b.daemon.clientPort, [spdyUpgrade(target, SPOOFED) + SMUGGLED], { cert: jane, waitMs: 800 });
        assert.ok(r.out === '' || /^HTTP\/1\.1 400 /.test(r.out), r.out.slice(0, 300));
        assert.deepEqual(upgradesAt(target), []);
        assert.equal(b.peer.clientRequests().filter((q) => q.target.includes('kube-system')).length, 0);
      });
    }

    // Targets with bytes a second parser could read another way. Each is refused before anything is
    // sent (4xx), or reaches the configured peer with exactly the client's bytes; never the decoy.
    const TARGETS: [string, (decoyAddress: string) => string][] = [
      ['encoded CRLF and a header in the query', () => `${EXEC}&command=a%0d%0aX-Remote-User:%20system:admin%0d%0a`],
      ['a raw tab', () => `${EXEC}&command=a\tb`],
      ['a raw space and a fake version', () => `${EXEC} HTTP/1.1\r\nX-Remote-User: system:admin\r\nX-Ignore: x`],
      ['a NUL byte', () => `${EXEC}&command=a\0b`],
      ['DEL', () => `${EXEC}&command=a\x7fb`],
      ['bytes above 0x7F', () => `${EXEC}&command=caf\xc3\xa9`],
      ['a scheme-relative target naming the decoy', (d) => `//${d}/api/v1/namespaces/default/pods/shell/exec?command=id`],
      ['an absolute-form target naming the decoy', (d) => `http://${d}/api/v1/namespaces/default/pods/shell/exec?command=id`],
      ['an authority-form target naming the decoy', (d) => d],
      ['an asterisk', () => '*'],
      ['dot segments out of the pod', () => '/api/v1/namespaces/default/pods/shell/exec/../../../../kube-system/secrets?command=id'],
      ['encoded dot segments', () => '/api/v1/namespaces/default/pods/shell/%2e%2e/%2e%2e/exec?command=id'],
      ['a backslash', () => '/api/v1/namespaces/default/pods/shell\\exec?command=id'],
      ['a fragment', () => `${EXEC}#frag`],
      ['an encoded slash in the pod name', () => '/api/v1/namespaces/default/pods/shell%2fexec/exec?command=id'],
      ['an invalid escape in the path', () => '/api/v1/namespaces/default/pods/sh%zzell/exec?command=id'],
      ['an invalid escape in the query', () => `${EXEC}&command=%zz`],
      ['a 20 KiB query', () => `${EXEC}&command=${'a'.repeat(20 * 1024)}`],
    ];
    for (const [kind, upgrade] of shapes) {
      test(`${kind} upgrade targets with smuggling characters: refused before anything is sent, or sent to the configured peer byte for byte, with no identity but the client's certificate; never to a host the target names`, async (t) => {
        answer = switchProtocols;
        const rows: string[] = [];
        for (const [name, make] of TARGETS) {
          const target = make(decoy.address);
          const before = b.peer.clientRequests().length;
          const r = await tlsRaw(b.daemon.clientPort, [upgrade(target, 'X-Remote-User: system:admin\r\n')], { cert: jane, waitMs: 400 });
          const sent = b.peer.clientRequests().slice(before);
          const status = statuses(r.out)[0] ?? 0;
          rows.push(`${name}: ${status || (r.closed ? 'closed' : 'open')} ${/MVP_ERR_\w+/.exec(r.out)?.[0] ?? ''}, ${sent.length} sent`);
          assert.equal(decoy.requests.length, 0, `${name}: the decoy named by the target was reached`);
          assert.ok(sent.length <= 1, `${name}: one request at most`);
          if (sent.length === 0) {
            assert.ok(status === 0 || (status >= 400 && status < 600), `${name}: neither sent nor refused: ${r.out.slice(0, 200)}`);
            assert.notEqual(status, 101);
            continue;
          }
          const q = sent[0]!;
          assert.equal(q.head.split('\r\n')[0], upgrade(target).split('\r\n')[0], `${name}: the request line went upstream as the client's bytes`);
          assert.deepEqual(remoteLines(q.head), JANE(), `${name}: identity`);
        }
        t.diagnostic(rows.join('; '));
        // The daemon serves after all of them.
        const target = fresh();
        const ok = await tlsRaw(b.daemon.clientPort, [upgrade(target)], { cert: jane, waitMs: 400 });
        assert.match(ok.out, /^HTTP\/1\.1 101 /, `${ok.out}\n${rows.join('\n')}`);
      });
    }
  });
}

// The whole chain with a real peer: this member's mvproxy → the peer mvproxy's peer listener (which
// believes the hop's X-Remote-*) → the peer's simulated apiserver, which records the identity it
// is handed. It records upgrades it refuses (SPDY, and a WebSocket port-forward: it simulates only
// exec and attach), whose heads are written before any answer is known, as a 101's would be.
for (const frontend of FRONTENDS) {
  describe(`upgrades through the peer route to a real peer and its apiserver (${frontend} front end, the local apiserver down)`, () => {
    let plane: Plane & { tmp: string };
    let jane: { cert: string; key: string };
    let seq = 0;
    before(async () => {
      plane = await twoVersionPlane('node', {
        configure: (c, m) => {
          Object.assign(c, { connectTimeoutMs: 1000, discoveryRefreshIntervalMs: 60_000, peerProbeIntervalMs: 60_000, localFailover: true, requestTimeoutMs: 3000 });
          if (m.name !== OLD) return;
          c.frontend = frontend;
          c.tlsCertFile = c.peerTLSCertFile;
          c.tlsPrivateKeyFile = c.peerTLSPrivateKeyFile;
          c.clientCAFile = c.peerCAFile;
        },
      });
      jane = await plane.pki.clusterCA.issue({ commonName: 'jane', organization: ['devs', 'ops'], usage: 'client' });
      await plane.member(OLD).sim.close();
      await eventually(async () => /^mvproxy_local_apiserver_state\{state="down"\} 1$/m.test(await (await fetch(plane.member(OLD).metricsUrl)).text()), { what: 'the local apiserver seen down', timeoutMs: 5000, intervalMs: 100 });
    });
    after(async () => plane?.close());

    const shapes = [
      ['WebSocket port-forward', (id: string, extra: string) => wsUpgrade(`/api/v1/namespaces/default/pods/shell/portforward?ports=80&case=${id}`, extra)],
      ...(frontend === 'node' ? ([['SPDY exec', (id: string, extra: string) => spdyUpgrade(`${EXEC}&case=${id}`, extra)]] as const) : []),
    ] as const;
    for (const [kind, upgrade] of shapes) {
      for (const who of ['a certificate user', 'a client without a certificate'] as const) {
        test(`${kind} from ${who}, with X-Remote-* of its own and a request pipelined behind it: the peer's apiserver sees the upgrade once, as exactly the certificate's user or as nobody, and never the pipelined request`, async () => {
          const id = `real-${++seq}`;
          const port = Number(new URL(plane.member(OLD).url).port);
          const smuggled = SMUGGLED.replace('secrets', `secrets?case=${id}-smuggled`);
          // uWS aborts a connection with bytes behind a pending upgrade before dialling (measured in the
          // suite above): there the request follows 200 ms later, while the upgrade is under way.
          const parts = frontend === 'uws' ? [upgrade(id, SPOOFED), smuggled] : [upgrade(id, SPOOFED) + smuggled];
          const r = await tlsRaw(port, parts, { cert: who === 'a certificate user' ? jane : undefined, gapMs: 200, waitMs: 1500 });
          const seen = (m: string) => plane.member(m).sim.requests.filter((q) => q.url.includes(`case=${id}`));
          const atNew = seen(NEW);
          assert.equal(atNew.length, 1, `the upgrade reached the peer's apiserver once: ${JSON.stringify(atNew.map((q) => q.url))}; the client got ${JSON.stringify(r.out.slice(0, 400))}`);
          assert.ok(!atNew[0]!.url.includes('smuggled'), 'the pipelined request never reached an apiserver');
          assert.match(r.out, /^HTTP\/1\.1 400 /, 'the apiserver\'s refusal, relayed');
          assert.ok(r.closed);
          const h = atNew[0]!.headers;
          const remote = Object.keys(h).filter((k) => k.startsWith('x-remote-')).sort();
          if (who === 'a certificate user') {
            assert.deepEqual(remote, ['x-remote-extra-authentication.kubernetes.io%2fcredential-id', 'x-remote-group', 'x-remote-user']);
            assert.equal(h['x-remote-user'], 'jane');
            assert.deepEqual(h['x-remote-group'], ['devs', 'ops']);
          } else assert.deepEqual(remote, [], JSON.stringify(h));
          assert.equal(h.authorization, 'Bearer client-token');
          assert.equal(h['impersonate-user'], 'jane-impersonated');
          assert.deepEqual(h['x-kubernetes-peer-proxied'], 'true');
        });
      }
    }
  });
}

function createHashHex(pem: string): string {
  return new X509Certificate(pem).fingerprint256.replace(/:/g, '').toLowerCase();
}
