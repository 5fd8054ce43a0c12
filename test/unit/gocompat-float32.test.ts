// src/gocompat/float32.ts against Go's strconv.ParseFloat(s, 32). The tables are
// go/src/internal/strconv/atof_test.go of Go 1.26 (atoftests, atof32tests), converted line by line:
// [input, Go's FormatFloat of the result, error]. testAtof checks an atoftests row at bitSize 32
// only when its float64 result is also a float32, so ATOF_TESTS keeps just those rows (no NaN, no
// value that float32 cannot hold); parseFloat32 returns the value alone (0 on ErrSyntax, ±Inf on
// ErrRange, as Go's ParseFloat does), so the error column is documentation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFloat32 } from '../../src/gocompat/float32';

type Err = '' | 'syntax' | 'range';

const ATOF_TESTS: [string, string, Err][] = [
  ['', '0', 'syntax'],
  ['1', '1', ''],
  ['+1', '1', ''],
  ['1x', '0', 'syntax'],
  ['1.1.', '0', 'syntax'],
  ['-1', '-1', ''],
  ['-0', '-0', ''],
  ['625e-3', '0.625', ''],

  // Hexadecimal floating-point.
  ['0x1p0', '1', ''],
  ['0x1p1', '2', ''],
  ['0x1p-1', '0.5', ''],
  ['0x1ep-1', '15', ''],
  ['-0x1ep-1', '-15', ''],
  ['-0x1_ep-1', '-15', ''],
  ['0x1fFe2.p0', '131042', ''],
  ['0x1fFe2.P0', '131042', ''],
  ['-0x2p3', '-16', ''],
  ['0x0.fp4', '15', ''],
  ['0x0.fp0', '0.9375', ''],
  ['0x1e2', '0', 'syntax'],
  ['1p2', '0', 'syntax'],

  // zeros
  ['0', '0', ''],
  ['0e0', '0', ''],
  ['-0e0', '-0', ''],
  ['+0e0', '0', ''],
  ['0e-0', '0', ''],
  ['-0e-0', '-0', ''],
  ['+0e-0', '0', ''],
  ['0e+0', '0', ''],
  ['-0e+0', '-0', ''],
  ['+0e+0', '0', ''],
  ['0e+01234567890123456789', '0', ''],
  ['0.00e-01234567890123456789', '0', ''],
  ['-0e+01234567890123456789', '-0', ''],
  ['-0.00e-01234567890123456789', '-0', ''],
  ['0x0p+01234567890123456789', '0', ''],
  ['0x0.00p-01234567890123456789', '0', ''],
  ['-0x0p+01234567890123456789', '-0', ''],
  ['-0x0.00p-01234567890123456789', '-0', ''],
  ['0e291', '0', ''], // issue 15364
  ['0e292', '0', ''], // issue 15364
  ['0e347', '0', ''], // issue 15364
  ['0e348', '0', ''], // issue 15364
  ['-0e291', '-0', ''],
  ['-0e292', '-0', ''],
  ['-0e347', '-0', ''],
  ['-0e348', '-0', ''],
  ['0x0p126', '0', ''],
  ['0x0p127', '0', ''],
  ['0x0p128', '0', ''],
  ['0x0p129', '0', ''],
  ['0x0p130', '0', ''],
  ['0x0p1022', '0', ''],
  ['0x0p1023', '0', ''],
  ['0x0p1024', '0', ''],
  ['0x0p1025', '0', ''],
  ['0x0p1026', '0', ''],
  ['-0x0p126', '-0', ''],
  ['-0x0p127', '-0', ''],
  ['-0x0p128', '-0', ''],
  ['-0x0p129', '-0', ''],
  ['-0x0p130', '-0', ''],
  ['-0x0p1022', '-0', ''],
  ['-0x0p1023', '-0', ''],
  ['-0x0p1024', '-0', ''],
  ['-0x0p1025', '-0', ''],
  ['-0x0p1026', '-0', ''],

  // Infs
  ['inf', '+Inf', ''],
  ['-Inf', '-Inf', ''],
  ['+INF', '+Inf', ''],
  ['-Infinity', '-Inf', ''],
  ['+INFINITY', '+Inf', ''],
  ['Infinity', '+Inf', ''],

  // next float64 - too large
  ['1.7976931348623159e308', '+Inf', 'range'],
  ['-1.7976931348623159e308', '-Inf', 'range'],
  ['0x1p1024', '+Inf', 'range'],
  ['-0x1p1024', '-Inf', 'range'],
  ['0x2p1023', '+Inf', 'range'],
  ['-0x2p1023', '-Inf', 'range'],
  ['0x.1p1028', '+Inf', 'range'],
  ['-0x.1p1028', '-Inf', 'range'],
  ['0x.2p1027', '+Inf', 'range'],
  ['-0x.2p1027', '-Inf', 'range'],

  // borderline - too large
  ['1.797693134862315808e308', '+Inf', 'range'],
  ['-1.797693134862315808e308', '-Inf', 'range'],
  ['0x1.fffffffffffff8p1023', '+Inf', 'range'],
  ['-0x1.fffffffffffff8p1023', '-Inf', 'range'],
  ['0x1fffffffffffff.8p+971', '+Inf', 'range'],
  ['-0x1fffffffffffff8p+967', '-Inf', 'range'],
  ['0x.1fffffffffffff8p1027', '+Inf', 'range'],
  ['-0x.1fffffffffffff9p1027', '-Inf', 'range'],
  ['2e308', '+Inf', 'range'],
  ['1e309', '+Inf', 'range'],
  ['0x1p1025', '+Inf', 'range'],

  // way too large
  ['1e310', '+Inf', 'range'],
  ['-1e310', '-Inf', 'range'],
  ['1e400', '+Inf', 'range'],
  ['-1e400', '-Inf', 'range'],
  ['1e400000', '+Inf', 'range'],
  ['-1e400000', '-Inf', 'range'],
  ['0x1p1030', '+Inf', 'range'],
  ['0x1p2000', '+Inf', 'range'],
  ['0x1p2000000000', '+Inf', 'range'],
  ['-0x1p1030', '-Inf', 'range'],
  ['-0x1p2000', '-Inf', 'range'],
  ['-0x1p2000000000', '-Inf', 'range'],

  // too small
  ['2e-324', '0', ''],

  // way too small
  ['1e-350', '0', ''],
  ['1e-400000', '0', ''],
  ['0x0.00000000000008p-1022', '0', ''], // rounded down
  ['0x0.00000000000007fp-1022', '0', ''], // rounded down

  // try to overflow exponent
  ['1e-4294967296', '0', ''],
  ['1e+4294967296', '+Inf', 'range'],
  ['1e-18446744073709551616', '0', ''],
  ['1e+18446744073709551616', '+Inf', 'range'],
  ['0x1p-4294967296', '0', ''],
  ['0x1p+4294967296', '+Inf', 'range'],
  ['0x1p-18446744073709551616', '0', ''],
  ['0x1p+18446744073709551616', '+Inf', 'range'],

  // Parse errors
  ['1e', '0', 'syntax'],
  ['1e-', '0', 'syntax'],
  ['.e-1', '0', 'syntax'],
  ['1\x00.2', '0', 'syntax'],
  ['0x', '0', 'syntax'],
  ['0x.', '0', 'syntax'],
  ['0x1', '0', 'syntax'],
  ['0x.1', '0', 'syntax'],
  ['0x1p', '0', 'syntax'],
  ['0x.1p', '0', 'syntax'],
  ['0x1p+', '0', 'syntax'],
  ['0x.1p+', '0', 'syntax'],
  ['0x1p-', '0', 'syntax'],
  ['0x.1p-', '0', 'syntax'],
  ['0x1p+2', '4', ''],
  ['0x.1p+2', '0.25', ''],
  ['0x1p-2', '0.25', ''],
  ['0x.1p-2', '0.015625', ''],

  // Exactly halfway between 1 and math.Nextafter(1, 2).
  // Round to even (down).
  ['1.00000000000000011102230246251565404236316680908203125', '1', ''],
  ['0x1.00000000000008p0', '1', ''],

  // Slightly lower; still round down.
  ['1.00000000000000011102230246251565404236316680908203124', '1', ''],
  ['0x1.00000000000007Fp0', '1', ''],
  ['-_123.5e+12', '0', 'syntax'],
  ['+_123.5e+12', '0', 'syntax'],
  ['_123.5e+12', '0', 'syntax'],
  ['1__23.5e+12', '0', 'syntax'],
  ['123_.5e+12', '0', 'syntax'],
  ['123._5e+12', '0', 'syntax'],
  ['123.5_e+12', '0', 'syntax'],
  ['123.5__0e+12', '0', 'syntax'],
  ['123.5e_+12', '0', 'syntax'],
  ['123.5e+_12', '0', 'syntax'],
  ['123.5e_-12', '0', 'syntax'],
  ['123.5e-_12', '0', 'syntax'],
  ['123.5e+1__2', '0', 'syntax'],
  ['123.5e+12_', '0', 'syntax'],
  ['0x_1_2.3_4_5p+1_2', '74565', ''],
  ['-_0x12.345p+12', '0', 'syntax'],
  ['+_0x12.345p+12', '0', 'syntax'],
  ['_0x12.345p+12', '0', 'syntax'],
  ['0x__12.345p+12', '0', 'syntax'],
  ['0x1__2.345p+12', '0', 'syntax'],
  ['0x12_.345p+12', '0', 'syntax'],
  ['0x12._345p+12', '0', 'syntax'],
  ['0x12.3__45p+12', '0', 'syntax'],
  ['0x12.345_p+12', '0', 'syntax'],
  ['0x12.345p_+12', '0', 'syntax'],
  ['0x12.345p+_12', '0', 'syntax'],
  ['0x12.345p_-12', '0', 'syntax'],
  ['0x12.345p-_12', '0', 'syntax'],
  ['0x12.345p+1__2', '0', 'syntax'],
  ['0x12.345p+12_', '0', 'syntax'],
  ['1e100x', '0', 'syntax'],
  ['1e1000x', '0', 'syntax'],
];

const ATOF32_TESTS: [string, string, Err][] = [
  // Hex
  ['0x1p-100', '7.888609e-31', ''],
  ['0x1p100', '1.2676506e+30', ''],

  // Exactly halfway between 1 and the next float32.
  // Round to even (down).
  ['1.000000059604644775390625', '1', ''],
  ['0x1.000001p0', '1', ''],

  // Slightly lower.
  ['1.000000059604644775390624', '1', ''],
  ['0x1.0000008p0', '1', ''],
  ['0x1.000000fp0', '1', ''],

  // Slightly higher.
  ['1.000000059604644775390626', '1.0000001', ''],
  ['0x1.000002p0', '1.0000001', ''],
  ['0x1.0000018p0', '1.0000001', ''],
  ['0x1.0000011p0', '1.0000001', ''],

  // Slightly higher, but you have to read all the way to the end.
  ['1.000000059604644775390625' + '0'.repeat(10000) + '1', '1.0000001', ''],
  ['0x1.000001' + '0'.repeat(10000) + '1p0', '1.0000001', ''],

  // largest float32: (1<<128) * (1 - 2^-24)
  ['340282346638528859811704183484516925440', '3.4028235e+38', ''],
  ['-340282346638528859811704183484516925440', '-3.4028235e+38', ''],
  ['0x.ffffffp128', '3.4028235e+38', ''],
  ['-340282346638528859811704183484516925440', '-3.4028235e+38', ''],
  ['-0x.ffffffp128', '-3.4028235e+38', ''],

  // next float32 - too large
  ['3.4028236e38', '+Inf', 'range'],
  ['-3.4028236e38', '-Inf', 'range'],
  ['0x1.0p128', '+Inf', 'range'],
  ['-0x1.0p128', '-Inf', 'range'],

  // the border is 3.40282356779...e+38
  // borderline - okay
  ['3.402823567e38', '3.4028235e+38', ''],
  ['-3.402823567e38', '-3.4028235e+38', ''],
  ['0x.ffffff7fp128', '3.4028235e+38', ''],
  ['-0x.ffffff7fp128', '-3.4028235e+38', ''],

  // borderline - too large
  ['3.4028235678e38', '+Inf', 'range'],
  ['-3.4028235678e38', '-Inf', 'range'],
  ['0x.ffffff8p128', '+Inf', 'range'],
  ['-0x.ffffff8p128', '-Inf', 'range'],

  // Denormals: less than 2^-126
  ['1e-38', '1e-38', ''],
  ['1e-39', '1e-39', ''],
  ['1e-40', '1e-40', ''],
  ['1e-41', '1e-41', ''],
  ['1e-42', '1e-42', ''],
  ['1e-43', '1e-43', ''],
  ['1e-44', '1e-44', ''],
  ['6e-45', '6e-45', ''], // 4p-149 = 5.6e-45
  ['5e-45', '6e-45', ''],

  // Smallest denormal
  ['1e-45', '1e-45', ''], // 1p-149 = 1.4e-45
  ['2e-45', '1e-45', ''],
  ['3e-45', '3e-45', ''],

  // Near denormals and denormals.
  ['0x0.89aBcDp-125', '1.2643093e-38', ''], // 0x0089abcd
  ['0x0.8000000p-125', '1.1754944e-38', ''], // 0x00800000
  ['0x0.1234560p-125', '1.671814e-39', ''], // 0x00123456
  ['0x0.1234567p-125', '1.671814e-39', ''], // rounded down
  ['0x0.1234568p-125', '1.671814e-39', ''], // rounded down
  ['0x0.1234569p-125', '1.671815e-39', ''], // rounded up
  ['0x0.1234570p-125', '1.671815e-39', ''], // 0x00123457
  ['0x0.0000010p-125', '1e-45', ''], // 0x00000001
  ['0x0.00000081p-125', '1e-45', ''], // rounded up
  ['0x0.0000008p-125', '0', ''], // rounded down
  ['0x0.0000007p-125', '0', ''], // rounded down

  // 2^92 = 8388608p+69 = 4951760157141521099596496896 (4.9517602e27)
  // is an exact power of two that needs 8 decimal digits to be correctly
  // parsed back.
  // The float32 before is 16777215p+68 = 4.95175986e+27
  // The halfway is 4.951760009. A bad algorithm that thinks the previous
  // float32 is 8388607p+69 will shorten incorrectly to 4.95176e+27.
  ['4951760157141521099596496896', '4.9517602e+27', ''],
];

function value(out: string): number {
  if (out === '+Inf') return Infinity;
  if (out === '-Inf') return -Infinity;
  return Math.fround(Number(out));
}

function check(rows: [string, string, Err][]): void {
  for (const [input, out] of rows) {
    const got = parseFloat32(input);
    const label = input.length > 60 ? `${input.slice(0, 30)}…${input.slice(-20)} (${input.length} characters)` : JSON.stringify(input);
    assert.ok(Object.is(got, value(out)), `ParseFloat(${label}, 32) = ${got}, want ${out}`);
    assert.equal(Math.fround(got), got, `${label}: not a float32`);
  }
}

test('atoftests rows whose result is a float32 (TestAtof at bitSize 32)', () => check(ATOF_TESTS));

test('atof32tests (TestAtof)', () => check(ATOF32_TESTS));

test('NaN spellings (atoftests "NaNs", skipped at bitSize 32 by Go only because NaN != NaN)', () => {
  for (const s of ['nan', 'NaN', 'NAN']) assert.ok(Number.isNaN(parseFloat32(s)), s);
  // special() takes a sign only before inf; "+nan" and "nan" with a suffix are syntax errors
  for (const s of ['+nan', '-NaN', 'nanx', 'infx', 'infinit', 'in']) assert.ok(Object.is(parseFloat32(s), 0), s);
});

test('q values as goautoneg hands them over: untrimmed, so a space is a syntax error (0)', () => {
  assert.equal(parseFloat32('0.9'), Math.fround(0.9));
  assert.equal(parseFloat32('1'), 1);
  assert.equal(parseFloat32('.5'), 0.5);
  assert.equal(parseFloat32('5.'), 5);
  assert.equal(parseFloat32('1e0'), 1);
  assert.equal(parseFloat32(' 0.5'), 0);
  assert.equal(parseFloat32('0.5 '), 0);
  assert.equal(parseFloat32('0,5'), 0);
  assert.equal(parseFloat32('٠.5'), 0); // an Arabic-Indic digit is no digit
});

test('2000 LCG-made decimals: the float32 bits Go 1.26 gives (FNV-1a of them, printed by Go)', () => {
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  let x = 12345;
  let h = 0x811c9dc5;
  for (let i = 0; i < 2000; i++) {
    x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff;
    const s = `${x % 1000}.${String(x).padStart(9, '0').slice(0, 6)}e${(x % 77) - 38}`;
    f32[0] = parseFloat32(s);
    for (let k = 0; k < 4; k++) {
      h ^= (u32[0]! >>> (8 * k)) & 0xff;
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  }
  assert.equal(h, 0xf661021c);
});
