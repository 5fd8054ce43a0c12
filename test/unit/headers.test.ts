// The identity rules a real kube-apiserver judged (test/kube/identity.test.ts), kept here where
// they run without one: what a certificate user becomes, how extra keys are escaped, and when the
// front-proxy certificate is presented.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forwardRequestHeaders } from '../../src/upstream/request-head';
import { carriesIdentity, connectionHeaderNames, headerKeyEscape, IdentityHeaderRules, ownPeerIdentityHeaders, responseHeadFrom } from '../../src/upstream/headers';
import { CREDENTIAL_ID_KEY, type Identity } from '../../src/api/identity';
import { listHasToken } from '../../src/api/headers';

test('headerKeyEscape: Go client-go transport table (non-token bytes and % become %XX, uppercase hex)', () => {
  const table: [string, string][] = [
    ['acme.com/project', 'acme.com%2Fproject'],
    ['authentication.kubernetes.io/credential-id', 'authentication.kubernetes.io%2Fcredential-id'],
    ['100%', '100%25'],
    ['a b', 'a%20b'],
    ['ünï', '%C3%BCn%C3%AF'],
    ["!#$&'*+-.^_`|~09AZaz", "!#$&'*+-.^_`|~09AZaz"],
  ];
  for (const [key, want] of table) assert.equal(headerKeyEscape(key), want, key);
});

test('a certificate user goes upstream as user, one line per group, and its credential ID extra', () => {
  const id: Identity = { user: 'alice', groups: ['devs', 'acme:team'], extra: { [CREDENTIAL_ID_KEY]: ['X509SHA256=de79caf8'] } };
  const h = forwardRequestHeaders('GET', '/api', [], { remoteAddress: '10.0.0.1', peerHop: false, identity: id, identityRules: new IdentityHeaderRules() });
  assert.deepEqual(h.slice(2), [
    'x-remote-user', 'alice',
    'x-remote-group', 'devs',
    'x-remote-group', 'acme:team',
    'x-remote-extra-authentication.kubernetes.io%2Fcredential-id', 'X509SHA256=de79caf8',
  ]);
});

test('the front-proxy certificate is presented only with identity headers (tokens and anonymous requests go without it)', () => {
  const rules = new IdentityHeaderRules(['X-Auth-User'], ['X-Auth-Group'], ['X-Auth-Extra-']);
  const bearer = forwardRequestHeaders('GET', '/api', ['authorization', 'Bearer t', 'x-remote-user', 'spoofed', 'x-auth-user', 'spoofed'], { remoteAddress: '1.2.3.4', peerHop: false, identityRules: rules });
  assert.equal(carriesIdentity(bearer, rules), false, 'client-sent identity headers are stripped, so nothing asks for the certificate');
  const cert = forwardRequestHeaders('GET', '/api', [], { remoteAddress: '1.2.3.4', peerHop: false, identityRules: rules, identity: { user: 'alice', groups: [] } });
  assert.equal(carriesIdentity(cert, rules), true);
  assert.deepEqual(ownPeerIdentityHeaders(rules), { 'x-auth-user': 'system:apiserver', 'x-auth-group': 'system:authenticated', 'x-mvproxy-identity-lengths': '16,20' });
});

test('responseHeadFrom: hop-by-hop headers and those a Connection header names are dropped; Content-Length and Content-Type are reported', () => {
  const raw = (...h: string[]) => h.map((x) => Buffer.from(x, 'latin1'));
  const plain = responseHeadFrom(raw('Content-Type', 'application/json', 'Content-Length', '42', 'Audit-Id', 'a1', 'Keep-Alive', 'timeout=5', 'Transfer-Encoding', 'chunked', 'Cache-Control', 'no-cache'));
  assert.deepEqual(plain, { headers: ['Content-Type', 'application/json', 'Audit-Id', 'a1', 'Cache-Control', 'no-cache'], contentLength: 42, contentType: 'application/json' });
  // Two Connection headers: both name headers to drop (names in any case), close/keep-alive are not names.
  const named = responseHeadFrom(raw('X-Trace', 't', 'Connection', 'close, X-Trace', 'Content-Type', 'text/plain', 'x-debug', 'd', 'connection', 'X-DEBUG, content-type', 'Audit-Id', 'a2'));
  assert.deepEqual(named, { headers: ['Audit-Id', 'a2'], contentLength: -1, contentType: '' });
  // Connection: keep-alive alone names nothing.
  assert.deepEqual(responseHeadFrom(raw('Connection', 'keep-alive', 'Etag', '"e"')).headers, ['Etag', '"e"']);
});

test('connectionHeaderNames: close, keep-alive and upgrade in any case and any list are options; every other token is a name to drop', () => {
  const table: [string, string[]][] = [
    ['keep-alive', []],
    ['Keep-Alive', []],
    ['KEEP-ALIVE', []],
    ['close', []],
    ['Upgrade', []],
    [' keep-alive ,\tUpgrade\t', []],
    ['', []],
    [',,', []],
    ['keep-alive, X-Trace', ['x-trace']],
    ['X-Remote-User', ['x-remote-user']],
    ['close,Authorization , te', ['authorization', 'te']],
    // Near-misses are names: "keep\ralive" must not pass for keep-alive (CR | 0x20 is '-').
    ['keep\ralive', ['keep\ralive']],
    ['keep_alive', ['keep_alive']],
    ['closed', ['closed']],
    ['upgrades, clos', ['upgrades', 'clos']],
  ];
  for (const [value, names] of table) assert.deepEqual([...connectionHeaderNames(value)].sort(), names.sort(), JSON.stringify(value));
});

test('listHasToken: a token of a comma-separated list in any ASCII case, SP/HTAB around it; nothing else passes for it', () => {
  const table: [string, boolean][] = [
    ['close', true],
    ['Close', true],
    ['keep-alive, CLOSE', true],
    ['\tclose\t,x', true],
    ['closed', false],
    ['clos', false],
    ['x-close', false],
    ['\u00a0close', false], // NBSP is not optional whitespace (Go's hasToken does not take it either)
    ['close\u00a0', false],
    ['', false],
    [',', false],
  ];
  for (const [v, want] of table) assert.equal(listHasToken(v, 'close'), want, JSON.stringify(v));
});
