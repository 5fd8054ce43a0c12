// src/gocompat/strconv.ts against Go's strconv. The tables are go/src/internal/strconv/atoi_test.go
// of Go 1.26: parseInt64Tests (TestParseInt64, base 10, bitSize 64) as [input, err == nil], and the
// "underscores" rows of parseInt64BaseTests (base 0), where underscoreOK alone decides the error;
// then the same checks on ranges inside a longer string, which is how src/request/requestinfo.ts
// reads a query value in place.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { lower, parseGoBool, parseInt64OK, underscoreOK } from '../../src/gocompat/strconv';

const PARSE_INT64_TESTS: [string, boolean][] = [
  ['', false],
  ['0', true],
  ['-0', true],
  ['+0', true],
  ['1', true],
  ['-1', true],
  ['+1', true],
  ['12345', true],
  ['-12345', true],
  ['012345', true],
  ['-012345', true],
  ['98765432100', true],
  ['-98765432100', true],
  ['9223372036854775807', true],
  ['-9223372036854775807', true],
  ['9223372036854775808', false],
  ['-9223372036854775808', true],
  ['9223372036854775809', false],
  ['-9223372036854775809', false],
  ['-1_2_3_4_5', false], // base=10 so no underscores allowed
  ['-_12345', false],
  ['_12345', false],
  ['1__2345', false],
  ['12345_', false],
  ['123%45', false],
];

// parseInt64BaseTests, "underscores" (base 0)
const UNDERSCORE_TESTS: [string, boolean][] = [
  ['-0x_1_2_3_4_5', true],
  ['0x_1_2_3_4_5', true],
  ['-_0x12345', false],
  ['_-0x12345', false],
  ['_0x12345', false],
  ['0x__12345', false],
  ['0x1__2345', false],
  ['0x1234__5', false],
  ['0x12345_', false],
  ['-0_1_2_3_4_5', true], // octal
  ['0_1_2_3_4_5', true], // octal
  ['-_012345', false],
  ['_-012345', false],
  ['_012345', false],
  ['0__12345', false],
  ['01234__5', false],
  ['012345_', false],
];

test('parseInt64Tests (TestParseInt64)', () => {
  for (const [s, ok] of PARSE_INT64_TESTS) assert.equal(parseInt64OK(s, 0, s.length), ok, JSON.stringify(s));
});

test('parseInt64Tests on a range inside a longer string (limit=…&)', () => {
  for (const [s, ok] of PARSE_INT64_TESTS) {
    const q = `limit=${s}&x=9`;
    assert.equal(parseInt64OK(q, 6, 6 + s.length), ok, JSON.stringify(q));
  }
});

test('more ParseInt(s, 10, 64) edges: leading zeros before the bound, signs alone, non-ASCII digits', () => {
  for (const [s, ok] of [
    ['00000000000000000009223372036854775807', true],
    ['-00000000000000000009223372036854775808', true],
    ['00000000000000000009223372036854775808', false],
    ['+', false],
    ['-', false],
    ['+-1', false],
    ['1e3', false],
    ['1.0', false],
    [' 1', false],
    ['١٢', false], // Arabic-Indic digits are not digits to Go either
    ['99999999999999999999', false],
  ] as const) {
    assert.equal(parseInt64OK(s, 0, s.length), ok, JSON.stringify(s));
  }
});

test('property: parseInt64OK agrees with BigInt bounds on signed digit strings', () => {
  const min = -(1n << 63n);
  const max = (1n << 63n) - 1n;
  fc.assert(
    fc.property(fc.constantFrom('', '+', '-'), fc.stringMatching(/^[0-9]{1,22}$/), (sign, digits) => {
      const s = sign + digits;
      const v = BigInt(sign === '-' ? '-' + digits : digits);
      return parseInt64OK(s, 0, s.length) === (v >= min && v <= max);
    }),
  );
});

test('underscoreOK: the underscore rows of parseInt64BaseTests (base 0)', () => {
  for (const [s, ok] of UNDERSCORE_TESTS) assert.equal(underscoreOK(s), ok, JSON.stringify(s));
});

test('lower: ASCII letters to lower case, no other character becomes a letter', () => {
  assert.equal(lower(0x41), 0x61);
  assert.equal(lower(0x5a), 0x7a);
  assert.equal(lower(0x78), 0x78);
  for (let c = 0; c < 0x10000; c++) {
    const isLetter = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
    const l = lower(c);
    assert.equal(l >= 0x61 && l <= 0x7a, isLetter, c.toString(16));
  }
});

test('parseGoBool: Go atob_test.go atobtests (undefined where Go returns ErrSyntax)', () => {
  const table: [string, boolean | undefined][] = [
    ['', undefined],
    ['asdf', undefined],
    ['0', false],
    ['f', false],
    ['F', false],
    ['FALSE', false],
    ['false', false],
    ['False', false],
    ['1', true],
    ['t', true],
    ['T', true],
    ['TRUE', true],
    ['true', true],
    ['True', true],
    // not in Go's table, but what ParseBool's switch gives: mixed case other than Title is an error
    ['tRUE', undefined],
    ['yes', undefined],
  ];
  for (const [in_, want] of table) assert.equal(parseGoBool(in_), want, JSON.stringify(in_));
});
