// The differential test's oracle (test/oracle/main.go) records a request after reading its body, so
// a request whose client left mid-body is recorded just after the close. The test reads the log of
// the client's direct bytes right after that close: before the oracle waited for such a handler,
// GET /log missed the request 14-28 times in 200 (measured), the judge then saw mvproxy's copy of it
// as "one request more", and a CI run failed on a right build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { join } from 'node:path';
import { oracleUnavailable, startOracle } from '../support/go-oracle';
import { FIXTURES_DIR } from '../support/fixtures';

test('the oracle log holds a request whose client closed mid-body as soon as the client is gone', { skip: oracleUnavailable() }, async () => {
  const oracle = await startOracle({ api: join(__dirname, '..', 'oracle', 'api.json'), apis: [join(FIXTURES_DIR, 'v1.33-0b1dcaba', 'aggregated_v2.json')] });
  try {
    let missed = 0;
    const N = 200; // bounded: ~2 s
    for (let i = 0; i < N; i++) {
      await oracle.reset();
      await new Promise<void>((resolve) => {
        const s = net.connect(oracle.ports.direct!, '127.0.0.1', () => {
          s.write('POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabcde');
          setTimeout(() => s.destroy(), 5);
        });
        s.on('close', () => resolve());
        s.on('error', () => undefined);
      });
      const got = (await oracle.log()).requests.filter((r) => r.role === 'direct');
      if (got.length !== 1) missed++;
    }
    assert.equal(missed, 0, `GET /log answered without the request ${missed} time(s) in ${N}`);
  } finally {
    await oracle.close();
  }
});
