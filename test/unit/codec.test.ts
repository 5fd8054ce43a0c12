// Discovery codecs (docs/kubernetes-mvp.md §7): the protobuf envelope and gogo emission rules checked byte for byte
// against the Kubernetes round-trip fixtures (kubernetes/api testdata/HEAD
// apidiscovery.k8s.io.{v2,v2beta1}.APIGroupDiscovery.{json,pb}); decode back to the JSON content;
// the merged fixture pair through protobuf and JSON; the protobufjs reflection schema as an
// independent decoder; the compact JSON rules; the ETag format (§5.2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { Writer } from 'protobufjs/minimal';
import {
  assembleAPIGroupDiscoveryList,
  decodeDiscovery,
  encodeAPIGroupDiscovery,
  encodeAPIGroupDiscoveryList,
  encodeAPIGroupDiscoveryMessage,
  PROTOBUF_MAGIC,
} from '../../src/aggregation/codec/protobuf';
import { encodeJSON, encodeJSONReference, groupJSON, isCanonicalGroup, isRawGroupJSON, splitListItems } from '../../src/aggregation/codec/json';
import { parseDiscoveryBytes, DocumentCache } from '../../src/aggregation/merge.worker';
import { discoveryGroup, discoveryList } from '../support/discovery-arbitrary';
import { syntheticServer } from '../../native-bench/synthetic';
import { formatTime, parseTime } from '../../src/aggregation/codec/time';
import { discoveryETag } from '../../src/discovery/etag';
import { mergeResources } from '../../src/aggregation/merge';
import {
  discoveryProtoRoot,
} from '../../src/aggregation/proto/schema';
import type { APIGroupDiscovery, APIGroupDiscoveryList } from '../../src/aggregation/types';
import { aggregatedFixture, readFixture } from '../support/fixtures';

const versions = ['v2', 'v2beta1'] as const;

function roundTripFixture(version: 'v2' | 'v2beta1') {
  const base = join('protobuf-roundtrip', `apidiscovery.k8s.io.${version}.APIGroupDiscovery`);
  const json = JSON.parse(readFixture(`${base}.json`).toString('utf8')) as Record<string, unknown>;
  const pb = readFixture(`${base}.pb`);
  const { kind, apiVersion, ...group } = json;
  return { kind, apiVersion, group: group as unknown as APIGroupDiscovery, pb };
}

function mergedPairList(): APIGroupDiscoveryList {
  const items = mergeResources('server-a', aggregatedFixture('v1.33').items, new Map([['server-b', aggregatedFixture('v1.37').items]]));
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const ascii = (s: string) => Buffer.from(s, 'latin1').toString('hex');

// ---- protobuf: the round-trip fixtures -------------------------------------------------------

for (const version of versions) {
  test(`protobuf ${version}: encoding the round-trip JSON reproduces the .pb byte for byte`, () => {
    const { group, pb } = roundTripFixture(version);
    const got = encodeAPIGroupDiscovery(group, version);
    assert.ok(Buffer.isBuffer(got));
    assert.equal(got.toString('hex'), pb.toString('hex'));
  });

  test(`protobuf ${version}: decoding the .pb gives the JSON content, type meta included`, () => {
    const { kind, apiVersion, group, pb } = roundTripFixture(version);
    const d = decodeDiscovery(pb);
    assert.equal(d.kind, kind);
    assert.equal(d.apiVersion, apiVersion);
    assert.deepEqual(d.object, group);
    // Same key order as Go's JSON (the fixture is Go's output).
    assert.equal(JSON.stringify(d.object), JSON.stringify(group));
    // A plain Uint8Array (not a Buffer) decodes the same.
    assert.deepEqual(decodeDiscovery(new Uint8Array(pb)).object, group);
  });
}

test('protobuf: the envelope is k8s\\0 + runtime.Unknown{typeMeta, raw, "" , ""} (docs/kubernetes-mvp.md §7.2)', () => {
  const { pb } = roundTripFixture('v2');
  assert.deepEqual([...pb.subarray(0, 4)], [...PROTOBUF_MAGIC]);
  assert.equal(
    pb.subarray(4, 4 + 2 + 0x2b).toString('hex'),
    `0a2b0a16${ascii('apidiscovery.k8s.io/v2')}1211${ascii('APIGroupDiscovery')}`,
  );
  assert.equal(pb.subarray(pb.length - 4).toString('hex'), '1a002200');
});

test('protobuf: gogo emission — empty non-pointer strings written, pointers/repeated only when set', () => {
  const g: APIGroupDiscovery = {
    metadata: { name: 'g' },
    versions: [{ version: 'v1', resources: [{ resource: 'r', scope: '', singularResource: '', verbs: null }] }],
  };
  const body = encodeAPIGroupDiscovery(g, 'v2');
  const meta = `0a01${ascii('g')} 1200 1a00 2200 2a00 3200 3800 4200`; // name … resourceVersion, generation 0, creationTimestamp {}
  const resource = `0a01${ascii('r')} 1a00 2200`; // resource, scope "", singularResource ""; no responseKind, no verbs
  const version = `0a02${ascii('v1')} 1207${resource} 1a00`; // freshness "" written
  const raw = hex(`0a11${meta} 120f${version}`);
  const typeMeta = hex(`0a16${ascii('apidiscovery.k8s.io/v2')}1211${ascii('APIGroupDiscovery')}`);
  const want = Buffer.concat([
    Buffer.from(PROTOBUF_MAGIC),
    hex('0a2b'), typeMeta,
    hex(`12${raw.length.toString(16).padStart(2, '0')}`), raw,
    hex('1a002200'),
  ]);
  assert.equal(body.toString('hex'), want.toString('hex'));
});

test('protobuf: repeated strings are unpacked, one tag per element; map entries sorted by key', () => {
  const g: APIGroupDiscovery = {
    metadata: { name: '', labels: { b: '2', a: '1' } },
    versions: [{ version: '', resources: [{ resource: '', scope: '', singularResource: '', verbs: ['get', 'list'] }] }],
  };
  const raw = encodeAPIGroupDiscovery(g, 'v2').toString('hex');
  assert.ok(raw.includes(`2a03${ascii('get')}2a04${ascii('list')}`));
  assert.ok(raw.includes(`5a060a01${ascii('a')}1201${ascii('1')}5a060a01${ascii('b')}1201${ascii('2')}`));
  assert.deepEqual(decodeDiscovery(encodeAPIGroupDiscovery(g, 'v2')).object, {
    metadata: { labels: { a: '1', b: '2' } },
    versions: [{ version: '', resources: [{ resource: '', scope: '', singularResource: '', verbs: ['get', 'list'] }] }],
  });
});

test('protobuf: zero and null creationTimestamp encode as an empty Time and decode as absent', () => {
  for (const creationTimestamp of [null, undefined, '0001-01-01T00:00:00Z']) {
    const g = { metadata: { name: 'x', creationTimestamp } } as unknown as APIGroupDiscovery;
    const body = encodeAPIGroupDiscovery(g, 'v2');
    assert.ok(body.toString('hex').includes('38004200'));
    assert.deepEqual(decodeDiscovery(body).object, { metadata: { name: 'x' } });
  }
});

// ---- protobuf: the merged fixture pair -------------------------------------------------------

for (const version of versions) {
  test(`protobuf ${version}: encode + decode of the merged fixture pair equals the list`, () => {
    const list = mergedPairList();
    const body = encodeAPIGroupDiscoveryList(list, version);
    const d = decodeDiscovery(body);
    assert.equal(d.kind, 'APIGroupDiscoveryList');
    assert.equal(d.apiVersion, `apidiscovery.k8s.io/${version}`);
    assert.deepEqual(d.object, { ...list, apiVersion: `apidiscovery.k8s.io/${version}` });
    // And canonical JSON of both is byte-identical.
    assert.equal(encodeJSON(d.object as APIGroupDiscoveryList).toString(), encodeJSON({ ...list, apiVersion: d.apiVersion }).toString());
  });
}

test('protobuf: each fixture document round-trips (encode → decode → encode is stable)', () => {
  for (const v of ['v1.33', 'v1.37'] as const) {
    const list = aggregatedFixture(v);
    const body = encodeAPIGroupDiscoveryList(list, 'v2');
    const d = decodeDiscovery(body).object as APIGroupDiscoveryList;
    assert.deepEqual(d, list);
    assert.ok(encodeAPIGroupDiscoveryList(d, 'v2').equals(body));
  }
});

// ---- protobuf: the reflection schema as an independent decoder ----------------------------------


function reflectDecode(body: Uint8Array, version: 'v2' | 'v2beta1', type: string): Record<string, unknown> {
  const root = discoveryProtoRoot();
  const unknown = root.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown').decode(body.subarray(4)) as unknown as {
    typeMeta: { apiVersion: string; kind: string };
    raw: Uint8Array;
  };
  assert.equal(unknown.typeMeta.apiVersion, `apidiscovery.k8s.io/${version}`);
  assert.equal(unknown.typeMeta.kind, type);
  const t = root.lookupType(`k8s.io.api.apidiscovery.${version}.${type}`);
  return t.toObject(t.decode(unknown.raw), { longs: Number, bytes: String }) as Record<string, unknown>;
}

for (const version of versions) {
  test(`schema ${version}: protobufjs reflection decodes the fixture .pb to the JSON content`, () => {
    const { group, pb } = roundTripFixture(version);
    const o = reflectDecode(pb, version, 'APIGroupDiscovery') as any;
    const m = group.metadata as any;
    for (const k of ['name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion']) assert.equal(o.metadata[k], m[k]);
    assert.equal(o.metadata.generation, 7);
    assert.equal(formatTime(o.metadata.creationTimestamp.seconds), m.creationTimestamp);
    assert.equal(formatTime(o.metadata.deletionTimestamp.seconds), m.deletionTimestamp);
    assert.equal(o.metadata.deletionGracePeriodSeconds, 10);
    assert.deepEqual(o.metadata.labels, m.labels);
    assert.deepEqual(o.metadata.annotations, m.annotations);
    assert.deepEqual(o.metadata.ownerReferences, m.ownerReferences);
    assert.deepEqual(o.metadata.finalizers, m.finalizers);
    assert.equal(Buffer.from(o.metadata.managedFields[0].fieldsV1.Raw, 'base64').toString(), '{}');
    assert.equal(o.metadata.managedFields[0].subresource, 'subresourceValue');
    assert.deepEqual(o.versions, group.versions);
  });
}

test('schema: reflection decodes the encoded merged list to the same groups, versions, resources and verbs', () => {
  const list = mergedPairList();
  const o = reflectDecode(encodeAPIGroupDiscoveryList(list, 'v2'), 'v2', 'APIGroupDiscoveryList') as any;
  const shape = (items: any[]) =>
    items.map((g) => [g.metadata.name, (g.versions ?? []).map((v: any) => [v.version, v.freshness, (v.resources ?? []).map((r: any) => [r.resource, r.scope, r.verbs ?? [], (r.subresources ?? []).map((s: any) => s.subresource)])])]);
  assert.deepEqual(shape(o.items), shape(list.items));
});

// ---- protobuf: robustness ------------------------------------------------------------------

test('protobuf: unknown fields are skipped at every level (e.g. ListMeta.shardInfo=5 at HEAD)', () => {
  const w = Writer.create();
  w.fixed32(0x0073386b);
  w.uint32(0x0a).fork().uint32(0x0a).string('apidiscovery.k8s.io/v2').uint32(0x12).string('APIGroupDiscoveryList').uint32(0x78).uint32(1).ldelim();
  w.uint32(0x12).fork();
  w.uint32(0x0a).fork().uint32(0x12).string('rv').uint32(0x2a).fork().uint32(0x0a).string('shard').ldelim().ldelim(); // ListMeta + shardInfo
  w.uint32(0x12).fork(); // item
  w.uint32(0x0a).fork().uint32(0x0a).string('g').uint32(0x7a).string('clusterName').uint32((99 << 3) | 1).fixed64(5).ldelim();
  w.uint32(0x12).fork().uint32(0x0a).string('v1');
  w.uint32(0x12).fork().uint32(0x0a).string('r').uint32((50 << 3) | 5).fixed32(1).uint32((51 << 3) | 0).uint32(300).ldelim();
  w.ldelim();
  w.uint32((20 << 3) | 2).string('unknown group field');
  w.ldelim(); // item
  w.ldelim(); // raw
  w.uint32(0x1a).string('').uint32(0x22).string('').uint32((9 << 3) | 2).string('future');
  const d = decodeDiscovery(w.finish());
  assert.deepEqual(d.object, {
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: { resourceVersion: 'rv' },
    items: [{ metadata: { name: 'g' }, versions: [{ version: 'v1', resources: [{ resource: 'r', scope: '', singularResource: '', verbs: null }] }] }],
  });
});

test('protobuf: refuses bodies that are not apidiscovery v2/v2beta1', () => {
  const { pb } = roundTripFixture('v2');
  assert.throws(() => decodeDiscovery(pb.subarray(1)), /k8s/);
  assert.throws(() => decodeDiscovery(Buffer.from(pb.toString('latin1').replace('apidiscovery.k8s.io/v2', 'apidiscovery.k8s.io/v3'), 'latin1')), /apiVersion/);
  assert.throws(() => decodeDiscovery(Buffer.from(pb.toString('latin1').replace('APIGroupDiscovery', 'APIGroupDiscoverz'), 'latin1')), /kind/);
  const gz = Buffer.concat([pb.subarray(0, pb.length - 4), hex('1a04'), Buffer.from('gzip'), hex('2200')]);
  assert.throws(() => decodeDiscovery(gz), /contentEncoding/);
  assert.throws(() => decodeDiscovery(pb.subarray(0, pb.length - 10)));
});

test('protobuf: label keys like __proto__ from a peer stay plain data', () => {
  const g = { metadata: { name: 'g', labels: JSON.parse('{"__proto__":"x","a":"b"}') } } as APIGroupDiscovery;
  const d = decodeDiscovery(encodeAPIGroupDiscovery(g, 'v2')).object as APIGroupDiscovery;
  const labels = d.metadata['labels'] as Record<string, string>;
  assert.equal(Object.getPrototypeOf(labels), Object.prototype);
  assert.deepEqual(Object.keys(labels), ['__proto__', 'a']);
});

// ---- metav1.Time -----------------------------------------------------------------------------

test('metav1.Time: RFC 3339 parsing (offsets, fractions) and formatting in whole seconds UTC', () => {
  assert.deepEqual(parseTime('2008-01-01T01:01:01Z'), { seconds: 1199149261, nanos: 0 });
  assert.deepEqual(parseTime('2008-01-01T02:01:01.5+01:00'), { seconds: 1199149261, nanos: 500000000 });
  assert.equal(parseTime(null), undefined);
  assert.equal(parseTime('0001-01-01T00:00:00Z'), undefined);
  assert.equal(formatTime(1199149261), '2008-01-01T01:01:01Z');
  assert.equal(formatTime(0), '1970-01-01T00:00:00Z');
  assert.throws(() => parseTime('yesterday'));
});

// ---- JSON ------------------------------------------------------------------------------------

test('JSON: compact, content-equal to the fixtures, and "verbs": null kept', () => {
  for (const v of ['v1.33', 'v1.37'] as const) {
    const list = aggregatedFixture(v);
    const body = encodeJSON(list);
    assert.ok(!/\n|": /.test(body.toString()));
    assert.deepEqual(JSON.parse(body.toString()), list);
  }
  const list: APIGroupDiscoveryList = {
    kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {},
    items: [{ metadata: { name: 'g' }, versions: [{ version: 'v1', resources: [{ resource: 'r', scope: 'Cluster', singularResource: 'r', verbs: null, subresources: [{ subresource: 's', verbs: null }] }] }] }],
  };
  assert.equal(
    encodeJSON(list).toString(),
    '{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{"name":"g"},"versions":[{"version":"v1","resources":[{"resource":"r","scope":"Cluster","singularResource":"r","verbs":null,"subresources":[{"subresource":"s","verbs":null}]}]}]}]}',
  );
});

test('JSON: Go struct order and omitempty whatever the input key order; unknown keys dropped', () => {
  const a = JSON.parse('{"metadata":{},"items":[{"versions":[{"freshness":"","resources":[],"version":"v1"}],"metadata":{"name":"g","extra":1}}],"apiVersion":"apidiscovery.k8s.io/v2","kind":"APIGroupDiscoveryList"}');
  assert.equal(
    encodeJSON(a).toString(),
    '{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{"name":"g"},"versions":[{"version":"v1"}]}]}',
  );
  const r = { resource: 'r', shortNames: [], categories: ['all'], verbs: ['get'], singularResource: 's', scope: 'Namespaced', responseKind: { kind: 'K', version: '', group: '' } };
  const body = encodeJSON({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{ metadata: { name: 'g' }, versions: [{ version: 'v1', resources: [r] }] }] }).toString();
  assert.ok(body.includes('{"resource":"r","responseKind":{"group":"","version":"","kind":"K"},"scope":"Namespaced","singularResource":"s","verbs":["get"],"categories":["all"]}'));
});

test('JSON: <, >, & and U+2028/9 escaped as Go does', () => {
  const body = encodeJSON({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{ metadata: { name: 'a<b>&\u2028' } }] }).toString();
  assert.ok(body.includes('"name":"a\\u003cb\\u003e\\u0026\\u2028"'));
});

test('property: JSON strings decode back to the same string and never carry raw <, >, &', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme' }), (name) => {
      const body = encodeJSON({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{ metadata: { name: name || 'x' } }] }).toString();
      assert.equal(JSON.parse(body).items[0].metadata.name, name || 'x');
      assert.ok(!/[<>&\u2028\u2029]/.test(body));
    }),
    { numRuns: 300 },
  );
});

test('JSON: the round-trip fixture metadata in Go order, labels sorted', () => {
  const { group } = roundTripFixture('v2');
  const body = encodeJSON({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [group] }).toString();
  const parsed = JSON.parse(body).items[0];
  assert.equal(JSON.stringify(parsed), JSON.stringify(group));
});

test('property: JSON and protobuf carry the same content for random subsets of the fixture', () => {
  const all = aggregatedFixture('v1.37').items;
  fc.assert(
    fc.property(fc.shuffledSubarray(all), (items) => {
      const list: APIGroupDiscoveryList = { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
      const d = decodeDiscovery(encodeAPIGroupDiscoveryList(list, 'v2')).object as APIGroupDiscoveryList;
      assert.ok(encodeJSON(d).equals(encodeJSON(list)));
    }),
    { numRuns: 30 },
  );
});

// ---- JSON: the JSON.stringify fast path and item splitting -------------------------------------

const listOf = (items: APIGroupDiscovery[]): APIGroupDiscoveryList => ({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items });

test('JSON fast path: byte-identical to the field-by-field walk (fixtures, their merge, synthetic CRD documents)', () => {
  const docs = [aggregatedFixture('v1.33'), aggregatedFixture('v1.37'), mergedPairList(), syntheticServer(500, 0), syntheticServer(500, 1)];
  for (const d of docs) {
    assert.ok(encodeJSON(d).equals(encodeJSONReference(d)));
    // Re-parsed from our own output (Go order, as an apiserver sends it): every group canonical.
    const reparsed = JSON.parse(encodeJSON(d).toString('utf8')) as APIGroupDiscoveryList;
    assert.ok(reparsed.items.every(isCanonicalGroup));
    assert.ok(encodeJSON(reparsed).equals(encodeJSON(d)));
  }
  // The fixtures are written with sorted keys: not canonical, the walk is taken.
  assert.ok(!aggregatedFixture('v1.37').items.some(isCanonicalGroup));
});

test('property: JSON fast path = walk for odd documents (order, missing/null/empty fields, unknown keys, escapes)', () => {
  fc.assert(
    fc.property(discoveryList, (list) => {
      const ref = encodeJSONReference(list);
      assert.equal(encodeJSON(list).toString('utf8'), ref.toString('utf8'));
      for (const g of list.items) assert.equal(`[${groupJSON(g)}]`, JSON.stringify(JSON.parse(encodeJSONReference(listOf([g])).toString('utf8')).items).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
      // Parsed back (what the worker encodes): the same bytes again, through the fast path.
      const reparsed = JSON.parse(ref.toString('utf8')) as APIGroupDiscoveryList;
      assert.ok(encodeJSON(reparsed).equals(ref));
      assert.ok(encodeJSONReference(reparsed).equals(ref));
    }),
    { numRuns: 400, seed: 4020 },
  );
});

test('JSON fast path: what JSON.stringify would write differently is never taken for canonical', () => {
  const r = (extra: object) => ({ resource: 'r', scope: 'Cluster', singularResource: 'r', verbs: ['get'], ...extra });
  const g = (res: object, meta: object = { name: 'g' }) => ({ metadata: meta, versions: [{ version: 'v1', resources: [res] }] }) as unknown as APIGroupDiscovery;
  for (const odd of [
    g(r({ shortNames: [] })), g(r({ categories: [] })), g(r({ subresources: [] })), g(r({ responseKind: null })),
    g({ resource: 'r', scope: 'Cluster', verbs: ['get'] }), g({ scope: 'Cluster', resource: 'r', singularResource: 'r', verbs: ['get'] }),
    g(r({ x: 1 })), g(r({}), { name: '' }), g(r({}), { name: 'g', creationTimestamp: null }), g(r({}), {}),
    { metadata: { name: 'g' }, versions: [] } as APIGroupDiscovery, { metadata: { name: 'g' }, versions: [{ version: 'v1', freshness: '' }] } as APIGroupDiscovery,
    { metadata: { name: 'g' }, versions: [{ version: 'v1', resources: [] }] } as APIGroupDiscovery,
    g(r({ subresources: [{ subresource: 's', verbs: ['get'], acceptedTypes: [] }] })),
    g(r({ responseKind: { kind: 'K', version: '', group: '' } })),
  ]) {
    assert.equal(isCanonicalGroup(odd), false, JSON.stringify(odd));
    assert.equal(encodeJSON(listOf([odd])).toString(), encodeJSONReference(listOf([odd])).toString());
  }
  const ok = g({ resource: 'r', responseKind: { group: '', version: '', kind: 'K' }, scope: '', singularResource: '', verbs: null, shortNames: ['x'], subresources: [{ subresource: 's', verbs: [] }] });
  assert.equal(isCanonicalGroup(ok), true);
  assert.equal(groupJSON(ok), JSON.stringify(ok));
});

test('property: isRawGroupJSON(g, raw) only when raw is byte for byte groupJSON(g)', () => {
  let usable = 0;
  const check = (raw: Buffer) => {
    const g = JSON.parse(raw.toString('utf8')) as APIGroupDiscovery;
    if (isRawGroupJSON(g, raw)) {
      usable++;
      assert.equal(raw.toString('utf8'), groupJSON(g));
    }
  };
  fc.assert(
    fc.property(discoveryGroup, fc.constantFrom('compact', 'go', 'spaced', 'repeated'), (g, form) => {
      // 'go': the walk's own output (Go order, Go escaping), as an apiserver sends it.
      const go = groupJSON(JSON.parse(JSON.stringify(g)));
      const text =
        form === 'go' ? go
          : form === 'spaced' ? JSON.stringify(JSON.parse(go), null, 1)
            : form === 'repeated' ? go.replace('{"metadata":', '{"metadata":{"name":"zz"},"metadata":')
              : JSON.stringify(g);
      check(Buffer.from(text, 'utf8'));
    }),
    { numRuns: 500, seed: 21 },
  );
  for (const g of syntheticServer(300, 1).items) {
    const raw = Buffer.from(groupJSON(g), 'utf8');
    assert.ok(isRawGroupJSON(JSON.parse(raw.toString()), raw));
  }
  assert.ok(usable > 50, `${usable}`);
});

/** splitListItems applied to text: the skeleton and the elements' texts. */
function split(text: string): { skeleton: string; items: string[] } | undefined {
  const b = Buffer.from(text, 'utf8');
  const r = splitListItems(b);
  if (r === undefined) return undefined;
  const items: string[] = [];
  for (let i = 0; i < r.items.length; i += 2) items.push(b.toString('utf8', r.items[i], r.items[i + 1]));
  return { skeleton: `${b.toString('utf8', 0, r.itemsOpen)}[]${b.toString('utf8', r.itemsClose)}`, items };
}

test('property: splitListItems + JSON.parse of the parts = JSON.parse of the whole (any whitespace, any key order)', () => {
  fc.assert(
    fc.property(discoveryList, fc.constantFrom(undefined, 2, '\t'), fc.boolean(), (list, indent, itemsFirst) => {
      const doc = itemsFirst ? { items: list.items, kind: list.kind, metadata: { resourceVersion: '1' }, apiVersion: list.apiVersion } : list;
      const text = ` ${JSON.stringify(doc, null, indent)}\n`;
      const parts = split(text);
      assert.ok(parts !== undefined);
      const whole = JSON.parse(parts.skeleton);
      assert.deepEqual(whole.items, []);
      whole.items = parts.items.map((t) => JSON.parse(t));
      assert.deepEqual(whole, JSON.parse(text));
    }),
    { numRuns: 200, seed: 7 },
  );
});

test('splitListItems gives up on what it cannot be sure of; the document cache then parses the whole', () => {
  for (const text of ['[]', '{}', '{"items":{}}', '{"items":[1],"items":[2]}', '{"\\u0069tems":[1]}', '{"items":[1] x', '{"items":[1,]}', '{"items":[1]}}', '{"a":"\\"}', '\ufeff{"items":[]}']) {
    assert.equal(split(text), undefined, text);
  }
  assert.deepEqual(split('{"items":[]}'), { skeleton: '{"items":[]}', items: [] });
  assert.deepEqual(split('{"a":"]\\"}","items":[ {"b":"}"} , 2 ]}'), { skeleton: '{"a":"]\\"}","items":[]}', items: ['{"b":"}"}', '2'] });
  assert.deepEqual(split('{"é😀":"ü","items":["ß\\u0022",{"x":"€"}]}'), { skeleton: '{"é😀":"ü","items":[]}', items: ['"ß\\u0022"', '{"x":"€"}'] });
});

test('property: the document cache parses exactly like parseDiscoveryBytes, also for broken and repeated documents', () => {
  const cache = new DocumentCache(false);
  const good = JSON.stringify(listOf(aggregatedFixture('v1.33').items.slice(0, 4)));
  const outcome = (f: () => unknown) => {
    try {
      return { value: f() };
    } catch (e) {
      return { error: (e as Error).message };
    }
  };
  fc.assert(
    fc.property(discoveryList, fc.nat(), fc.constantFrom('none', 'truncate', 'insert', 'duplicate', 'good'), (list, at, damage) => {
      let text = damage === 'good' ? good : JSON.stringify(list);
      const i = at % (text.length + 1);
      if (damage === 'truncate') text = text.slice(0, i);
      else if (damage === 'insert') text = `${text.slice(0, i)}${'",]}{:x\\'[at % 9]}${text.slice(i)}`;
      else if (damage === 'duplicate') text = text.replace('"items":', '"items":[],"items":');
      let bytes = Buffer.from(text, 'utf8');
      // Invalid UTF-8 too (decoded to U+FFFD, whole or in parts alike).
      if (damage === 'insert' && at % 3 === 0) bytes = Buffer.concat([bytes.subarray(0, i), Buffer.from([0xe2, 0x82]), bytes.subarray(i)]);
      const want = outcome(() => parseDiscoveryBytes(bytes, 'doc'));
      cache.begin();
      const got = outcome(() => cache.parse(bytes, 'doc'));
      if ('error' in got) cache.abort();
      else cache.commit();
      assert.deepEqual(got, want, text);
      // Parsed again from the cache (whole, or its groups): the same value.
      cache.begin();
      if ('value' in want) assert.deepEqual(cache.parse(Buffer.from(bytes), 'doc'), want.value);
      cache.commit();
    }),
    { numRuns: 300, seed: 11 },
  );
  assert.ok(cache.stats.reusedDocuments > 0);
  // Invalid UTF-8 inside a group's strings, and a multi-byte character cut short before a quote.
  for (const junk of [[0xff], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc3]]) {
    const bytes = Buffer.concat([Buffer.from('{"kind":"x\u00e9","items":[{"metadata":{"name":"a'), Buffer.from(junk), Buffer.from('"}},{"metadata":{"name":"'), Buffer.from(junk), Buffer.from('"}}]}')]);
    cache.begin();
    assert.deepEqual(cache.parse(bytes, 'doc'), parseDiscoveryBytes(bytes, 'doc'));
    cache.commit();
  }
  // A new document sharing groups with the last build's: only the new group is parsed, the others
  // are the very objects parsed before.
  const items = aggregatedFixture('v1.37').items;
  const before = cache.stats.parsedItems;
  cache.begin();
  const a = cache.parse(Buffer.from(JSON.stringify(listOf(items.slice(0, 5)))), 'a');
  cache.commit();
  cache.begin();
  const b = cache.parse(Buffer.from(JSON.stringify(listOf([...items.slice(0, 5), items[9]!]))), 'b');
  cache.commit();
  assert.equal(cache.stats.parsedItems - before, 6);
  for (let i = 0; i < 5; i++) assert.equal(b.items[i], a.items[i]);
  assert.deepEqual(b, JSON.parse(JSON.stringify(listOf([...items.slice(0, 5), items[9]!]))));
});

// ---- protobuf: assembling a list from encoded groups -------------------------------------------

test('property: assembleAPIGroupDiscoveryList of encoded groups = encodeAPIGroupDiscoveryList', () => {
  for (const list of [aggregatedFixture('v1.33'), aggregatedFixture('v1.37'), mergedPairList(), listOf([]), syntheticServer(2000, 1)]) {
    for (const version of versions) {
      const want = encodeAPIGroupDiscoveryList(list, version);
      assert.ok(Buffer.from(assembleAPIGroupDiscoveryList(version, list.items.map(encodeAPIGroupDiscoveryMessage))).equals(want));
      assert.ok(encodeAPIGroupDiscoveryList(list, version, encodeAPIGroupDiscoveryMessage).equals(want));
    }
  }
  fc.assert(
    fc.property(fc.array(discoveryGroup, { maxLength: 6 }), (items) => {
      const want = encodeAPIGroupDiscoveryList(listOf(items), 'v2');
      assert.ok(Buffer.from(assembleAPIGroupDiscoveryList('v2', items.map(encodeAPIGroupDiscoveryMessage))).equals(want));
    }),
    { numRuns: 200, seed: 3 },
  );
});

// ---- ETag (docs/kubernetes-mvp.md §5.2) ------------------------------------------------------

test('ETag: quoted uppercase hex SHA-512 of the given bytes', () => {
  const empty = discoveryETag('');
  assert.equal(empty, `"${createHash('sha512').update('').digest('hex').toUpperCase()}"`);
  assert.match(empty, /^"CF83E1357EEFB8BDF1542850D66D8007D620E4050B5715DC83F4A921D36CE9CE47D0D13C5D85F2B0FF8318D2877EEC2F63B931BD47417A81A538327AF927DA3E"$/);
  assert.equal(discoveryETag(Buffer.from('abc')), discoveryETag('abc'));
});

test('ETag: equal content gives an equal ETag whatever the key order or source encoding', () => {
  const list = mergedPairList();
  const fromProto = decodeDiscovery(encodeAPIGroupDiscoveryList(list, 'v2')).object as APIGroupDiscoveryList;
  const reverseKeys = (o: unknown): unknown =>
    Array.isArray(o) ? o.map(reverseKeys)
      : o !== null && typeof o === 'object' ? Object.fromEntries(Object.entries(o).reverse().map(([k, v]) => [k, reverseKeys(v)]))
        : o;
  const reordered = reverseKeys(list) as APIGroupDiscoveryList;
  assert.notEqual(JSON.stringify(reordered), JSON.stringify(list));
  const e = discoveryETag(encodeJSON(list));
  assert.equal(discoveryETag(encodeJSON(fromProto)), e);
  assert.equal(discoveryETag(encodeJSON(reordered)), e);
  assert.notEqual(discoveryETag(encodeJSON(aggregatedFixture('v1.37'))), e);
});
