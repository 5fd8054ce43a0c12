// Discovery bodies decoded as Kubernetes decodes a peer's (issue 16 §2; src/aggregation/decode.ts):
// a table of bodies, each accepted with the list Go's decoder would give or refused with the
// error code it must count as. The accept/refuse column was checked against the Go decoder
// itself (runtime.DecodeInto with CodecFactory(apidiscovery v2).UniversalDecoder(), k8s.io/
// apimachinery v0.37.2) for every row except those marked "mvproxy" (the size cap, and bodies Go
// would hand to its YAML fallback, which mvproxy does not have: it asks for JSON only).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeDiscoveryBody, MAX_DISCOVERY_BODY_BYTES, MAX_JSON_NESTING_DEPTH, nestingDepthExceeded } from '../../src/aggregation/decode';
import { DiscoveryFetchError } from '../../src/aggregation/errors';
import { encodeAPIGroupDiscoveryList } from '../../src/aggregation/codec/protobuf';
import { parseDiscoveryBytes } from '../../src/aggregation/merge.worker';
import type { APIGroupDiscoveryList } from '../../src/aggregation/types';
import { readFixture } from '../support/fixtures';
import { CORE_API, V133_APIS, V137_APIS, json, list, nestedTo, protobufEnvelope, protobufListMessage, withResource } from '../support/discovery-bodies';

const v137 = JSON.parse(V137_APIS.toString('utf8')) as APIGroupDiscoveryList;
const EMPTY_V2 = '{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[]}';

function refusal(body: Uint8Array, maxBytes?: number): DiscoveryFetchError {
  try {
    decodeDiscoveryBody(body, 'GET /apis', maxBytes);
  } catch (e) {
    assert.ok(e instanceof DiscoveryFetchError, `not a DiscoveryFetchError: ${String(e)}`);
    return e;
  }
  assert.fail('accepted');
}

describe('accepted, as Go decodes them', () => {
  for (const [name, body] of [['v1.33 /apis', V133_APIS], ['v1.37 /apis', V137_APIS]] as const) {
    test(`the fixture ${name}: every field kept, the body passed on as it is`, () => {
      const d = decodeDiscoveryBody(body);
      assert.equal(d.format, 'json');
      assert.deepEqual(d.list, JSON.parse(body.toString('utf8')));
      assert.equal(d.raw, body, 'the same bytes (the local view is served byte for byte)');
    });
  }

  test('an /api with "creationTimestamp": null in the group metadata (older apiservers): the null reads as the zero time, the body is passed on as it is', () => {
    const d = decodeDiscoveryBody(CORE_API);
    const want = JSON.parse(CORE_API.toString('utf8')) as APIGroupDiscoveryList;
    want.items[0]!.metadata = {};
    assert.deepEqual(d.list, want);
    assert.equal(d.raw, CORE_API);
  });

  test('unknown fields at every level are ignored (the decoder is not strict), and dropped from the list', () => {
    const body = list({
      unknownTop: { a: [1, 2] },
      Items: 'case-sensitive: not items',
      metadata: { resourceVersion: '5', shardInfo: { selector: 'x', future: true } },
      items: [{ metadata: { name: 'example.com', future: 1 }, future: [null], versions: [{ version: 'v1', future: {}, resources: [{ resource: 'widgets', scope: 'Namespaced', singularResource: 'widget', verbs: ['get'], Resource: 7, future: 'x', subresources: [{ subresource: 'status', verbs: ['get'], future: 0 }] }] }] }],
    });
    const d = decodeDiscoveryBody(body);
    assert.deepEqual(d.list, {
      kind: 'APIGroupDiscoveryList',
      apiVersion: 'apidiscovery.k8s.io/v2',
      metadata: { resourceVersion: '5', shardInfo: { selector: 'x' } },
      items: [{ metadata: { name: 'example.com' }, versions: [{ version: 'v1', resources: [{ resource: 'widgets', scope: 'Namespaced', singularResource: 'widget', verbs: ['get'], subresources: [{ subresource: 'status', verbs: ['get'] }] }] }] }],
    });
    assert.equal(d.raw, body, 'unknown fields alone do not need re-encoding');
  });

  test('items: null (and absent) is an empty list; the body passed on is re-encoded with items []', () => {
    for (const body of [list({ items: null }), json({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2' })]) {
      const d = decodeDiscoveryBody(body);
      assert.deepEqual(d.list.items, []);
      assert.equal(d.raw.toString(), EMPTY_V2);
      assert.deepEqual(parseDiscoveryBytes(d.raw, 'merge worker').items, [], 'the merge worker reads it');
    }
  });

  test('apiVersion and kind default from the target type when missing or empty (gvkWithDefaults), as in Go', () => {
    for (const body of [json({}), json({ items: [] }), json({ kind: 'APIGroupDiscoveryList', items: [] }), json({ apiVersion: 'apidiscovery.k8s.io/v2', items: [] }), list({ apiVersion: '/', items: [] }), list({ apiVersion: 'apidiscovery.k8s.io/', items: [] }), list({ kind: null, items: [] })]) {
      const d = decodeDiscoveryBody(body);
      assert.equal(d.list.kind, 'APIGroupDiscoveryList');
      assert.equal(d.list.apiVersion, 'apidiscovery.k8s.io/v2');
      assert.equal(d.raw.toString(), EMPTY_V2, 're-encoded with both set');
    }
  });

  test("null leaves Go's zero value: a null resource name, verbs element, group or metadata", () => {
    const body = list({ metadata: null, items: [null, { metadata: { name: null, labels: { a: null } }, versions: [{ version: 'v1', resources: [{ resource: null, responseKind: null, scope: 'Cluster', singularResource: '', verbs: [null, 'get'], shortNames: null }] }] }] });
    const d = decodeDiscoveryBody(body);
    assert.deepEqual(d.list.items, [
      { metadata: {} },
      { metadata: { labels: { a: '' } }, versions: [{ version: 'v1', resources: [{ resource: '', scope: 'Cluster', singularResource: '', verbs: ['', 'get'] }] }] },
    ]);
    assert.notEqual(d.raw, body, 're-encoded: the merge worker does not expect a null group or resource name');
    assert.deepEqual(decodeDiscoveryBody(d.raw).list, d.list, 'the re-encoded body decodes to the same list');
    assert.equal(parseDiscoveryBytes(d.raw, 'merge worker').items.length, 2);
  });

  test('invalid UTF-8 inside a string becomes U+FFFD (Go replaces it; it is refused only outside strings)', () => {
    const body = Buffer.concat([Buffer.from('{"items":[{"metadata":{"name":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}]}')]);
    assert.equal(decodeDiscoveryBody(body).list.items[0]!.metadata.name, 'a\ufffd\ufffd');
  });

  test(`JSON nested ${MAX_JSON_NESTING_DEPTH} deep (in an unknown field) is accepted, as Go's scanner allows`, () => {
    assert.deepEqual(decodeDiscoveryBody(nestedTo(MAX_JSON_NESTING_DEPTH)).list.items, []);
  });

  test('a "__proto__" label stays a plain key', () => {
    const d = decodeDiscoveryBody(json('{"items":[{"metadata":{"name":"x","labels":{"__proto__":"y"}}}]}'));
    const labels = d.list.items[0]!.metadata['labels'] as Record<string, string>;
    assert.equal(Object.getPrototypeOf(labels), Object.prototype);
    assert.deepEqual(Object.keys(labels), ['__proto__']);
  });

  test('protobuf (the universal decoder sniffs "k8s\\0"): the same list as the JSON, re-encoded as JSON', () => {
    const d = decodeDiscoveryBody(encodeAPIGroupDiscoveryList(v137, 'v2'));
    assert.equal(d.format, 'protobuf');
    assert.deepEqual(d.list, v137);
    assert.deepEqual(JSON.parse(d.raw.toString()), v137);
  });

  test('protobuf with unknown fields of every wire type in the envelope, the list and each group: accepted (gogo Unmarshal skips them)', () => {
    const groups = v137.items.slice(0, 4);
    const plain = decodeDiscoveryBody(protobufEnvelope('apidiscovery.k8s.io/v2', 'APIGroupDiscoveryList', protobufListMessage(groups)));
    const withUnknown = decodeDiscoveryBody(
      protobufEnvelope('apidiscovery.k8s.io/v2', 'APIGroupDiscoveryList', protobufListMessage(groups, true), (w) => w.uint32((4 << 3) | 2).string('application/vnd.kubernetes.protobuf').uint32((60 << 3) | 0).uint32(1)),
    );
    assert.deepEqual(withUnknown.list, plain.list);
    assert.deepEqual(withUnknown.list.items, groups);
  });

  test('protobuf typeMeta defaults as in Go: empty, or an unparsable apiVersion, is apidiscovery.k8s.io/v2; contentEncoding is ignored', () => {
    const raw = protobufListMessage(v137.items.slice(0, 1));
    for (const body of [protobufEnvelope('', '', raw), protobufEnvelope('a/b/c', 'APIGroupDiscoveryList', raw), protobufEnvelope('apidiscovery.k8s.io/v2', 'APIGroupDiscoveryList', raw, (w) => w.uint32((3 << 3) | 2).string('gzip'))]) {
      assert.equal(decodeDiscoveryBody(body).list.items.length, 1);
    }
    assert.deepEqual(decodeDiscoveryBody(protobufEnvelope('apidiscovery.k8s.io/v2', 'APIGroupDiscoveryList', undefined)).list.items, [], 'no raw: an empty list');
  });
});

describe('refused: MVP_ERR_DISCOVERY_DECODE, saying what and where', () => {
  const decodeCases: { name: string; body: Buffer; message: RegExp }[] = [
    { name: 'a v2beta1 body', body: json({ ...v137, apiVersion: 'apidiscovery.k8s.io/v2beta1' }), message: /not an apidiscovery\.k8s\.io\/v2 APIGroupDiscoveryList: apiVersion "apidiscovery\.k8s\.io\/v2beta1"/ },
    { name: 'a Status', body: json({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'ServiceUnavailable', code: 503 }), message: /apiVersion "v1", kind "Status"/ },
    { name: 'kind Status spelt "KIND" (apiVersion and kind are read case-insensitively, as encoding/json does)', body: json('{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","KIND":"Status","items":[]}'), message: /kind "Status"/ },
    { name: 'a single APIGroupDiscovery', body: list({ kind: 'APIGroupDiscovery' }), message: /kind "APIGroupDiscovery"/ },
    { name: 'apiVersion "v2" (no group)', body: list({ apiVersion: 'v2' }), message: /read as "v2, Kind=APIGroupDiscoveryList"/ },
    { name: 'an unparsable apiVersion', body: list({ apiVersion: 'a/b/c' }), message: /apiVersion: unexpected GroupVersion string "a\/b\/c"/ },
    { name: 'kind not a string', body: list({ kind: 5 }), message: /couldn't get version\/kind: "kind" is a number/ },
    { name: 'the legacy /api (APIVersions)', body: readFixture('commit-008b3652/api.json'), message: /kind "APIVersions"/ },
    { name: 'the legacy /apis (APIGroupList)', body: readFixture('v1.31-0260c7d0/apis.json'), message: /kind "APIGroupList"/ },
    { name: 'HTML', body: json('<!DOCTYPE html>\n<html><body><h1>502 Bad Gateway</h1></body></html>'), message: /not a JSON object or protobuf body/ },
    { name: 'truncated JSON', body: V137_APIS.subarray(0, 40_000), message: /JSON/ },
    { name: 'non-UTF-8 bytes outside strings', body: Buffer.concat([Buffer.from('{"items":[]'), Buffer.from([0xff, 0xfe]), Buffer.from('}')]), message: /JSON/ },
    { name: 'trailing data', body: json('{"items":[]}{"items":[]}'), message: /after JSON/ },
    { name: `JSON nested ${MAX_JSON_NESTING_DEPTH + 1} deep`, body: nestedTo(MAX_JSON_NESTING_DEPTH + 1), message: /nested deeper than 10000 at byte \d+/ },
    { name: 'JSON nested 1,000,000 deep', body: Buffer.from('['.repeat(1_000_000)), message: /nested deeper than 10000 at byte 10000\b/ },
    // mvproxy: Go's universal decoder would try these as YAML (an empty body and null give an empty list there).
    { name: 'an empty body (mvproxy; Go: YAML fallback)', body: Buffer.alloc(0), message: /empty body/ },
    { name: 'null (mvproxy; Go: YAML fallback)', body: json('null'), message: /the body is null, not a JSON object/ },
    { name: 'a JSON array', body: json('[]'), message: /the body is an array/ },
    { name: 'YAML (mvproxy; Go: YAML fallback)', body: json('apiVersion: apidiscovery.k8s.io/v2\nkind: APIGroupDiscoveryList\nitems: []\n'), message: /Kubernetes would try YAML/ },
    { name: 'a UTF-8 BOM before the JSON (mvproxy; Go: YAML fallback)', body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(EMPTY_V2)]), message: /not a JSON object or protobuf body/ },
    // Wrong JSON types at several depths (Go: "cannot unmarshal X into Go struct field ...").
    { name: 'items an object', body: list({ items: {} }), message: /^GET \/apis: items: expected an array, got an object$/ },
    { name: 'items[1] a string', body: list({ items: [{ metadata: { name: 'a' } }, 'b'] }), message: /: items\[1\]: expected an object, got a string$/ },
    { name: 'metadata an array', body: list({ metadata: [] }), message: /: metadata: expected an object, got an array$/ },
    { name: 'metadata.remainingItemCount 1.5', body: list({ metadata: { remainingItemCount: 1.5 } }), message: /metadata\.remainingItemCount: expected an int64/ },
    { name: 'items[0].metadata.name a number', body: list({ items: [{ metadata: { name: 5 } }] }), message: /: items\[0\]\.metadata\.name: expected a string, got a number$/ },
    { name: 'items[0].metadata.labels value a number', body: list({ items: [{ metadata: { name: 'a', labels: { k: 1 } } }] }), message: /items\[0\]\.metadata\.labels\["k"\]: expected a string/ },
    { name: 'items[0].metadata.creationTimestamp not RFC 3339', body: list({ items: [{ metadata: { name: 'a', creationTimestamp: '2023-02-29T00:00:00Z' } }] }), message: /creationTimestamp: not an RFC 3339 time/ },
    { name: 'items[0].versions a string', body: list({ items: [{ metadata: { name: 'a' }, versions: 'v1' }] }), message: /: items\[0\]\.versions: expected an array, got a string$/ },
    { name: 'items[0].versions[0].version a number', body: list({ items: [{ metadata: { name: 'a' }, versions: [{ version: 1 }] }] }), message: /items\[0\]\.versions\[0\]\.version: expected a string/ },
    { name: 'items[0].versions[0].resources an object', body: list({ items: [{ metadata: { name: 'a' }, versions: [{ version: 'v1', resources: {} }] }] }), message: /: items\[0\]\.versions\[0\]\.resources: expected an array, got an object$/ },
    { name: 'resource a number', body: withResource({ resource: 1 }), message: /items\[0\]\.versions\[0\]\.resources\[0\]\.resource: expected a string, got a number$/ },
    { name: 'responseKind an array', body: withResource({ responseKind: [] }), message: /resources\[0\]\.responseKind: expected an object, got an array$/ },
    { name: 'responseKind.kind a number', body: withResource({ responseKind: { group: '', version: 'v1', kind: 1 } }), message: /resources\[0\]\.responseKind\.kind: expected a string/ },
    { name: 'scope a number', body: withResource({ scope: 1 }), message: /resources\[0\]\.scope: expected a string/ },
    { name: 'verbs a string', body: withResource({ verbs: 'get' }), message: /resources\[0\]\.verbs: expected an array, got a string$/ },
    { name: 'verbs[0] a number', body: withResource({ verbs: [1] }), message: /resources\[0\]\.verbs\[0\]: expected a string/ },
    { name: 'categories[0] a boolean', body: withResource({ categories: [true] }), message: /resources\[0\]\.categories\[0\]: expected a string, got a boolean$/ },
    { name: 'subresources an object', body: withResource({ subresources: {} }), message: /resources\[0\]\.subresources: expected an array/ },
    { name: 'subresources[0].acceptedTypes[0].group a number', body: withResource({ subresources: [{ subresource: 's', acceptedTypes: [{ group: 1 }], verbs: null }] }), message: /subresources\[0\]\.acceptedTypes\[0\]\.group: expected a string/ },
    // Protobuf.
    { name: 'protobuf: a single APIGroupDiscovery (the round-trip fixture)', body: readFixture('protobuf-roundtrip/apidiscovery.k8s.io.v2.APIGroupDiscovery.pb'), message: /kind "APIGroupDiscovery"/ },
    { name: 'protobuf: a v2beta1 list', body: encodeAPIGroupDiscoveryList(v137, 'v2beta1'), message: /apiVersion "apidiscovery\.k8s\.io\/v2beta1"/ },
    { name: 'protobuf: a Status', body: protobufEnvelope('v1', 'Status', new Uint8Array(0)), message: /kind "Status"/ },
    { name: 'protobuf: the magic alone', body: Buffer.from('k8s\0', 'binary'), message: /protobuf: empty body/ },
    { name: 'protobuf: truncated', body: encodeAPIGroupDiscoveryList(v137, 'v2').subarray(0, 500), message: /protobuf: / },
    { name: 'protobuf: items with the wrong wire type', body: protobufEnvelope('apidiscovery.k8s.io/v2', 'APIGroupDiscoveryList', Uint8Array.of((2 << 3) | 0, 5)), message: /wrong wire type/ },
  ];
  for (const c of decodeCases) {
    test(c.name, () => {
      const e = refusal(c.body);
      assert.equal(e.code, 'MVP_ERR_DISCOVERY_DECODE', e.message);
      assert.match(e.message, /^GET \/apis: /);
      assert.match(e.message, c.message);
    });
  }
});

describe('refused: MVP_ERR_DISCOVERY_TOO_LARGE (mvproxy: Go has no cap)', () => {
  test(`a body over ${MAX_DISCOVERY_BODY_BYTES} bytes, before any parsing`, () => {
    const e = refusal(Buffer.alloc(MAX_DISCOVERY_BODY_BYTES + 1, 0x20));
    assert.equal(e.code, 'MVP_ERR_DISCOVERY_TOO_LARGE');
    assert.match(e.message, /16777217 bytes, more than the 16777216-byte limit/);
  });
  test('a body at the cap is decoded (and refused for what it is, not its size)', () => {
    assert.equal(refusal(Buffer.alloc(MAX_DISCOVERY_BODY_BYTES, 0x20)).code, 'MVP_ERR_DISCOVERY_DECODE');
  });
  test('a smaller cap given by the caller', () => {
    assert.equal(refusal(V137_APIS, 1024).code, 'MVP_ERR_DISCOVERY_TOO_LARGE');
  });
});

test('the nesting scan skips strings and escapes', () => {
  assert.equal(nestingDepthExceeded(Buffer.from('{"a":"[[[[\\"[[[","b":[[]]}'), 3), -1);
  assert.equal(nestingDepthExceeded(Buffer.from('{"a":"[[[[\\"[[[","b":[[[]]]}'), 3), 23);
  assert.equal(nestingDepthExceeded(Buffer.from('[[["\\\\"]]]'), 3), -1);
});
