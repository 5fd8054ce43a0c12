// Lease churn (issue 8): in --peer-discovery=lease, the serving peer's mvproxy (B, v1.37) is
// restarted 10 times in about a minute, alternating a crash (SIGKILL: its Lease stays until it
// expires, 3 s) and a graceful stop (SIGTERM: its Lease deleted), each new incarnation on a new
// ephemeral peer port (new advertised address, new holderIdentity). The observed mvproxy (A, v1.33)
// runs as its own process, so its fds, sockets and RSS are read from /proc.
//
// During the churn, through A:
//   - GETs of a locally served GVR never fail;
//   - GETs of the GVR only B serves each end within the bound with 200 or a 503 Status, never a
//     404 (a restarting peer must not look like "deleted": sync.ts keeps a departed peer's view
//     unaddressed for the grace period);
//   - a watch through B that is open when B goes away ends (cleanly or cut), and is reopened.
// After: no socket of A to any dead incarnation, no client connection left, fds back to the
// baseline once pooled connections to live upstreams are set aside, RSS near the baseline.
// In test/slow (`npm run test:slow`, scripts/test.sh): the churn alone takes a minute.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { createClusterPKI, type ClusterPKI } from '../../src/pki/bundle';
import { startSimApiserver, ObjectStore, type SimApiserver } from '../../src/sim';
import { startChildDaemon, type ChildDaemon } from '../support/child-daemon';
import { nodePKIFlags } from '../support/node-pki';
import { PEER_ONLY, LOCAL, get, localTraffic } from '../faults/harness';
import { eventually } from '../support/poll';

const RESTARTS = 10;
/** One restart slot: 10 of them in about a minute. */
const SLOT_MS = 5_500;
const REQUEST_TIMEOUT_S = 5;
/** A client request must end within this (the request timeout plus the connect timeout and slack). */
const BOUND_MS = (REQUEST_TIMEOUT_S + 3) * 1000;
const MiB = 1024 * 1024;

interface TcpSocket {
  localPort: number;
  remotePort: number;
  state: string;
}

/** The TCP sockets process `pid` holds (its fds matched against /proc/net/tcp by inode). */
function tcpSockets(pid: number): TcpSocket[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const states: Record<string, string> = { '01': 'ESTABLISHED', '06': 'TIME_WAIT', '08': 'CLOSE_WAIT', '0A': 'LISTEN', '04': 'FIN_WAIT1', '05': 'FIN_WAIT2', '09': 'LAST_ACK', '07': 'CLOSE', '0B': 'CLOSING', '02': 'SYN_SENT' };
  const out: TcpSocket[] = [];
  for (const line of readFileSync(`/proc/${pid}/net/tcp`, 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || !inodes.has(f[9])) continue;
    out.push({ localPort: parseInt(f[1].split(':')[1], 16), remotePort: parseInt(f[2].split(':')[1], 16), state: states[f[3]] ?? f[3] });
  }
  return out;
}

function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

describe('lease churn: the serving peer restarted 10 times in a minute (lease mode, mvproxy in its own process)', () => {
  let tmp: string;
  let pki: ClusterPKI;
  let store: ObjectStore;
  let simA: SimApiserver;
  let simB: SimApiserver;
  let A: ChildDaemon;
  let B: ChildDaemon | undefined;

  async function args(name: string, sim: SimApiserver): Promise<string[]> {
    return [
      '--secure-port=0',
      '--peer-port=0',
      '--peer-bind-address=127.0.0.1',
      '--metrics-bind-address=127.0.0.1:0',
      `--server-id=mvproxy-${name}`,
      `--local-apiserver=${sim.url}`,
      ...(await nodePKIFlags(pki, name)),
      '--peer-discovery=lease',
      '--identity-lease-duration-seconds=3',
      '--identity-lease-renew-interval-seconds=1',
      '--peer-probe-interval=250ms',
      '--discovery-refresh-interval=60s',
      '--peer-discovery-grace-period=30s',
      '--upstream-connect-timeout=1s',
      `--request-timeout=${REQUEST_TIMEOUT_S}s`,
      '--v=0',
    ];
  }

  /** Until A routes the peer-only GVR to B again (bounded). */
  async function routedToB(base: string, agent: Agent, timeoutMs = 15_000): Promise<number> {
    const { ms } = await eventually(
      async () => {
        const r = await get(base, PEER_ONLY, agent, 5000);
        assert.ok('status' in r && r.status === 200, JSON.stringify(r).slice(0, 300));
        return true;
      },
      { what: 'A routes to B', timeoutMs, intervalMs: 100 },
    );
    return ms;
  }

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'mvproxy-lease-churn-'));
    pki = await createClusterPKI(join(tmp, 'pki'));
    store = new ObjectStore();
    simA = await startSimApiserver({ name: 'a', kubernetesVersion: 'v1.33', store });
    simB = await startSimApiserver({ name: 'b', kubernetesVersion: 'v1.37', store });
    // One object of the peer-only kind: each watch gets its ADDED event at once, and with it its head
    // (the uWS front end sends a watch's head with its first event: it adds no byte to a relayed body).
    store.create('scheduling.k8s.io', 'workloads', { apiVersion: 'scheduling.k8s.io/v1beta1', kind: 'Workload', metadata: { name: 'churn', namespace: 'default' } });
    [A, B] = await Promise.all([startChildDaemon(await args('a', simA)), startChildDaemon(await args('b', simB))]);
  });
  after(async () => {
    await B?.stop('SIGKILL');
    await A?.stop('SIGKILL');
    await simA?.close();
    await simB?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  test('every request ends (200 or a 503 Status, never a 404), local GVRs see no error, watches end and reopen; nothing left behind', async (t) => {
    const base = `http://127.0.0.1:${A.clientPort}`;
    const pid = A.proc.pid!;
    const warm = new Agent();
    await routedToB(base, warm);
    for (let i = 0; i < 20; i++) await get(base, i % 2 ? LOCAL : PEER_ONLY, warm);
    await warm.close();
    await sleep(500);

    /** A's fds other than pooled connections to live upstreams (those are bounded reuse, not leaks). */
    const livePorts = () => new Set([simA.port, B!.peerPort]);
    /** Connections between A and live upstreams or the live B (its probes and fetches of A's peer listener). */
    const isPooled = (s: TcpSocket, live: Set<number>, bPorts: Set<number>) => s.state === 'ESTABLISHED' && (live.has(s.remotePort) || (s.localPort === A.peerPort && bPorts.has(s.remotePort)));
    const bPortsNow = () => new Set(tcpSockets(B!.proc.pid!).map((s) => s.localPort));
    const baseline = (() => {
      const socks = tcpSockets(pid);
      const live = livePorts();
      const bPorts = bPortsNow();
      const pooled = socks.filter((s) => isPooled(s, live, bPorts)).length;
      return { fds: fdCount(pid) - pooled, rss: A.memory().rss, socks };
    })();
    t.diagnostic(`baseline: ${baseline.fds} fds besides ${baseline.socks.length} sockets' pooled ones, RSS ${(baseline.rss / MiB).toFixed(1)} MiB`);

    // Traffic for the whole churn.
    const localAgent = new Agent();
    const local = localTraffic(base, localAgent);
    let localResult: { ok: number; bad: string[] } = { ok: 0, bad: [] };
    const peerAgent = new Agent({ connect: { timeout: 2000 } });
    const peer = { ok: 0, unavailable: 0, bad: [] as string[], slow: [] as string[] };
    let running = true;
    const peerLoop = (async () => {
      while (running) {
        const r = await get(base, PEER_ONLY, peerAgent, BOUND_MS + 5000);
        if (r.ms > BOUND_MS) peer.slow.push(`${r.ms} ms: ${JSON.stringify(r).slice(0, 160)}`);
        if ('status' in r && r.status === 200) peer.ok++;
        else if ('status' in r && r.status === 503 && /"kind":"Status"/.test(r.text) && /"reason":"ServiceUnavailable"/.test(r.text)) peer.unavailable++;
        else peer.bad.push(JSON.stringify(r).slice(0, 240));
        await sleep(50);
      }
    })();
    const watchAgent = new Agent();
    const watch = { opened: 0, ended: 0, refused: 0, bad: [] as string[] };
    const watchLoop = (async () => {
      while (running) {
        try {
          const r = await request(`${base}${PEER_ONLY}?watch=1`, { dispatcher: watchAgent, headersTimeout: BOUND_MS, bodyTimeout: 0 });
          if (r.statusCode !== 200) {
            const text = await r.body.text();
            if (r.statusCode === 503) watch.refused++;
            else watch.bad.push(`${r.statusCode} ${text.slice(0, 160)}`);
            await sleep(100);
            continue;
          }
          watch.opened++;
          try {
            for await (const chunk of r.body) void chunk;
          } catch {
            // cut by the restart of the serving peer: as kube-apiserver cuts it (docs/kubernetes-mvp.md §2.4)
          }
          watch.ended++;
        } catch (e) {
          watch.bad.push(String((e as { code?: string }).code ?? e));
          await sleep(100);
        }
      }
    })();

    const t0 = Date.now();
    const restarts: string[] = [];
    try {
      for (let i = 0; i < RESTARTS; i++) {
        const slot = Date.now();
        // A watch is open through B when it goes away (bounded wait: it reopens after each restart).
        await eventually(
          () => {
            assert.ok(watch.opened > watch.ended, JSON.stringify(watch));
            return true;
          },
          { what: `restart ${i + 1}: a watch open through B`, timeoutMs: BOUND_MS, intervalMs: 50 },
        );
        const endedBefore = watch.ended;
        const signal = i % 2 === 0 ? 'SIGKILL' : 'SIGTERM';
        const oldPort = B!.peerPort;
        await B!.stop(signal);
        B = await startChildDaemon(await args('b', simB));
        const probe = new Agent();
        const routedMs = await routedToB(base, probe);
        await probe.close(); // else its kept-alive connection counts as left behind (node front end: 30 s keep-alive hint)
        // The watch that B's previous incarnation served must have ended by now.
        await eventually(
          () => {
            assert.ok(watch.ended > endedBefore, JSON.stringify(watch));
            return true;
          },
          { what: `restart ${i + 1} (${signal}): the watch through the old incarnation ends`, timeoutMs: BOUND_MS, intervalMs: 50 },
        );
        // And A keeps no socket to the dead incarnation.
        const stale = tcpSockets(pid).filter((s) => s.remotePort === oldPort && s.state !== 'TIME_WAIT');
        restarts.push(`${signal} → routed again ${routedMs} ms after start (port ${oldPort} → ${B.peerPort}); stale sockets ${stale.length}`);
        await sleep(Math.max(0, SLOT_MS - (Date.now() - slot)));
      }
    } finally {
      running = false;
      await peerLoop;
      await watchAgent.destroy(); // ends the open watch
      await watchLoop;
      // Stopped here too: a failed restart must not leave the local traffic running (the test file would never exit).
      localResult = await local.stop();
    }
    const churnMs = Date.now() - t0;
    await localAgent.close();
    await peerAgent.close();
    for (const r of restarts) t.diagnostic(r);
    t.diagnostic(`${RESTARTS} restarts in ${(churnMs / 1000).toFixed(1)} s; peer GETs: ${peer.ok} ok, ${peer.unavailable} 503; local GETs: ${localResult.ok} ok; watches: ${watch.opened} opened, ${watch.ended} ended, ${watch.refused} refused with 503`);

    assert.deepEqual(localResult.bad, [], 'local GETs during the churn');
    assert.deepEqual(peer.bad, [], 'peer-routed GETs: only 200 or a 503 Status');
    assert.deepEqual(peer.slow, [], `peer-routed GETs ended within ${BOUND_MS} ms`);
    assert.deepEqual(watch.bad, [], 'watches: only 200 or a 503 Status');
    assert.ok(peer.ok > 0 && watch.opened >= RESTARTS);

    // Nothing left behind: no socket to a dead incarnation, no client connection, fds and RSS back.
    await eventually(
      () => {
        const socks = tcpSockets(pid);
        const live = livePorts();
        const bPorts = bPortsNow();
        const pooled = socks.filter((s) => isPooled(s, live, bPorts)).length;
        const toDead = socks.filter((s) => s.state !== 'LISTEN' && s.state !== 'TIME_WAIT' && s.localPort !== A.clientPort && !isPooled(s, live, bPorts));
        const clients = socks.filter((s) => s.localPort === A.clientPort && s.state !== 'LISTEN' && s.state !== 'TIME_WAIT');
        const fds = fdCount(pid) - pooled;
        const grown: string[] = [];
        if (toDead.length) grown.push(`sockets to dead incarnations or elsewhere: ${JSON.stringify(toDead)}`);
        if (clients.length) grown.push(`client connections: ${JSON.stringify(clients)}`);
        if (fds > baseline.fds) grown.push(`fds ${baseline.fds} → ${fds} (pooled connections to live upstreams set aside: ${pooled})`);
        assert.deepEqual(grown, []);
        return true;
      },
      { what: 'nothing left behind', timeoutMs: 8000, intervalMs: 200 },
    );
    const rss = A.memory().rss;
    t.diagnostic(`after: RSS ${(baseline.rss / MiB).toFixed(1)} → ${(rss / MiB).toFixed(1)} MiB`);
    assert.ok(rss - baseline.rss < 48 * MiB, `RSS grew ${((rss - baseline.rss) / MiB).toFixed(1)} MiB`);
    assert.ok(A.proc.exitCode === null && A.proc.signalCode === null, `A died:\n${A.stderr().slice(-600)}`);
  });
});
