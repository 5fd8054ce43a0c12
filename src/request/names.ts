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

import { randomBytes } from 'node:crypto';

/**
 * The multiplier of segmentHash: odd, drawn once per process (multiply-shift hashing). A fixed one
 * (it was the Fibonacci 0x9e3779b1) lets a peer pick names of different lengths and bytes whose top
 * bits agree, one long run of slots that every insert and every probe walks; drawn at random, no
 * document can aim at it.
 */
const SPREAD = randomBytes(4).readInt32LE(0) | 1;

/** The hash of bytes b[start, end): its length, first and last byte, spread by a multiply (Names
 *  takes the top bits); O(1), so nothing hashes the path byte by byte. Names with the same three
 *  (pods, pvcs) probe on, a byte compare each (more than MAX_SAME_KEY share one slot). */
export function segmentHash(b: DataView, start: number, end: number): number {
  if (end <= start) return 0;
  return Math.imul((((end - start) & 0xffff) << 16) | (b.getUint8(start) << 8) | b.getUint8(end - 1), SPREAD);
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

/** Names of one hash and length kept as slots of their own (pods, pvcs and pads: three); more share one slot. */
const MAX_SAME_KEY = 4;
/** The offset of a slot that stands for crowded names. */
const CROWDED = -1;

function isASCII(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** What a Names holds (see its fields). */
interface NamesParts {
  texts: (string | undefined)[];
  hashes: Int32Array;
  offsets: Int32Array;
  lengths: Int32Array;
  pool: DataView;
  mask: number;
  shift: number;
  crowded: ReadonlyMap<string, string> | undefined;
  size: number;
}

/** segmentHash of an ASCII string's bytes (its characters). */
function textHash(s: string): number {
  const n = s.length;
  if (n === 0) return 0;
  return Math.imul(((n & 0xffff) << 16) | (s.charCodeAt(0) << 8) | s.charCodeAt(n - 1), SPREAD);
}

/**
 * Builds a Names' table in O(n), yielding every `step` names. Names with a non-ASCII character are
 * left out: they can never match (see the file comment). Names are counted by hash first, so that
 * a crowded hash and length gets its one slot. `byValue`: every name mapped to itself, when the
 * caller has that Map already (the route table's canonical names); else it is made here.
 */
function* namesParts(names: Iterable<string>, step: number, byValue?: ReadonlyMap<string, string>): Generator<void, NamesParts> {
  let values = byValue;
  if (values === undefined) {
    const m = new Map<string, string>();
    for (const n of names) m.set(n, n);
    values = m;
  }
  const unique: string[] = [];
  const hashes: number[] = [];
  // Names per hash (keyed by hash >> 1, a Smi: two hashes may share a count, which only makes a
  // hash crowded sooner). The hash is spread by the per-process SPREAD, so a document cannot aim
  // its names at one bucket of this Map either.
  const perHash = new Map<number, number>();
  let poolBytes = 0;
  for (const n of values.keys()) {
    if (!isASCII(n)) continue;
    const h = textHash(n);
    unique.push(n);
    hashes.push(h);
    perHash.set(h >> 1, (perHash.get(h >> 1) ?? 0) + 1);
    poolBytes += n.length;
    if (unique.length % step === 0) yield;
  }
  let cap = 8;
  let bits = 3;
  while (cap < unique.length * 2) {
    cap *= 2;
    bits++;
  }
  const t: NamesParts = {
    texts: new Array<string | undefined>(cap).fill(undefined),
    hashes: new Int32Array(cap),
    offsets: new Int32Array(cap),
    lengths: new Int32Array(cap),
    pool: new DataView(new ArrayBuffer(poolBytes)),
    mask: cap - 1,
    shift: 32 - bits,
    crowded: undefined,
    size: unique.length,
  };
  let at = 0;
  for (let i = 0; i < unique.length; i++) {
    const text = unique[i]!;
    const hash = hashes[i]!;
    const len = text.length;
    let j = hash >>> t.shift;
    if (perHash.get(hash >> 1)! > MAX_SAME_KEY) {
      t.crowded = values;
      // The one slot of this hash and length, unless an earlier name of them made it.
      for (; t.texts[j] !== undefined; j = (j + 1) & t.mask) if (t.offsets[j] === CROWDED && t.hashes[j] === hash && t.lengths[j] === len) break;
      if (t.texts[j] !== undefined) continue;
      t.texts[j] = '';
      t.offsets[j] = CROWDED;
    } else {
      while (t.texts[j] !== undefined) j = (j + 1) & t.mask;
      t.texts[j] = text;
      t.offsets[j] = at;
      for (let k = 0; k < len; k++) t.pool.setUint8(at + k, text.charCodeAt(k));
      at += len;
    }
    t.hashes[j] = hash;
    t.lengths[j] = len;
    if ((i + 1) % step === 0) yield;
  }
  return t;
}

function drain<T>(steps: Generator<void, T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

export class Names {
  // Open addressing, linear probing, at most half full; slot j holds texts[j], its segmentHash
  // hashes[j] and its bytes pool[offsets[j], offsets[j] + lengths[j]). Flat arrays: a probe reads
  // integers, and touches bytes only when hash and length agree. A slot whose offset is CROWDED
  // stands for every name of its hash and length: those are in `crowded` (see below).
  private readonly texts: (string | undefined)[];
  private readonly hashes: Int32Array;
  private readonly offsets: Int32Array;
  private readonly lengths: Int32Array;
  private readonly pool: DataView;
  private readonly mask: number;
  /** 32 − log2(capacity): a hash's top bits pick its first slot. */
  private readonly shift: number;
  /**
   * Names that share their length, first and last byte with more than MAX_SAME_KEY others (one
   * hash): one slot for all of them, and this Map (V8's string hash is seeded per process) by the
   * name itself. The O(1) hash is the request path's choice, but a peer's discovery document names
   * what it likes: 60,000 groups "g<n>.x" (issue 27) all hashed alike, every probe walked them, and
   * building this index took 686 ms of a 1.2 s stall of the event loop (quadratic); every request
   * would then have probed the whole chain.
   */
  private readonly crowded: ReadonlyMap<string, string> | undefined;
  readonly size: number;

  /** `built`: the parts Names.steps made (internal); else they are made from `names` now. */
  constructor(names: Iterable<string>, built?: NamesParts) {
    const t = built ?? drain(namesParts(names, Infinity));
    this.texts = t.texts;
    this.hashes = t.hashes;
    this.offsets = t.offsets;
    this.lengths = t.lengths;
    this.pool = t.pool;
    this.mask = t.mask;
    this.shift = t.shift;
    this.crowded = t.crowded;
    this.size = t.size;
  }

  /**
   * The same as the constructor, as a generator that yields every `step` names (a sliced route
   * table build); `byValue` instead of `names`: every name mapped to itself (namesParts).
   */
  static *steps(names: Iterable<string>, step: number, byValue?: ReadonlyMap<string, string>): Generator<void, Names> {
    return new Names([], yield* namesParts(names, step, byValue));
  }

  /** The known name whose bytes are bytes[start, end), or undefined. */
  find(bytes: DataView, start: number, end: number): string | undefined {
    const len = end - start;
    const hash = segmentHash(bytes, start, end);
    for (let j = hash >>> this.shift; ; j = (j + 1) & this.mask) {
      const text = this.texts[j];
      if (text === undefined) return undefined;
      if (this.hashes[j] === hash && this.lengths[j] === len) {
        const at = this.offsets[j];
        if (at === CROWDED) return this.findCrowded(bytes, start, end);
        if (sameBytes(this.pool, at, bytes, start, len)) return text;
      }
    }
  }

  /** One of the crowded names: the bytes as a string (only ASCII can match), looked up by value. */
  private findCrowded(bytes: DataView, start: number, end: number): string | undefined {
    let s = '';
    for (let i = start; i < end; i++) {
      const c = bytes.getUint8(i);
      if (c >= 0x80) return undefined;
      s += String.fromCharCode(c);
    }
    return this.crowded!.get(s);
  }

  static readonly EMPTY = new Names([]);
}
