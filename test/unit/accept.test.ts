// negotiateDiscovery: the Accept variants of kubernetes/kubernetes
// staging/src/k8s.io/apiserver/pkg/endpoints/discovery/aggregated/wrapper_test.go (TestAggregationEnabled,
// the profile=nopeer version) and metrics_test.go (TestPeerAggregatedDiscoveryMetrics), the
// DefaultEndpointRestrictions cases of handlers/negotiation/negotiate_test.go (TestNegotiate),
// munnerz/goautoneg autoneg_test.go (TestParseAccept ordering), rewritten by hand; then the canonical
// strings of docs/kubernetes-mvp.md §5.1, the real clients of docs/operating.md §4, q ordering,
// parameter quirks, the cache, and a fast-check never-throws property.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { negotiateDiscovery, type DiscoveryNegotiation } from '../../src/request/accept';

const jsonAccept = 'application/json';
const protobufAccept = 'application/vnd.kubernetes.protobuf';
const aggregatedV2Beta1AcceptSuffix = ';g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';
const aggregatedAcceptSuffix = ';g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const aggregatedV2Beta1JSONAccept = jsonAccept + aggregatedV2Beta1AcceptSuffix;
const aggregatedV2Beta1ProtoAccept = protobufAccept + aggregatedV2Beta1AcceptSuffix;
const aggregatedJSONAccept = jsonAccept + aggregatedAcceptSuffix;
const aggregatedProtoAccept = protobufAccept + aggregatedAcceptSuffix;
const aggregatedNoPeerJSONAccept = jsonAccept + aggregatedAcceptSuffix + ';profile=nopeer';
const aggregatedNoPeerProtoAccept = protobufAccept + aggregatedAcceptSuffix + ';profile=nopeer';

const legacy = (encoding: DiscoveryNegotiation['encoding']): DiscoveryNegotiation => ({ kind: 'legacy', version: '', encoding, profile: '' });
const v2 = (encoding: DiscoveryNegotiation['encoding'], profile = ''): DiscoveryNegotiation => ({ kind: 'aggregated', version: 'v2', encoding, profile });
const v2beta1 = (encoding: DiscoveryNegotiation['encoding'], profile = ''): DiscoveryNegotiation => ({ kind: 'aggregated', version: 'v2beta1', encoding, profile });

function check(accept: string | undefined, want: DiscoveryNegotiation | null, desc?: string): void {
  const got = negotiateDiscovery(accept);
  assert.deepEqual(got === null ? null : { ...got }, want, desc ?? JSON.stringify(accept));
}

test('TestAggregationEnabled (wrapper_test.go)', () => {
  // "unaggregated" → legacy; "nopeer-aggregated"/"peer-aggregated" → aggregated v2, told apart by the
  // profile (the caller serves peer-aggregated unless profile == "nopeer"); v2beta1 → aggregated
  // v2beta1 (Go flips AggregatedDiscoveryRemoveBetaType off for those rows).
  // Misconstructed/incorrect accept headers go to the unaggregated handler to return an error
  check('application/json;foo=bar', legacy('json'));
  // Empty accept headers are valid and handled by the unaggregated handler
  check('', legacy('json'));
  check(aggregatedV2Beta1JSONAccept, v2beta1('json'));
  check(aggregatedV2Beta1ProtoAccept, v2beta1('protobuf'));
  check(aggregatedJSONAccept, v2('json'));
  check(aggregatedProtoAccept, v2('protobuf'));
  check(jsonAccept, legacy('json'));
  check(protobufAccept, legacy('protobuf'));
  // Server should return the first accepted type
  check(aggregatedJSONAccept + ',' + jsonAccept, v2('json'));
  check(aggregatedProtoAccept + ',' + protobufAccept, v2('protobuf'));
  // peer-aggregated cases: profile not set → peer-aggregated
  check(aggregatedJSONAccept, v2('json', ''));
  check(aggregatedProtoAccept, v2('protobuf', ''));
  // profile=nopeer → no-peer
  check(aggregatedNoPeerJSONAccept, v2('json', 'nopeer'));
  check(aggregatedNoPeerProtoAccept, v2('protobuf', 'nopeer'));
  // profile set to something other than nopeer → peer-aggregated
  check(aggregatedJSONAccept + ';profile=foo', v2('json', 'foo'));
});

test('TestPeerAggregatedDiscoveryMetrics (metrics_test.go fetchPath Accept strings)', () => {
  // fetchPath(prefix) sends prefix+v2 suffix+",", ",", prefix+v2beta1 suffix+",": empty clauses and all
  const fetchPathAccept = (prefix: string) =>
    `${prefix};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,,${prefix};g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,`;
  check(fetchPathAccept('application/json'), v2('json'));
  check(fetchPathAccept('application/json;profile=foo'), v2('json', 'foo'));
  check(fetchPathAccept('application/json;profile=nopeer'), v2('json', 'nopeer'));
  check(fetchPathAccept('application/vnd.kubernetes.protobuf'), v2('protobuf'));
  // a repeated key: the later one wins (goautoneg stores params in a map)
  check('application/json;g=x;v=v1;as=Table;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', v2('json'));
  check('application/json;profile=a;profile=b' + aggregatedAcceptSuffix, v2('json', 'b'));
});

test('TestNegotiate (negotiate_test.go), as the legacy handler negotiates', () => {
  // pick a default
  check(undefined, legacy('json'));
  check('', legacy('json'));
  check('*/*', legacy('json'));
  check('application/*', legacy('json'));
  check('application/json', legacy('json'));
  check('application/yaml', legacy('yaml'));
  check('application/vnd.kubernetes.protobuf', legacy('protobuf'));
  check('application/json; pretty=1', legacy('json'));
  check('unrecognized/stuff,application/json; pretty=1', legacy('json'));
  check('application/json;as=BOGUS;v=v1beta1;g=meta.k8s.io, application/json', legacy('json'));
  check('application/BOGUS, application/json', legacy('json'));
  // nothing acceptable: 406
  check('application', null);
  check('application/protobuf', null);
  check('text/html', null);
  // goautoneg TestParseAccept: the Chrome header sorts */*;q=0.5 last, so JSON comes from it
  check('application/xml,application/xhtml+xml,text/html;q=0.9,text/plain;q=0.8;otherParam=blah,image/png,*/*;q=0.5', legacy('json'));
});

test('docs/kubernetes-mvp.md §5.1: canonical Accept strings', () => {
  const AcceptV2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
  const AcceptV2NoPeer = AcceptV2 + ';profile=nopeer';
  check(AcceptV2, v2('json'));
  check(AcceptV2NoPeer, v2('json', 'nopeer'));
  check('application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', v2('protobuf'));
  check('application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer', v2('protobuf', 'nopeer'));
  check('application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', v2('yaml'));
  // v2beta1: reported as such; a 1.35+ apiserver answers it with legacy discovery
  check('application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList', v2beta1('json'));
  check('application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList;profile=nopeer', v2beta1('protobuf', 'nopeer'));
  // client-go's default: AcceptV2 + "," + "application/json"
  check(AcceptV2 + ',application/json', v2('json'));
  check(AcceptV2NoPeer + ',' + AcceptV2 + ',application/json', v2('json', 'nopeer'));
  // */* with the aggregated GVK picks the first serializer, JSON
  check('*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', v2('json'));
  // a bare application/json fails the aggregated check and drops to legacy
  check('application/json', legacy('json'));
  // any other kind, group or version is not aggregated discovery, and legacy refuses Convert: 406
  check('application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList', null);
  check('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscovery', null);
  check('application/json;g=apidiscovery.k8s.io;as=APIGroupDiscoveryList', null);
  check('application/json;as=Table;v=v1;g=meta.k8s.io', null);
});

test('docs/operating.md §4: real clients', () => {
  // kubectl 1.27.16, 1.28.15, 1.29.14
  check('application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json', v2beta1('json'));
  // kubectl 1.30.13 … 1.33.1
  check(
    'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json',
    v2('json'),
  );
  // per-GV follow-up (all kubectl versions)
  check('application/json, */*', legacy('json'));
  // kubectl get (a Table request; on /apis it falls through to plain JSON)
  check('application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json', legacy('json'));
  // python3-kubernetes, typed and DynamicClient
  check('application/json', legacy('json'));
});

test('v2 wins over v2beta1 wherever it is, as on a 1.35+ apiserver', () => {
  check(aggregatedV2Beta1JSONAccept + ',' + aggregatedJSONAccept, v2('json'));
  check(aggregatedV2Beta1ProtoAccept + ',' + aggregatedJSONAccept + ';q=0.1', v2('json'));
  check(aggregatedV2Beta1ProtoAccept + ',' + aggregatedV2Beta1JSONAccept, v2beta1('protobuf'), 'first v2beta1 clause');
});

test('q ordering: higher q first, then concrete type/subtype before *, otherwise header order', () => {
  check('application/json;q=0.5' + aggregatedAcceptSuffix + ',application/vnd.kubernetes.protobuf' + aggregatedAcceptSuffix, v2('protobuf'));
  check('application/yaml;q=0.9' + aggregatedAcceptSuffix + ', application/json;q=0.95' + aggregatedAcceptSuffix, v2('json'));
  check('application/yaml' + aggregatedAcceptSuffix + ',application/json' + aggregatedAcceptSuffix, v2('yaml'), 'equal q keeps header order');
  check('application/yaml;q=0.3,application/json;q=0.2', legacy('yaml'));
  check('application/yaml;q=0.2,application/json;q=0.3', legacy('json'));
  check('application/yaml;q=0,application/json;q=0.001', legacy('json'));
  check('application/json;q=0', legacy('json'), 'q=0 is only the lowest preference (released apiservers)');
  // goautoneg's Less is not a strict order: a concrete type sorts before '*' even with a lower q,
  // and Go's insertion sort (≤ 12 clauses) then keeps it there
  check('*/*;q=1' + aggregatedAcceptSuffix + ',application/yaml;q=0.5' + aggregatedAcceptSuffix, v2('yaml'));
  check('*;q=0.1,application/yaml;q=0.05', legacy('yaml'));
  check('application/*;q=0.9,application/vnd.kubernetes.protobuf;q=0.1', legacy('protobuf'));
  // q goes through strconv.ParseFloat(v, 32): unparsable is 0, hex and exponents parse, no trimming
  check('application/yaml;q=abc,application/json;q=0.1', legacy('json'));
  check('application/yaml;q= 0.9,application/json;q=0.1', legacy('json'), "' 0.9' is a syntax error, so 0");
  check('application/yaml;q=0x1p-1,application/json;q=0.4', legacy('yaml'), '0x1p-1 = 0.5');
  check('application/yaml;q=5e-1,application/json;q=0.4', legacy('yaml'));
  check('application/yaml;q=1_0,application/json;q=2', legacy('yaml'), 'underscores between digits are allowed: 1_0 = 10 > 2');
  check('application/yaml;q=1__0,application/json;q=0.1', legacy('json'), "a doubled '_' is a syntax error, so 0");
  check('application/yaml;q=inf,application/json;q=1e30', legacy('yaml'));
  check('application/yaml;q=1e39,application/json;q=3.4e38', legacy('yaml'), '1e39 overflows float32 to +Inf');
  check('application/yaml;q=-1,application/json;q=0', legacy('json'));
  // float32 precision: 0.50000001 and 0.5 are the same float32, so header order decides
  check('application/yaml;q=0.5,application/json;q=0.50000001', legacy('yaml'));
  check('application/yaml;q=0.5,application/json;q=0.5000001', legacy('json'));
  // the last q wins
  check('application/yaml;q=0.1;q=0.9,application/json;q=0.5', legacy('yaml'));
});

test('parameters: any order, spaces trimmed, unknown ignored, malformed dropped', () => {
  check('application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io', v2('json'));
  check('application/json;v=v2;profile=nopeer;as=APIGroupDiscoveryList;g=apidiscovery.k8s.io', v2('json', 'nopeer'));
  check(' application/json ; g = apidiscovery.k8s.io ; v=v2 ;as=APIGroupDiscoveryList ', v2('json'));
  check('application / json' + aggregatedAcceptSuffix, v2('json'), 'type and subtype are trimmed of spaces');
  check('application/json;foo=bar;pretty=1;export=1;x=y' + aggregatedAcceptSuffix, v2('json'));
  check('application/json' + aggregatedAcceptSuffix + ';profile=', v2('json', ''), '"profile=" has no value and is dropped');
  check('application/json' + aggregatedAcceptSuffix + ';profile=local', v2('json', 'local'));
  check('application/json' + aggregatedAcceptSuffix + ';profile=nopeer=', v2('json', 'nopeer'), 'a trailing "=" is dropped with nothing after it');
  check('application/json' + aggregatedAcceptSuffix + ';profile=no=peer', v2('json', ''), 'two "=" drop the parameter');
  check('application/json;g=apidiscovery.k8s.io;v=v2=x;as=APIGroupDiscoveryList', null, 'v dropped: no aggregated GVK, and legacy refuses g/as');
  // case matters: neither type nor parameter names are lowercased
  check('Application/JSON' + aggregatedAcceptSuffix, null);
  check('application/json;G=apidiscovery.k8s.io;V=v2;AS=APIGroupDiscoveryList', legacy('json'));
  check('application/json;\tprofile=nopeer' + aggregatedAcceptSuffix, v2('json', ''), 'only spaces are trimmed');
  // stream= needs a stream serializer (not yaml) and "watch"; sv= is never allowed here
  check('application/yaml' + aggregatedAcceptSuffix + ';stream=watch', null);
  check('application/yaml' + aggregatedAcceptSuffix + ';stream=watch,application/json' + aggregatedAcceptSuffix, v2('json'));
  check('application/*' + aggregatedAcceptSuffix + ';stream=watch', v2('json'));
  check('application/json' + aggregatedAcceptSuffix + ';stream=foo', null);
  check('application/json' + aggregatedAcceptSuffix + ';stream= ', v2('json'), 'an empty stream value is allowed');
  check('application/json' + aggregatedAcceptSuffix + ';sv=v1', null);
  check('application/json;sv=v1,application/yaml', legacy('yaml'));
  // media ranges: "*" alone is */*, a type without "/" and "a/b/c" are dropped, "a/b/" is a/b
  check('*' + aggregatedAcceptSuffix, v2('json'));
  check('*/' + aggregatedAcceptSuffix, v2('json'));
  check('application' + aggregatedAcceptSuffix + ',application/yaml', legacy('yaml'));
  check('application/json/x' + aggregatedAcceptSuffix, null);
  check('application/json/' + aggregatedAcceptSuffix, v2('json'));
  check('*/json', null);
  check(',,,', null);
  check(' , ', null);
  check('\t application/yaml \t', legacy('yaml'), 'header value whitespace is trimmed, as Go textproto does');
  check(' ', legacy('json'), 'an all-whitespace header is empty after textproto trimming');
});

test('cache: same answers, shared frozen objects, bounded', () => {
  const a = negotiateDiscovery(aggregatedNoPeerJSONAccept);
  const b = negotiateDiscovery(aggregatedNoPeerJSONAccept);
  assert.equal(a, b, 'the second call is a cache hit returning the same object');
  assert.ok(a !== null && Object.isFrozen(a));
  assert.ok(Object.isFrozen(negotiateDiscovery(undefined)));
  assert.equal(negotiateDiscovery('text/html'), null);
  assert.equal(negotiateDiscovery('text/html'), null, 'a cached 406');
  // more distinct headers than the cache holds: still correct, old entries recomputed
  for (let i = 0; i < 200; i++) {
    check(`application/json;profile=p${i}${aggregatedAcceptSuffix}`, v2('json', `p${i}`));
  }
  for (let i = 0; i < 200; i += 37) check(`application/json;profile=p${i}${aggregatedAcceptSuffix}`, v2('json', `p${i}`));
  const long = 'application/json;' + 'x=y;'.repeat(500) + aggregatedAcceptSuffix.slice(1);
  check(long, v2('json'), 'longer than the cache key limit');
  check(long, v2('json'));
});

test('many clauses: Go sort.Sort (pdqsort) path', () => {
  // Expected answers checked against Go 1.19's sort.Sort running the vendored goautoneg.ParseAccept.
  const filler = Array.from({ length: 30 }, (_, i) => `text/x${i};q=0.${(i * 7) % 10}`);
  check([...filler, 'application/yaml;q=0.95', 'application/json;q=0.9'].join(','), legacy('yaml'));
  // With more than 12 clauses pdqsort leaves */*;q=1 ahead of the concrete type with the lower q;
  // insertion sort (the two-clause case in the q-ordering test) does the opposite.
  check([...filler, '*/*;q=1', 'application/vnd.kubernetes.protobuf;q=0.01'].join(','), legacy('json'));
  check([...filler, '*/*;q=1' + aggregatedAcceptSuffix, 'application/yaml;q=0.5' + aggregatedAcceptSuffix].join(','), v2('json'));
  check([...filler, ...filler, aggregatedV2Beta1JSONAccept, aggregatedProtoAccept + ';q=0.01'].join(','), v2('protobuf'));
});

const piece = fc.constantFrom(
  'application', 'json', 'yaml', 'vnd.kubernetes.protobuf', '/', '*', ',', ';', '=', ' ', '\t', 'q', '0.5', '1', '0x1p-1', 'nan', 'inf', '_',
  'g', 'v', 'as', 'apidiscovery.k8s.io', 'v2', 'v2beta1', 'APIGroupDiscoveryList', 'profile', 'nopeer', 'stream', 'watch', 'sv', 'é', '\ud800',
);
const acceptish = fc.array(piece, { maxLength: 40 }).map((a) => a.join(''));
const anyUtf16 = fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 60 }).map((a) => String.fromCharCode(...a));

test('property: never throws, answers are well-formed and stable', () => {
  fc.assert(
    fc.property(fc.oneof(acceptish, fc.string({ unit: 'binary' }), anyUtf16, fc.constant(undefined)), (accept) => {
      const r = negotiateDiscovery(accept);
      if (r !== null) {
        assert.ok(r.kind === 'aggregated' || r.kind === 'legacy');
        assert.ok(r.encoding === 'json' || r.encoding === 'yaml' || r.encoding === 'protobuf');
        assert.equal(typeof r.profile, 'string');
        if (r.kind === 'legacy') assert.deepEqual([r.version, r.profile], ['', '']);
        else assert.ok(r.version === 'v2' || r.version === 'v2beta1');
      }
      assert.deepEqual(negotiateDiscovery(accept), r);
    }),
    { numRuns: 20000 },
  );
});
