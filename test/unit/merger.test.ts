import { eventually } from '../support/poll';
import { readdirSync } from 'node:fs';
// DiscoveryMerger: the worker pool and the inline path build byte-identical snapshots; inputs go
// in as transferred ArrayBuffers; a worker that cannot start falls back to inline with a flag.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DiscoveryMerger, DiscoveryMergerError, copyToArrayBuffer, discoveryMergeInput } from '../../src/aggregation/merger';
import type { ServedDiscovery } from '../../src/aggregation/served-discovery';
import type { APIGroupDiscovery, APIGroupDiscoveryList } from '../../src/aggregation/types';
import { encodeJSON } from '../../src/aggregation/codec/json';
import { readFixture, aggregatedFixture } from '../support/fixtures';
import { oneResourceChanged, syntheticServer } from '../../native-bench/synthetic';

const raw133 = readFixture('v1.33-0b1dcaba/aggregated_v2.json');
const raw137 = readFixture('v1.37.0-dev-6732d913/aggregated_v2.json');

const worker = new DiscoveryMerger({ threads: 1 });
const inline = new DiscoveryMerger({ inline: true });
after(async () => {
  await worker.close();
  await inline.close();
});

function assertSameSnapshot(a: ServedDiscovery, b: ServedDiscovery, label = '', sameGeneration = true): void {
  assert.ok(a.merged.json.equals(b.merged.json), `${label} merged json`);
  assert.ok(a.merged.protobuf.equals(b.merged.protobuf), `${label} merged protobuf`);
  assert.ok(a.local.json.equals(b.local.json), `${label} local json`);
  assert.ok(a.local.protobuf.equals(b.local.protobuf), `${label} local protobuf`);
  assert.equal(a.merged.etag, b.merged.etag, label);
  assert.equal(a.local.etag, b.local.etag, label);
  assert.ok(a.legacy.apis.equals(b.legacy.apis), `${label} legacy apis`);
  for (const k of ['groups', 'resourceLists'] as const) {
    assert.deepEqual([...a.legacy[k].keys()], [...b.legacy[k].keys()], `${label} ${k}`);
    for (const [key, body] of a.legacy[k]) assert.ok(body.equals(b.legacy[k].get(key)!), `${label} ${k} ${key}`);
  }
  assert.deepEqual(a.counts, b.counts, label);
  if (sameGeneration) assert.equal(a.generation, b.generation, label);
}

const input = (excluded: string[] = []) => ({
  localID: 'apiserver-b',
  localApis: copyToArrayBuffer(raw133),
  peers: [{ id: 'apiserver-a', apis: copyToArrayBuffer(raw137) }],
  excludedGroupVersions: excluded,
  generation: 7,
});

test('worker and inline builds are byte-identical (fixture pair, with and without exclusions)', async () => {
  for (const excluded of [[], ['resource.k8s.io/v1alpha3', 'storagemigration.k8s.io/v1']]) {
    const w = await worker.build(input(excluded));
    const i = await inline.build(input(excluded));
    assert.equal(w.build.thread, 'worker');
    assert.equal(i.build.thread, 'inline');
    assert.equal(w.build.workerError, undefined);
    assert.ok(w.build.ms > 0 && typeof w.build.wallMs === 'number');
    assertSameSnapshot(w, i, JSON.stringify(excluded));
    assert.equal(w.generation, 7);
    assert.ok(Object.isFrozen(w) && Object.isFrozen(w.merged));
  }
});

test('the worker path transfers: input ArrayBuffers are detached, Buffer views are copied', async () => {
  const local = copyToArrayBuffer(raw133);
  const peer = copyToArrayBuffer(raw137);
  const view = Buffer.from(raw137); // a view the caller keeps (FetchedDocument.raw)
  const pending = worker.build({ localID: 'a', localApis: local, peers: [{ id: 'b', apis: peer }, { id: 'c', apis: view }], excludedGroupVersions: new Set<string>() });
  const s = await pending;
  assert.equal(local.byteLength, 0, 'local input detached');
  assert.equal(peer.byteLength, 0, 'peer input detached');
  assert.ok(view.equals(raw137), 'a Buffer view stays intact');
  assert.equal(s.counts.servers, 3);
  // The result arrives as transferred ArrayBuffers wrapped without copying: the merged document's
  // own (moved, not copied, in the worker), the local document in one of its own (so that keeping
  // it for later builds keeps nothing else alive), the legacy documents in a third.
  for (const doc of [s.merged, s.local]) {
    assert.equal(doc.json.buffer, doc.protobuf.buffer);
    assert.equal(doc.json.buffer.byteLength, doc.json.length + doc.protobuf.length);
  }
  assert.notEqual(s.local.json.buffer, s.merged.json.buffer);
  assert.notEqual(s.legacy.apis.buffer, s.merged.json.buffer);
  assert.notEqual(s.legacy.apis.buffer, s.local.json.buffer);
});

test('the same ArrayBuffer twice is transferred once', async () => {
  const shared = copyToArrayBuffer(raw137);
  const s = await worker.build({ localID: 'a', localApis: copyToArrayBuffer(raw137), peers: [{ id: 'b', apis: shared }, { id: 'c', apis: shared }], excludedGroupVersions: [] });
  assert.equal(s.merged, s.local);
  assert.equal(shared.byteLength, 0);
});

test('generations count up per merger unless given', async () => {
  const m = new DiscoveryMerger({ inline: true });
  const a = await m.build({ localID: 'a', localApis: raw137, peers: [], excludedGroupVersions: [] });
  const b = await m.build({ localID: 'a', localApis: raw137, peers: [], excludedGroupVersions: [] });
  assert.equal(b.generation, a.generation + 1);
  const c = await m.build({ localID: 'a', localApis: raw137, peers: [], excludedGroupVersions: [], generation: 41 });
  const d = await m.build({ localID: 'a', localApis: raw137, peers: [], excludedGroupVersions: [] });
  assert.equal(c.generation, 41);
  assert.equal(d.generation, 42);
  await m.close();
  await assert.rejects(m.build({ localID: 'a', localApis: raw137, peers: [], excludedGroupVersions: [] }), /closed/);
});

test('a bad document rejects the build (not a worker failure); the worker keeps working', async () => {
  const bad = new TextEncoder().encode('{"kind":"APIGroupDiscoveryList","items":');
  await assert.rejects(
    worker.build({ localID: 'a', localApis: copyToArrayBuffer(raw137), peers: [{ id: 'b', apis: bad }], excludedGroupVersions: [] }),
    (e: unknown) => e instanceof DiscoveryMergerError && !e.workerFailed && /peer b/.test(e.message),
  );
  await assert.rejects(inline.build({ localID: 'a', localApis: new TextEncoder().encode('[]'), peers: [], excludedGroupVersions: [] }), /not an APIGroupDiscoveryList/);
  const s = await worker.build(input());
  assert.equal(s.build.thread, 'worker');
  assert.equal(worker.workerError, undefined);
});

test('a worker that cannot start: builds run inline, flagged with workerError', async () => {
  const m = new DiscoveryMerger({ workerFilename: '/nonexistent/merge.worker.js' });
  const s = await m.build(input());
  assert.equal(s.build.thread, 'inline');
  assert.match(s.build.workerError ?? '', /unavailable/);
  assert.match(m.workerError ?? '', /unavailable/);
  assertSameSnapshot(s, await inline.build(input()));
  await m.close();
});

// ---- five synthetic servers ------------------------------------------------------------------

const base = [...aggregatedFixture('v1.37').items, ...aggregatedFixture('v1.33').items];

function synthetic(pick: boolean[], crds: number, seed: number): APIGroupDiscoveryList {
  const items: APIGroupDiscovery[] = base.filter((_, i) => pick[i % pick.length]);
  for (let i = 0; i < crds; i++) {
    items.push({
      metadata: { name: `g${(i + seed) % 7}.example.com` },
      versions: [{ version: i % 2 ? 'v1' : 'v1beta1', freshness: 'Current', resources: [{
        resource: `widgets${i}`, responseKind: { group: '', version: '', kind: `Widget${i}` }, scope: 'Namespaced', singularResource: `widget${i}`,
        verbs: seed % 2 ? ['get', 'list'] : ['create', 'get', 'list', 'watch'], subresources: [{ subresource: 'status', verbs: ['get'] }],
      }] }],
    });
  }
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}

test('five synthetic servers: worker = inline, and the build completes (property)', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }), fc.nat(12)), { minLength: 5, maxLength: 5 }),
      fc.array(fc.constantFrom('apps/v1', 'g1.example.com/v1', 'resource.k8s.io/v1alpha3', 'batch/v1'), { maxLength: 3 }),
      async (servers, excluded) => {
        const docs = servers.map(([pick, crds], i) => encodeJSON(synthetic(pick, crds, i)));
        const mk = () => ({
          localID: 's2',
          localApis: copyToArrayBuffer(docs[2]!),
          peers: docs.flatMap((d, i) => (i === 2 ? [] : [{ id: `s${i}`, apis: copyToArrayBuffer(d) }])),
          excludedGroupVersions: excluded,
          generation: 1,
        });
        const w = await worker.build(mk());
        assert.equal(w.build.thread, 'worker');
        assert.equal(w.counts.servers, 5);
        assertSameSnapshot(w, await inline.build(mk()));
      },
    ),
    { numRuns: 8, seed: 4020 },
  );
});

test('discoveryMergeInput: key changes exactly with the inputs; views are passed (copied on build)', async () => {
  const local = { etag: '"L1"', raw: raw133 };
  const a = discoveryMergeInput('s0', local, new Map([['s2', { etag: '"P2"', raw: raw137 }], ['s1', { etag: '', raw: raw137 }]]), ['b/v1', 'a/v1', 'a/v1']);
  const b = discoveryMergeInput('s0', local, [['s1', { etag: '', raw: Buffer.from(raw137) }], ['s2', { etag: '"P2"', raw: raw137 }]], new Set(['a/v1', 'b/v1']));
  assert.equal(a.key, b.key);
  assert.deepEqual(a.input.peers.map((p) => p.id), ['s1', 's2']);
  assert.deepEqual(a.input.excludedGroupVersions, ['a/v1', 'b/v1']);
  assert.notEqual(discoveryMergeInput('s0', { etag: '"L2"', raw: raw133 }, [], []).key, discoveryMergeInput('s0', local, [], []).key);
  assert.notEqual(discoveryMergeInput('s0', local, [['s1', { etag: '', raw: raw133 }]], []).key, discoveryMergeInput('s0', local, [['s1', { etag: '', raw: raw137 }]], []).key);
  assert.notEqual(discoveryMergeInput('s0', local, [], ['x/v1']).key, discoveryMergeInput('s0', local, [], []).key);
  const s = await worker.build(a.input);
  assert.equal(s.counts.servers, 3);
  assert.ok(raw133.length > 0 && raw137.length > 0, 'caller bytes intact');
});

// ---- what crosses the worker boundary between builds ---------------------------------------------

test('keyed inputs: unchanged documents are not sent again, the unchanged local encodings not sent back; bytes = inline', async () => {
  const m = new DiscoveryMerger({ threads: 1 });
  const ref = new DiscoveryMerger({ inline: true });
  try {
    const base = [0, 1, 2].map((i) => encodeJSON(syntheticServer(300, i)));
    const changed = oneResourceChanged(base[2]!, 'changed-');
    const doc = (raw: Buffer, etag: string) => ({ etag, raw });
    const views: Buffer[] = [];
    const input = (peer2: Buffer, etag2: string, excluded: string[] = []) => {
      const local = doc(Buffer.from(base[0]!), '"L"');
      views.push(local.raw);
      return discoveryMergeInput('s0', local, [['s1', doc(base[1]!, '"P1"')], ['s2', doc(peer2, etag2)]], excluded).input;
    };
    const sent = () => m.transfers.documentsSent;
    const a = await m.build(input(base[2]!, '"P2"'));
    assert.equal(sent(), 3, 'first build: every document sent');
    const b = await m.build(input(changed, '"P2b"'));
    assert.equal(sent(), 4, 'one peer changed: only its document sent');
    const c = await m.build(input(changed, '"P2b"', ['crd3.example.com/v1']));
    assert.equal(sent(), 4, 'only the exclusions changed: no document sent');
    assert.equal(m.transfers.documentsKept, 5);
    assertSameSnapshot(a, await ref.build(input(base[2]!, '"P2"')), 'first', false);
    assertSameSnapshot(b, await ref.build(input(changed, '"P2b"')), 'changed peer', false);
    assertSameSnapshot(c, await ref.build(input(changed, '"P2b"', ['crd3.example.com/v1'])), 'exclusions', false);
    // The local document did not change: its encodings were not sent back, the ones held are reused.
    assert.equal(b.local, a.local);
    assert.equal(c.local, a.local);
    assert.notEqual(b.merged.json.buffer, a.local.json.buffer);
    assert.ok(views.every((v) => v.length > 0), 'caller views intact');
  } finally {
    await m.close();
    await ref.close();
  }
});

test('keyed inputs: a document the worker no longer has is sent again (concurrent builds), results exact', async () => {
  const m = new DiscoveryMerger({ threads: 1 });
  const ref = new DiscoveryMerger({ inline: true });
  try {
    const docs = [0, 1, 2, 3].map((i) => encodeJSON(syntheticServer(200, i)));
    const input = (l: number, p: number) =>
      discoveryMergeInput('s0', { etag: `"${l}"`, raw: docs[l]! }, [['s1', { etag: `"${p}"`, raw: docs[p]! }]], []).input;
    await m.build(input(0, 1)); // the worker now holds 0 and 1
    // Submitted together: the second goes by key only (0 and 1), but runs after the first evicted them.
    const [x, y] = await Promise.all([m.build(input(2, 3)), m.build(input(0, 1))]);
    assertSameSnapshot(x, await ref.build(input(2, 3)), 'x', false);
    assertSameSnapshot(y, await ref.build(input(0, 1)), 'y', false);
    assert.equal(m.transfers.resends, 1);
    const z = await m.build(input(0, 3));
    assertSameSnapshot(z, await ref.build(input(0, 3)), 'z', false);
    assert.equal(m.workerError, undefined);
  } finally {
    await m.close();
    await ref.close();
  }
});

test('an idle worker exits (workerIdleMs) and the next build starts another: the documents it lost are sent again, results exact', async () => {
  const m = new DiscoveryMerger({ threads: 1, workerIdleMs: 200 });
  const ref = new DiscoveryMerger({ inline: true });
  try {
    const docs = [0, 1, 2].map((i) => encodeJSON(syntheticServer(200, i)));
    const input = (l: number, p: number) =>
      discoveryMergeInput('s0', { etag: `"${l}"`, raw: docs[l]! }, [['s1', { etag: `"${p}"`, raw: docs[p]! }]], []).input;
    const first = await m.build(input(0, 1));
    const threads = () => readdirSync(`/proc/${process.pid}/task`).length;
    const withWorker = threads();
    await eventually(() => threads() < withWorker, { timeoutMs: 5000, intervalMs: 50, what: 'the idle worker exited' });
    // Sent by key (the main thread believes the worker has them): the new worker says missing.
    const again = await m.build(input(0, 2));
    assert.equal(m.transfers.resends, 1);
    assertSameSnapshot(again, await ref.build(input(0, 2)), 'after the restart', false);
    assertSameSnapshot(first, await ref.build(input(0, 1)), 'before', false);
    assert.equal(again.build.thread, 'worker');
    assert.equal(m.workerError, undefined);
  } finally {
    await m.close();
    await ref.close();
  }
});
