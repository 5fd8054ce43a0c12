// src/gocompat/strings.ts against Go's strings package. From go/src/strings of Go 1.26:
// compareTests (compare_test.go TestCompare), the EqualFoldTests rows that compare with a lower-case
// ASCII string (strings_test.go TestEqualFold; equalFoldLower takes only such a literal), lowerTests
// rows of that kind (TestToLower); then every UTF-16 code unit against every lower-case ASCII
// character, which must match exactly the characters Go 1.26 matches (printed by a Go program that
// ran strings.EqualFold and strings.ToLower over all code points: beyond the ASCII pairs, EqualFold
// adds U+212A for "k" and U+017F for "s", ToLower adds U+212A for "k" and U+0130 for "i").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareByteOrder, equalFoldLower, toLowerIs } from '../../src/gocompat/strings';

const COMPARE_TESTS: [string, string, number][] = [
  ['', '', 0],
  ['a', '', 1],
  ['', 'a', -1],
  ['abc', 'abc', 0],
  ['ab', 'abc', -1],
  ['abc', 'ab', 1],
  ['x', 'ab', 1],
  ['ab', 'x', -1],
  ['x', 'a', 1],
  ['b', 'x', -1],
  // test runtime·memeq's chunked implementation
  ['abcdefgh', 'abcdefgh', 0],
  ['abcdefghi', 'abcdefghi', 0],
  ['abcdefghi', 'abcdefghj', -1],
];

test('compareTests (TestCompare)', () => {
  for (const [a, b, want] of COMPARE_TESTS) assert.equal(Math.sign(compareByteOrder(a, b)), want, `Compare(${a}, ${b})`);
});

test('compareByteOrder is UTF-8 byte order where UTF-16 order differs', () => {
  // U+FFFF is EF BF BF, U+1F600 is F0 9F 98 80: Go puts the emoji after; UTF-16 (D83D…) before.
  assert.ok(compareByteOrder('\uFFFF', '😀') < 0);
  assert.ok(compareByteOrder('😀', '\uE000') > 0);
  assert.ok(compareByteOrder('a😀', 'a\uFFFD') > 0);
  assert.ok(compareByteOrder('\uD7FF', '😀') < 0);
  // (test/unit/order.test.ts checks it against Buffer.compare on random strings)
});

test('EqualFoldTests (TestEqualFold) with a lower-case ASCII side', () => {
  for (const [s, lower, want] of [
    ['abc', 'abc', true],
    ['123ABC', '123abc', true],
    ['xyz', 'abc', false],
    ['XYZ', 'abc', false],
    ['abcdefghijX', 'abcdefghijk', false],
    ['abcdefghij\u212A', 'abcdefghijk', true],
    ['abcdefghij\u212Ay', 'abcdefghijkz', false],
    ['2', '1', false],
    ['US-ASCII', 'utf-8', false],
  ] as const) {
    assert.equal(equalFoldLower(s, 0, s.length, lower), want, `EqualFold(${s}, ${lower})`);
  }
});

test('lowerTests (TestToLower) with a lower-case ASCII result', () => {
  for (const [s, lower] of [
    ['', ''],
    ['abc', 'abc'],
    ['AbC123', 'abc123'],
    ['azAZ09_', 'azaz09_'],
    ['longStrinGwitHmixofsmaLLandcAps', 'longstringwithmixofsmallandcaps'],
    ['renan bastos 93 AOSDAJDJAIDJAIDAJIaidsjjaidijadsjiadjiOOKKO', 'renan bastos 93 aosdajdjaidjaidajiaidsjjaidijadsjiadjiookko'],
  ]) {
    assert.equal(toLowerIs(s, 0, s.length, lower), true, `ToLower(${s})`);
  }
  assert.equal(toLowerIs('FALSE!', 0, 6, 'false'), false); // the length must match
});

test('every code unit against every lower-case ASCII character: the matches Go 1.26 gives', () => {
  for (let l = 0x20; l < 0x7f; l++) {
    if (l >= 0x41 && l <= 0x5a) continue;
    const lower = String.fromCharCode(l);
    const ascii = (c: number) => c === l || (l >= 0x61 && l <= 0x7a && c === l - 0x20);
    const foldExtra = l === 0x6b ? 0x212a : l === 0x73 ? 0x17f : -1;
    const lowerExtra = l === 0x6b ? 0x212a : l === 0x69 ? 0x130 : -1;
    for (let c = 0; c < 0x10000; c++) {
      const s = String.fromCharCode(c);
      if (equalFoldLower(s, 0, 1, lower) !== (ascii(c) || c === foldExtra)) assert.fail(`EqualFold(U+${c.toString(16)}, ${lower})`);
      if (toLowerIs(s, 0, 1, lower) !== (ascii(c) || c === lowerExtra)) assert.fail(`ToLower(U+${c.toString(16)}) == ${lower}`);
    }
  }
});

test('ranges: the literal is compared with s[a, b) only', () => {
  const q = 'watch=FaLſe&x';
  assert.equal(equalFoldLower(q, 6, 11, 'false'), true);
  assert.equal(toLowerIs(q, 6, 11, 'false'), false); // ToLower leaves ſ alone
  assert.equal(equalFoldLower(q, 6, 12, 'false'), false);
  assert.equal(toLowerIs('watch=FALSE', 6, 11, 'false'), true);
});
