// Request body framing (src/listener/framing.ts): the table a front end applies before anything is
// forwarded. Cases after Go's net/http (transfer.go: fixLength, parseTransferEncoding) and the
// smuggling shapes in test/security/smuggling.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FramingCheck } from '../../src/listener/framing';

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
    const f = new FramingCheck();
    for (const [k, v] of c.headers) f.see(k, v);
    assert.equal(f.verdict(), c.want);
  });
}
