// Who may read mvproxy's own discovery documents (src/proxy/discovery-access.ts): what the
// apiserver granted is remembered for exactly the request it authorized (method, target and
// credentials), for the TTL, within a bound; a grant for one path or verb is never another's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accessGranted, ACCESS_ENTRIES_MAX, DiscoveryAccess } from '../../src/proxy/discovery-access';

const req = (method: string, target: string, headers: string[] = [], identity?: { user: string; groups: string[] }) => ({ method, target, headers, identity });

test('the key is the request the apiserver authorized: method, target, certificate user and the headers it authenticates from', () => {
  const a = new DiscoveryAccess(10_000);
  const base = a.key(req('GET', '/openapi/v3', ['authorization', 'Bearer t']));
  // Each of these the apiserver authorizes on its own (a HEAD is the verb "head"; each path its own URL).
  const others = [
    req('HEAD', '/openapi/v3', ['authorization', 'Bearer t']),
    req('GET', '/apis', ['authorization', 'Bearer t']),
    req('GET', '/openapi/v3?x', ['authorization', 'Bearer t']),
    req('GET', '/openapi/v3', ['authorization', 'Bearer u']),
    req('GET', '/openapi/v3', []),
    req('GET', '/openapi/v3', ['authorization', 'Bearer t', 'impersonate-user', 'admin']),
    req('GET', '/openapi/v3', ['authorization', 'Bearer t', 'impersonate-extra-scopes', 'x']),
    req('GET', '/openapi/v3', ['authorization', 'Bearer t', 'authorization', 'Bearer u']),
    req('GET', '/openapi/v3', ['authorization', 'Bearer t', 'sec-websocket-protocol', 'base64url.bearer.authorization.k8s.io.dQ']),
    req('GET', '/openapi/v3', ['authorization', 'Bearer t'], { user: 'alice', groups: [] }),
  ];
  const keys = new Set(others.map((r) => a.key(r)));
  assert.equal(keys.size, others.length, 'every variant its own key');
  assert.ok(!keys.has(base));
  // What the apiserver authenticates nothing from does not split the key.
  assert.equal(a.key(req('GET', '/openapi/v3', ['authorization', 'Bearer t', 'accept', 'application/json', 'user-agent', 'kubectl'])), base);
  assert.ok(!base.includes('Bearer'), 'digested: no token kept');
});

test('granted for the TTL only; a TTL of 0 remembers nothing', () => {
  const a = new DiscoveryAccess(10_000);
  const k = a.key(req('GET', '/apis'));
  assert.equal(a.allows(k, 0), false);
  a.remember(k, 1_000);
  assert.equal(a.allows(k, 10_999), true);
  assert.equal(a.allows(k, 11_000), false, 'expired');
  assert.equal(a.size, 0, 'an expired entry is dropped when seen');
  const off = new DiscoveryAccess(0);
  off.remember(k, 0);
  assert.equal(off.allows(k, 0), false);
  assert.equal(off.size, 0);
});

test(`bounded: at ${ACCESS_ENTRIES_MAX} entries the oldest is forgotten (asked again), the newest kept`, () => {
  const a = new DiscoveryAccess(10_000);
  const keys = Array.from({ length: ACCESS_ENTRIES_MAX + 100 }, (_, i) => a.key(req('GET', `/apis?i=${i}`)));
  for (const k of keys) a.remember(k, 0);
  assert.equal(a.size, ACCESS_ENTRIES_MAX);
  assert.equal(a.allows(keys[0]!, 1), false);
  assert.equal(a.allows(keys[99]!, 1), false);
  assert.equal(a.allows(keys[100]!, 1), true);
  assert.equal(a.allows(keys.at(-1)!, 1), true);
});

test('an answer from past authentication and authorization: 2xx, 304, 404, 406; not 401, 403, 429 or 5xx', () => {
  for (const s of [200, 203, 304, 404, 406]) assert.equal(accessGranted(s), true, String(s));
  for (const s of [400, 401, 403, 429, 500, 503, 504]) assert.equal(accessGranted(s), false, String(s));
});
