// A client that goes away releases what it held, at once, on every hop (issue 33 §2). An HTTP/2
// client (client-go speaks h2 by default; a controller-manager failover or a kubelet restart drops
// its connection) with watches on one connection: destroying the connection, or resetting each
// stream, must close each upstream watch and free its in-flight entry (mvproxy_inflight_requests)
// within 2 s, on this mvproxy and on the peer mvproxy that serves the peer-routed ones. node:http2's
// compatibility response reports a stream the client reset as finished ('finish', then 'close'
// with writableFinished true), and the node front end took that for an answer that had ended: every
// HTTP/2 watch whose client left stayed open upstream (6,005 upstream sockets 11 minutes later).
// The same for a GET whose client resets mid-body (HTTP/2 and HTTP/1.1) and an exec stream (an
// HTTP/1.1 upgrade) whose client goes.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import WebSocket from 'ws';
import { FRONTENDS } from '../support/frontends';
import { eventually } from '../support/poll';
import { twoVersionPlane, AUTH, OLD, NEW } from '../support/plane';
import type { Plane } from '../../src/demo/topology';

const LOCAL = '/api/v1/namespaces/default/configmaps'; // served by both: local
const PEER_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads'; // v1.37 only: the peer route from OLD
const N = 20;
const RELEASE_MS = 2000;

type TestPlane = Plane & { tmp: string };

/** Sum of every mvproxy_inflight_requests series of a member. */
async function inflight(plane: TestPlane, member: string): Promise<number> {
  const text = await (await fetch(plane.member(member).metricsUrl)).text();
  let n = 0;
  for (const m of text.matchAll(/^mvproxy_inflight_requests\{[^}]*\} (\d+)$/gm)) n += Number(m[1]);
  return n;
}

/** What a client's requests hold on both hops: the watches at each apiserver, their connections, each mvproxy's in-flight entries. */
async function held(plane: TestPlane) {
  return {
    oldWatches: plane.member(OLD).sim.openStreams(),
    newWatches: plane.member(NEW).sim.openStreams(),
    oldConnections: plane.member(OLD).sim.openConnections(),
    newConnections: plane.member(NEW).sim.openConnections(),
    oldInflight: await inflight(plane, OLD),
    newInflight: await inflight(plane, NEW),
  };
}
type Held = Awaited<ReturnType<typeof held>>;

/** Within RELEASE_MS: watches and in-flight entries back to the baseline on both hops, connections to the apiservers not above it. */
async function released(plane: TestPlane, base: Held, what: string): Promise<void> {
  await eventually(
    async () => {
      const now = await held(plane);
      assert.deepEqual({ ...now, oldConnections: Math.max(now.oldConnections, base.oldConnections), newConnections: Math.max(now.newConnections, base.newConnections) }, base);
      return true;
    },
    { what, timeoutMs: RELEASE_MS, intervalMs: 50 },
  );
}

/** A warm plane at rest: what it holds now, once nothing a test left is still closing. */
async function baseline(plane: TestPlane): Promise<Held> {
  let last: Held | undefined;
  const { value } = await eventually(
    async () => {
      const now = await held(plane);
      const same = last !== undefined && JSON.stringify(now) === JSON.stringify(last) && now.oldWatches === 0 && now.newWatches === 0;
      last = now;
      return same ? now : false;
    },
    { what: 'the plane at rest', timeoutMs: 10_000, intervalMs: 200 },
  );
  return value;
}

/**
 * Many ConfigMaps, straight into the shared store: a LIST of them is a body of ~24 MiB, far more than
 * loopback sockets buffer (a few MiB each way), so a client that stops reading leaves it mid-body.
 */
function manyConfigMaps(plane: TestPlane): void {
  const value = 'x'.repeat(16 * 1024);
  for (let i = 0; i < 1500; i++) plane.store.create('', 'configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `big-${i}`, namespace: 'default' }, data: { v: value } });
}

describe('an HTTP/2 client that goes away (node front end, TLS)', () => {
  let plane: TestPlane;
  let ca: string;
  before(async () => {
    plane = await twoVersionPlane('node', {
      configure: (c, m) => {
        c.connectTimeoutMs = 1000;
        c.discoveryRefreshIntervalMs = 60_000;
        if (m.name !== OLD) return;
        c.tlsCertFile = c.peerTLSCertFile;
        c.tlsPrivateKeyFile = c.peerTLSPrivateKeyFile;
      },
    });
    ca = plane.pki.clusterCA.cert;
    manyConfigMaps(plane);
  });
  after(async () => plane?.close());

  const connect = () => http2.connect(plane.member(OLD).url, { ca, servername: 'kubernetes.default.svc' });

  /** N watches on one session, half local, half peer-routed, each open at its apiserver. */
  async function watches(session: http2.ClientHttp2Session, base: Held): Promise<http2.ClientHttp2Stream[]> {
    const streams = Array.from({ length: N }, (_, i) => {
      const s = session.request({ ':path': `${i % 2 ? PEER_ONLY : LOCAL}?watch=true`, authorization: AUTH.authorization });
      s.on('data', () => undefined);
      s.on('error', () => undefined);
      return s;
    });
    await eventually(
      async () => {
        const now = await held(plane);
        assert.equal(now.oldWatches, base.oldWatches + N / 2, 'local watches at the local apiserver');
        assert.equal(now.newWatches, base.newWatches + N / 2, 'peer-routed watches at the peer\'s apiserver');
        assert.equal(now.oldInflight, base.oldInflight + N, 'in flight here');
        assert.equal(now.newInflight, base.newInflight + N / 2, 'in flight at the peer');
        return true;
      },
      { what: `${N} watches open on both hops`, timeoutMs: 5000 },
    );
    return streams;
  }

  for (const [how, leave] of [
    ['the session destroyed', (s: http2.ClientHttp2Session) => s.destroy()],
    ['the TCP connection destroyed under the session', (s: http2.ClientHttp2Session) => s.socket.destroy()],
    ['each stream reset (RST_STREAM CANCEL), the session kept', (s: http2.ClientHttp2Session, streams: http2.ClientHttp2Stream[]) => streams.forEach((st) => st.close(http2.constants.NGHTTP2_CANCEL))],
  ] as const) {
    test(`${N} watches on one HTTP/2 connection, ${how}: within ${RELEASE_MS} ms every upstream watch is closed and every in-flight entry freed, here and at the peer`, async () => {
      const base = await baseline(plane);
      const session = connect();
      session.on('error', () => undefined);
      try {
        const streams = await watches(session, base);
        leave(session, streams);
        await released(plane, base, 'the watches released on both hops');
      } finally {
        session.destroy();
      }
    });
  }

  test(`a LIST whose HTTP/2 client resets its stream mid-body: within ${RELEASE_MS} ms its upstream request is closed and its in-flight entry freed`, async () => {
    const base = await baseline(plane);
    const session = connect();
    session.on('error', () => undefined);
    try {
      const s = session.request({ ':path': LOCAL, authorization: AUTH.authorization, accept: 'application/json' });
      s.on('error', () => undefined);
      // The first bytes, then no more reading: the rest waits in mvproxy and its upstream connection.
      await new Promise<void>((resolve) => s.once('data', () => (s.pause(), resolve())));
      await eventually(async () => (await held(plane)).oldInflight === base.oldInflight + 1, { what: 'the LIST in flight', timeoutMs: 2000 });
      s.close(http2.constants.NGHTTP2_CANCEL);
      await released(plane, base, 'the LIST released');
    } finally {
      session.destroy();
    }
  });
});

for (const frontend of FRONTENDS) {
  describe(`an HTTP/1.1 client that goes away (${frontend} front end)`, () => {
    let plane: TestPlane;
    before(async () => {
      plane = await twoVersionPlane(frontend);
      manyConfigMaps(plane);
    });
    after(async () => plane?.close());

    test(`a LIST whose client resets its connection mid-body: within ${RELEASE_MS} ms its upstream request is closed and its in-flight entry freed`, async () => {
      const base = await baseline(plane);
      const u = new URL(plane.member(OLD).url);
      const req = http.get({ host: u.hostname, port: u.port, path: LOCAL, agent: false, headers: { ...AUTH, accept: 'application/json' } });
      req.on('error', () => undefined);
      const res = await new Promise<http.IncomingMessage>((resolve) => req.once('response', resolve));
      res.on('error', () => undefined);
      await new Promise<void>((resolve) => res.once('data', () => (res.pause(), resolve())));
      await eventually(async () => (await held(plane)).oldInflight === base.oldInflight + 1, { what: 'the LIST in flight', timeoutMs: 2000 });
      req.socket!.resetAndDestroy();
      await released(plane, base, 'the LIST released');
    });

    test(`an exec stream (HTTP/1.1 upgrade, WebSocket) whose client goes: within ${RELEASE_MS} ms the tunnel's upstream connection is closed`, async () => {
      const base = await baseline(plane);
      const url = plane.member(OLD).url.replace(/^http/, 'ws') + '/api/v1/namespaces/default/pods/shell/exec?command=cat&stdin=true&stdout=true';
      const ws = new WebSocket(url, ['v5.channel.k8s.io'], { headers: AUTH, perMessageDeflate: false });
      ws.on('error', () => undefined);
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      });
      // stdin comes back on stdout: the tunnel is through to the apiserver's exec.
      const echoed = new Promise<Buffer>((resolve) => ws.once('message', (d: Buffer) => resolve(d)));
      ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('ping')]));
      assert.equal((await echoed).subarray(1).toString(), 'ping');
      assert.equal(plane.member(OLD).sim.openConnections(), base.oldConnections + 1, 'the exec holds one connection to the apiserver');
      // The client's connection reset under the tunnel (no close frame, no FIN: a killed kubectl, a
      // dropped network): a FIN would end the tunnel by itself through the pipe.
      (ws as unknown as { _socket: import('node:net').Socket })._socket.resetAndDestroy();
      await released(plane, base, 'the exec connection to the apiserver closed');
    });
  });
}
