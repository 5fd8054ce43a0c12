// The route table and its name index with what a peer's document may hold at PEER_DISCOVERY_LIMITS
// (issue 27): names that all share length, first and last byte (one slot hash), a resource name
// listed under many group/versions, a table built a slice at a time, and the routing view the
// merge worker sends instead of the decoded list. Each case fails with the part it pins removed:
// crowded names probed one by one (quadratic), long runs walked, slices that run to the end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Names } from '../../src/request/names';
import { RouteTable, type PeerDiscovery } from '../../src/routing/routetable';
import { routingView } from '../../src/aggregation/decode';
import type { APIGroupDiscovery } from '../../src/aggregation/types';
import { aggregatedFixture } from '../support/fixtures';

const view = (s: string) => {
  const b = new TextEncoder().encode(`/${s}/`);
  return { dv: new DataView(b.buffer), start: 1, end: 1 + b.length - 2 };
};
const pad = (i: number) => String(i).padStart(6, '0');

test('Names: 30,000 names of one length, first and last byte are each found, others not, each by a bounded number of reads', () => {
  const crowded = Array.from({ length: 30_000 }, (_, i) => `r${pad(i)}s`);
  const names = new Names([...crowded, 'pods', 'pvcs', 'pads', 'v1', 'é']);
  for (const n of [crowded[0]!, crowded[12_345]!, crowded[29_999]!, 'pods', 'pvcs', 'pads', 'v1']) {
    const v = view(n);
    assert.equal(names.find(v.dv, v.start, v.end), n);
  }
  for (const n of ['r999999s', 'r00000xs', 'pids', 'é', 'r0000é1s']) {
    const v = view(n);
    assert.equal(names.find(v.dv, v.start, v.end), undefined, n);
  }
  // One slot stands for all of them: a lookup reads the path's bytes a bounded number of times,
  // not once per name of that hash (30,000 compares, and as many probes per insert: quadratic).
  for (const n of [crowded[29_999]!, 'r999999s']) {
    const b = new TextEncoder().encode(n);
    const dv = new DataView(b.buffer);
    let reads = 0;
    const get8 = dv.getUint8.bind(dv);
    const get32 = dv.getUint32.bind(dv);
    dv.getUint8 = (i) => (reads++, get8(i));
    dv.getUint32 = (i, little) => (reads++, get32(i, little));
    names.find(dv, 0, b.length);
    assert.ok(reads <= 2 + b.length + 8, `${reads} reads of the path's bytes for ${n}`);
  }
});

/** A peer document: `groups` groups, each with one version, each with `perVersion` resources named by `resource(g, k)`. */
function peerGroups(groups: number, perVersion: number, resource: (g: number, k: number) => string): APIGroupDiscovery[] {
  return Array.from({ length: groups }, (_, g) => ({
    metadata: { name: `g${pad(g)}.x` },
    versions: [{ version: 'v1', resources: Array.from({ length: perVersion }, (_, k) => ({ resource: resource(g, k), scope: 'Namespaced', singularResource: '', verbs: ['get'] })) }],
  }));
}

test('a resource name listed under 2,000 group/versions is found in each, and where it is not listed is not', () => {
  const peers = new Map<string, PeerDiscovery>([['p', { address: '127.0.0.1:1', groups: peerGroups(2_000, 2, (g, k) => (k === 0 ? 'things' : `own${g}`)) }]]);
  const t = RouteTable.build({ synced: true, local: { groups: aggregatedFixture('v1.33').items }, peers });
  assert.equal(t.lookup('g001999.x', 'v1', 'things')?.peers[0], 'p');
  assert.equal(t.lookup('g000000.x', 'v1', 'things')?.peers[0], 'p');
  assert.equal(t.lookup('g000000.x', 'v2', 'things'), undefined);
  assert.equal(t.lookup('nope', 'v1', 'things'), undefined);
  assert.equal(t.lookup('g000007.x', 'v1', 'own7')?.decision.kind, 'peer');
  assert.equal(t.lookup('apps', 'v1', 'deployments')?.servedLocally, true);
  // Entries are shared by every GVR with the same servers.
  assert.equal(t.lookup('g000001.x', 'v1', 'things'), t.lookup('g000002.x', 'v1', 'own2'));
});

test('buildSliced: a small table at once, a large one a slice at a time, the same table as build(); a newer publication abandons it', async () => {
  const local = { groups: aggregatedFixture('v1.33').items };
  const small = RouteTable.buildSliced({ synced: true, local, peers: new Map() }, 5);
  assert.ok(small instanceof RouteTable);
  const peers = new Map<string, PeerDiscovery>([['p', { address: '127.0.0.1:1', groups: peerGroups(4_000, 5, (g, k) => `r${pad(g * 5 + k)}s`) }]]);
  const input = { synced: true, local, peers };
  const sliced = RouteTable.buildSliced(input, 1);
  assert.ok(sliced instanceof Promise, 'not built in one slice of 1 ms');
  const t = (await sliced)!;
  const whole = RouteTable.build(input);
  assert.equal(t.size, whole.size);
  assert.deepEqual([...t.entries()], [...whole.entries()]);
  assert.equal(await RouteTable.buildSliced(input, 1, () => true), undefined);
});

test("the routing view routes as the document it was made from, stale versions left out", () => {
  const doc = aggregatedFixture('v1.37');
  doc.items[0]!.versions![0]!.freshness = 'Stale';
  const peers = (p: PeerDiscovery) => new Map([['p', p]]);
  const fromGroups = RouteTable.build({ synced: true, local: { groups: [] }, peers: peers({ address: '127.0.0.1:1', groups: doc.items }) });
  const fromView = RouteTable.build({ synced: true, local: { groups: [] }, peers: peers({ address: '127.0.0.1:1', routes: [routingView(doc)] }) });
  assert.deepEqual([...fromView.entries()], [...fromGroups.entries()]);
  const stale = doc.items[0]!;
  assert.equal(fromView.lookup(stale.metadata.name ?? '', stale.versions![0]!.version, stale.versions![0]!.resources![0]!.resource), undefined);
});
