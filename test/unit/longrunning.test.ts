// How long a long-running request waits for its response head (issue 19): the shorter of
// --request-timeout and the request's own timeoutSeconds, read as Go's url.Values.Get reads it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { streamHeadTimeoutMs } from '../../src/request/longrunning';

test('streamHeadTimeoutMs: the shorter of --request-timeout and the first timeoutSeconds', () => {
  const cases: [string, number][] = [
    ['', 60_000],
    ['watch=true', 60_000],
    ['watch=true&timeoutSeconds=5', 5_000],
    ['timeoutSeconds=5&watch=true', 5_000],
    ['timeoutSeconds=600', 60_000],
    ['timeoutSeconds=5&timeoutSeconds=1', 5_000], // the first value counts
    ['xtimeoutSeconds=1', 60_000], // another parameter
    ['timeoutSeconds=0', 60_000], // 0: no timeout of the request's own
    ['timeoutSeconds=-1', 60_000],
    ['timeoutSeconds=1x', 60_000], // not an integer: the apiserver refuses it
    ['timeoutSeconds=', 60_000],
    ['timeoutSeconds=99999999999999999999', 60_000],
  ];
  for (const [q, want] of cases) assert.equal(streamHeadTimeoutMs(q, 60_000), want, q);
});
