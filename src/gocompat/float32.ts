// strconv.ParseFloat(s, 32): a port of go/src/internal/strconv/atof.go of Go 1.26 (the package
// strconv re-exports it): special, commonPrefixLenIgnoreCase, readFloat and the float32 rounding of
// atof32. goautoneg parses an Accept clause's q= with it (src/request/accept.ts).
//
// What differs:
// - The rounding. Go rounds hex with atofHex and decimals with atof32exact, eiselLemire32 or its decimal
//   type (decimal.go); here a decimal of up to
//   20 digits with a small exponent goes through Number() (correctly rounded to float64) and
//   Math.fround, and every other value, or a float64 that lands exactly on a float32 midpoint (where
//   rounding twice could be wrong), is rounded exactly with BigInt. Both give the correctly rounded
//   float32, which is what Go returns.
// - Only the value is returned: Go's ErrSyntax value is 0 and its ErrRange value ±Inf, as here.
// - Go strings are bytes and ours UTF-16; a character >= U+0080 is never part of a number in either.

import { lower, underscoreOK } from './strconv';

/** special: "inf"/"infinity" with an optional sign, "nan" without; [value, characters consumed] or null. */
function special(s: string): [number, number] | null {
  if (s.length === 0) return null;
  let sign = 1;
  let nsign = 0;
  let rest = s;
  const c = s[0];
  if (c === '+' || c === '-') {
    if (c === '-') sign = -1;
    nsign = 1;
    rest = s.substring(1);
  } else if (c === 'n' || c === 'N') {
    return commonPrefixLenIgnoreCase(s, 'nan') === 3 ? [NaN, 3] : null;
  } else if (c !== 'i' && c !== 'I') {
    return null;
  }
  let n = commonPrefixLenIgnoreCase(rest, 'infinity');
  if (3 < n && n < 8) n = 3;
  if (n === 3 || n === 8) return [sign * Infinity, nsign + n];
  return null;
}

function commonPrefixLenIgnoreCase(s: string, prefix: string): number {
  const n = Math.min(prefix.length, s.length);
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    if (c !== prefix.charCodeAt(i)) return i;
  }
  return n;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

interface ReadFloat {
  neg: boolean;
  hex: boolean;
  /** significant digits, leading zeros dropped (hex digits when hex) */
  digits: string;
  /** value = 0.digits × 10^dp, or for hex 0.digits(16) × 2^dp */
  dp: number;
  /** characters consumed */
  n: number;
}

/** readFloat: sign, mantissa (decimal or 0x hex), exponent (e, or p which hex requires). */
function readFloat(s: string): ReadFloat | null {
  const len = s.length;
  let i = 0;
  let neg = false;
  let underscores = false;
  if (i >= len) return null;
  if (s[0] === '+') i++;
  else if (s[0] === '-') {
    i++;
    neg = true;
  }
  let hex = false;
  let expChar = 0x65; // 'e'
  if (i + 2 < len && s[i] === '0' && lower(s.charCodeAt(i + 1)) === 0x78) {
    hex = true;
    i += 2;
    expChar = 0x70; // 'p'
  }
  let sawdot = false;
  let sawdigits = false;
  let nd = 0;
  let dp = 0;
  let digits = '';
  for (; i < len; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x5f) {
      underscores = true;
      continue;
    }
    if (c === 0x2e) {
      if (sawdot) break;
      sawdot = true;
      dp = nd;
      continue;
    }
    if (isDigit(c)) {
      sawdigits = true;
      if (c === 0x30 && nd === 0) {
        dp--;
        continue;
      }
      nd++;
      digits += s[i];
      continue;
    }
    if (hex && lower(c) >= 0x61 && lower(c) <= 0x66) {
      sawdigits = true;
      nd++;
      digits += s[i];
      continue;
    }
    break;
  }
  if (!sawdigits) return null;
  if (!sawdot) dp = nd;
  if (hex) dp *= 4;
  if (i < len && lower(s.charCodeAt(i)) === expChar) {
    i++;
    if (i >= len) return null;
    let esign = 1;
    if (s[i] === '+') i++;
    else if (s[i] === '-') {
      i++;
      esign = -1;
    }
    if (i >= len || !isDigit(s.charCodeAt(i))) return null;
    let e = 0;
    for (; i < len && (isDigit(s.charCodeAt(i)) || s.charCodeAt(i) === 0x5f); i++) {
      if (s.charCodeAt(i) === 0x5f) {
        underscores = true;
        continue;
      }
      // Go stops accumulating at 10000; the value is then out of range anyway (or, with many
      // leading zeros, Go's own answer, which we reproduce).
      if (e < 10000) e = e * 10 + (s.charCodeAt(i) - 0x30);
    }
    dp += e * esign;
  } else if (hex) {
    return null;
  }
  if (underscores && !underscoreOK(s.substring(0, i))) return null;
  return { neg, hex, digits, dp, n: i };
}

/**
 * The value strconv.ParseFloat(s, 32) returns, its error dropped (goautoneg does `q, _ =`): the float32
 * nearest to the decimal or hex value, ties to even; 0 on a syntax error; ±Inf out of range.
 */
export function parseFloat32(s: string): number {
  const sp = special(s);
  if (sp !== null) return sp[1] === s.length ? sp[0] : 0;
  const r = readFloat(s);
  if (r === null || r.n !== s.length) return 0;
  if (r.digits.length === 0) return r.neg ? -0 : 0;
  let v: number;
  if (!r.hex && r.digits.length <= 20 && r.dp > -60 && r.dp < 60) {
    // Fast path: the correctly rounded double, then float32. Double rounding can only go wrong when
    // the double lands exactly on a float32 midpoint; then decide exactly.
    const d = Number(`0.${r.digits}e${r.dp}`);
    v = Math.fround(d);
    if (v !== d && isFloat32Midpoint(d, v)) v = exactFloat32(r);
  } else {
    v = exactFloat32(r);
  }
  return r.neg ? -v : v;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

const F32_MAX = 3.4028234663852886e38;

/** The float32 next to |f| (a float32 or Infinity), away from zero or towards it. */
function float32Neighbour(af: number, up: boolean): number {
  if (af === Infinity) return up ? Infinity : F32_MAX;
  f32[0] = af;
  u32[0] = up ? u32[0] + 1 : u32[0] - 1;
  return f32[0];
}

/** Whether the double d lies exactly halfway between f = fround(d) and the float32 on its far side. */
function isFloat32Midpoint(d: number, f: number): boolean {
  if (!Number.isFinite(d)) return false;
  const ad = Math.abs(d);
  const af = Math.abs(f);
  const g = float32Neighbour(af, ad > af);
  const lo = Math.min(af, g);
  const hi = Math.max(af, g);
  // Adjacent float32 values (and 2^128 for the overflow boundary) sum exactly in a double.
  return ad === (lo + (hi === Infinity ? 2 ** 128 : hi)) / 2;
}

/** |value| rounded to float32, ties to even, with BigInt arithmetic. */
function exactFloat32(r: ReadFloat): number {
  const nd = r.digits.length;
  let num = BigInt((r.hex ? '0x' : '') + r.digits);
  let den = 1n;
  if (r.hex) {
    const e2 = r.dp - 4 * nd;
    if (e2 >= 0) num <<= BigInt(e2);
    else den <<= BigInt(-e2);
  } else {
    // value = digits × 10^(dp - nd); beyond these bounds it is certainly ±Inf or 0 for float32
    if (r.dp > 40) return Infinity;
    if (r.dp < -46) return 0;
    const e10 = r.dp - nd;
    if (e10 >= 0) num *= 10n ** BigInt(e10);
    else den *= 10n ** BigInt(-e10);
  }
  // e: 2^e <= num/den < 2^(e+1)
  let e = bigBitLen(num) - bigBitLen(den);
  if (!geScaled(num, den, e)) e--;
  if (e > 128) return Infinity;
  if (e < -151) return 0;
  const q = Math.max(e - 23, -149); // quantum: 24 significant bits, or the subnormal step
  let n: bigint;
  let d: bigint;
  if (q >= 0) {
    n = num;
    d = den << BigInt(q);
  } else {
    n = num << BigInt(-q);
    d = den;
  }
  let m = n / d;
  const rem2 = (n - m * d) * 2n;
  if (rem2 > d || (rem2 === d && (m & 1n) === 1n)) m += 1n;
  const v = Number(m) * 2 ** q;
  return v >= 2 ** 128 ? Infinity : v;
}

function bigBitLen(x: bigint): number {
  return x === 0n ? 0 : x.toString(2).length;
}

/** num/den >= 2^e */
function geScaled(num: bigint, den: bigint, e: number): boolean {
  return e >= 0 ? num >= den << BigInt(e) : num << BigInt(-e) >= den;
}
