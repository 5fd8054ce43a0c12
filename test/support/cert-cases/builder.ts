// A raw DER certificate builder for client-certificate differentials (OpenSSL/BoringSSL against Go's
// crypto/x509 and crypto/tls): any key, signature algorithm, extension and encoding. From attack
// round 22 (test/security/client-certificate-go.test.ts, test/kube/client-certificate-chains.test.ts).
import { constants, createPrivateKey, generateKeyPairSync, KeyObject, sign, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { rawSubject } from '../../../src/api/x509-name';
import { CN, nameDER, O, tlv } from '../der-cert';

export { tlv };
export const seq = (...c: Buffer[]) => tlv(0x30, ...c);
export const set = (...c: Buffer[]) => tlv(0x31, ...c);
export const NULL = Buffer.from([0x05, 0x00]);
export const bool = (b: boolean) => tlv(0x01, Buffer.from([b ? 0xff : 0x00]));
export const octet = (b: Buffer) => tlv(0x04, b);
export const bits = (unused: number, b: Buffer) => tlv(0x03, Buffer.concat([Buffer.from([unused]), b]));
export function int(n: number): Buffer {
  const b: number[] = [];
  let x = n;
  do {
    b.unshift(x & 0xff);
    x = Math.floor(x / 256);
  } while (x > 0);
  if (b[0]! & 0x80) b.unshift(0);
  return tlv(0x02, Buffer.from(b));
}
export function oid(dotted: string): Buffer {
  const p = dotted.split('.').map((s) => BigInt(s));
  const out: number[] = [];
  const enc = (n: bigint) => {
    const b: number[] = [Number(n & 0x7fn)];
    for (let x = n >> 7n; x > 0n; x >>= 7n) b.unshift(0x80 | Number(x & 0x7fn));
    out.push(...b);
  };
  enc(40n * p[0]! + p[1]!);
  for (const n of p.slice(2)) enc(n);
  return tlv(0x06, Buffer.from(out));
}

export interface SigAlg {
  der: Buffer;
  sign(tbs: Buffer, key: KeyObject): Buffer;
}
const pssParams = (hashOid: string, salt: number) => {
  const h = seq(oid(hashOid), NULL);
  return seq(tlv(0xa0, h), tlv(0xa1, seq(oid('1.2.840.113549.1.1.8'), h)), tlv(0xa2, int(salt)));
};
const HASH_OID: Record<string, string> = { sha256: '2.16.840.1.101.3.4.2.1', sha384: '2.16.840.1.101.3.4.2.2', sha1: '1.3.14.3.2.26' };
export const SIG = {
  ecdsaSha256: { der: seq(oid('1.2.840.10045.4.3.2')), sign: (t, k) => sign('sha256', t, k) } as SigAlg,
  ecdsaSha1: { der: seq(oid('1.2.840.10045.4.1')), sign: (t, k) => sign('sha1', t, k) } as SigAlg,
  rsaSha256: { der: seq(oid('1.2.840.113549.1.1.11'), NULL), sign: (t, k) => sign('sha256', t, k) } as SigAlg,
  rsaSha1: { der: seq(oid('1.2.840.113549.1.1.5'), NULL), sign: (t, k) => sign('sha1', t, k) } as SigAlg,
  rsaMd5: { der: seq(oid('1.2.840.113549.1.1.4'), NULL), sign: (t, k) => sign('md5', t, k) } as SigAlg,
  ed25519: { der: seq(oid('1.3.101.112')), sign: (t, k) => sign(null, t, k) } as SigAlg,
  ed448: { der: seq(oid('1.3.101.113')), sign: (t, k) => sign(null, t, k) } as SigAlg,
  dsaSha256: { der: seq(oid('2.16.840.1.101.3.4.3.2')), sign: (t, k) => sign('sha256', t, { key: k, dsaEncoding: 'der' }) } as SigAlg,
  /** RSASSA-PSS with explicit parameters: hash, MGF1 with the same hash, salt length. */
  pss: (hash: 'sha256' | 'sha384' | 'sha1', salt: number, paramsDER?: Buffer): SigAlg => ({
    der: seq(oid('1.2.840.113549.1.1.10'), paramsDER ?? pssParams(HASH_OID[hash]!, salt)),
    sign: (t, k) => sign(hash, t, { key: k, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: salt }),
  }),
};

export interface Key {
  priv: KeyObject;
  spki: Buffer;
  sigAlg?: SigAlg;
}
export function key(type: string, o: Record<string, unknown> = {}): Key {
  const { privateKey, publicKey } = generateKeyPairSync(type as 'ec', o as { namedCurve: string });
  return { priv: privateKey, spki: publicKey.export({ type: 'spki', format: 'der' }) };
}
export const ecKey = (curve = 'P-256') => key('ec', { namedCurve: curve });
export const rsaKey = (bits = 2048, e = 65537) => key('rsa', { modulusLength: bits, publicExponent: e });
export function fileKey(path: string): Key {
  const priv = createPrivateKey(readFileSync(path));
  const { createPublicKey } = require('node:crypto') as typeof import('node:crypto');
  return { priv, spki: createPublicKey(priv).export({ type: 'spki', format: 'der' }) };
}
export const big = (dir: string) => (existsSync(join(dir, 'rsa8256.key')) ? fileKey(join(dir, 'rsa8256.key')) : null);
/**
 * An RSA public key of `size` bits with no private key behind it (its `priv` is an unrelated EC key): for a
 * leaf whose key only has to be read, where generating one would take minutes (8256 bits).
 */
export function publicOnlyRsa(size: number): Key {
  const n = Buffer.alloc(size / 8, 0xa5);
  n[0] = 0xc5;
  n[n.length - 1] = 0xa7; // odd
  const rsa = seq(tlv(0x02, Buffer.concat([Buffer.from([0]), n])), int(65537));
  return { priv: ecKey().priv, spki: seq(seq(oid('1.2.840.113549.1.1.1'), NULL), bits(0, rsa)) };
}

export function defaultSigAlg(k: KeyObject): SigAlg {
  switch (k.asymmetricKeyType) {
    case 'ec': return SIG.ecdsaSha256;
    case 'rsa': return SIG.rsaSha256;
    case 'ed25519': return SIG.ed25519;
    case 'ed448': return SIG.ed448;
    case 'dsa': return SIG.dsaSha256;
    case 'rsa-pss': return SIG.pss('sha256', 32);
  }
  throw new Error(`no signature algorithm for ${k.asymmetricKeyType}`);
}

// Extensions.
export const ext = (id: string, critical: boolean, value: Buffer) => seq(oid(id), ...(critical ? [bool(true)] : []), octet(value));
export const BC_LEAF = ext('2.5.29.19', true, seq());
export const bcCA = (pathLen?: number) => ext('2.5.29.19', true, seq(bool(true), ...(pathLen === undefined ? [] : [int(pathLen)])));
export const KU_DIGSIG = ext('2.5.29.15', true, bits(7, Buffer.from([0x80])));
export const KU_CA = ext('2.5.29.15', true, bits(1, Buffer.from([0x06]))); // keyCertSign, cRLSign
export const eku = (...oids: string[]) => ext('2.5.29.37', false, seq(...oids.map(oid)));
export const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
export const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
export const ANY_EKU = '2.5.29.37.0';
export const EKU_CLIENT = eku(CLIENT_AUTH);
export const LEAF_EXTS = [BC_LEAF, KU_DIGSIG, EKU_CLIENT];
export const CA_EXTS = [bcCA(), KU_CA];
export const san = (critical: boolean, ...names: Buffer[]) => ext('2.5.29.17', critical, seq(...names));

const utc = (d: Date) => tlv(0x17, Buffer.from(d.toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z'));
export const validity = (from = -3_600_000, to = 86_400_000) => seq(utc(new Date(Date.now() + from)), utc(new Date(Date.now() + to)));

export interface CertSpec {
  /** Version INTEGER (2 = v3); null: omitted (v1). */
  version?: number | null;
  serial?: Buffer;
  /** The signature algorithm written in the certificate; default the signer key's. */
  sigAlg?: SigAlg;
  issuer: Buffer;
  subject: Buffer;
  validity?: Buffer;
  spki: Buffer;
  /** Extension DERs; null: no [3] at all. */
  extensions?: Buffer[] | null;
  signer: KeyObject;
  /** Rewrites the outer encoding (signature BIT STRING etc.). */
  outer?: (tbs: Buffer, alg: Buffer, sig: Buffer) => Buffer;
}
let serialCounter = 1;
export function buildCert(s: CertSpec): Buffer {
  const alg = s.sigAlg ?? defaultSigAlg(s.signer);
  const serial = s.serial ?? Buffer.from([0x11, 0x22, serialCounter++ & 0x7f, Math.floor(Math.random() * 256)]);
  const tbs = seq(
    ...(s.version === null ? [] : [tlv(0xa0, int(s.version ?? 2))]),
    tlv(0x02, serial),
    alg.der,
    s.issuer,
    s.validity ?? validity(),
    s.subject,
    s.spki,
    ...(s.extensions === null ? [] : [tlv(0xa3, seq(...(s.extensions ?? LEAF_EXTS)))]),
  );
  const sig = alg.sign(tbs, s.signer);
  return s.outer ? s.outer(tbs, alg.der, sig) : seq(tbs, alg.der, bits(0, sig));
}

export const pem = (der: Buffer) => `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
export const subjectOf = (cn: string) => nameDER([CN(cn), O('attack3')]);

/** An issuer: its key and its subject Name DER. */
export interface Issuer {
  key: KeyObject;
  name: Buffer;
  /** Its certificate DER (for sending in the chain); absent for the root. */
  der?: Buffer;
}
export function rootIssuer(ca: { cert: string; key: string }): Issuer {
  return { key: createPrivateKey(ca.key), name: Buffer.from(rawSubject(new X509Certificate(ca.cert).raw)) };
}
export function intermediate(parent: Issuer, cn: string, o: Partial<CertSpec> & { key?: Key } = {}): Issuer {
  const k = o.key ?? ecKey();
  const name = nameDER([CN(cn)]);
  const der = buildCert({ issuer: parent.name, subject: name, spki: k.spki, signer: parent.key, extensions: CA_EXTS, ...o });
  return { key: k.priv, name, der };
}
