// Names: the group, version and resource names a route table knows, found from a range of the request
// path's bytes without cutting the range out; and Literal, the path words RequestInfo compares parts
// with ('apis', 'namespaces', ...).
//
// Why: a group, version or resource cut out of the path is a fresh string. Looking it up in a Map
// hashes its characters first (V8 caches a string's hash only on the string itself), and cutting it
// out allocates. In the native-bench profile (2026-12-04) the route lookup on fresh strings cost
// ~120 ns of the ~550 ns newRequestInfo + decide took. newRequestInfo holds the path as bytes (its
// control-byte scan reads them), so find() takes a range of them: it hashes the range in O(1)
// (segmentHash: length, first and last byte), confirms on the bytes, and answers the table's own
// string. The route table's Maps hold the very same string objects, so their lookups meet a cached
// hash and an identical key. A hash over every byte, computed in the scan, measured ~25 ns more per
// request than the collisions of this one cost. Comparing bytes rather than strings matters too:
// String.prototype.startsWith measured ~45 ns per call on these short names.
//
// Bytes: a name is compared as its UTF-8 bytes. The path's copy is its characters when they are all
// ASCII, else each non-ASCII character as the single byte 0x80; a name with a non-ASCII character
// starts that character with a UTF-8 lead byte (≥ 0xC2), which neither an ASCII character nor 0x80
// equals, so only an all-ASCII name can match, and then only the same ASCII characters.
//
// A part that is no known name (a namespace, an object name, a GVR nobody serves) is cut out as
// before: find() answers undefined, and values are equal either way, so RequestInfo does not change.

/** The hash of bytes b[start, end): its length, first and last byte, spread by a Fibonacci multiply
 *  (Names takes the top bits); O(1), so nothing hashes the path byte by byte. Names with the same
 *  three (pods, pvcs) probe on, a byte compare each. */
export function segmentHash(b: DataView, start: number, end: number): number {
  if (end <= start) return 0;
  return Math.imul((((end - start) & 0xffff) << 16) | (b.getUint8(start) << 8) | b.getUint8(end - 1), 0x9e3779b1);
}

/**
 * a[aOff, aOff + len) equals b[bOff, bOff + len). Four bytes per read, the last four read again when
 * len is no multiple of four: half the time of a byte loop on an 11-byte name (7 against 13 ns in a
 * micro-benchmark, 2026-12-04), where the byte loop was ~10 % of newRequestInfo + decide.
 */
export function sameBytes(a: DataView, aOff: number, b: DataView, bOff: number, len: number): boolean {
  if (len < 4) {
    for (let i = 0; i < len; i++) if (a.getUint8(aOff + i) !== b.getUint8(bOff + i)) return false;
    return true;
  }
  let i = 0;
  for (; i + 4 <= len; i += 4) if (a.getUint32(aOff + i) !== b.getUint32(bOff + i)) return false;
  return i === len || a.getUint32(aOff + len - 4) === b.getUint32(bOff + len - 4);
}

/** A string with its hash and UTF-8 bytes, for comparing a part of the path with it (RequestInfo's
 *  isPart compares these bytes one by one after the lengths: for literals of 5 to 10 bytes that
 *  measured faster than four-byte DataView compares, 2026-12-04). */
export class Literal {
  readonly text: string;
  readonly hash: number;
  readonly bytes: Uint8Array;
  constructor(text: string) {
    this.text = text;
    this.bytes = new TextEncoder().encode(text);
    this.hash = segmentHash(new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength), 0, this.bytes.length);
  }
}

export class Names {
  // Open addressing, linear probing, at most half full; slot j holds texts[j], its segmentHash
  // hashes[j] and its bytes pool[offsets[j], offsets[j] + lengths[j]). Flat arrays: a probe reads
  // integers, and touches bytes only when hash and length agree.
  private readonly texts: (string | undefined)[];
  private readonly hashes: Int32Array;
  private readonly offsets: Int32Array;
  private readonly lengths: Int32Array;
  private readonly pool: DataView;
  private readonly mask: number;
  /** 32 − log2(capacity): a hash's top bits pick its first slot. */
  private readonly shift: number;
  readonly size: number;

  constructor(names: Iterable<string>) {
    const unique = [...new Set(names)].map((n) => new Literal(n));
    let cap = 8;
    let bits = 3;
    while (cap < unique.length * 2) {
      cap *= 2;
      bits++;
    }
    this.shift = 32 - bits;
    this.texts = new Array<string | undefined>(cap).fill(undefined);
    this.hashes = new Int32Array(cap);
    this.offsets = new Int32Array(cap);
    this.lengths = new Int32Array(cap);
    const pool = new Uint8Array(unique.reduce((sum, l) => sum + l.bytes.length, 0));
    this.pool = new DataView(pool.buffer);
    this.mask = cap - 1;
    this.size = unique.length;
    let at = 0;
    for (const lit of unique) {
      let j = lit.hash >>> this.shift;
      while (this.texts[j] !== undefined) j = (j + 1) & this.mask;
      this.texts[j] = lit.text;
      this.hashes[j] = lit.hash;
      this.offsets[j] = at;
      this.lengths[j] = lit.bytes.length;
      pool.set(lit.bytes, at);
      at += lit.bytes.length;
    }
  }

  /** The known name whose bytes are bytes[start, end), or undefined. */
  find(bytes: DataView, start: number, end: number): string | undefined {
    const len = end - start;
    const hash = segmentHash(bytes, start, end);
    for (let j = hash >>> this.shift; ; j = (j + 1) & this.mask) {
      const text = this.texts[j];
      if (text === undefined) return undefined;
      if (this.hashes[j] === hash && this.lengths[j] === len && sameBytes(this.pool, this.offsets[j], bytes, start, len)) return text;
    }
  }

  static readonly EMPTY = new Names([]);
}
