// HPACK (RFC 7541) for the upstream HTTP/2 client of long-running streams (connection.ts): a decoder
// for the apiserver's response header blocks (Go's encoder indexes and Huffman-codes them), and an
// encoder that writes every request field as a literal without indexing, raw: no table state on our
// side, and the bytes upstream are exactly the checked field bytes (upstream/request-head.ts) behind
// length prefixes, so no value can end a field early.
//
// Bounds (a peer is a peer, not a friend): the dynamic table at most DEFAULT_TABLE_SIZE (what we
// advertise: SETTINGS_HEADER_TABLE_SIZE is left at its 4,096 default), a decoded header list at most
// the caller's byte limit, integers at most 2^28, strings no longer than the block. Any violation
// is a COMPRESSION_ERROR (RFC 9113 §4.3): the caller ends the connection.

import { isToken, validHeaderFieldValue } from '../../gocompat/http';
import { UnsafeFieldError } from '../request-head';
import { HUFFMAN_CODES, STATIC_TABLE } from './hpack-tables';

export const DEFAULT_TABLE_SIZE = 4096;

export class HpackError extends Error {}

interface Node {
  /** Children for bit 0 and 1; a leaf has a symbol instead. */
  z: Node | null;
  o: Node | null;
  sym: number;
}

/** The Huffman code as a binary tree (513 nodes), built once. */
const HUFFMAN_ROOT: Node = (() => {
  const root: Node = { z: null, o: null, sym: -1 };
  HUFFMAN_CODES.forEach(([bits, code], sym) => {
    let n = root;
    for (let i = bits - 1; i >= 0; i--) {
      const one = (code >>> i) & 1;
      const next = one ? n.o : n.z;
      const child = next ?? { z: null, o: null, sym: -1 };
      if (one) n.o = child;
      else n.z = child;
      n = child;
    }
    n.sym = sym;
  });
  return root;
})();

/** RFC 7541 §5.2: the EOS symbol is an error; padding is at most 7 bits, all ones. */
function huffmanDecode(b: Buffer, start: number, end: number): string {
  let out = '';
  let n = HUFFMAN_ROOT;
  let padBits = 0;
  let padOnes = true;
  for (let i = start; i < end; i++) {
    const byte = b[i]!;
    for (let bit = 7; bit >= 0; bit--) {
      const one = (byte >> bit) & 1;
      const next = one ? n.o : n.z;
      if (next === null) throw new HpackError('invalid Huffman code');
      padBits++;
      if (!one) padOnes = false;
      if (next.sym >= 0) {
        if (next.sym === 256) throw new HpackError('EOS in a Huffman-coded string');
        out += String.fromCharCode(next.sym);
        n = HUFFMAN_ROOT;
        padBits = 0;
        padOnes = true;
      } else n = next;
    }
  }
  if (padBits > 7 || !padOnes) throw new HpackError('invalid Huffman padding');
  return out;
}

/** Reads one block; `pos` is where the next byte is. */
class Cursor {
  pos: number;
  constructor(
    readonly b: Buffer,
    start: number,
  ) {
    this.pos = start;
  }

  /** An integer with an N-bit prefix (RFC 7541 §5.1), at most 2^28. */
  int(prefixBits: number): number {
    const b = this.b;
    if (this.pos >= b.length) throw new HpackError('truncated integer');
    const max = (1 << prefixBits) - 1;
    let n = b[this.pos++]! & max;
    if (n < max) return n;
    let shift = 0;
    for (;;) {
      if (this.pos >= b.length) throw new HpackError('truncated integer');
      const c = b[this.pos++]!;
      n += (c & 0x7f) * 2 ** shift;
      shift += 7;
      // Zero continuation bytes add nothing, so the shift is bounded too (a run of them gave NaN).
      if (n > 2 ** 28 || shift > 28) throw new HpackError('integer too large');
      if ((c & 0x80) === 0) return n;
    }
  }

  /** A string literal (RFC 7541 §5.2), bytes as latin1 characters. */
  str(): string {
    if (this.pos >= this.b.length) throw new HpackError('truncated string');
    const huffman = (this.b[this.pos]! & 0x80) !== 0;
    const len = this.int(7);
    const end = this.pos + len;
    if (end > this.b.length) throw new HpackError('string longer than the block');
    const s = huffman ? huffmanDecode(this.b, this.pos, end) : this.b.toString('latin1', this.pos, end);
    this.pos = end;
    return s;
  }
}

/** One connection's decoding context: its dynamic table lives as long as the connection. */
export class HpackDecoder {
  /** Newest first: [name, value]. */
  private readonly table: [string, string][] = [];
  private size = 0;
  private maxSize = DEFAULT_TABLE_SIZE;

  /** The block's fields as a flat [name, value, ...] list; throws HpackError. */
  decode(block: Buffer, maxListBytes: number): string[] {
    const c = new Cursor(block, 0);
    const out: string[] = [];
    let listBytes = 0;
    let first = true;
    while (c.pos < block.length) {
      const b = block[c.pos]!;
      let name: string;
      let value: string;
      if (b & 0x80) {
        [name, value] = this.entry(c.int(7));
      } else if ((b & 0xe0) === 0x20) {
        // Dynamic table size update: only at the start of a block, at most what we allow.
        if (!first) throw new HpackError('table size update after the first field');
        const size = c.int(5);
        if (size > DEFAULT_TABLE_SIZE) throw new HpackError('table size above SETTINGS_HEADER_TABLE_SIZE');
        this.maxSize = size;
        this.evict(0);
        continue;
      } else {
        const incremental = (b & 0xc0) === 0x40;
        const index = c.int(incremental ? 6 : 4);
        name = index === 0 ? c.str() : this.entry(index)[0];
        value = c.str();
        if (incremental) this.add(name, value);
      }
      first = false;
      listBytes += name.length + value.length + 32;
      if (listBytes > maxListBytes) throw new HpackError(`header list larger than ${maxListBytes} bytes`);
      out.push(name, value);
    }
    return out;
  }

  private entry(index: number): readonly [string, string] {
    if (index === 0) throw new HpackError('index 0');
    if (index <= STATIC_TABLE.length) return STATIC_TABLE[index - 1]!;
    const e = this.table[index - STATIC_TABLE.length - 1];
    if (e === undefined) throw new HpackError(`index ${index} beyond the table`);
    return e;
  }

  private add(name: string, value: string): void {
    const size = name.length + value.length + 32;
    this.evict(size);
    if (size <= this.maxSize) {
      this.table.unshift([name, value]);
      this.size += size;
    }
  }

  /** Evicts the oldest entries until `room` more bytes fit (RFC 7541 §4.4). */
  private evict(room: number): void {
    while (this.table.length > 0 && this.size + room > this.maxSize) {
      const [n, v] = this.table.pop()!;
      this.size -= n.length + v.length + 32;
    }
  }
}

function pushInt(out: number[], first: number, prefixBits: number, n: number): void {
  const max = (1 << prefixBits) - 1;
  if (n < max) return void out.push(first | n);
  out.push(first | max);
  n -= max;
  while (n >= 128) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
}

/**
 * Fields as literals without indexing, new names, no Huffman (RFC 7541 §6.2.2), from a flat
 * [name, value, ...] list in the order to write (repeated names stay lines of their own, so every
 * X-Remote-Group line stays one group). Names and values are latin1 strings (one byte a
 * character), as request-head.ts checked them. Names go lowercase (RFC 9113 §8.2.1). This is the
 * HTTP/2 writer's last look at the bytes: a name that is no token (pseudo-headers aside), a value
 * Go would refuse (a character above U+00FF included) or an entry that is not a string throws
 * UnsafeFieldError and nothing is written. The pseudo-header fields go first whatever the list's
 * order (RFC 9113 §8.3): a client's header named `0` once went out ahead of :method (from an
 * object, which lists index-like keys first) and Go's server and node:http2 reset the stream (a
 * 503 for any watch carrying it: helper 8).
 */
export function encodeFields(fields: readonly string[]): Buffer {
  if (fields.length % 2 !== 0) throw new UnsafeFieldError('name', 'a field without a value');
  const out: number[] = [];
  const one = (field: unknown, value: unknown) => {
    if (typeof field !== 'string' || typeof value !== 'string') throw new UnsafeFieldError('value', `${String(field)}: not a string`);
    let name = field;
    if (name.charCodeAt(0) === 0x3a /* : */ ? !isToken(name.slice(1)) : !isToken(name)) throw new UnsafeFieldError('name', name);
    if (!validHeaderFieldValue(value)) throw new UnsafeFieldError('value', value);
    name = name.toLowerCase();
    out.push(0);
    pushInt(out, 0, 7, name.length);
    for (let i = 0; i < name.length; i++) out.push(name.charCodeAt(i) & 0xff);
    pushInt(out, 0, 7, value.length);
    for (let i = 0; i < value.length; i++) out.push(value.charCodeAt(i) & 0xff);
  };
  for (let pass = 0; pass < 2; pass++) {
    for (let i = 0; i < fields.length; i += 2) {
      const name = fields[i];
      const pseudo = typeof name === 'string' && name.charCodeAt(0) === 0x3a; /* : */
      if (pseudo === (pass === 0)) one(name, fields[i + 1]);
    }
  }
  return Buffer.from(out);
}
