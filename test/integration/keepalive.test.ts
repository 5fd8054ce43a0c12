// Connection reuse on both client front ends: a request without a body keeps its connection even
// when mvproxy answers it at once (discovery from the snapshot); a request
// answered before its body was read closes the connection after the answer (the rest of the body
// cannot be skipped safely; src/listener/exchange.ts ClientResponse).
import { describe, test, before, after } from 'node:test';
import { FRONTENDS } from '../support/frontends';
import { eventually } from '../support/poll';
import assert from 'node:assert/strict';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { createClusterPKI } from '../../src/pki/bundle';
import { nodePKIConfig } from '../support/node-pki';
import { closedWithin, readResponse } from '../support/http1';

const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
import { startSimApiserver, type SimApiserver } from '../../src/sim';
import { startTestDaemon } from '../support/daemon';
import type { Daemon } from '../../src/daemon';

for (const frontend of FRONTENDS) {
  describe(`connection reuse on the ${frontend} front end`, () => {
    let sim: SimApiserver;
    let d: Daemon;
    let tmp: string;
    before(async () => {
      tmp = mkdtempSync(join(tmpdir(), 'mvproxy-keepalive-'));
      const pki = await createClusterPKI(join(tmp, 'pki'));
      sim = await startSimApiserver({ name: 'a', kubernetesVersion: 'v1.33' });
      // The proxy enabled (--peer-ca-file): /apis is answered from the merged snapshot, at once.
      d = await startTestDaemon({
        frontend,
        localAPIServer: sim.url,
        ...(await nodePKIConfig(pki, 'a')),
      });
      await d.publisher.refresh();
      // The merged snapshot is built in a worker after the first sync: wait until mvproxy serves /apis.
      await eventually(
        async () => {
          const r = await request(`http://127.0.0.1:${d.clientPort}/apis`, { headers: { accept: AGG } });
          await r.body.dump();
          return r.headers['x-sim-server'] === undefined;
        },
        { what: 'the merged discovery snapshot served', timeoutMs: 10_000, intervalMs: 50 },
      );
    });
    after(async () => {
      await d?.close();
      await sim?.close();
      rmSync(tmp, { recursive: true, force: true });
    });

    test('requests without a body answered at once (discovery from the snapshot) and proxied ones share one kept-alive connection', async () => {
      const s = net.connect(d.clientPort, '127.0.0.1');
      s.on('error', () => undefined);
      await new Promise((r) => s.once('connect', r));
      try {
        const asks = [
          [`GET /apis HTTP/1.1\r\nHost: x\r\nAccept: ${AGG}\r\n\r\n`, 200],
          ['GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n\r\n', 200],
          ['POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 79\r\n\r\n{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keepalive-cm"},"x":1}', 201],
          [`GET /apis HTTP/1.1\r\nHost: x\r\nAccept: ${AGG}\r\n\r\n`, 200],
        ] as const;
        for (const [bytes, want] of asks) {
          s.write(bytes);
          const r = await readResponse(s);
          assert.equal(r.status, want, r.head);
          if (bytes.startsWith('GET /apis ')) assert.doesNotMatch(r.head, /x-sim-server/i, 'answered by mvproxy, not proxied');
          assert.doesNotMatch(r.head, /\r\nconnection: *close/i, `kept alive: ${r.head}`);
          assert.equal(r.closed, false);
        }
      } finally {
        s.destroy();
      }
    });

    test('a request answered before its body was read (duplicate Content-Length: 400) closes the connection after the answer', async () => {
      const s = net.connect(d.clientPort, '127.0.0.1');
      s.on('error', () => undefined);
      await new Promise((r) => s.once('connect', r));
      try {
        // (On node, llhttp itself answers a bare 400 and closes; on uWS, mvproxy's framing check does.)
        let out = '';
        s.on('data', (b: Buffer) => (out += b.toString('latin1')));
        s.write('POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n');
        assert.ok(await closedWithin(s, 3000), `closed after the answer: ${JSON.stringify(out.slice(0, 120))}`);
        assert.match(out, /^HTTP\/1\.1 400 /);
      } finally {
        s.destroy();
      }
    });
  });
}
