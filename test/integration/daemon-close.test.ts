// A closed daemon holds nothing (issue 32 item 3): Daemon.close() releases every listener, upstream
// connection, timer, file watcher and worker the daemon made, and a start that fails half-way
// releases what it had started (src/daemon/shutdown.ts).
//
// Every async resource (async_hooks) a daemon creates is recorded with the stack that made it and
// dropped when it is destroyed. Each daemon runs in an AsyncLocalStorage context of its own, and
// the test's calls into it run there too, so what it made is told apart from what the simulated
// apiservers, the other daemon and the test's own clients made. TLS wraps and HTTP/2 sessions are
// destroyed only when collected; their TCP handles stand for them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import net from 'node:net';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { createClusterPKI, PROXY_CLIENT_CN } from '../../src/pki/bundle';
import { ObjectStore, startSimApiserver } from '../../src/sim';
import { capturingLogger, startTestDaemon } from '../support/daemon';
import { nodePKIConfig } from '../support/node-pki';
import { DEFAULT_FRONTEND } from '../support/frontends';
import { eventually } from '../support/poll';
import type { Daemon } from '../../src/daemon';

/** Resources that hold the process or the machine: handles, timers, workers. */
const TRACKED = new Set(['TCPWRAP', 'TCPSERVERWRAP', 'PIPEWRAP', 'UDPWRAP', 'Timeout', 'FSEVENTWRAP', 'STATWATCHER', 'WORKER', 'MESSAGEPORT', 'ELDHISTOGRAM', 'SIGNALWRAP']);
const NEW_ONLY = '/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads'; // served by the v1.37 member only: the peer route
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';
const AUTH = { authorization: 'Bearer test-token-123' };

/** What each daemon (by context name) made and has not destroyed yet. */
function resourceTracker() {
  const owner = new AsyncLocalStorage<string>();
  const live = new Map<number, { who: string; type: string; stack: string }>();
  const hook = createHook({
    init(id, type) {
      const who = owner.getStore();
      if (who === undefined || !TRACKED.has(type)) return;
      const stack = (new Error().stack ?? '').split('\n').filter((l) => l.includes('/src/') || l.includes('node_modules')).slice(0, 6).join('\n');
      live.set(id, { who, type, stack });
    },
    destroy(id) {
      live.delete(id);
    },
  }).enable();
  const left = (who: string) => [...live.values()].filter((r) => r.who === who);
  return {
    /** Runs `fn` (and everything it starts) as `who`. */
    as: <T>(who: string, fn: () => T): T => owner.run(who, fn),
    left,
    /** Waits (destroy hooks run after the fact) until `who` holds nothing; fails listing what is left. */
    async released(who: string): Promise<void> {
      try {
        await eventually(() => left(who).length === 0, { what: `everything ${who} made destroyed`, timeoutMs: 3000, intervalMs: 50 });
      } catch {
        assert.fail(`${who} still holds ${left(who).length} resource(s) after close():\n` + left(who).map((r) => `${r.type}\n${r.stack}`).join('\n\n'));
      }
    },
    disable: () => hook.disable(),
  };
}

async function get(base: string, path: string, agent: Agent): Promise<number> {
  const r = await request(base + path, { dispatcher: agent, headers: AUTH });
  await r.body.dump();
  return r.statusCode;
}

test('close() releases every listener, connection, timer, file watcher and worker: TLS to the local apiserver, a token file, --local-failover, a peer, a held watch, a certificate rotation, a peer leaving', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'mvproxy-close-'));
  const pki = await createClusterPKI(join(tmp, 'pki'));
  const store = new ObjectStore();
  const a = await pki.node('a');
  const simA = await startSimApiserver({ name: 'a', kubernetesVersion: 'v1.33', store, tls: { cert: readFileSync(a.servingCert), key: readFileSync(a.servingKey) } });
  const simB = await startSimApiserver({ name: 'b', kubernetesVersion: 'v1.37', store });
  const tokenFile = join(tmp, 'token');
  writeFileSync(tokenFile, 'test-token-123\n');
  const configA = await nodePKIConfig(pki, 'a');
  const configB = await nodePKIConfig(pki, 'b');
  const track = resourceTracker();
  const log = capturingLogger();
  const agent = new Agent();
  let A: Daemon | undefined;
  let B: Daemon | undefined;
  try {
    B = await track.as('B', () => startTestDaemon({ serverID: 'mvproxy-b', frontend: DEFAULT_FRONTEND, localAPIServer: simB.url, ...configB }));
    const peerB = { id: 'mvproxy-b', address: `127.0.0.1:${B.peerPort}` };
    A = await track.as('A', () =>
      startTestDaemon(
        { serverID: 'mvproxy-a', frontend: DEFAULT_FRONTEND, localAPIServer: simA.url, localAPIServerCAFile: pki.clusterCAFile, localAPIServerTokenFile: tokenFile, localFailover: true, ...configA, staticPeers: [peerB] },
        { log },
      ),
    );
    const d = A;
    await track.as('B', () => B!.setStaticPeers([{ id: 'mvproxy-a', address: `127.0.0.1:${d.peerPort}` }]));
    await track.as('A', () => d.publisher.refresh());
    await track.as('A', () => d.publisher.mergesDone());
    const base = `http://127.0.0.1:${d.clientPort}`;

    // Connections in every pool: the local apiserver over TLS, the peer (HTTP/1.1 and, for the watch, HTTP/2), the ops listener.
    assert.equal(await get(base, CONFIGMAPS, agent), 200);
    assert.equal(await get(base, '/apis', agent), 200);
    assert.equal(await get(base, NEW_ONLY, agent), 200);
    const watch = await request(`${base}${NEW_ONLY}?watch=true`, { dispatcher: agent, headers: AUTH, bodyTimeout: 0 });
    assert.equal(watch.statusCode, 200);
    watch.body.on('error', () => undefined).resume();
    assert.equal(await get(`http://127.0.0.1:${d.metricsPort}`, '/metrics', agent), 200);
    assert.equal(await get(`http://127.0.0.1:${d.metricsPort}`, '/readyz', agent), 200);

    // A new proxy client pair: the peer pools and the local apiserver's clients are replaced, the old ones drain (the watch keeps its connection).
    const next = await pki.frontProxyCA.issue({ commonName: PROXY_CLIENT_CN, usage: 'client' });
    for (const [file, pem] of [[a.proxyClientKey, next.key], [a.proxyClientCert, next.cert]] as const) {
      writeFileSync(file + '.tmp', pem, { mode: 0o600 });
      renameSync(file + '.tmp', file);
    }
    await eventually(() => ['proxy-client', 'local-apiserver'].every((n) => log.lines.some((l) => l.includes('Loaded a new cert/key pair') && l.includes(`"name":"${n}"`))), { what: 'the new proxy client pair loaded', timeoutMs: 5000, intervalMs: 20 });
    assert.equal(await get(base, CONFIGMAPS, agent), 200);
    assert.equal(await get(base, NEW_ONLY, agent), 200);
    // The peer leaves: its view is kept for the grace period (a timer), its pools retire.
    await track.as('A', () => d.setStaticPeers([]));

    A = undefined;
    await d.close();
    await agent.close();
    await track.released('A');

    const b = B;
    B = undefined;
    await b.close();
    await track.released('B');
  } finally {
    track.disable();
    await A?.close();
    await B?.close();
    await agent.destroy();
    await simA.close();
    await simB.close();
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('a start that fails half-way (the peer port is taken) releases what it had started', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'mvproxy-close-'));
  const pki = await createClusterPKI(join(tmp, 'pki'));
  const sim = await startSimApiserver({ name: 'a', kubernetesVersion: 'v1.33' });
  const taken = net.createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  const track = resourceTracker();
  try {
    const config = { serverID: 'mvproxy-a', frontend: DEFAULT_FRONTEND, localAPIServer: sim.url, ...(await nodePKIConfig(pki, 'a')), peerPort: (taken.address() as net.AddressInfo).port };
    await assert.rejects(
      track.as('A', () => startTestDaemon(config)),
      (e: NodeJS.ErrnoException) => e.code === 'EADDRINUSE',
    );
    await track.released('A');
  } finally {
    track.disable();
    await new Promise((r) => taken.close(r));
    await sim.close();
    rmSync(tmp, { recursive: true, force: true });
  }
});
