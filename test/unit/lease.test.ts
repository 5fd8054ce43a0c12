// The identity-Lease membership (src/peers/lease.ts) against the simulated apiserver's Leases:
// the own Lease (create, renew, conflicts, deletion, bounded release), the others' (list + watch,
// restart detection, renewals ignored, expiry and clock skew, relist on 410, backoff).
import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { startSimApiserver, ObjectStore, type SimApiserver, type KubeObject } from '../../src/sim';
import { LeaseMembership, IDENTITY_LEASE_LABEL, PEER_ADVERTISE_ADDRESS_ANNOTATION, HOSTNAME_LABEL, hostLabel, type LeaseMembershipOptions } from '../../src/peers/lease';
import { microTime } from '../../src/peers/lease-api';
import { capturingLogger } from '../support/daemon';
import { eventually } from '../support/poll';

const NS = 'kube-system';
const G = 'coordination.k8s.io';

/** Every wait below: 5 s unless it says otherwise, checked every 10 ms. */
const POLL = { timeoutMs: 5000, intervalMs: 10 };

function peerLease(name: string, o: { holder?: string; address?: string; renewTime?: number; duration?: number; label?: string } = {}): KubeObject {
  return {
    metadata: { name, namespace: NS, labels: { [IDENTITY_LEASE_LABEL]: o.label ?? 'mvproxy' }, annotations: o.address === undefined ? { [PEER_ADVERTISE_ADDRESS_ANNOTATION]: `10.0.0.9:6445` } : o.address ? { [PEER_ADVERTISE_ADDRESS_ANNOTATION]: o.address } : {} },
    spec: { holderIdentity: o.holder ?? `${name}_1`, leaseDurationSeconds: o.duration ?? 30, renewTime: microTime(o.renewTime ?? Date.now()) },
  };
}

describe('identity Lease membership', () => {
  let store: ObjectStore;
  let sim: SimApiserver;
  let pool: Pool;
  const members: LeaseMembership[] = [];
  const make = (over: Partial<LeaseMembershipOptions> = {}) => {
    const log = capturingLogger();
    const m = new LeaseMembership({
      local: pool,
      namespace: NS,
      serverID: 'mvproxy-self',
      advertiseAddress: '10.0.0.1:6445',
      durationSeconds: 3,
      renewIntervalMs: 1000,
      expiredGraceMs: 1000,
      timeoutMs: 2000,
      log,
      hostname: 'node-1',
      backoff: { initialMs: 50, maxMs: 200 },
      ...over,
    });
    members.push(m);
    return Object.assign(m, { log });
  };
  const own = () => store.get(G, 'leases', NS, 'mvproxy-self');

  beforeEach(async () => {
    store = new ObjectStore();
    sim = await startSimApiserver({ name: 'sim', kubernetesVersion: 'v1.37', store });
    pool = new Pool(sim.url);
  });
  afterEach(async () => {
    for (const m of members.splice(0)) m.stop();
    await pool.destroy();
    await sim.close();
  });

  test('writes its own Lease: name, labels, annotation, holder, duration, MicroTime renewTime; renews it', async () => {
    const m = make();
    m.start();
    await eventually(() => own() !== undefined, { ...POLL, what: 'lease written' });
    const l = own()!.object;
    assert.equal(l.metadata.labels![IDENTITY_LEASE_LABEL], 'mvproxy');
    assert.equal(l.metadata.labels![HOSTNAME_LABEL], 'node-1');
    assert.equal(l.metadata.annotations![PEER_ADVERTISE_ADDRESS_ANNOTATION], '10.0.0.1:6445');
    const spec = l['spec'] as Record<string, unknown>;
    assert.equal(spec.holderIdentity, m.holderIdentity);
    assert.match(m.holderIdentity, /^mvproxy-self_[0-9a-f-]{36}$/);
    assert.equal(spec.leaseDurationSeconds, 3);
    assert.match(String(spec.renewTime), /\.\d{6}Z$/);
    const rv = own()!.rv;
    await eventually(() => own()!.rv !== rv, { ...POLL, what: 'renewed', timeoutMs: 2500 });
    assert.notEqual((own()!.object['spec'] as Record<string, unknown>).renewTime, spec.renewTime);
    assert.equal((own()!.object['spec'] as Record<string, unknown>).acquireTime, spec.acquireTime, 'acquireTime stays while the holder does');
    assert.equal(m.ownLeaseProblem(), null);
    assert.deepEqual(m.peers(), [], 'never its own peer');
  });

  test('a new incarnation takes the Lease over (new UUID); a previous incarnation\'s Lease is updated, not duplicated', async () => {
    const first = make();
    first.start();
    await eventually(() => own() !== undefined, { ...POLL, what: 'written' });
    first.stop();
    const second = make();
    second.start();
    await eventually(() => (own()!.object['spec'] as { holderIdentity: string }).holderIdentity === second.holderIdentity, { ...POLL, what: 'taken over' });
    assert.notEqual(first.holderIdentity, second.holderIdentity);
    assert.equal((own()!.object['spec'] as { leaseTransitions?: number }).leaseTransitions, 1);
    assert.ok(second.log.lines.some((l) => l.includes('taking over the identity lease from a previous holder')));
  });

  test('conflicts: a write by someone else (409) is re-read and retried; a deleted Lease (404) is re-created', async () => {
    const m = make({ renewIntervalMs: 300 });
    m.start();
    await eventually(() => own() !== undefined, { ...POLL, what: 'written' });
    // Someone edits it (e.g. kubectl annotate): our cached resourceVersion is stale now.
    const edited = structuredClone(own()!.object);
    edited.metadata.annotations = { ...edited.metadata.annotations, note: 'edited' };
    const editedRV = store.update(G, 'leases', edited).rv;
    await eventually(() => own()!.rv > editedRV && (own()!.object['spec'] as { holderIdentity: string }).holderIdentity === m.holderIdentity, { ...POLL, what: 'renewed past the edit', timeoutMs: 2000 });
    assert.equal(own()!.object.metadata.annotations!.note, 'edited', 'the edit is kept');
    store.delete(G, 'leases', NS, 'mvproxy-self');
    await eventually(() => own() !== undefined, { ...POLL, what: 're-created', timeoutMs: 2000 });
    assert.ok(!m.log.lines.some((l) => l.includes('renewing the identity lease failed')), m.log.lines.join(''));
  });

  test('release deletes its own Lease, but not one a newer incarnation holds', async () => {
    const m = make();
    m.start();
    await eventually(() => own() !== undefined, { ...POLL, what: 'written' });
    await m.release(2000);
    assert.equal(own(), undefined);

    const a = make();
    a.start();
    await eventually(() => own() !== undefined, { ...POLL, what: 'written' });
    const b = make(); // same server ID, newer process
    b.start();
    await eventually(() => (own()!.object['spec'] as { holderIdentity: string }).holderIdentity === b.holderIdentity, { ...POLL, what: 'taken over' });
    await a.release(2000);
    assert.ok(own(), 'the newer holder keeps it');
  });

  test('release never waits longer than its bound, whatever the apiserver does (kubernetes#140242)', async () => {
    // An apiserver that accepts connections and never answers.
    const sockets = new Set<import('node:net').Socket>();
    const black = http.createServer(() => {});
    black.on('connection', (s) => sockets.add(s));
    await new Promise<void>((r) => black.listen(0, '127.0.0.1', r));
    const blackPool = new Pool(`http://127.0.0.1:${(black.address() as { port: number }).port}`);
    const m = make({ local: blackPool, timeoutMs: 60_000 });
    // Pretend the Lease was written once, so release has something to delete.
    (m as unknown as { own: unknown }).own = { metadata: { name: 'mvproxy-self', resourceVersion: '5' } };
    m.start();
    const t0 = Date.now();
    await m.release(300);
    const took = Date.now() - t0;
    assert.ok(took < 800, `release took ${took} ms`);
    assert.ok(m.log.lines.some((l) => l.includes('could not delete the identity lease; it expires by itself')));
    m.stop();
    for (const s of sockets) s.destroy();
    await blackPool.destroy();
    await new Promise((r) => black.close(r));
  });

  test('the others: listed and watched by label; a restart (new holder) notifies, renewals do not; deletion does', async () => {
    store.create(G, 'leases', peerLease('mvproxy-b', { address: '10.0.0.2:6445' }));
    store.create(G, 'leases', peerLease('kube-apiserver-x', { label: 'other' })); // not ours: ignored
    const m = make();
    let changes = 0;
    m.onChange(() => changes++);
    m.start();
    await eventually(() => m.synced && m.peers().length === 1, { ...POLL, what: 'listed' });
    assert.deepEqual(m.peers(), [{ id: 'mvproxy-b', address: '10.0.0.2:6445', incarnation: 'mvproxy-b_1' }]);
    assert.equal(m.live('mvproxy-b'), true);
    const after = changes;
    // A renewal: nothing changes.
    const renewed = structuredClone(store.get(G, 'leases', NS, 'mvproxy-b')!.object);
    (renewed['spec'] as Record<string, unknown>).renewTime = microTime(Date.now());
    store.update(G, 'leases', renewed);
    await sleep(150);
    assert.equal(changes, after, 'a renewal is not a change');
    // A restart: new holder.
    const restarted = structuredClone(store.get(G, 'leases', NS, 'mvproxy-b')!.object);
    (restarted['spec'] as Record<string, unknown>).holderIdentity = 'mvproxy-b_2';
    store.update(G, 'leases', restarted);
    await eventually(() => m.peers()[0]?.incarnation === 'mvproxy-b_2', { ...POLL, what: 'restart seen' });
    assert.equal(changes, after + 1);
    // A new one, then a deletion.
    store.create(G, 'leases', peerLease('mvproxy-c', { address: '[fd00::3]:6445' }));
    await eventually(() => m.peers().length === 2, { ...POLL, what: 'c added' });
    store.delete(G, 'leases', NS, 'mvproxy-b');
    await eventually(() => m.peers().length === 1 && m.peers()[0].id === 'mvproxy-c', { ...POLL, what: 'b deleted' });
    // No usable address: never listed, and said once.
    store.create(G, 'leases', peerLease('mvproxy-d', { address: '' }));
    await sleep(150);
    assert.deepEqual(m.peers().map((p) => p.id), ['mvproxy-c']);
    assert.ok(m.log.lines.some((l) => l.includes('has no usable peer address')));
  });

  test('expiry: not live once renewTime + duration passed, listed for the grace period, then gone', async () => {
    store.create(G, 'leases', peerLease('mvproxy-old', { renewTime: Date.now() - 3_600_000, duration: 30 })); // a crashed node's Lease from an hour ago
    store.create(G, 'leases', peerLease('mvproxy-b', { duration: 1 }));
    const m = make({ expiredGraceMs: 800 });
    const events: string[] = [];
    m.onChange(() => events.push(m.peers().map((p) => `${p.id}:${m.live(p.id)}`).join(',')));
    m.start();
    await eventually(() => m.synced, { ...POLL, what: 'listed' });
    assert.deepEqual(m.peers().map((p) => p.id), ['mvproxy-b'], 'long expired: gone at once');
    assert.equal(m.live('mvproxy-b'), true);
    await eventually(() => !m.live('mvproxy-b'), { ...POLL, what: 'b expired', timeoutMs: 2000 });
    assert.deepEqual(m.peers().map((p) => p.id), ['mvproxy-b'], 'still listed: its GVRs answer 503 during the grace period');
    await eventually(() => m.peers().length === 0 && events.length === 3, { ...POLL, what: 'b forgotten', timeoutMs: 2000 });
    assert.deepEqual(events, ['mvproxy-b:true', 'mvproxy-b:false', '']);
  });

  test('clock skew: a Lease seen renewed is alive even if its writer\'s clock is an hour behind', async () => {
    const skew = -3_600_000;
    store.create(G, 'leases', peerLease('mvproxy-b', { duration: 1, renewTime: Date.now() + skew }));
    const m = make();
    m.start();
    await eventually(() => m.synced, { ...POLL, what: 'listed' });
    assert.deepEqual(m.peers(), [], 'first sight of an old renewTime: gone');
    const timer = setInterval(() => {
      const o = structuredClone(store.get(G, 'leases', NS, 'mvproxy-b')!.object);
      (o['spec'] as Record<string, unknown>).renewTime = microTime(Date.now() + skew);
      store.update(G, 'leases', o);
    }, 300);
    try {
      await eventually(() => m.peers().length === 1 && m.live('mvproxy-b'), { ...POLL, what: 'alive by observation' });
      await sleep(1500);
      assert.equal(m.live('mvproxy-b'), true, 'still alive while renewals keep coming');
    } finally {
      clearInterval(timer);
    }
    await eventually(() => !m.live('mvproxy-b'), { ...POLL, what: 'expires when renewals stop', timeoutMs: 2500 });
  });

  test('relists after 410 Expired; retries with backoff while the apiserver is away', async () => {
    store.create(G, 'leases', peerLease('mvproxy-b'));
    const m = make();
    m.start();
    await eventually(() => m.peers().length === 1, { ...POLL, what: 'listed' });
    const port = sim.port;
    await sim.close(); // the pool reconnects by itself once it is back
    // While it is away: b leaves, c arrives, and the history is compacted.
    store.delete(G, 'leases', NS, 'mvproxy-b');
    store.create(G, 'leases', peerLease('mvproxy-c'));
    store.compact();
    await sleep(300);
    sim = await startSimApiserver({ name: 'sim', kubernetesVersion: 'v1.37', store, port });
    await eventually(() => m.peers().map((p) => p.id).join() === 'mvproxy-c', { ...POLL, what: 'relisted', timeoutMs: 5000 });
    const lines = m.log.lines.join('');
    assert.match(lines, /listing or watching identity leases failed; retrying with backoff/);
    assert.equal(lines.split('listing or watching identity leases failed').length - 1, 1, 'said once per outage');
    assert.match(lines, /identity lease watch expired; relisting/);
  });
});

test('host names become valid label values (a 64-byte host name must not break the Lease, kubernetes#140242)', () => {
  assert.equal(hostLabel('cp-1.example.com'), 'cp-1.example.com');
  const long = 'a'.repeat(60) + '.example.com';
  assert.equal(hostLabel(long).length <= 63, true);
  assert.match(hostLabel(long), /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/);
  assert.equal(hostLabel('weird host!'), 'weird-host');
});
