// Discovery bodies under generated hostile input (issue 16 §2; src/aggregation/decode.ts), with
// fast-check: mutations of real documents (byte flips, truncations, insertions, deletions, values
// of another JSON type or shape swapped in at a random JSON path, keys renamed), JSON and
// protobuf, each body at most 64 KiB. For every body the decoder either
//   - refuses it with a DiscoveryFetchError (MVP_ERR_DISCOVERY_DECODE or _TOO_LARGE), never
//     another exception; or
//   - returns a well-formed apidiscovery.k8s.io/v2 list, whose `raw` (what is handed on) decodes
//     to the same Go value again and goes through a real merge (the merge worker's code, inline)
//     beside the v1.33 fixture without an error.
// No decode may take long: a generous per-body bound catches a hang or a super-linear path (the
// bodies are ≤ 64 KiB; a real document decodes in ~1-3 ms). Seeded: the seed is printed first (a
// diagnostic line) and MVPROXY_FUZZ_SEED=N replays run N (test/support/fuzz-seed.ts); fast-check
// prints the failing case's seed and path too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeDiscoveryBody, DISCOVERY_V2_API_VERSION } from '../../src/aggregation/decode';
import { DiscoveryFetchError } from '../../src/aggregation/errors';
import { encodeJSON } from '../../src/aggregation/codec/json';
import { encodeAPIGroupDiscoveryList } from '../../src/aggregation/codec/protobuf';
import { DiscoveryMerger } from '../../src/aggregation/merger';
import type { APIGroupDiscoveryList } from '../../src/aggregation/types';
import { CORE_API, V133_APIS, V137_APIS } from '../support/discovery-bodies';
import { fuzzSeed, seedLine } from '../support/fuzz-seed';

const RUNS = 300;
const MAX_BODY = 64 * 1024;
const SLOW_MS = 1000;

const v137 = JSON.parse(V137_APIS.toString('utf8')) as APIGroupDiscoveryList;
const small: APIGroupDiscoveryList = { ...v137, items: v137.items.slice(0, 6) };
const BASES: readonly Buffer[] = [
  Buffer.from(JSON.stringify(small, null, 2)), // the fixtures' own layout
  Buffer.from(JSON.stringify(small)),
  CORE_API,
  encodeAPIGroupDiscoveryList(small, 'v2'),
];

// ---- mutations -------------------------------------------------------------------------------

type Mutation = (b: Buffer) => Buffer;

const TOKENS = ['{', '}', '[', ']', '"', ',', ':', '\\', 'null', '1e999', '-0', '"\\ud800"', '\u0000', '\uFEFF', 'k8s\u0000'].map((t) => Buffer.from(t));
const INVALID_UTF8 = [Buffer.from([0xff]), Buffer.from([0xc3]), Buffer.from([0xe2, 0x82]), Buffer.from([0xed, 0xa0, 0x80])];

/** JSON texts swapped in for a value: every JSON type, Go type mismatches, and nesting around Go's limit of 10000. */
const valueText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('null', 'true', 'false', '0', '-1', '1.5', '1e999', '9223372036854775808', '""', '"x"', '[]', '{}', '[null]', '[1]', '["a",2]', '{"a":1}', '"2023-02-29T00:00:00Z"', '"2024-01-01T00:00:00Z"', '"\\ud800"', '"\\u0000"'),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.integer({ min: 9_980, max: 10_010 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
);

const flip = fc.record({ at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }).map(({ at, xor }): Mutation => (b) => {
  if (b.length === 0) return b;
  const out = Buffer.from(b);
  out[at % out.length] ^= xor;
  return out;
});
const truncate = fc.nat().map((at): Mutation => (b) => b.subarray(0, at % (b.length + 1)));
const insert = fc
  .record({ at: fc.nat(), bytes: fc.oneof(fc.constantFrom(...TOKENS, ...INVALID_UTF8), fc.uint8Array({ minLength: 1, maxLength: 16 }).map((a) => Buffer.from(a))) })
  .map(({ at, bytes }): Mutation => (b) => {
    const i = at % (b.length + 1);
    return Buffer.concat([b.subarray(0, i), bytes, b.subarray(i)]);
  });
const remove = fc.record({ at: fc.nat(), len: fc.integer({ min: 1, max: 256 }) }).map(({ at, len }): Mutation => (b) => {
  const i = at % (b.length + 1);
  return Buffer.concat([b.subarray(0, i), b.subarray(i + len)]);
});

/** Every [parent, key] of a parsed JSON document, walked without recursion. */
function slots(doc: unknown): [Record<string, unknown> | unknown[], string | number][] {
  const out: [Record<string, unknown> | unknown[], string | number][] = [];
  const stack: unknown[] = [doc];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) v.forEach((x, i) => (out.push([v, i]), stack.push(x)));
    else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) (out.push([v as Record<string, unknown>, k]), stack.push(x));
  }
  return out;
}

const SENTINEL = '\u0001swap\u0001';

/** JSON.stringify, or undefined for a document nested too deep for it (an earlier step swapped in ~10000 levels). */
function restringify(doc: unknown): string | undefined {
  try {
    return JSON.stringify(doc);
  } catch {
    return undefined;
  }
}

/** A value at a random JSON path replaced by another JSON text (a body that is not JSON is left alone). */
const swapValue = fc.record({ pick: fc.nat(), text: valueText }).map(({ pick, text }): Mutation => (b) => {
  let doc: unknown;
  try {
    doc = JSON.parse(b.toString('utf8'));
  } catch {
    return b;
  }
  const all = slots(doc);
  if (all.length === 0) return Buffer.from(text);
  const [parent, key] = all[pick % all.length]!;
  (parent as Record<string, unknown>)[key as string] = SENTINEL;
  const out = restringify(doc)?.replace(JSON.stringify(SENTINEL), () => text);
  return out === undefined ? b : Buffer.from(out);
});

/** A key at a random JSON path renamed: another case, a Go field's name, or gone. */
const renameKey = fc.record({ pick: fc.nat(), to: fc.constantFrom('KIND', 'Kind', 'ApiVersion', 'kind', 'apiVersion', 'items', 'metadata', 'versions', 'resources', 'verbs', 'x', '__proto__', '') }).map(({ pick, to }): Mutation => (b) => {
  let doc: unknown;
  try {
    doc = JSON.parse(b.toString('utf8'));
  } catch {
    return b;
  }
  const named = slots(doc).filter(([p]) => !Array.isArray(p));
  if (named.length === 0) return b;
  const [parent, key] = named[pick % named.length]! as [Record<string, unknown>, string];
  const entries = Object.entries(parent).map(([k, v]): [string, unknown] => (k === key ? [to, v] : [k, v])).filter(([k]) => k !== '');
  for (const k of Object.keys(parent)) delete parent[k];
  for (const [k, v] of entries) Object.defineProperty(parent, k, { value: v, enumerable: true, writable: true, configurable: true });
  const text = restringify(doc);
  return text === undefined ? b : Buffer.from(text);
});

const mutation: fc.Arbitrary<Mutation> = fc.oneof(flip, truncate, insert, remove, swapValue, swapValue, renameKey);

const body: fc.Arbitrary<Buffer> = fc
  .record({ base: fc.nat({ max: BASES.length - 1 }), steps: fc.array(mutation, { minLength: 1, maxLength: 3 }) })
  .map(({ base, steps }) => {
    let b = BASES[base]!;
    for (const m of steps) b = m(b);
    return b.length > MAX_BODY ? b.subarray(0, MAX_BODY) : b;
  });

// ---- the property ----------------------------------------------------------------------------

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isString = (v: unknown) => typeof v === 'string';
const optStrings = (v: unknown) => v === undefined || (Array.isArray(v) && v.every(isString));
const isGVK = (v: unknown) => isObject(v) && isString(v['group']) && isString(v['version']) && isString(v['kind']);

/** The shape Go's typed decode guarantees and the rest of mvproxy relies on. */
function assertWellFormed(l: APIGroupDiscoveryList): void {
  assert.equal(l.kind, 'APIGroupDiscoveryList');
  assert.equal(l.apiVersion, DISCOVERY_V2_API_VERSION);
  assert.ok(isObject(l.metadata));
  assert.ok(Array.isArray(l.items));
  for (const g of l.items) {
    assert.ok(isObject(g) && isObject(g.metadata));
    assert.ok(g.metadata.name === undefined || isString(g.metadata.name));
    assert.ok(g.versions === undefined || Array.isArray(g.versions));
    for (const v of g.versions ?? []) {
      assert.ok(isObject(v) && isString(v.version));
      assert.ok(v.freshness === undefined || isString(v.freshness));
      assert.ok(v.resources === undefined || Array.isArray(v.resources));
      for (const r of v.resources ?? []) {
        assert.ok(isObject(r) && isString(r.resource) && isString(r.scope) && isString(r.singularResource));
        assert.ok(r.verbs === null || (Array.isArray(r.verbs) && r.verbs.every(isString)));
        assert.ok(r.responseKind === undefined || isGVK(r.responseKind));
        assert.ok(optStrings(r.shortNames) && optStrings(r.categories));
        assert.ok(r.subresources === undefined || Array.isArray(r.subresources));
        for (const s of r.subresources ?? []) {
          assert.ok(isObject(s) && isString(s.subresource));
          assert.ok(s.verbs === null || (Array.isArray(s.verbs) && s.verbs.every(isString)));
          assert.ok(s.responseKind === undefined || isGVK(s.responseKind));
          assert.ok(s.acceptedTypes === undefined || (Array.isArray(s.acceptedTypes) && s.acceptedTypes.every(isGVK)));
        }
      }
    }
  }
}

test(`fuzzing discovery bodies (${RUNS} mutated documents, ≤ 64 KiB): refused with a DiscoveryFetchError, or a well-formed list that merges`, async (t) => {
  const seed = fuzzSeed();
  t.diagnostic(seedLine(seed));
  const merger = new DiscoveryMerger({ inline: true });
  const seen = { accepted: 0, refused: 0, json: 0, protobuf: 0, slowestMs: 0 };
  const codes = new Map<string, number>();
  try {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const started = performance.now();
        let decoded: ReturnType<typeof decodeDiscoveryBody>;
        try {
          decoded = decodeDiscoveryBody(b);
        } catch (e) {
          assert.ok(e instanceof DiscoveryFetchError, `${e instanceof Error ? `${e.name}: ${e.message}` : String(e)} is not a DiscoveryFetchError`);
          assert.ok(e.code === 'MVP_ERR_DISCOVERY_DECODE' || e.code === 'MVP_ERR_DISCOVERY_TOO_LARGE', e.code);
          assert.match(e.message, /^discovery body: \S/);
          seen.refused++;
          codes.set(e.code, (codes.get(e.code) ?? 0) + 1);
          return;
        } finally {
          const ms = performance.now() - started;
          seen.slowestMs = Math.max(seen.slowestMs, ms);
          assert.ok(ms < SLOW_MS, `decoding ${b.length} bytes took ${ms.toFixed(0)} ms`);
        }
        seen.accepted++;
        seen[decoded.format]++;
        assertWellFormed(decoded.list);
        assert.ok(Buffer.isBuffer(decoded.raw));
        const again = decodeDiscoveryBody(decoded.raw);
        assert.ok(encodeJSON(again.list).equals(encodeJSON(decoded.list)), 'raw decodes to the same Go value');
        const snap = await merger.build({ localID: 'local', localApis: V133_APIS, peers: [{ id: 'peer', apis: decoded.raw }], excludedGroupVersions: [] });
        assert.ok(snap.generation > 0);
      }),
      { seed, numRuns: RUNS },
    );
  } finally {
    await merger.close();
    t.diagnostic(`${seedLine(seed)}: ${seen.accepted} accepted (${seen.json} JSON, ${seen.protobuf} protobuf), ${seen.refused} refused (${[...codes].map(([c, n]) => `${c} ${n}`).join(', ')}); slowest decode ${seen.slowestMs.toFixed(1)} ms`);
  }
  assert.ok(seen.accepted > 0 && seen.refused > 0, 'both outcomes exercised');
});
