// Go's string comparison and two case-insensitive matches: ports of go/src/strings/compare.go
// (Compare, the order of Go's `a < b` on strings) and src/strings/strings.go (EqualFold, ToLower) of
// Go 1.26.
//
// What differs: Go strings are bytes (UTF-8), ours UTF-16.
// - compareByteOrder orders as Go does on the UTF-8 bytes, which is code-point order; JavaScript's `<`
//   compares UTF-16 code units and disagrees for characters above U+FFFF against U+E000–U+FFFF.
// - equalFoldLower and toLowerIs compare a range of a string with a lower-case ASCII literal only, in
//   place; that is all mvproxy needs (Kubernetes' Convert_Slice_string_To_bool and requestinfo.go's
//   "watch" fallback), and for such a literal the Unicode cases reduce to a short list (checked against
//   Go 1.26 over every code point): EqualFold also matches U+212A (Kelvin sign) for 'k' and U+017F
//   (long s) for 's'; ToLower also maps U+212A to 'k' and U+0130 (İ) to 'i'.

/**
 * Compares two strings in the order Go's `a < b` would give on their UTF-8 bytes (the same as
 * code-point order). Returns a negative number, zero or a positive number.
 */
export function compareByteOrder(a: string, b: string): number {
  if (a === b) return 0;
  const n = a.length < b.length ? a.length : b.length;
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca !== cb) {
      // Only the first differing code unit matters. Surrogates (U+D800–U+DFFF) encode code
      // points above U+FFFF, so they must sort after U+E000–U+FFFF: lift them above.
      if (ca >= 0xd800 && cb >= 0xd800) return liftSurrogate(ca) - liftSurrogate(cb);
      return ca - cb;
    }
  }
  return a.length - b.length;
}

function liftSurrogate(c: number): number {
  if (c >= 0xe000) return c - 0x800; // U+E000–U+FFFF → 0xD800–0xF7FF
  if (c >= 0xd800) return c + 0x2000; // surrogates → 0xF800–0xFFFF
  return c;
}

/** strings.EqualFold(s[a:b], lower), where lower is lower-case ASCII (no 'A'–'Z'): 'ſ' (U+017F) folds to 's'. */
export function equalFoldLower(s: string, a: number, b: number, lower: string): boolean {
  return matchesLowerASCII(s, a, b, lower, 0x17f, 0x73);
}

/** strings.ToLower(s[a:b]) == lower, where lower is lower-case ASCII (no 'A'–'Z'): 'İ' (U+0130) lowers to 'i'. */
export function toLowerIs(s: string, a: number, b: number, lower: string): boolean {
  return matchesLowerASCII(s, a, b, lower, 0x130, 0x69);
}

/**
 * s[a:b] against lower-case ASCII `lower`, code unit by code unit: equal, an ASCII capital of it, the
 * Kelvin sign 'K' (U+212A) for 'k' (both EqualFold and ToLower map it), or the one other non-ASCII
 * letter the caller's Go function maps into ASCII (`other` for `otherLower`).
 */
function matchesLowerASCII(s: string, a: number, b: number, lower: string, other: number, otherLower: number): boolean {
  if (b - a !== lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    const c = s.charCodeAt(a + i);
    const l = lower.charCodeAt(i);
    if (c === l) continue;
    if (c >= 0x41 && c <= 0x5a && c + 0x20 === l) continue;
    if ((c === 0x212a && l === 0x6b) || (c === other && l === otherLower)) continue;
    return false;
  }
  return true;
}
