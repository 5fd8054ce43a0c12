// The publisher's one rule about publication (src/snapshot/publisher.ts, docs/architecture.md):
// the route table and the discovery documents merged from the same views go out together, in one
// snapshot. When the merge input changed, the table waits for the merge; a merge that takes longer
// than MERGE_WAIT_MS does not hold routing back: the table goes out with the previous documents.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Pool } from 'undici';
import { SnapshotPublisher } from '../../src/snapshot/publisher';
import { DiscoveryMerger, type DiscoveryMergeInput } from '../../src/aggregation/merger';
import { SnapshotHolder } from '../../src/snapshot/holder';
import { Metrics } from '../../src/telemetry/metrics';
import { createLogger } from '../../src/telemetry/log';
import type { PeerPools } from '../../src/upstream/pools';
import { CORE_API, V133_APIS, V137_APIS } from '../support/discovery-bodies';
import { eventually } from '../support/poll';
import { setTimeout as sleep } from 'node:timers/promises';

const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** A merger whose builds wait until the test opens the gate. */
class GatedMerger extends DiscoveryMerger {
  builds = 0;
  private open: () => void = () => undefined;
  private gate: Promise<void> = Promise.resolve();
  hold(): void {
    this.gate = new Promise((r) => (this.open = r));
  }
  release(): void {
    this.open();
    this.gate = Promise.resolve();
  }
  override async build(input: DiscoveryMergeInput) {
    this.builds++;
    await this.gate;
    return super.build(input);
  }
}

async function fakeApiserver(apis: { body: Buffer; gate?: Promise<void>; held?: number }) {
  const answer = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const body = req.url === '/api' ? CORE_API : req.url === '/apis' ? apis.body : undefined;
    if (!body) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': AGG }).end(body);
  };
  const server = http.createServer((req, res) => {
    if (!apis.gate) return answer(req, res);
    apis.held = (apis.held ?? 0) + 1;
    void apis.gate.then(() => answer(req, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { address: `127.0.0.1:${port}`, url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

type Apis = Parameters<typeof fakeApiserver>[0];

/** A publisher over a fake local apiserver and one fake peer ('peer-1'), refreshed once. */
async function startPublisher(localApis: Apis, peerApis: Apis, o: { merger: DiscoveryMerger; snapshots: SnapshotHolder; peerGraceMs: number; fetchTimeoutMs: number }) {
  const local = await fakeApiserver(localApis);
  const peer = await fakeApiserver(peerApis);
  const localPool = new Pool(local.url);
  const peerPool = new Pool(peer.url);
  const publisher = new SnapshotPublisher({
    local: localPool,
    peerPools: { get: () => peerPool, retain: () => undefined } as unknown as PeerPools,
    snapshots: o.snapshots,
    localID: 'local',
    peers: () => [{ id: 'peer-1', address: peer.address }],
    merger: o.merger,
    refreshIntervalMs: 3_600_000,
    peerGraceMs: o.peerGraceMs,
    fetchTimeoutMs: o.fetchTimeoutMs,
    metrics: new Metrics(),
    log: createLogger(0, 'json', () => undefined),
  });
  await publisher.refresh();
  return {
    publisher,
    async close() {
      await publisher.stop();
      await localPool.close();
      await peerPool.close();
      await local.close();
      await peer.close();
    },
  };
}

describe('the snapshot publisher publishes table and documents together', () => {
  const peerApis = { body: V133_APIS };
  let publisher: SnapshotPublisher;
  let close: () => Promise<void>;
  const merger = new GatedMerger({ inline: true });
  const snapshots = new SnapshotHolder();
  const workloads = () => snapshots.current.table.lookup('scheduling.k8s.io', 'v1beta1', 'workloads')?.peers;

  before(async () => {
    ({ publisher, close } = await startPublisher({ body: V133_APIS }, peerApis, { merger, snapshots, peerGraceMs: 60_000, fetchTimeoutMs: 10_000 }));
  });
  after(async () => {
    merger.release();
    await close();
  });

  test('while the merge of a changed input runs, the previous table stays published; then both change in one publication', async () => {
    const before = snapshots.current;
    assert.ok(before.discovery, 'the first snapshot has its documents');
    assert.equal(workloads(), undefined, 'the v1.33 peer serves no workloads');

    merger.hold();
    peerApis.body = V137_APIS; // the peer restarted as v1.37: it now serves workloads
    const builds = merger.builds;
    const refreshed = publisher.refresh();
    await eventually(() => merger.builds > builds, { what: 'the merge of the new input started', timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(snapshots.current, before, 'nothing is published while the documents are being merged');
    assert.equal(workloads(), undefined);

    merger.release();
    await refreshed;
    const after = snapshots.current;
    assert.equal(after.generation, before.generation + 1, 'one publication');
    assert.deepEqual(workloads(), ['peer-1'], 'the new table routes workloads to the peer');
    assert.notEqual(after.discovery, before.discovery, 'and carries the documents merged from the same views');
    assert.ok(after.discovery!.counts.resources > before.discovery!.counts.resources);
  });

  test('a merge slower than MERGE_WAIT_MS (5 s) does not hold routing back: the table goes out with the previous documents', async () => {
    const before = snapshots.current;
    merger.hold();
    peerApis.body = V133_APIS; // and back: workloads leave
    const refreshed = publisher.refresh();
    await eventually(() => workloads() === undefined, { what: 'the table published without waiting for the merge', timeoutMs: 8_000, intervalMs: 100 });
    assert.equal(snapshots.current.discovery, before.discovery, 'with the previous documents');
    merger.release();
    await refreshed;
    await eventually(() => snapshots.current.discovery !== before.discovery, { what: 'the documents follow once the merge ends', timeoutMs: 5_000 });
  });
});

describe('a peer slow to answer its discovery does not hold back the local view', () => {
  const localApis: { body: Buffer } = { body: V133_APIS };
  const peerApis: { body: Buffer; gate?: Promise<void>; held?: number } = { body: V133_APIS };
  let publisher: SnapshotPublisher;
  let close: () => Promise<void>;
  const snapshots = new SnapshotHolder();
  const workloads = () => snapshots.current.table.lookup('scheduling.k8s.io', 'v1beta1', 'workloads');

  // fetchTimeoutMs longer than the test's bound below: without the behaviour the local change waits for it.
  before(async () => {
    ({ publisher, close } = await startPublisher(localApis, peerApis, { merger: new DiscoveryMerger({ inline: true }), snapshots, peerGraceMs: 600_000, fetchTimeoutMs: 60_000 }));
  });
  after(() => close());

  test('the local apiserver starts serving a kind while a peer does not answer: routed locally, and refreshes end, before the peer answers; the peer is not asked again meanwhile and keeps its view', async () => {
    assert.equal(workloads(), undefined, 'nobody serves workloads yet');
    const fetchedAt = () => new Map(publisher.lastSuccess()).get('peer-1');
    const before = fetchedAt();
    let release: () => void = () => undefined;
    peerApis.gate = new Promise((r) => (release = r));
    peerApis.held = 0;
    localApis.body = V137_APIS; // the local apiserver was upgraded to v1.37: it serves workloads
    try {
      // A second refresh asked meanwhile (the local apiserver serving again, a membership change) is
      // coalesced into the first: both end without the peer's answer.
      const refreshes = Promise.all([publisher.refresh(), publisher.refresh()]).then(() => 'ended' as const);
      const ended = await Promise.race([refreshes, sleep(20_000).then(() => 'still waiting for the peer' as const)]);
      assert.equal(ended, 'ended');
      assert.equal(workloads()?.servedLocally, true, 'workloads are routed to the local apiserver');
      assert.equal(peerApis.held, 2, "the peer was asked for /api and /apis once: its fetch in flight is not repeated");
      assert.equal(publisher.peerUp('peer-1'), true, 'the peer keeps its last good view meanwhile');
      assert.equal(fetchedAt(), before);
    } finally {
      peerApis.gate = undefined;
      release();
    }
    await eventually(() => (fetchedAt() ?? 0) > (before ?? 0), { what: "the peer's late answer taken in", timeoutMs: 10_000, intervalMs: 20 });
    assert.equal(workloads()?.servedLocally, true);
  });

  test('a slow peer that answers what it answered before: its late answer is taken in, and nothing is published again', async () => {
    const fetchedAt = () => new Map(publisher.lastSuccess()).get('peer-1');
    const before = fetchedAt();
    let release: () => void = () => undefined;
    peerApis.gate = new Promise((r) => (release = r));
    try {
      await publisher.refresh(); // publishes the local view without the peer's
    } finally {
      peerApis.gate = undefined;
      release();
    }
    const published = snapshots.current.generation;
    await eventually(() => (fetchedAt() ?? 0) > (before ?? 0), { what: "the peer's late answer taken in", timeoutMs: 10_000, intervalMs: 20 });
    await publisher.mergesDone();
    assert.equal(snapshots.current.generation, published, 'the same views publish no new snapshot (generation, /debug/routes)');
    assert.equal(workloads()?.servedLocally, true);
  });
});
