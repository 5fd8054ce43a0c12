// The one writer of upstream heads (src/upstream/request-head.ts, issue 38): whatever a front end
// let through, no method, target, Host, name or value with a byte a request line or field line may
// not carry is ever written, in any of the three shapes (the HTTP/1.1 head, HTTP/2 fields, an
// upgrade's fields). Before, a target or value holding CR LF went out as a header line of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forwardRequestHeaders, requestHead, requestHeaders2, UnsafeFieldError, NO_BODY } from '../../src/upstream/request-head';
import { IdentityHeaderRules } from '../../src/upstream/headers';

const o = { host: '127.0.0.1:6443', remoteAddress: '10.0.0.1', rules: new IdentityHeaderRules(), trustIdentityHeaders: false, identity: undefined, peerHop: true, bodyLength: NO_BODY };

const BAD: { name: string; method: string; target: string; headers: string[]; host?: string; part: string }[] = [
  { name: 'CR LF in the target', method: 'GET', target: '/api?x= HTTP/1.1\r\nX-Remote-User: system:admin\r\nX:', headers: [], part: 'target' },
  { name: 'the issue 38 characters in the target (U+010D U+010A: CR LF as latin1)', method: 'GET', target: '/api?x=\u010d\u010aX-Remote-User:\u0120system:admin', headers: [], part: 'target' },
  { name: 'a space in the target', method: 'GET', target: '/api /x', headers: [], part: 'target' },
  { name: 'NUL in the target', method: 'GET', target: '/api\0', headers: [], part: 'target' },
  { name: 'a target not in origin-form', method: 'GET', target: 'http://evil/api', headers: [], part: 'target' },
  { name: 'a method that is not a token', method: 'GET /x HTTP/1.1\r\nX-Remote-User: a\r\n', target: '/api', headers: [], part: 'method' },
  { name: 'CR LF in a value', method: 'GET', target: '/api', headers: ['x-note', 'a\r\nx-remote-user: system:admin'], part: 'value' },
  { name: 'LF alone in a value', method: 'GET', target: '/api', headers: ['x-note', 'a\nx-remote-user: system:admin'], part: 'value' },
  { name: 'NUL in a value', method: 'GET', target: '/api', headers: ['x-note', 'a\0b'], part: 'value' },
  { name: 'a character above U+00FF in a value', method: 'GET', target: '/api', headers: ['x-note', 'a\u010d\u010ab'], part: 'value' },
  { name: 'CR LF in an X-Forwarded-For the client sent', method: 'GET', target: '/api', headers: ['x-forwarded-for', '1.2.3.4\r\nx-remote-user: a'], part: 'value' },
  { name: 'a name with a colon and CR LF', method: 'GET', target: '/api', headers: ['x-a: b\r\nx-remote-user', 'system:admin'], part: 'name' },
  { name: 'a Host (a peer address from a Lease) with CR LF', method: 'GET', target: '/api', headers: [], host: '10.0.0.2:6443\r\nx-remote-user: a', part: 'host' },
];

for (const c of BAD) {
  test(`refused, in every shape: ${c.name}`, () => {
    const opts = { ...o, host: c.host ?? o.host };
    for (const [shape, write] of [
      ['HTTP/1.1 head', () => requestHead(c.method, c.target, c.headers, opts)],
      ['HTTP/2 fields', () => requestHeaders2(c.method, c.target, c.headers, opts)],
      ...(c.part === 'host' ? [] : [['upgrade fields', () => forwardRequestHeaders(c.method, c.target, c.headers, { remoteAddress: '10.0.0.1', identityRules: new IdentityHeaderRules(), peerHop: true, upgrade: true })]]),
    ] as [string, () => unknown][]) {
      assert.throws(write, (e: unknown) => e instanceof UnsafeFieldError && e.part === c.part, `${shape}: ${c.name}`);
    }
  });
}

test('what Go takes is written as it came: obs-text, HTAB and bytes 0x80-0xFF (a UTF-8 name as its bytes)', () => {
  const target = '/api/v1/namespaces/default/configmaps/n\xc3\xa4me?x=\xff';
  const head = requestHead('GET', target, ['impersonate-user', '\xc3\xa9admin', 'x-note', 'a\tb'], o);
  assert.ok(head.startsWith(`GET ${target} HTTP/1.1\r\n`));
  assert.ok(head.includes('impersonate-user: \xc3\xa9admin\r\n'));
  assert.ok(head.includes('x-note: a\tb\r\n'));
  assert.equal(head.split('\r\n').length, 8, JSON.stringify(head)); // request line, host, 2 fields, xff, peer marker, then the blank line's two ''
});

test('a refused head leaves nothing behind for the next one (the writer builds into a shared buffer)', () => {
  assert.throws(() => requestHead('GET', '/api', ['x-a', 'ok', 'x-b', 'bad\r\n'], o));
  const head = requestHead('GET', '/api', [], o);
  assert.ok(!head.includes('x-a'), head);
});
