// HPACK for mvproxy's own HTTP/2 client (src/upstream/h2/hpack.ts): the decoder reads what another
// encoder wrote (hpack.js, the spdy module's: Huffman on or off, indexing on or off, a table that
// evicts), block after block on one connection as the apiserver's answers arrive; a malformed
// block is an error, never a guess; the encoder writes only fields Go would accept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HpackDecoder, HpackError, encodeFields } from '../../src/upstream/h2/hpack';
import { NO_BODY, UnsafeFieldError, requestHeaders2 } from '../../src/upstream/request-head';
import { IdentityHeaderRules } from '../../src/upstream/headers';
import { fuzzSeed, prng, seedLine } from '../support/fuzz-seed';

interface Compressor {
  write(fields: { name: string; value: string; huffman?: boolean; neverIndex?: boolean }[]): void;
  read(): Buffer | null;
  updateTableSize(n: number): void;
}
const hpackjs = require('hpack.js') as { compressor: { create(o: { table: { maxSize: number } }): Compressor } };

function compress(c: Compressor, fields: { name: string; value: string; huffman?: boolean; neverIndex?: boolean }[]): Buffer {
  c.write(fields);
  const parts: Buffer[] = [];
  for (let b = c.read(); b !== null; b = c.read()) parts.push(b);
  return Buffer.concat(parts);
}

test('RFC 7541 C.4.1 (Huffman request) and C.6.1 (Huffman response) decode to their fields', () => {
  const d = new HpackDecoder();
  assert.deepEqual(d.decode(Buffer.from('828684418cf1e3c2e5f23a6ba0ab90f4ff', 'hex'), 1 << 16), [':method', 'GET', ':scheme', 'http', ':path', '/', ':authority', 'www.example.com']);
  const r = new HpackDecoder();
  const block = Buffer.from('488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3', 'hex');
  assert.deepEqual(r.decode(block, 1 << 16), [':status', '302', 'cache-control', 'private', 'date', 'Mon, 21 Oct 2013 20:13:21 GMT', 'location', 'https://www.example.com']);
});

test("blocks another encoder wrote (Huffman or not, indexed or not, a small table that evicts) decode to exactly its fields, block after block", (t) => {
  const seed = fuzzSeed();
  t.diagnostic(seedLine(seed));
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const names = ['audit-id', 'cache-control', 'content-type', 'date', 'warning', 'x-kubernetes-pf-flowschema-uid', 'x-custom', 'location'];
  const str = (n: number) => {
    let s = '';
    // Every byte value a field may carry (HTAB, visible ASCII, obs-text), so Huffman's long codes are used.
    for (let i = 0; i < n; i++) s += String.fromCharCode(pick([0x09, 0x20 + Math.floor(rnd() * 0x5f), 0x80 + Math.floor(rnd() * 0x80)]));
    return s;
  };
  for (const tableSize of [4096, 256]) {
    const c = hpackjs.compressor.create({ table: { maxSize: 4096 } });
    const d = new HpackDecoder();
    // A smaller table: the encoder says so at the start of its first block (RFC 7541 §4.2; hpack.js
    // writes that update only for sizes at its maximum, so it is written here: 256 = 31 + 225).
    let prefix = Buffer.alloc(0);
    if (tableSize !== 4096) {
      c.updateTableSize(tableSize);
      prefix = Buffer.from([0x3f, 0xe1, 0x01]);
    }
    for (let block = 0; block < 200; block++) {
      const fields = [{ name: ':status', value: pick(['200', '404', '500']) }];
      const n = 1 + Math.floor(rnd() * 8);
      for (let i = 0; i < n; i++) fields.push({ name: pick(names), value: rnd() < 0.3 ? pick(['no-cache, private', 'application/json']) : str(Math.floor(rnd() * 40)), huffman: rnd() < 0.5, neverIndex: rnd() < 0.3 } as never);
      const got = d.decode(Buffer.concat([block === 0 ? prefix : Buffer.alloc(0), compress(c, fields)]), 1 << 20);
      assert.deepEqual(got, fields.flatMap((f) => [f.name, f.value]), `block ${block}, table ${tableSize}`);
    }
  }
});

test('malformed blocks are errors: index 0, an index past the table, EOS or bad padding in Huffman, a table larger than allowed or resized mid-block, truncated integers and strings, a list over the limit', () => {
  const cases: [string, string][] = [
    ['80', 'index 0'],
    ['be', 'index 62 with an empty dynamic table'],
    ['0081ff', 'a Huffman string that is all padding bits: 8 of them'],
    ['0084ffffffff', 'EOS inside a Huffman string'],
    ['3fe21f', 'a table size update to 4,097, above 4,096'],
    ['8220', 'a table size update after a field'],
    ['ff', 'an integer cut short'],
    ['ffffffffff7f', 'an integer above 2^28'],
    ['000561', 'a string longer than the block'],
    ['007f' + '80'.repeat(160) + '000161', 'a string length of 160 zero continuation bytes (it decoded as NaN and ended the block silently)'],
  ];
  for (const [hex, what] of cases) assert.throws(() => new HpackDecoder().decode(Buffer.from(hex, 'hex'), 1 << 16), HpackError, what);
  const big = encodeFields(['x-a', 'v'.repeat(1000)]);
  assert.throws(() => new HpackDecoder().decode(big, 1000), HpackError, 'a list over the limit');
  assert.deepEqual(new HpackDecoder().decode(big, 1100), ['x-a', 'v'.repeat(1000)]);
});

test('the encoder writes the fields lowercase, as literals the decoder reads back, and refuses what Go would refuse before writing anything', () => {
  const fields = [':method', 'GET', ':path', '/api/v1/pods?watch=1', 'X-Remote-Group', 'a', 'X-Remote-Group', 'b', 'accept', 'application/json', 'x-obs', 'caf\u00e9'];
  assert.deepEqual(new HpackDecoder().decode(encodeFields(fields), 1 << 16), [':method', 'GET', ':path', '/api/v1/pods?watch=1', 'x-remote-group', 'a', 'x-remote-group', 'b', 'accept', 'application/json', 'x-obs', 'caf\u00e9']);
  for (const bad of [['x-a', 'v\r\nx-remote-user: admin'], ['x-a', 'v\u010a'], ['x-a', 'v\u0000'], ['x a', 'v'], ['x-\u00e9', 'v'], [':pa th', '/'], ['x-a']]) {
    assert.throws(() => encodeFields(bad), UnsafeFieldError, JSON.stringify(bad));
  }
});

test('the encoder writes the pseudo-header fields first, whatever the order it is handed (its last guard: RFC 9113 §8.3)', () => {
  const got = new HpackDecoder().decode(encodeFields(['accept', 'a', ':method', 'GET', '0', 'x', ':path', '/api']), 1 << 16);
  assert.deepEqual(got, [':method', 'GET', ':path', '/api', 'accept', 'a', '0', 'x']);
});

test("a client's field named 0 or 123 goes out after the pseudo-header fields (helper 8: an object lists index-like keys first, and the apiserver reset the stream)", () => {
  const o = { host: '127.0.0.1:6443', remoteAddress: '10.0.0.1', rules: new IdentityHeaderRules(), trustIdentityHeaders: false, identity: undefined, peerHop: false, bodyLength: NO_BODY };
  const fields = requestHeaders2('GET', '/api/v1/pods?watch=1', ['0', 'x', 'accept', 'application/json', '123', 'y'], o);
  const got = new HpackDecoder().decode(encodeFields(fields), 1 << 16);
  const names = got.filter((_, i) => i % 2 === 0);
  const lastPseudo = names.reduce((at, n, i) => (n.startsWith(':') ? i : at), -1);
  assert.ok(names.slice(0, lastPseudo + 1).every((n) => n.startsWith(':')), `pseudo-header fields first: ${JSON.stringify(names)}`);
  assert.ok(names.includes('0') && names.includes('123'), 'the fields are still sent');
});

test("a client's fields named constructor, __proto__ or toString are fields like any other: encoded as sent, nothing crashes (helper 6: one such header killed the daemon)", () => {
  const o = { host: '127.0.0.1:6443', remoteAddress: '10.0.0.1', rules: new IdentityHeaderRules(), trustIdentityHeaders: false, identity: undefined, peerHop: false, bodyLength: NO_BODY };
  const fields = requestHeaders2('GET', '/api/v1/pods?watch=1', ['constructor', 'x', '__proto__', 'y', 'tostring', 'z', 'constructor', 'w'], o);
  const got = new HpackDecoder().decode(encodeFields(fields), 1 << 16);
  const pairs: string[] = [];
  for (let i = 0; i < got.length; i += 2) if (!got[i]!.startsWith(':') && got[i] !== 'x-forwarded-for') pairs.push(`${got[i]}=${got[i + 1]}`);
  assert.deepEqual(pairs, ['constructor=x', '__proto__=y', 'tostring=z', 'constructor=w']); // in the client's order
  assert.throws(() => encodeFields(['x-a', 5] as never), UnsafeFieldError, 'a value that is not a string');
});
