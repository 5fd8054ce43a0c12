// The client-certificate cases of attack round 22. Each builds a leaf (and what the client sends after it) under the
// cluster client CA; the oracle is kube-apiserver reached directly.
import { KeyObject } from 'node:crypto';
import {
  ANY_EKU, BC_LEAF, bcCA, big, bits, publicOnlyRsa, bool, buildCert, CA_EXTS, CLIENT_AUTH, ecKey, eku, EKU_CLIENT, ext, int, intermediate, Issuer, KU_CA, KU_DIGSIG, key, LEAF_EXTS,
  NULL, octet, oid, rsaKey, san, seq, SERVER_AUTH, SIG, subjectOf, tlv, validity, type CertSpec, type Key,
} from './builder';
import { CN, nameDER } from '../der-cert';

export interface Built {
  leaf: Buffer;
  key: KeyObject;
  /** Sent after the leaf. */
  chain: Buffer[];
}
export interface Case {
  id: string;
  what: string;
  /** TLS versions to try (default ['TLSv1.3']). */
  versions?: ('TLSv1.3' | 'TLSv1.2')[];
  build(root: Issuer, dir: string): Built | null;
}

const leaf = (id: string, issuer: Issuer, o: Partial<CertSpec> & { key?: Key } = {}, chain: Buffer[] = issuer.der ? [issuer.der] : []): Built => {
  const k = o.key ?? ecKey();
  return { leaf: buildCert({ issuer: issuer.name, subject: subjectOf(`a3-${id}`), spki: k.spki, signer: issuer.key, ...o }), key: k.priv, chain };
};
const rsaInt = (root: Issuer, cn = 'a3-rsa-int') => intermediate(root, cn, { key: rsaKey(2048) });
const genTime = (s: string) => tlv(0x18, Buffer.from(s));
const utcRaw = (s: string) => tlv(0x17, Buffer.from(s));
const yy = (d: Date) => d.toISOString().replace(/[-:T]/g, '').slice(2, 12); // YYMMDDHHMM

export const CASES: Case[] = [
  // Controls.
  { id: 'ctl-root', what: 'control: P-256 leaf signed by the client CA', build: (r) => leaf('ctl-root', r) },
  { id: 'ctl-ecint', what: 'control: leaf via an EC intermediate', build: (r) => leaf('ctl-ecint', intermediate(r, 'a3-ec-int')) },
  { id: 'ctl-rsaint', what: 'control: leaf via an RSA-2048 intermediate (sha256WithRSA)', build: (r) => leaf('ctl-rsaint', rsaInt(r)) },
  { id: 'ctl-pss32', what: 'control: RSA-PSS sha256 salt 32 (Go accepts)', build: (r) => leaf('ctl-pss32', rsaInt(r), { sigAlg: SIG.pss('sha256', 32) }) },

  // Signature algorithms.
  { id: 'sig-ecdsa-sha1', what: 'leaf signed ecdsa-with-SHA1 by the CA', build: (r) => leaf('sig-ecdsa-sha1', r, { sigAlg: SIG.ecdsaSha1 }) },
  { id: 'sig-rsa-sha1', what: 'leaf signed sha1WithRSA by an RSA intermediate', build: (r) => leaf('sig-rsa-sha1', rsaInt(r), { sigAlg: SIG.rsaSha1 }) },
  { id: 'sig-rsa-md5', what: 'leaf signed md5WithRSA by an RSA intermediate', build: (r) => leaf('sig-rsa-md5', rsaInt(r), { sigAlg: SIG.rsaMd5 }) },
  { id: 'sig-pss-salt20', what: 'leaf RSA-PSS sha256 salt 20 (Go: unknown algorithm)', build: (r) => leaf('sig-pss-salt20', rsaInt(r), { sigAlg: SIG.pss('sha256', 20) }) },
  { id: 'sig-pss-salt0', what: 'leaf RSA-PSS sha256 salt 0', build: (r) => leaf('sig-pss-salt0', rsaInt(r), { sigAlg: SIG.pss('sha256', 0) }) },
  { id: 'sig-pss-sha384-32', what: 'leaf RSA-PSS sha384 salt 32', build: (r) => leaf('sig-pss-sha384-32', rsaInt(r), { sigAlg: SIG.pss('sha384', 32) }) },
  { id: 'sig-pss-default', what: 'leaf RSA-PSS default params (SHA-1, salt 20)', build: (r) => leaf('sig-pss-default', rsaInt(r), { sigAlg: SIG.pss('sha1', 20, seq()) }) },
  { id: 'sig-int-ecdsa-sha1', what: 'EC intermediate signed ecdsa-with-SHA1 by the CA', build: (r) => leaf('sig-int-ecdsa-sha1', intermediate(r, 'a3-sha1-int', { sigAlg: SIG.ecdsaSha1 })) },

  // Leaf public keys.
  { id: 'key-rsa1024', what: 'RSA-1024 leaf', build: (r) => leaf('key-rsa1024', r, { key: rsaKey(1024) }) },
  { id: 'key-rsa1016', what: 'RSA-1016 leaf (Go < 1024: rsa1024min)', build: (r) => leaf('key-rsa1016', r, { key: rsaKey(1016) }) },
  { id: 'key-rsa-e-2^32-1', what: 'RSA-2048 leaf, e = 2^32-1 (Go: exponent > 2^31-1)', build: (r) => leaf('key-rsa-e-2^32-1', r, { key: rsaKey(2048, 0xffffffff) }) },
  { id: 'key-rsa8256', what: 'RSA-8256 leaf (Go tls: > 8192 bits)', build: (r, d) => leaf('key-rsa8256', r, { key: big(d) ?? publicOnlyRsa(8256) }) },
  { id: 'key-rsa-nonull', what: 'RSA-2048 leaf, SPKI without NULL parameters', build: (r) => { const k = rsaKey(2048); return leaf('key-rsa-nonull', r, { key: { priv: k.priv, spki: dropRsaNull(k.spki) } }); } },
  { id: 'key-rsapss', what: 'RSASSA-PSS (id-RSASSA-PSS) key leaf', build: (r) => leaf('key-rsapss', r, { key: key('rsa-pss', { modulusLength: 2048 }) }) },
  { id: 'key-secp256k1', what: 'EC secp256k1 leaf', versions: ['TLSv1.3', 'TLSv1.2'], build: (r) => leaf('key-secp256k1', r, { key: ecKey('secp256k1') }) },
  { id: 'key-brainpool', what: 'EC brainpoolP256r1 leaf', versions: ['TLSv1.3', 'TLSv1.2'], build: (r) => leaf('key-brainpool', r, { key: ecKey('brainpoolP256r1') }) },
  { id: 'key-p224', what: 'EC P-224 leaf', versions: ['TLSv1.3', 'TLSv1.2'], build: (r) => leaf('key-p224', r, { key: ecKey('secp224r1') }) },
  { id: 'key-ed25519', what: 'Ed25519 leaf', build: (r) => leaf('key-ed25519', r, { key: key('ed25519') }) },
  { id: 'key-ed448', what: 'Ed448 leaf (Go: unknown public key)', build: (r) => leaf('key-ed448', r, { key: key('ed448') }) },
  { id: 'key-dsa', what: 'DSA-2048 leaf', versions: ['TLSv1.2'], build: (r) => leaf('key-dsa', r, { key: key('dsa', { modulusLength: 2048, divisorLength: 256 }) }) },

  // Leaf extensions that Go's parser refuses (kube-apiserver: "tls: failed to parse client certificate").
  { id: 'ext-dup-unknown', what: 'two identical unknown non-critical extensions', build: (r) => leaf('ext-dup-unknown', r, { extensions: [...LEAF_EXTS, ext('1.2.3.4.5', false, NULL), ext('1.2.3.4.5', false, NULL)] }) },
  { id: 'ext-dup-eku', what: 'two EKU extensions (clientAuth, then serverAuth)', build: (r) => leaf('ext-dup-eku', r, { extensions: [BC_LEAF, KU_DIGSIG, EKU_CLIENT, eku(SERVER_AUTH)] }) },
  { id: 'ext-san-uri', what: 'SAN URI "http://%zz" (Go: cannot parse URI)', build: (r) => leaf('ext-san-uri', r, { extensions: [...LEAF_EXTS, san(false, tlv(0x86, Buffer.from('http://%zz')))] }) },
  // Attack round 23: URIs whose authority mvproxy's first check let run on (url.Parse refuses each).
  ...([['uri-two-ports', 'http://example.com:80:90/'], ['uri-signed-port', 'a://h:+80'], ['uri-escape-in-host', 'http://ex%41mple.com/'], ['uri-user-dot-host', 'a://u@h./']] as const).map(([id, uri]) => ({
    id: `ext-${id}`,
    what: `SAN URI ${JSON.stringify(uri)} (Go: cannot parse URI)`,
    build: (r: Issuer) => leaf(`ext-${id}`, r, { extensions: [...LEAF_EXTS, san(false, tlv(0x86, Buffer.from(uri)))] }),
  })),
  { id: 'ext-san-uri-spiffe', what: 'SAN URI spiffe://cluster.local/ns/a/sa/b (Go accepts it)', build: (r) => leaf('ext-san-uri-spiffe', r, { extensions: [...LEAF_EXTS, san(false, tlv(0x86, Buffer.from('spiffe://cluster.local/ns/a/sa/b')))] }) },
  { id: 'ext-san-ip5', what: 'SAN iPAddress of 5 bytes', build: (r) => leaf('ext-san-ip5', r, { extensions: [...LEAF_EXTS, san(false, tlv(0x87, Buffer.from([1, 2, 3, 4, 5])))] }) },
  { id: 'ext-san-dns8bit', what: 'SAN dNSName with a 0xE9 byte', build: (r) => leaf('ext-san-dns8bit', r, { extensions: [...LEAF_EXTS, san(false, tlv(0x82, Buffer.from('caf\xe9.example', 'latin1')))] }) },
  { id: 'ext-akid-critical', what: 'authorityKeyIdentifier marked critical', build: (r) => leaf('ext-akid-critical', r, { extensions: [...LEAF_EXTS, ext('2.5.29.35', true, seq(tlv(0x80, Buffer.alloc(20, 7))))] }) },
  { id: 'ext-skid-critical', what: 'subjectKeyIdentifier marked critical', build: (r) => leaf('ext-skid-critical', r, { extensions: [...LEAF_EXTS, ext('2.5.29.14', true, octet(Buffer.alloc(20, 9)))] }) },
  { id: 'ext-ku-padding', what: 'keyUsage BIT STRING with a set padding bit (07 81)', build: (r) => leaf('ext-ku-padding', r, { extensions: [BC_LEAF, ext('2.5.29.15', true, bits(7, Buffer.from([0x81]))), EKU_CLIENT] }) },
  { id: 'ext-eku-bigoid', what: 'EKU {clientAuth, 1.2.3.4294967296} (Go: OID arc > 31 bits)', build: (r) => leaf('ext-eku-bigoid', r, { extensions: [BC_LEAF, KU_DIGSIG, eku(CLIENT_AUTH, '1.2.3.4294967296')] }) },
  { id: 'ext-oid-big', what: 'unknown extension with OID 1.2.3.4294967296', build: (r) => leaf('ext-oid-big', r, { extensions: [...LEAF_EXTS, ext('1.2.3.4294967296', false, NULL)] }) },
  { id: 'ext-ber-len', what: 'an extension value with a non-minimal (BER) length', build: (r) => leaf('ext-ber-len', r, { extensions: [...LEAF_EXTS, seq(oid('1.2.3.4.6'), Buffer.from([0x04, 0x81, 0x02, 0x05, 0x00]))] }) },
  { id: 'ext-bc-bad', what: 'basicConstraints with an INTEGER where the BOOLEAN goes', build: (r) => leaf('ext-bc-bad', r, { extensions: [ext('2.5.29.19', true, seq(int(5), int(5))), KU_DIGSIG, EKU_CLIENT] }) },
  { id: 'ext-policies-bad', what: 'certificatePolicies with an empty SEQUENCE policyInformation', build: (r) => leaf('ext-policies-bad', r, { extensions: [...LEAF_EXTS, ext('2.5.29.32', false, seq(seq()))] }) },
  { id: 'ext-sig-ber', what: 'outer signature BIT STRING with a long-form length', build: (r) => leaf('ext-sig-ber', r, { outer: (tbs, alg, sig) => seq(tbs, alg, Buffer.concat([Buffer.from([0x03, 0x81, sig.length + 1, 0x00]), sig])) }) },
  // Critical extensions OpenSSL handles and Go does not (Go: UnhandledCriticalExtension in Verify -> 401).
  { id: 'crit-nscerttype', what: 'critical Netscape cert type sslClient', build: (r) => leaf('crit-nscerttype', r, { extensions: [...LEAF_EXTS, ext('2.16.840.1.113730.1.1', true, bits(7, Buffer.from([0x80])))] }) },
  { id: 'crit-tlsfeature', what: 'critical TLS Feature (status_request)', build: (r) => leaf('crit-tlsfeature', r, { extensions: [...LEAF_EXTS, ext('1.3.6.1.5.5.7.1.24', true, seq(int(5)))] }) },
  { id: 'crit-unknown', what: 'critical unknown OID 1.2.3.4.7 (both should refuse)', build: (r) => leaf('crit-unknown', r, { extensions: [...LEAF_EXTS, ext('1.2.3.4.7', true, NULL)] }) },
  { id: 'crit-subjdirattrs', what: 'critical subjectDirectoryAttributes', build: (r) => leaf('crit-subjdirattrs', r, { extensions: [...LEAF_EXTS, ext('2.5.29.9', true, seq(seq(oid('2.5.4.10'), tlv(0x31, tlv(0x0c, Buffer.from('x'))))))] }) },
  { id: 'crit-proxycert', what: 'critical proxyCertInfo', build: (r) => leaf('crit-proxycert', r, { extensions: [...LEAF_EXTS, ext('1.3.6.1.5.5.7.1.14', true, seq(seq(oid('1.3.6.1.5.5.7.21.1'))))] }) },
  { id: 'crit-policymappings-leaf', what: 'critical policyMappings in the leaf', build: (r) => leaf('crit-policymappings-leaf', r, { extensions: [...LEAF_EXTS, ext('2.5.29.33', true, seq(seq(oid('1.2.3.1'), oid('1.2.3.2'))))] }) },
  { id: 'crit-san-empty-subject', what: 'SAN critical with a normal subject (Go: SAN critical only handled if subject empty?)', build: (r) => leaf('crit-san', r, { extensions: [...LEAF_EXTS, san(true, tlv(0x82, Buffer.from('a.example')))] }) },

  // Leaf EKU / KU (expected gaps: OpenSSL stricter).
  { id: 'eku-none', what: 'no EKU extension', build: (r) => leaf('eku-none', r, { extensions: [BC_LEAF, KU_DIGSIG] }) },
  { id: 'eku-any', what: 'EKU anyExtendedKeyUsage only', build: (r) => leaf('eku-any', r, { extensions: [BC_LEAF, KU_DIGSIG, eku(ANY_EKU)] }) },
  { id: 'eku-server', what: 'EKU serverAuth only', build: (r) => leaf('eku-server', r, { extensions: [BC_LEAF, KU_DIGSIG, eku(SERVER_AUTH)] }) },
  { id: 'eku-empty', what: 'EKU extension with an empty SEQUENCE', build: (r) => leaf('eku-empty', r, { extensions: [BC_LEAF, KU_DIGSIG, ext('2.5.29.37', false, seq())] }) },
  { id: 'ku-certsign-only', what: 'leaf keyUsage keyCertSign only', build: (r) => leaf('ku-certsign-only', r, { extensions: [BC_LEAF, KU_CA, EKU_CLIENT] }) },
  { id: 'ns-server-only', what: 'no EKU, Netscape cert type sslServer only (non-critical)', build: (r) => leaf('ns-server-only', r, { extensions: [BC_LEAF, KU_DIGSIG, ext('2.16.840.1.113730.1.1', false, bits(6, Buffer.from([0x40])))] }) },
  { id: 'leaf-ca-true', what: 'leaf with CA:TRUE', build: (r) => leaf('leaf-ca-true', r, { extensions: [bcCA(), KU_DIGSIG, EKU_CLIENT] }) },
  { id: 'leaf-v1', what: 'v1 leaf (no extensions)', build: (r) => leaf('leaf-v1', r, { version: null, extensions: null }) },
  { id: 'leaf-v2-exts', what: 'v2 leaf carrying extensions (serverAuth EKU)', build: (r) => leaf('leaf-v2-exts', r, { version: 1, extensions: [BC_LEAF, KU_DIGSIG, eku(SERVER_AUTH)] }) },

  // Intermediates.
  { id: 'int-nc-dirname', what: 'intermediate with critical nameConstraints permitted dirName (matching)', build: (r) => {
    const i = intermediate(r, 'a3-nc-int', { extensions: [...CA_EXTS, ext('2.5.29.30', true, seq(tlv(0xa0, seq(tlv(0xa4, nameDER([]).length ? subjectPrefix() : Buffer.alloc(0))))))] });
    return leaf('int-nc-dirname', i);
  } },
  { id: 'int-nc-dns', what: 'intermediate with critical nameConstraints permitted DNS example.com, leaf has no SAN', build: (r) => leaf('int-nc-dns', intermediate(r, 'a3-ncdns-int', { extensions: [...CA_EXTS, ext('2.5.29.30', true, seq(tlv(0xa0, seq(tlv(0x82, Buffer.from('example.com'))))))] })) },
  { id: 'int-nc-empty', what: 'intermediate with empty critical nameConstraints', build: (r) => leaf('int-nc-empty', intermediate(r, 'a3-ncempty-int', { extensions: [...CA_EXTS, ext('2.5.29.30', true, seq())] })) },
  { id: 'int-require-explicit', what: 'intermediate policyConstraints requireExplicitPolicy=0, leaf without policies', build: (r) => leaf('int-require-explicit', intermediate(r, 'a3-rep-int', { extensions: [...CA_EXTS, ext('2.5.29.36', true, seq(tlv(0x80, Buffer.from([0]))))] })) },
  { id: 'int-inhibit-any', what: 'intermediate inhibitAnyPolicy=0 + requireExplicitPolicy=0, leaf anyPolicy', build: (r) => leaf('int-inhibit-any', intermediate(r, 'a3-inh-int', { extensions: [...CA_EXTS, ext('2.5.29.54', true, int(0)), ext('2.5.29.36', true, seq(tlv(0x80, Buffer.from([0])))), ext('2.5.29.32', false, seq(seq(oid('2.5.29.32.0'))))] }), { extensions: [...LEAF_EXTS, ext('2.5.29.32', false, seq(seq(oid('2.5.29.32.0'))))] }) },
  { id: 'int-pathlen0', what: 'intermediate pathlen 0, then another CA, then the leaf', build: (r) => { const i1 = intermediate(r, 'a3-pl0-int', { extensions: [bcCA(0), KU_CA] }); const i2 = intermediate(i1, 'a3-pl0-sub'); return leaf('int-pathlen0', i2, {}, [i2.der!, i1.der!]); } },
  { id: 'int-eku-server', what: 'intermediate EKU serverAuth only', build: (r) => leaf('int-eku-server', intermediate(r, 'a3-ekus-int', { extensions: [...CA_EXTS, eku(SERVER_AUTH)] })) },
  { id: 'int-eku-any', what: 'intermediate EKU anyExtendedKeyUsage only', build: (r) => leaf('int-eku-any', intermediate(r, 'a3-ekuany-int', { extensions: [...CA_EXTS, eku(ANY_EKU)] })) },
  { id: 'int-v1', what: 'v1 intermediate', build: (r) => leaf('int-v1', intermediate(r, 'a3-v1-int', { version: null, extensions: null })) },
  { id: 'int-ku-nocertsign', what: 'intermediate keyUsage digitalSignature only', build: (r) => leaf('int-ku-nocertsign', intermediate(r, 'a3-kuds-int', { extensions: [bcCA(), KU_DIGSIG] })) },
  { id: 'int-negserial', what: 'intermediate with a negative serial (Go cannot parse it)', build: (r) => leaf('int-negserial', intermediate(r, 'a3-neg-int', { serial: Buffer.from([0x80, 0x05]) })) },
  { id: 'chain-extra-unparseable', what: 'normal leaf + an unrelated extra certificate Go cannot parse (negative serial)', build: (r) => { const junk = intermediate(r, 'a3-junk', { serial: Buffer.from([0xff, 0x01]) }); return leaf('chain-extra', r, {}, [junk.der!]); } },
  { id: 'int-secp256k1', what: 'intermediate with a secp256k1 key (Go: unsupported curve)', build: (r) => leaf('int-secp256k1', intermediate(r, 'a3-k1-int', { key: ecKey('secp256k1') })) },
  { id: 'int-ed448', what: 'Ed448 intermediate signing the leaf', build: (r) => leaf('int-ed448', intermediate(r, 'a3-ed448-int', { key: key('ed448') })) },
  { id: 'int-dsa', what: 'DSA-2048 intermediate signing the leaf (dsa-with-SHA256)', build: (r) => leaf('int-dsa', intermediate(r, 'a3-dsa-int', { key: key('dsa', { modulusLength: 2048, divisorLength: 256 }) })) },
  { id: 'int-rsapss-key', what: 'RSASSA-PSS-key intermediate signing the leaf (PSS sha256/32)', build: (r) => leaf('int-rsapss-key', intermediate(r, 'a3-pss-int', { key: key('rsa-pss', { modulusLength: 2048 }) })) },
  { id: 'int-rsa-e-big', what: 'RSA intermediate with e = 2^32-1', build: (r) => leaf('int-rsa-e-big', intermediate(r, 'a3-bige-int', { key: rsaKey(2048, 0xffffffff) })) },
  { id: 'int-rsa8256', what: 'RSA-8256 intermediate', build: (r, d) => { const k = big(d); return k ? leaf('int-rsa8256', intermediate(r, 'a3-8k-int', { key: k })) : null; } },
  { id: 'int-brainpool', what: 'brainpoolP256r1 intermediate', build: (r) => leaf('int-brainpool', intermediate(r, 'a3-bp-int', { key: ecKey('brainpoolP256r1') })) },

  // Round 2: weak RSA keys and a public "private" key (e = 1: the signature is the encoded message itself).
  { id: 'key-rsa512', what: 'RSA-512 leaf', build: (r) => leaf('key-rsa512', r, { key: rsaKey(512) }) },
  { id: 'int-rsa512', what: 'RSA-512 intermediate signing the leaf', build: (r) => leaf('int-rsa512', intermediate(r, 'a3-512-int', { key: rsaKey(512) })) },
  { id: 'int-rsa1016', what: 'RSA-1016 intermediate signing the leaf', build: (r) => leaf('int-rsa1016', intermediate(r, 'a3-1016-int', { key: rsaKey(1016) })) },
  { id: 'key-rsa-e1', what: 'RSA-2048 leaf with e = 1 (signatures = padded message: forgeable from the certificate alone)', build: (r) => leaf('key-rsa-e1', r, { key: e1Key() }) },
  { id: 'int-rsa-e1', what: 'RSA intermediate with e = 1 (its signatures are forgeable from its certificate alone)', build: (r) => leaf('int-rsa-e1', intermediate(r, 'a3-e1-int', { key: e1Key() })) },
  { id: 'sig-ecdsa-null', what: 'leaf ecdsa-with-SHA256 with NULL parameters', build: (r) => leaf('sig-ecdsa-null', r, { sigAlg: { der: seq(oid('1.2.840.10045.4.3.2'), NULL), sign: SIG.ecdsaSha256.sign } }) },
  { id: 'ctl-ed25519-int', what: 'control: Ed25519 intermediate signing the leaf', build: (r) => leaf('ctl-ed25519-int', intermediate(r, 'a3-ed-int', { key: key('ed25519') })) },
  { id: 'sig-ed25519-null', what: 'leaf Ed25519 signature with NULL parameters (Go: unknown algorithm)', build: (r) => leaf('sig-ed25519-null', intermediate(r, 'a3-ed-int2', { key: key('ed25519') }), { sigAlg: { der: seq(oid('1.3.101.112'), NULL), sign: SIG.ed25519.sign } }) },

  // Validity encodings.
  { id: 'val-future', what: 'notBefore in the future (both refuse)', build: (r) => leaf('val-future', r, { validity: validity(3_600_000, 86_400_000) }) },
  { id: 'val-expired', what: 'notAfter passed (Go refuses it per request; the TLS library only at the handshake: helper 28)', build: (r) => leaf('val-expired', r, { validity: validity(-2 * 86_400_000, -86_400_000) }) },
  { id: 'val-utc-noseconds', what: 'UTCTime without seconds (YYMMDDHHMMZ)', build: (r) => leaf('val-utc-noseconds', r, { validity: seq(utcRaw(yy(new Date(Date.now() - 3_600_000)) + 'Z'), utcRaw(yy(new Date(Date.now() + 86_400_000)) + 'Z')) }) },
  { id: 'val-utc-offset', what: 'UTCTime with +0000 offset instead of Z', build: (r) => leaf('val-utc-offset', r, { validity: seq(utcRaw(yy(new Date(Date.now() - 3_600_000)) + '00+0000'), utcRaw(yy(new Date(Date.now() + 86_400_000)) + '00+0000')) }) },
  { id: 'val-gen-fraction', what: 'GeneralizedTime with fractional seconds', build: (r) => leaf('val-gen-fraction', r, { validity: seq(genTime('20' + yy(new Date(Date.now() - 3_600_000)) + '00.5Z'), genTime('20' + yy(new Date(Date.now() + 86_400_000)) + '00.5Z')) }) },
  { id: 'val-gen-2030', what: 'GeneralizedTime before 2050 (RFC wants UTCTime)', build: (r) => leaf('val-gen-2030', r, { validity: seq(genTime('20' + yy(new Date(Date.now() - 3_600_000)) + '00Z'), genTime('20' + yy(new Date(Date.now() + 86_400_000)) + '00Z')) }) },
];

function subjectPrefix(): Buffer {
  // permitted subtree: the Name "O=attack3"? Names are compared RDN-prefix-wise: leaf subject is CN=...,O=attack3,
  // so permit the empty prefix of a one-RDN name built as CN-free: use the whole leaf-name prefix "" -> any.
  return nameDER([]);
}
void bool; void CN;

/** An RSA SPKI whose AlgorithmIdentifier omits the NULL parameters (Go: "x509: RSA key missing NULL parameters"). */
function dropRsaNull(spki: Buffer): Buffer {
  const alg = Buffer.from('300d06092a864886f70d0101010500', 'hex');
  const i = spki.indexOf(alg);
  if (i < 0) throw new Error('not an RSA SPKI');
  const rest = spki.subarray(i + alg.length);
  return seq(Buffer.from('300b06092a864886f70d010101', 'hex'), rest);
}

/**
 * An RSA key with e = d = 1 built from a fresh modulus, whose CRT factors are garbage: OpenSSL's CRT
 * result fails its check and it falls back to m^d = m, so anyone holding only the certificate
 * (the modulus) can "sign" with it.
 */
function e1Key(): Key {
  const { createPrivateKey, createPublicKey } = require('node:crypto') as typeof import('node:crypto');
  const j = rsaKey(2048).priv.export({ format: 'jwk' }) as Record<string, string>;
  const one = 'AQ';
  // e = d = dp = dq = 1: every signature is the padded message itself (OpenSSL 3.5 checks p*q = n on import, so the real factors stay).
  const priv = createPrivateKey({ key: { ...j, e: one, d: one, dp: one, dq: one }, format: 'jwk' });
  const spki = createPublicKey({ key: { kty: 'RSA', n: j.n!, e: one }, format: 'jwk' }).export({ type: 'spki', format: 'der' });
  return { priv, spki };
}
