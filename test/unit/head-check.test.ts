// What a front end refuses of a request head before anything is forwarded (src/listener/head-check.ts):
// body framing after Go's net/http (transfer.go: fixLength, parseTransferEncoding) and the smuggling
// shapes in test/security/smuggling.test.ts; the request line, fields and Host after Go's
// readRequest (server.go), each checked against Go's own server by test/security/differential.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HeadCheck, bytesOfUTF8 } from '../../src/listener/head-check';

const CASES: { name: string; headers: [string, string][]; want: string | undefined }[] = [
  { name: 'no body', headers: [], want: undefined },
  { name: 'one Content-Length', headers: [['content-length', '3']], want: undefined },
  { name: 'Content-Length 0', headers: [['content-length', '0']], want: undefined },
  { name: 'chunked', headers: [['transfer-encoding', 'chunked']], want: undefined },
  { name: 'Chunked, any case, padded', headers: [['transfer-encoding', ' Chunked ']], want: undefined },
  { name: 'two Content-Length, different', headers: [['content-length', '0'], ['content-length', '37']], want: 'MVP_ERR_BAD_FRAMING' },
  { name: 'two Content-Length, equal', headers: [['content-length', '3'], ['content-length', '3']], want: 'MVP_ERR_BAD_FRAMING' },
  { name: 'Content-Length then Transfer-Encoding', headers: [['content-length', '6'], ['transfer-encoding', 'chunked']], want: 'MVP_ERR_BAD_FRAMING' },
  { name: 'Transfer-Encoding then Content-Length', headers: [['transfer-encoding', 'chunked'], ['content-length', '4']], want: 'MVP_ERR_BAD_FRAMING' },
  { name: 'gzip, chunked', headers: [['transfer-encoding', 'gzip, chunked']], want: 'MVP_ERR_UNSUPPORTED_TRANSFER_ENCODING' },
  { name: 'xchunked', headers: [['transfer-encoding', 'xchunked']], want: 'MVP_ERR_UNSUPPORTED_TRANSFER_ENCODING' },
  { name: 'identity', headers: [['transfer-encoding', 'identity']], want: 'MVP_ERR_UNSUPPORTED_TRANSFER_ENCODING' },
  { name: 'two chunked fields', headers: [['transfer-encoding', 'chunked'], ['transfer-encoding', 'chunked']], want: 'MVP_ERR_UNSUPPORTED_TRANSFER_ENCODING' },
  { name: 'chunked, chunked in one field', headers: [['transfer-encoding', 'chunked, chunked']], want: 'MVP_ERR_UNSUPPORTED_TRANSFER_ENCODING' },
  { name: 'other headers do not count', headers: [['content-type', 'application/json'], ['x-content-length', '5']], want: undefined },
];

for (const c of CASES) {
  test(`framing: ${c.name} → ${c.want ?? 'forwarded'}`, () => {
    const f = new HeadCheck(false);
    for (const [k, v] of c.headers) f.field(k, v);
    assert.equal(f.verdict(false)?.code, c.want);
  });
}

const LINE_CASES: { name: string; method: string; target: string; want: string | undefined }[] = [
  { name: 'a plain GET', method: 'GET', target: '/api/v1/pods?watch=1', want: undefined },
  { name: 'a lowercase method (a token: Go takes it)', method: 'get', target: '/api', want: undefined },
  { name: 'a method that is not a token', method: 'G@T', target: '/api', want: 'MVP_ERR_BAD_REQUEST_LINE' },
  { name: 'DEL in the target', method: 'GET', target: '/api?a=\x7f', want: 'MVP_ERR_BAD_REQUEST_TARGET' },
  { name: 'CR in the query', method: 'GET', target: '/api?a=\r', want: 'MVP_ERR_BAD_REQUEST_TARGET' },
  { name: 'HTAB in the path', method: 'GET', target: '/a\tb', want: 'MVP_ERR_BAD_REQUEST_TARGET' },
  { name: 'an invalid escape in the path', method: 'GET', target: '/a%zz', want: 'MVP_ERR_BAD_REQUEST_TARGET' },
  { name: 'an escape cut short at the end of the path', method: 'GET', target: '/a%4', want: 'MVP_ERR_BAD_REQUEST_TARGET' },
  { name: 'an invalid escape in the query (Go does not unescape it when reading)', method: 'GET', target: '/a?b=%zz', want: undefined },
  { name: 'bytes 0x80-0xFF (Go takes them; node\'s parser, on every peer hop, does not)', method: 'GET', target: '/a\xc4\x8d?x=\xff', want: 'MVP_ERR_BAD_REQUEST_TARGET' },
  { name: 'a character above U+00FF (no byte)', method: 'GET', target: '/a\u010d', want: 'MVP_ERR_BAD_REQUEST_TARGET' },
];

for (const c of LINE_CASES) {
  test(`request line: ${c.name} → ${c.want ?? 'forwarded'}`, () => {
    const f = new HeadCheck(false);
    f.requestLine(c.method, c.target);
    f.field('host', 'x');
    assert.equal(f.verdict(true)?.code, c.want);
  });
}

const FIELD_CASES: { name: string; fields: [string, string][]; want: string | undefined }[] = [
  { name: 'HTAB and obs-text in a value', fields: [['x-a', 'a\tb\x80\xff']], want: undefined },
  { name: 'a control byte in a value', fields: [['x-a', 'a\x01b']], want: 'MVP_ERR_BAD_HEADER_FIELD' },
  { name: 'DEL in a value', fields: [['x-a', 'a\x7fb']], want: 'MVP_ERR_BAD_HEADER_FIELD' },
  { name: 'a name with a space', fields: [['x-remote-user ', 'admin']], want: 'MVP_ERR_BAD_HEADER_FIELD' },
  { name: 'a name with a byte above 0x7F', fields: [['x-\xe9', 'a']], want: 'MVP_ERR_BAD_HEADER_FIELD' },
  { name: 'a malformed Host', fields: [['host', 'a b']], want: 'MVP_ERR_BAD_HEADER_FIELD' },
  { name: 'two Hosts', fields: [['host', 'a'], ['host', 'b']], want: 'MVP_ERR_BAD_HEADER_FIELD' },
];

for (const c of FIELD_CASES) {
  test(`fields: ${c.name} → ${c.want ?? 'forwarded'}`, () => {
    const f = new HeadCheck(false);
    f.requestLine('GET', '/api');
    if (!c.fields.some(([k]) => k === 'host')) f.field('host', 'x');
    for (const [k, v] of c.fields) f.field(k, v);
    assert.equal(f.verdict(true)?.code, c.want);
  });
}

test('HTTP/1.1 without Host: refused as Go refuses it ("missing required Host header"); HTTP/1.0 needs none', () => {
  const f = new HeadCheck(false);
  f.requestLine('GET', '/api');
  assert.equal(f.verdict(true)?.message, 'missing required Host header');
  assert.equal(f.verdict(false), undefined);
});

test('uWS (UTF-8 decoded strings): values turned back into the client\'s bytes; U+FFFD (bytes that were not UTF-8) refused; a target outside ASCII refused', () => {
  assert.equal(bytesOfUTF8('/plain'), '/plain');
  // U+010D, U+010A, U+0120: the issue 38 characters whose low bytes are CR, LF, SP.
  assert.equal(bytesOfUTF8('a\u010d\u010a\u0120'), Buffer.from('a\u010d\u010a\u0120', 'utf8').toString('latin1'));
  assert.equal(bytesOfUTF8('a\ufffd'), null);
  const f = new HeadCheck(true);
  f.requestLine('GET', '/a');
  assert.equal(f.field('x-a', '\u00e9\u010d\u010a'), '\xc3\xa9\xc4\x8d\xc4\x8a', 'the bytes the client sent, not CR LF');
  f.field('host', 'x');
  assert.equal(f.verdict(true), undefined);
  const g = new HeadCheck(true);
  g.requestLine('GET', '/a?x=\u010d\u010aX-Remote-User:\u0120admin');
  assert.equal(g.verdict(false)?.code, 'MVP_ERR_BAD_REQUEST_TARGET');
  const h = new HeadCheck(true);
  h.requestLine('GET', '/a');
  h.field('x-a', 'b\ufffd');
  assert.equal(h.verdict(false)?.code, 'MVP_ERR_BAD_HEADER_FIELD');
});
