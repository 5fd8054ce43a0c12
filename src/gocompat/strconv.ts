// strconv's integer and boolean parsing: a port of go/src/internal/strconv/atoi.go of Go 1.26 (the
// package strconv re-exports it): ParseInt(s, 10, 64) as a yes/no answer, underscoreOK and lower;
// and go/src/strconv/atob.go ParseBool, as pflag parses a boolean flag (config/).
//
// Kubernetes needs only whether a query value is an int64 (DecodeParameters fails on limit= or
// timeoutSeconds= that is not one, src/request/requestinfo.ts), so parseInt64OK returns that and never
// builds the number: the digits are compared with the int64 bounds as strings.
//
// What differs: Go strings are bytes and ours UTF-16; a character >= U+0080 is never a digit in either.

const INT64_MAX = '9223372036854775807';
const INT64_MIN_ABS = '9223372036854775808';

/**
 * strconv.ParseInt(s[a:b], 10, 64) returns no error: an optional sign, then ASCII digits only (base 10
 * allows no '_'), within int64. Reads the range in place and allocates nothing.
 */
export function parseInt64OK(s: string, a: number, b: number): boolean {
  let i = a;
  let neg = false;
  if (i < b) {
    const c0 = s.charCodeAt(i);
    if (c0 === 0x2b) i++;
    else if (c0 === 0x2d) {
      neg = true;
      i++;
    }
  }
  if (i >= b) return false;
  for (let j = i; j < b; j++) {
    const c = s.charCodeAt(j);
    if (c < 0x30 || c > 0x39) return false;
  }
  while (i < b - 1 && s.charCodeAt(i) === 0x30) i++;
  const limit = neg ? INT64_MIN_ABS : INT64_MAX;
  if (b - i !== limit.length) return b - i < limit.length;
  for (let j = 0; j < limit.length; j++) {
    const d = s.charCodeAt(i + j) - limit.charCodeAt(j);
    if (d !== 0) return d < 0;
  }
  return true;
}

/** underscoreOK: '_' only between digits, or between a base prefix and a digit (ParseFloat checks this;
 *  ParseInt with base 10 allows no '_' at all). */
export function underscoreOK(s: string): boolean {
  let saw = '^';
  let i = 0;
  if (s.length >= 1 && (s[0] === '-' || s[0] === '+')) s = s.substring(1);
  let hex = false;
  if (s.length >= 2 && s[0] === '0') {
    const l = lower(s.charCodeAt(1));
    if (l === 0x62 || l === 0x6f || l === 0x78) {
      i = 2;
      saw = '0';
      hex = l === 0x78;
    }
  }
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 0x30 && c <= 0x39) || (hex && lower(c) >= 0x61 && lower(c) <= 0x66)) {
      saw = '0';
      continue;
    }
    if (c === 0x5f) {
      if (saw !== '0') return false;
      saw = '_';
      continue;
    }
    if (saw === '_') return false;
    saw = '!';
  }
  return saw !== '_';
}

/** lower: the lower-case letter for an ASCII letter (other bytes come out changed but never as a letter). */
export function lower(c: number): number {
  return c | 0x20;
}

const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** strconv.ParseBool (go/src/strconv/atob.go): undefined where Go returns an error. */
export function parseGoBool(v: string): boolean | undefined {
  return TRUE.has(v) ? true : FALSE.has(v) ? false : undefined;
}
