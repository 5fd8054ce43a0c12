// src/gocompat/query.ts against Go's url.ParseQuery + Values.Get. From go/src/net/url/url_test.go
// of Go 1.26: parseTests (TestParseQuery; Values.Get is the first value of each key, and an error
// still leaves the values parsed so far, which is what req.URL.Query() keeps) and
// TestParseQueryLimits without GODEBUG; then the in-place reading and reuse of QueryValues.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_QUERY_PARAMS, QueryValues } from '../../src/gocompat/query';

// [query, Values (every value of every key), ok]
const PARSE_TESTS: [string, Record<string, string[]>, boolean][] = [
  ['a=1', { a: ['1'] }, true],
  ['a=1&b=2', { a: ['1'], b: ['2'] }, true],
  ['a=1&a=2&a=banana', { a: ['1', '2', 'banana'] }, true],
  ['ascii=%3Ckey%3A+0x90%3E', { ascii: ['<key: 0x90>'] }, true],
  ['a=1;b=2', {}, false],
  ['a;b=1', {}, false],
  ['a=%3B', { a: [';'] }, true], // hex encoding for semicolon
  ['a%3Bb=1', { 'a;b': ['1'] }, true],
  ['a=1&a=2;a=banana', { a: ['1'] }, false],
  ['a;b&c=1', { c: ['1'] }, false],
  ['a=1&b=2;a=3&c=4', { a: ['1'], c: ['4'] }, false],
  ['a=1&b=2;c=3', { a: ['1'] }, false],
  [';', {}, false],
  ['a=1;', {}, false],
  ['a=1&;', { a: ['1'] }, false],
  [';a=1&b=2', { b: ['2'] }, false],
  ['a=1&b=2;', { a: ['1'] }, false],
];

const KEYS = ['a', 'b', 'c', 'ascii', 'a;b'];

/** Values.Get for every key in KEYS, undefined for a key without values. */
function firstValues(q: QueryValues, query: string): Record<string, string | undefined> {
  const any = q.parse(query);
  const out: Record<string, string | undefined> = {};
  KEYS.forEach((k, i) => {
    out[k] = q.get(i) ? q.str.substring(q.start, q.end) : undefined;
  });
  assert.equal(any, Object.values(out).some((v) => v !== undefined), `parse(${JSON.stringify(query)}) return value`);
  return out;
}

test('parseTests (TestParseQuery), read through Values.Get', () => {
  const q = new QueryValues(KEYS);
  for (const [query, values] of PARSE_TESTS) {
    const want: Record<string, string | undefined> = {};
    for (const k of KEYS) want[k] = values[k]?.[0];
    assert.deepEqual(firstValues(q, query), want, JSON.stringify(query));
  }
});

test('TestParseQueryLimits: up to 10000 parameters parse, one more and there are no values', () => {
  assert.equal(MAX_QUERY_PARAMS, 10000);
  const q = new QueryValues(['p0', 'p9999']);
  const params = (n: number) => Array.from({ length: n }, (_, i) => `p${i}`).join('&');
  assert.equal(q.parse(params(10)), true);
  assert.equal(q.parse(params(MAX_QUERY_PARAMS)), true);
  assert.ok(q.get(1));
  assert.equal(q.parse(params(MAX_QUERY_PARAMS + 1)), false);
  assert.equal(q.get(0), false);
  // '&' are counted, not parameters with a value: 10000 '&' is 10001 parameters.
  assert.equal(q.parse('p0=1' + '&'.repeat(MAX_QUERY_PARAMS - 1)), true);
  assert.equal(q.parse('p0=1' + '&'.repeat(MAX_QUERY_PARAMS)), false);
});

test('a pair whose key or value does not unescape is dropped; a later pair can then be the first value', () => {
  const q = new QueryValues(['watch', 'limit']);
  assert.equal(q.parse('watch=%zz&watch=1'), true);
  assert.ok(q.get(0));
  assert.equal(q.str.substring(q.start, q.end), '1');
  assert.equal(q.parse('wat%zzch=1&%6cimit=5'), true); // an escaped key is compared unescaped
  assert.equal(q.get(0), false);
  assert.ok(q.get(1));
  assert.equal(q.str.substring(q.start, q.end), '5');
  assert.equal(q.parse('watch'), true); // no '=': the value is ""
  assert.ok(q.get(0));
  assert.equal(q.end - q.start, 0);
  assert.equal(q.parse('&&=x&'), false);
});

test('values that need no unescaping are read in place, the others are unescaped', () => {
  const q = new QueryValues(['limit', 'fieldSelector']);
  const query = 'limit=500&fieldSelector=metadata.name%3Dfoo';
  q.parse(query);
  assert.ok(q.get(0));
  assert.equal(q.str, query); // no copy
  assert.equal(q.str.substring(q.start, q.end), '500');
  assert.ok(q.get(1));
  const unescaped: string = q.str;
  assert.equal(unescaped, 'metadata.name=foo');
  assert.equal(q.start, 0);
  assert.equal(q.end, unescaped.length);
});

test('property: first values equal URLSearchParams on queries without ";" and with valid escapes', () => {
  // WHATWG and Go agree on these: '&' separates, the first '=' splits, '+' is a space, %XX a UTF-8 byte.
  const keys = ['a', 'b', 'a b', 'é'];
  const part = fc.constantFrom('a', 'b', ' ', 'é', '=', '1', '+', '%20', '%C3%A9', '%3D', '%26');
  const q = new QueryValues(keys);
  fc.assert(
    fc.property(fc.array(fc.array(part, { maxLength: 4 }).map((p) => p.join('')), { maxLength: 5 }), (pairs) => {
      const query = pairs.join('&');
      q.parse(query);
      const sp = new URLSearchParams(query);
      return keys.every((k, i) => (q.get(i) ? q.str.substring(q.start, q.end) : null) === sp.get(k));
    }),
  );
});
