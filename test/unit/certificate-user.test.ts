// What mvproxy asserts for a client certificate, by the rules kube-apiserver reads it with (Go's
// crypto/x509 and k8s.io/apiserver's x509 CommonNameUserConversion). The same certificates against
// the real apiserver: test/kube/identity-certs.test.ts. Go's parseASN1String table is ported from
// crypto/x509/parser_test.go TestParseASN1String.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { createHash, X509Certificate } from 'node:crypto';
import { CertificateUsers, CREDENTIAL_ID_KEY, certificateRefusal, certificateUser, isRefusal, type CertificateUser, type Identity } from '../../src/api/identity';
import { IdentityHeaderRules } from '../../src/upstream/headers';
import { forwardRequestHeaders, requestHead } from '../../src/upstream/request-head';
import { createCA, type CA } from '../../src/pki/throwaway';
import { CN, derClientCert, nameDER, O, TAG, UID, type DerCertOptions } from '../support/der-cert';

let ca: CA;
before(async () => {
  ca = await createCA('identity-test-ca');
});

/** Straight from the DER: OpenSSL's own X509Certificate refuses some of these (invalid UTF-8, odd BMP), and so does the handshake. */
function userOf(o: DerCertOptions, opts = { uidHeader: false }): CertificateUser {
  const der = Buffer.from(derClientCert(ca, o).cert.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const fp = createHash('sha256').update(der).digest('hex').toUpperCase().replace(/(..)(?!$)/g, '$1:');
  return certificateUser(der, fp, opts);
}
const identity = (u: CertificateUser): Identity => {
  assert.ok(u !== null && !isRefusal(u), `expected a user, got ${JSON.stringify(u)}`);
  return u;
};
const refusal = (u: CertificateUser): string => {
  assert.ok(isRefusal(u), `expected a refusal, got ${JSON.stringify(u)}`);
  return u.refused;
};

describe("Go's parseASN1String, as the CN of a certificate", () => {
  const table: { name: string; tag: number; value: number[]; expected?: string; err?: string }[] = [
    { name: 'T61String', tag: TAG.T61, value: [0xbf, 0x61, 0x3f], expected: '¿a?' },
    { name: 'PrintableString', tag: TAG.PRINTABLE, value: [80, 81, 82], expected: 'PQR' },
    { name: 'PrintableString (invalid)', tag: TAG.PRINTABLE, value: [1, 2, 3], err: 'invalid PrintableString' },
    { name: "PrintableString with '*' and '&' (Go allows them)", tag: TAG.PRINTABLE, value: [0x2a, 0x26, 0x61], expected: '*&a' },
    { name: 'UTF8String', tag: TAG.UTF8, value: [80, 81, 82], expected: 'PQR' },
    { name: 'UTF8String (invalid)', tag: TAG.UTF8, value: [255], err: 'invalid UTF-8 string' },
    { name: 'UTF8String with a leading byte-order mark (Go keeps it; a default TextDecoder dropped it: helper 28)', tag: TAG.UTF8, value: [0xef, 0xbb, 0xbf, 0x61], expected: '\ufeffa' },
    { name: 'UTF8String with two byte-order marks (both kept)', tag: TAG.UTF8, value: [0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, 0x61], expected: '\ufeff\ufeffa' },
    { name: 'UTF8String (an encoded surrogate)', tag: TAG.UTF8, value: [0xed, 0xa0, 0x80], err: 'invalid UTF-8 string' },
    { name: 'BMPString', tag: TAG.BMP, value: [80, 81], expected: '偑' },
    { name: 'BMPString (terminator stripped)', tag: TAG.BMP, value: [0, 0x61, 0, 0], expected: 'a' },
    { name: 'BMPString (invalid length)', tag: TAG.BMP, value: [255], err: 'invalid BMPString' },
    { name: 'BMPString (invalid surrogate)', tag: TAG.BMP, value: [80, 81, 216, 1], err: 'invalid BMPString' },
    { name: 'BMPString (invalid noncharacter 0xfdd1)', tag: TAG.BMP, value: [80, 81, 253, 209], err: 'invalid BMPString' },
    { name: 'BMPString (invalid noncharacter 0xffff)', tag: TAG.BMP, value: [80, 81, 255, 255], err: 'invalid BMPString' },
    { name: 'BMPString (invalid noncharacter 0xfffe)', tag: TAG.BMP, value: [80, 81, 255, 254], err: 'invalid BMPString' },
    { name: 'IA5String', tag: TAG.IA5, value: [80, 81], expected: 'PQ' },
    { name: 'IA5String (invalid)', tag: TAG.IA5, value: [255], err: 'invalid IA5String' },
    { name: 'NumericString', tag: TAG.NUMERIC, value: [49, 50], expected: '12' },
    { name: 'NumericString (invalid)', tag: TAG.NUMERIC, value: [80], err: 'invalid NumericString' },
    { name: 'an INTEGER value (unsupported string type)', tag: TAG.INTEGER, value: [1], err: 'unsupported string type: 2' },
  ];
  for (const c of table) {
    test(c.name, () => {
      const u = userOf({ subject: [CN(Buffer.from(c.value), c.tag)] });
      if (c.err !== undefined) assert.match(refusal(u), new RegExp(`cannot parse this certificate: x509: invalid RDNSequence: invalid attribute value: ${c.err}`));
      else assert.equal(identity(u).user, c.expected);
    });
  }
});

describe('the user, groups and UID kube-apiserver reads', () => {
  test('two CNs: the last one is the user (pkix.Name keeps the last), in two RDNs or one', () => {
    assert.equal(identity(userOf({ subject: [CN('first'), CN('system:admin')] })).user, 'system:admin');
    assert.equal(identity(userOf({ subject: [[CN('first'), CN('second')]] })).user, 'second');
  });
  test('every O is a group, in certificate order, also across RDNs and beside the CN', () => {
    const u = identity(userOf({ subject: [O('b'), [CN('alice'), O('a')], O('c')] }));
    assert.deepEqual([u.user, u.groups], ['alice', ['b', 'a', 'c']]);
    assert.deepEqual(identity(userOf({ subject: [CN('alice')] })).groups, []);
    const many = Array.from({ length: 200 }, (_, i) => `group-${i}`);
    assert.deepEqual(identity(userOf({ subject: [CN('alice'), ...many.map((g) => O(g))] })).groups, many);
  });
  test('no CN, or an empty last CN: no user; a 401 unless a token decides, as there', () => {
    for (const subject of [[O('devs')], [CN('alice'), CN('')]]) {
      const u = userOf({ subject });
      assert.match(refusal(u), /no common name/);
      assert.equal(certificateRefusal(u, ['authorization', 'Bearer t']), undefined, 'a token decides');
      assert.equal(certificateRefusal(u, ['sec-websocket-protocol', 'v5.channel.k8s.io, base64url.bearer.authorization.k8s.io.dA']), undefined, "a WebSocket's token decides");
      assert.match(certificateRefusal(u, ['accept', '*/*'])!, /no common name/);
    }
    const unrepresentable = userOf({ subject: [CN('a\nb')] });
    assert.ok(certificateRefusal(unrepresentable, ['authorization', 'Bearer t']), 'a certificate kube-apiserver authenticates decides before any token: still refused');
  });
  test('Latin-1, CJK and emoji names are kept as characters (sent as UTF-8 bytes)', () => {
    assert.equal(identity(userOf({ subject: [CN('café')] })).user, 'café');
    assert.equal(identity(userOf({ subject: [CN('caf\xe9', TAG.T61)] })).user, 'café');
    assert.equal(identity(userOf({ subject: [CN('用户🚀')] })).user, '用户🚀');
  });
  test('a byte-order mark before a name is part of it, as Go reads it: "\\uFEFFsystem:masters" is not system:masters (helper 28)', () => {
    const u = identity(userOf({ subject: [CN('\ufeffkubernetes-admin'), O('\ufeffsystem:masters')] }));
    assert.deepEqual([u.user, u.groups], ['\ufeffkubernetes-admin', ['\ufeffsystem:masters']]);
  });
  test('commas, quotes, backslashes and tabs are name characters, kept as they are', () => {
    const u = identity(userOf({ subject: [CN('a,b "c" \\d\te'), O('x,y'), O('"q"')] }));
    assert.deepEqual([u.user, u.groups], ['a,b "c" \\d\te', ['x,y', '"q"']]);
  });
  test('what a header cannot carry unchanged is refused, never sent as another name', () => {
    assert.match(refusal(userOf({ subject: [CN('alice\nbob')] })), /user name "alice\\nbob" cannot be sent/);
    assert.match(refusal(userOf({ subject: [CN(' admin')] })), /leading\/trailing space/);
    assert.match(refusal(userOf({ subject: [CN('admin\t')] })), /cannot be sent/);
    assert.match(refusal(userOf({ subject: [CN('a\x00b')] })), /cannot be sent/);
    assert.match(refusal(userOf({ subject: [CN('a\x7fb')] })), /cannot be sent/);
    assert.match(refusal(userOf({ subject: [CN('alice'), O('')] })), /group "" cannot be sent/);
    assert.match(refusal(userOf({ subject: [CN('alice'), O('x\r\ny')] })), /group "x\\r\\ny"/);
  });
  test('UID (1.3.6.1.4.1.57683.2): forwarded with a UID header, refused without one, two or an empty one refused as kube-apiserver refuses them', () => {
    assert.equal(identity(userOf({ subject: [CN('alice'), UID('u-1')] }, { uidHeader: true })).uid, 'u-1');
    assert.match(refusal(userOf({ subject: [CN('alice'), UID('u-1')] })), /--requestheader-uid-headers/);
    assert.match(refusal(userOf({ subject: [CN('alice'), UID('u-1'), UID('u-2')] }, { uidHeader: true })), /2 UIDs/);
    assert.match(refusal(userOf({ subject: [CN('alice'), UID('')] }, { uidHeader: true })), /empty UID/);
  });
  test('a negative serial: Go refuses the certificate (x509negativeserial); zero and 20-byte serials are fine', () => {
    assert.match(refusal(userOf({ subject: [CN('alice')], serial: Buffer.from([0x80, 0x01]) })), /negative serial number/);
    assert.equal(identity(userOf({ subject: [CN('alice')], serial: Buffer.from([0]) })).user, 'alice');
    assert.equal(identity(userOf({ subject: [CN('alice')], serial: Buffer.from([0x7f, ...Array(19).fill(0xab)]) })).user, 'alice');
  });
  test('an issuer spelled differently from its CA subject (OpenSSL matches it, Go does not) is refused; the exact bytes pass', () => {
    const users = new CertificateUsers({ uidHeader: false }, ca.cert);
    const exact = derClientCert(ca, { subject: [CN('alice')] });
    assert.equal((users.ofPEM(exact.cert) as Identity).user, 'alice');
    // The CA's subject is CN=identity-test-ca; OpenSSL compares names case-folded.
    const respelled = derClientCert(ca, { subject: [CN('alice')], issuer: nameDER([CN('IDENTITY-test-ca')]) });
    assert.ok(new X509Certificate(respelled.cert).checkIssued(new X509Certificate(ca.cert)), 'OpenSSL takes the CA as its issuer');
    assert.match(refusal(users.ofPEM(respelled.cert)), /issuer name is not byte for byte/);
  });
  test('the credential ID is X509SHA256=<lowercase hex of the DER>', () => {
    const pem = derClientCert(ca, { subject: [CN('alice')] }).cert;
    const x = new X509Certificate(pem);
    const u = identity(certificateUser(x.raw, x.fingerprint256, { uidHeader: false }));
    assert.deepEqual(u.extra, { [CREDENTIAL_ID_KEY]: [`X509SHA256=${x.fingerprint256.replace(/:/g, '').toLowerCase()}`] });
  });
});

describe('identity headers carry the names as UTF-8 bytes', () => {
  const id: Identity = { user: 'café 用户🚀', groups: ['ö', 'x,y'], uid: 'ü-1', extra: { [CREDENTIAL_ID_KEY]: ['X509SHA256=ab'] } };
  const bytes = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
  test('forwardRequestHeaders (upgrades): one byte a character, UID only with a UID header', () => {
    const withUid = forwardRequestHeaders('GET', '/api', [], { remoteAddress: '1.2.3.4', peerHop: false, identity: id, identityRules: new IdentityHeaderRules(undefined, undefined, undefined, ['X-Remote-Uid']) });
    assert.deepEqual(withUid.slice(2), [
      'x-remote-user', bytes('café 用户🚀'),
      'x-remote-uid', bytes('ü-1'),
      'x-remote-group', bytes('ö'),
      'x-remote-group', 'x,y',
      'x-remote-extra-authentication.kubernetes.io%2Fcredential-id', 'X509SHA256=ab',
    ]);
    const without = forwardRequestHeaders('GET', '/api', [], { remoteAddress: '1.2.3.4', peerHop: false, identity: id, identityRules: new IdentityHeaderRules() });
    assert.ok(!without.includes('x-remote-uid'));
  });
  test('the HTTP/1.1 request head, written latin1, has the UTF-8 bytes on the wire', () => {
    const head = requestHead('GET', '/api', [], { host: 'h', remoteAddress: '1.2.3.4', rules: new IdentityHeaderRules(), trustIdentityHeaders: false, identity: id, peerHop: false, bodyLength: -2 });
    const wire = Buffer.from(head, 'latin1');
    assert.ok(wire.includes(Buffer.from('x-remote-user: café 用户🚀\r\n', 'utf8')));
    assert.ok(wire.includes(Buffer.from('x-remote-group: ö\r\n', 'utf8')));
  });
});

describe('a user holds while its certificate and CA are valid, asked per request (helpers 28 and 29)', () => {
  test('at each request time: the user while valid, refused once notAfter passes, refused again if the clock steps back before notBefore', async () => {
    const leaf = await ca.issue({ commonName: 'short', usage: 'client', notBeforeOffsetMs: -60_000, validForMs: 60_000 });
    const x = new X509Certificate(leaf.cert);
    const [from, to] = [Date.parse(x.validFrom), Date.parse(x.validTo)];
    const users = new CertificateUsers({ uidHeader: false }, ca.cert);
    const at = (now: number) => users.ofDER(x.raw, x.fingerprint256, now);
    assert.equal(identity(at(from + 1000)).user, 'short', 'valid: the user');
    assert.equal(identity(at(to - 1)).user, 'short', 'the cached user, up to notAfter');
    assert.match(refusal(at(to)), /has expired/, 'the cached user is not served past its certificate');
    assert.match(refusal(at(to + 3_600_000)), /has expired/);
    assert.equal(identity(at(from + 1000)).user, 'short', 'asked again: the clock went back');
    assert.match(refusal(at(from - 1000)), /not yet valid/, 'the clock stepped back before notBefore: the cached user is not served');
  });
});
