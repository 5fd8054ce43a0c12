// fast-check arbitraries for aggregated discovery groups that stress the encoders' edge cases:
// most objects in Go field order with every always-written field (what a Go apiserver sends, and
// what the JSON encoder's JSON.stringify fast path takes), the rest with fields missing, null,
// empty (`"shortNames": []`), in another order, with unknown keys, or with strings that need
// escaping (<, >, &, U+2028/9, quotes, control characters, non-ASCII, lone surrogates).
// Values always have the types the Go structs allow, so the protobuf encoder accepts them too.
import fc from 'fast-check';
import type { APIGroupDiscovery, APIGroupDiscoveryList } from '../../src/aggregation/types';

const plain = fc.constantFrom('', 'a', 'apps', 'v1', 'v1beta1', 'widgets', 'Widget', 'get', 'list', 'Cluster', 'Namespaced', 'Current', 'Stale', 'example.com');
const odd = fc.constantFrom('x<y>&z', '\u2028\u2029', 'é', '😀', '\ud800', 'a"b\\c', '\n\t', '/', ' spaced ');
export const discoveryString = fc.oneof({ weight: 6, arbitrary: plain }, { weight: 1, arbitrary: odd }, { weight: 1, arbitrary: fc.string({ maxLength: 6 }) });

type Entry = [string, unknown];

/** An object from entries: in the given order (canonical), or shuffled, maybe with an unknown key. */
function objectFrom(entries: fc.Arbitrary<Entry[]>): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .tuple(entries, fc.nat(9), fc.nat(1000))
    .map(([es, mode, seed]) => {
      let list = es.filter(([, v]) => v !== undefined);
      if (mode === 0) list = [...list].reverse();
      else if (mode === 1) list = [...list].sort((a, b) => ((a[0].length * 31 + seed) % 7) - ((b[0].length * 31 + seed) % 7));
      if (mode === 2) list = [...list, ['unknownField', seed]];
      return Object.fromEntries(list);
    });
}

/** A value that is absent most of the time when `optional`, else the arbitrary's. */
const maybe = <T>(a: fc.Arbitrary<T>, absent = 1): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: absent, arbitrary: fc.constant(undefined) }, { weight: 3, arbitrary: a });

const stringList = fc.array(discoveryString, { maxLength: 3 });
/** verbs: never omitempty (null or a list, sometimes empty). */
const verbs = fc.oneof(fc.constant(null), stringList, fc.constant([] as string[]));
/** An omitempty list: usually absent or non-empty, sometimes `[]` or null. */
const omitemptyList = fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 3, arbitrary: fc.array(discoveryString, { minLength: 1, maxLength: 3 }) }, { weight: 1, arbitrary: fc.constantFrom([] as string[], null) });

const gvk = objectFrom(fc.tuple(maybe(discoveryString, 1), maybe(discoveryString, 1), maybe(discoveryString, 1)).map(([g, v, k]) => [['group', g], ['version', v], ['kind', k]] as Entry[]));
const gvkOrNull = fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 4, arbitrary: gvk }, { weight: 1, arbitrary: fc.constant(null) });

const subresource = objectFrom(
  fc
    .tuple(maybe(discoveryString, 1), gvkOrNull, fc.oneof(fc.constant(undefined), fc.array(gvk, { maxLength: 2 })), verbs)
    .map(([s, rk, at, v]) => [['subresource', s], ['responseKind', rk], ['acceptedTypes', at], ['verbs', v]] as Entry[]),
);

const resource = objectFrom(
  fc
    .tuple(
      discoveryString, gvkOrNull, maybe(fc.constantFrom('Cluster', 'Namespaced', ''), 1), maybe(discoveryString, 1),
      fc.oneof({ weight: 6, arbitrary: verbs }, { weight: 1, arbitrary: fc.constant(undefined) }),
      omitemptyList, omitemptyList,
      fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: fc.array(subresource, { maxLength: 2 }) }),
    )
    .map(([r, rk, scope, sing, v, sn, cat, subs]) => [
      ['resource', r], ['responseKind', rk], ['scope', scope], ['singularResource', sing], ['verbs', v],
      ['shortNames', sn], ['categories', cat], ['subresources', subs],
    ] as Entry[]),
);

const version = objectFrom(
  fc
    .tuple(fc.oneof({ weight: 8, arbitrary: fc.constantFrom('v1', 'v1beta1', 'v2') }, { weight: 1, arbitrary: discoveryString }), fc.oneof({ weight: 1, arbitrary: fc.constant(undefined) }, { weight: 4, arbitrary: fc.array(resource, { maxLength: 3 }) }), maybe(fc.constantFrom('Current', 'Stale', ''), 2))
    .map(([v, rs, f]) => [['version', v], ['resources', rs], ['freshness', f]] as Entry[]),
);

const metadata: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('apps', 'batch', 'g1.example.com', 'g2.example.com', 'x<y>.example').map((name) => ({ name })) },
  { weight: 1, arbitrary: fc.constantFrom('apps', 'g1.example.com').map((name) => ({ name, creationTimestamp: null })) },
  { weight: 1, arbitrary: fc.constantFrom({ name: 'g2.example.com', labels: { b: '1', a: '<2>' } }, { name: '' }, {}, { name: 'apps', generation: 3, creationTimestamp: '2024-01-02T03:04:05.5+01:00' }) },
);

/** One APIGroupDiscovery (name from a small set, so that servers share groups). */
export const discoveryGroup: fc.Arbitrary<APIGroupDiscovery> = objectFrom(
  fc
    .tuple(metadata, fc.oneof({ weight: 1, arbitrary: fc.constant(undefined) }, { weight: 6, arbitrary: fc.array(version, { maxLength: 3 }) }))
    .map(([m, vs]) => [['metadata', m], ['versions', vs]] as Entry[]),
).map((g) => ('metadata' in g ? g : { ...g, metadata: {} })) as unknown as fc.Arbitrary<APIGroupDiscovery>;

export const discoveryList: fc.Arbitrary<APIGroupDiscoveryList> = fc
  .array(discoveryGroup, { maxLength: 5 })
  .map((items) => ({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items }));
