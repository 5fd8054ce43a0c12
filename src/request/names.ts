// Names: the group, version and resource names a route table knows, found from a range of the request
// path without cutting the range out, and the path literals RequestInfo compares parts with.
//
// Why: a group, version or resource cut out of the path is a fresh string. Looking it up in a Map
// hashes its characters first (V8 caches a string's hash only on the string itself), and cutting it
// out allocates. In the native-bench profile (2026-12-04) the route lookup on fresh strings cost
// ~120 ns of the ~550 ns newRequestInfo + decide took. newRequestInfo already reads every character of
// the path once (the control-byte scan), so in that same pass it computes each part's hash
// (segmentHash, inlined there) and copies the character codes into a Uint16Array. find() then rejects
// on the hash and confirms on the copied codes, and answers the table's own string. The route table's
// Maps hold the very same string objects, so their lookups meet a cached hash and an identical key.
// Comparing through the copy matters: String.prototype.startsWith measured ~45 ns per call on these
// short names, and a charCodeAt loop ~4 ns per character; a Uint16Array read is an indexed load.
//
// A part that is no known name (a namespace, an object name, a GVR nobody serves) is cut out as
// before: find() answers undefined, and values are equal either way, so RequestInfo does not change.

/** The part hash: h = h * 31 + charCode over the characters, in 32-bit integers. newRequestInfo's
 *  path scan computes the same value inline; test/unit/requestinfo.test.ts checks that they agree. */
export function segmentHash(s: string, start: number, end: number): number {
  let h = 0;
  for (let i = start; i < end; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return h;
}

/** A string with its hash and character codes, for comparing a part of the path with it. */
export class Literal {
  readonly text: string;
  readonly hash: number;
  readonly codes: Uint16Array;
  constructor(text: string) {
    this.text = text;
    this.hash = segmentHash(text, 0, text.length);
    this.codes = new Uint16Array(text.length);
    for (let i = 0; i < text.length; i++) this.codes[i] = text.charCodeAt(i);
  }

  /** codes[start, end) holds this text, whose hash is hash. */
  matches(codes: Uint16Array, start: number, end: number, hash: number): boolean {
    if (hash !== this.hash || end - start !== this.codes.length) return false;
    const own = this.codes;
    for (let i = 0; i < own.length; i++) if (codes[start + i] !== own[i]) return false;
    return true;
  }
}

export class Names {
  /** Open addressing, linear probing; at most half full. */
  private readonly slots: (Literal | undefined)[];
  private readonly mask: number;
  readonly size: number;

  constructor(names: Iterable<string>) {
    const unique = [...new Set(names)];
    let cap = 8;
    while (cap < unique.length * 2) cap *= 2;
    this.slots = new Array<Literal | undefined>(cap).fill(undefined);
    this.mask = cap - 1;
    this.size = unique.length;
    for (const n of unique) {
      const lit = new Literal(n);
      let j = lit.hash & this.mask;
      while (this.slots[j] !== undefined) j = (j + 1) & this.mask;
      this.slots[j] = lit;
    }
  }

  /** The known name whose codes are codes[start, end) (and whose segmentHash is hash), or undefined. */
  find(codes: Uint16Array, start: number, end: number, hash: number): string | undefined {
    const slots = this.slots;
    for (let j = hash & this.mask; ; j = (j + 1) & this.mask) {
      const lit = slots[j];
      if (lit === undefined) return undefined;
      if (lit.matches(codes, start, end, hash)) return lit.text;
    }
  }

  static readonly EMPTY = new Names([]);
}
