// The rest of what kube-apiserver checks of a client certificate before it believes its names, as
// Go 1.26 does (the Go the real kube-apiservers here are built with), where OpenSSL (node front end)
// and BoringSSL (uWS) accept more. x509-name.ts reads the names; this reads everything after them:
//   - crypto/x509 parser.go parseCertificate past the subject: validity, the public key
//     (parsePublicKey), unique IDs, every extension (processExtensions: duplicates, each known
//     extension's syntax, critical AKI/SKI/AIA), the signature BIT STRING;
//   - crypto/x509 x509.go getSignatureAlgorithmFromAI and checkSignature: the signature algorithms
//     Verify accepts (no MD5, no SHA-1 since Go 1.24, no DSA, PSS in three exact shapes);
//   - verify.go isValid: no critical extension Go does not handle;
//   - crypto/tls processCertsFromClient and the RSA checks of CertificateVerify: a client key is RSA
//     (1024..8192 bits, odd modulus, odd exponent 3..2^31-1), ECDSA on P-224..P-521, or Ed25519.
// An attack round against kube-apiserver v1.34.4/v1.37.2 (helper 22) found ~35 certificates OpenSSL
// or BoringSSL verified and Go refused (SHA-1 signatures, RSA e=1, 1016-bit keys, duplicate or
// malformed extensions, unhandled critical ones): mvproxy asserted their users; kube-apiserver
// refused them. Where porting Go exactly would take its URL parser or its policy tree, a client
// certificate that needs them is refused (stricter than Go, never laxer): a URI SAN of unusual
// syntax, name constraints, policy mappings or constraints in a client certificate.

import { createPublicKey } from 'node:crypto';
import { isIP } from 'node:net';
import { certificateNames, element, expect, GoX509Error, INTEGER, objectIdentifier, OID, SEQUENCE, validInteger, type Element } from './x509-name';

const BIT_STRING = 0x03;
const OCTET_STRING = 0x04;
const NULL = 0x05;
const BOOLEAN = 0x01;
const UTC_TIME = 0x17;
const GENERALIZED_TIME = 0x18;

/** What a certificate's extensions say that the issuing side needs (x509.go CheckSignatureFrom). */
export interface GoCertificate {
  readonly version: number;
  readonly basicConstraintsValid: boolean;
  readonly isCA: boolean;
  /** The keyUsage bits (bit 0 = digitalSignature … 5 = keyCertSign), 0 without the extension. */
  readonly keyUsage: number;
  /** The extended key usages, or undefined without the extension. */
  readonly extKeyUsage: readonly string[] | undefined;
  /**
   * Why Go cannot verify any certificate this one signs, or undefined (a CA: its key as crypto/rsa
   * and crypto/ecdsa take it, no unhandled critical extension, no policy extension).
   */
  readonly signerProblem: string | undefined;
  /** The validity period, ms since the epoch, as Go reads it: Verify refuses a certificate of a chain outside it (isValid). */
  readonly notBefore: number;
  readonly notAfter: number;
}

/** Go's keyUsage bit for keyCertSign (x509.KeyUsageCertSign = 1 << 5). */
const KEY_USAGE_CERT_SIGN = 1 << 5;

/** A certificate Go refuses: why, in Go's words where Go has them. */
export class GoRefusal extends Error {}

const refuse = (why: string): never => {
  throw new GoRefusal(why);
};

/** cryptobyte ReadASN1BitString: a padding count 0..7 whose bits are zero, none when empty. */
function bitString(b: Buffer, e: Element): Buffer | null {
  if (e.tag !== BIT_STRING || e.end === e.contentStart) return null;
  const padding = b[e.contentStart]!;
  const bytes = b.subarray(e.contentStart + 1, e.end);
  if (padding > 7 || (bytes.length === 0 && padding !== 0)) return null;
  if (bytes.length > 0 && (bytes[bytes.length - 1]! & ((1 << padding) - 1)) !== 0) return null;
  return bytes;
}

/** cryptobyte ReadASN1Boolean: one octet, 0x00 or 0xff. */
function validBoolean(b: Buffer, e: Element): boolean {
  return e.tag === BOOLEAN && e.end - e.contentStart === 1 && (b[e.contentStart] === 0 || b[e.contentStart] === 0xff);
}

/** cryptobyte ReadASN1Integer into a Go int64: minimal, at most 8 octets. */
function int64Fits(b: Buffer, e: Element): boolean {
  return validInteger(b, e) && e.end - e.contentStart <= 8;
}

/** The unsigned value of a minimal INTEGER's contents (big), or -1n when negative. */
function integerValue(b: Buffer, e: Element): bigint {
  const v = b.subarray(e.contentStart, e.end);
  if ((v[0]! & 0x80) !== 0) return -1n;
  return v.length === 0 ? 0n : BigInt('0x' + v.toString('hex'));
}

const bitLength = (n: bigint) => (n === 0n ? 0 : n.toString(2).length);

/** The elements inside a constructed element, strictly one after another (cryptobyte reads). */
function children(b: Buffer, e: Element, what: string): Element[] {
  const out: Element[] = [];
  for (let p = e.contentStart; p < e.end; ) {
    const c = element(b, p, e.end);
    if (c === null) refuse(what);
    out.push(c!);
    p = c!.end;
  }
  return out;
}

// ---------------------------------------------------------------- validity

/**
 * cryptobyte ReadASN1UTCTime / ReadASN1GeneralizedTime: Go parses with a layout, then formats the
 * time back with it and requires the same text: "YYMMDDHHMM[SS]" and "YYYYMMDDHHMMSS", then "Z"
 * or an offset other than "+0000"; a fraction of a second, or a day out of range, is refused.
 * The instant in ms since the epoch, or undefined where Go refuses the text. A UTCTime's YY is
 * 1950-2049 (Go: "if year >= 2050 { year -= 100 }").
 */
function goTime(b: Buffer, e: Element): number | undefined {
  const s = b.subarray(e.contentStart, e.end).toString('latin1');
  let m: RegExpExecArray | null = null;
  let year = 0;
  if (e.tag === UTC_TIME) {
    m = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)?(Z|[+-]\d{4})$/.exec(s);
    if (m !== null) year = 2000 + Number(m[1]) - (Number(m[1]) >= 50 ? 100 : 0);
  } else if (e.tag === GENERALIZED_TIME) {
    m = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(Z|[+-]\d{4})$/.exec(s); // no fraction: the layout has none
    if (m !== null) year = Number(m[1]);
  }
  if (m === null) return undefined;
  const sec = m[6] ?? '00';
  if (!validDate(year, m[2]!, m[3]!, m[4]!, m[5]!, sec) || !validZone(m[7]!)) return undefined;
  const zone = m[7]!;
  const offsetMin = zone === 'Z' ? 0 : (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(3)));
  const d = new Date(0);
  d.setUTCFullYear(year, Number(m[2]) - 1, Number(m[3]));
  d.setUTCHours(Number(m[4]), Number(m[5]), Number(sec), 0);
  return d.getTime() - offsetMin * 60_000;
}

function validDate(year: number, mo: string, d: string, h: string, mi: string, sec: string): boolean {
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Go formats a zero offset as "Z": "+0000" does not survive the round trip; offsets ≤ 23:59. */
function validZone(z: string): boolean {
  if (z === 'Z') return true;
  if (z.slice(1) === '0000') return false;
  return Number(z.slice(1, 3)) <= 23 && Number(z.slice(3)) <= 59;
}

// ---------------------------------------------------------------- keys

const OID_RSA = '1.2.840.113549.1.1.1';
const OID_EC = '1.2.840.10045.2.1';
const OID_ED25519 = '1.3.101.112';
const OID_X25519 = '1.3.101.110';
const OID_DSA = '1.2.840.10040.4.1';
/** Go's namedCurveFromOID: P-224, P-256, P-384, P-521 and their coordinate sizes. */
const CURVES: Readonly<Record<string, number>> = { '1.3.132.0.33': 28, '1.2.840.10045.3.1.7': 32, '1.3.132.0.34': 48, '1.3.132.0.35': 66 };

/**
 * parsePublicKey for the keys crypto/tls takes from a client (processCertsFromClient: RSA, ECDSA,
 * Ed25519; anything else fails the handshake), then the checks its CertificateVerify runs:
 * checkKeySize (RSA ≤ 8192 bits), crypto/rsa's 1024-bit minimum (rsa1024min), fips140 rsa
 * checkPublicKey (odd modulus, odd exponent 3..2^31-1).
 */
function checkClientKey(der: Buffer, spki: Element): void {
  const [ai, key] = children(der, spki, 'x509: malformed spki');
  if (ai === undefined || ai.tag !== SEQUENCE || key === undefined) refuse('x509: malformed spki');
  const [algOid, params] = children(der, ai!, 'x509: malformed public key algorithm identifier');
  const alg = algOid !== undefined && algOid.tag === OID ? objectIdentifier(der, algOid) : null;
  if (alg === null) refuse('x509: malformed OID');
  const data = bitString(der, key!);
  if (data === null) refuse('x509: malformed subjectPublicKey');
  // Go reads the key from the BIT STRING right-aligned: with padding bits, other bytes than these.
  // No key of a kind taken here has them; such a key is refused rather than shifted.
  if (der[key!.contentStart] !== 0) refuse('x509: a public key BIT STRING with padding bits');
  const keyBytes = data!;
  switch (alg) {
    case OID_RSA: {
      if (params === undefined || params.tag !== NULL || params.end !== params.contentStart) refuse('x509: RSA key missing NULL parameters');
      const seq = element(keyBytes, 0, keyBytes.length);
      if (seq === null || seq.tag !== SEQUENCE) refuse('x509: invalid RSA public key');
      const n = element(keyBytes, seq!.contentStart, seq!.end);
      if (n === null || n.tag !== INTEGER || !validInteger(keyBytes, n)) refuse('x509: invalid RSA modulus');
      const e = element(keyBytes, n!.end, seq!.end);
      if (e === null || e.tag !== INTEGER || !int64Fits(keyBytes, e)) refuse('x509: invalid RSA public exponent');
      const modulus = integerValue(keyBytes, n!);
      const exponent = integerValue(keyBytes, e!);
      if (modulus <= 0n) refuse('x509: RSA modulus is not a positive number');
      if (exponent <= 0n) refuse('x509: RSA public exponent is not a positive number');
      const bits = bitLength(modulus);
      if (bits > 8192) refuse('tls: client sent certificate containing RSA key larger than 8192 bits');
      if (bits < 1024) refuse(`crypto/rsa: ${bits}-bit keys are insecure (see https://go.dev/pkg/crypto/rsa#hdr-Minimum_key_size)`);
      if ((modulus & 1n) === 0n) refuse('crypto/rsa: public modulus is even');
      if (exponent < 2n) refuse('crypto/rsa: public exponent too small or negative');
      if ((exponent & 1n) === 0n) refuse('crypto/rsa: public exponent is even');
      if (exponent > 2n ** 31n - 1n) refuse('crypto/rsa: public exponent too large');
      return;
    }
    case OID_EC: {
      const curve = params !== undefined && params.tag === OID ? objectIdentifier(der, params) : null;
      if (curve === null) refuse('x509: invalid ECDSA parameters');
      const size = CURVES[curve!];
      if (size === undefined) refuse('x509: unsupported elliptic curve');
      // ecdsa.ParseUncompressedPublicKey: the uncompressed form only (OpenSSL also takes the compressed one) …
      if (keyBytes.length !== 1 + 2 * size! || keyBytes[0] !== 4) refuse('x509: failed to unmarshal elliptic curve point');
      // … on the curve: OpenSSL's decoding checks that.
      try {
        createPublicKey({ key: der.subarray(spki.start, spki.end), format: 'der', type: 'spki' });
      } catch {
        refuse('x509: failed to unmarshal elliptic curve point');
      }
      return;
    }
    case OID_ED25519:
      if (params !== undefined) refuse('x509: Ed25519 key encoded with illegal parameters');
      if (keyBytes.length !== 32) refuse('x509: wrong Ed25519 public key size');
      return;
    // Keys Go parses (a malformed one fails the certificate) and crypto/tls never takes from a client.
    case OID_X25519:
      if (params !== undefined) refuse('x509: X25519 key encoded with illegal parameters');
      if (keyBytes.length !== 32) refuse('x509: invalid X25519 public key');
      break;
    case OID_DSA: {
      const y = element(keyBytes, 0, keyBytes.length);
      const pqg = params !== undefined && params.tag === SEQUENCE ? children(der, params, 'x509: invalid DSA parameters').slice(0, 3) : [];
      if (y === null || y.tag !== INTEGER || !validInteger(keyBytes, y)) refuse('x509: invalid DSA public key');
      if (pqg.length !== 3 || pqg.some((e) => e.tag !== INTEGER || !validInteger(der, e))) refuse('x509: invalid DSA parameters');
      if (integerValue(keyBytes, y!) <= 0n || pqg.some((e) => integerValue(der, e) <= 0n)) refuse('x509: zero or negative DSA parameter');
      break;
    }
  }
  refuse(`tls: client certificate contains an unsupported public key (${alg})`);
}

// ---------------------------------------------------------------- signature algorithm

const SHA256 = '2.16.840.1.101.3.4.2.1';
const SHA384 = '2.16.840.1.101.3.4.2.2';
const SHA512 = '2.16.840.1.101.3.4.2.3';
const HASH_LENGTH: Readonly<Record<string, number>> = { [SHA256]: 32, [SHA384]: 48, [SHA512]: 64 };
const OID_PSS = '1.2.840.113549.1.1.10';
const OID_MGF1 = '1.2.840.113549.1.1.8';
const OID_SIG_ED25519 = '1.3.101.112';
/** What Verify's checkSignature accepts: SHA-256/384/512 with RSA or ECDSA (their parameters unread), Ed25519, PSS (below). */
const ACCEPTED_SIGNATURES = new Set([
  '1.2.840.113549.1.1.11', // sha256WithRSAEncryption
  '1.2.840.113549.1.1.12', // sha384WithRSAEncryption
  '1.2.840.113549.1.1.13', // sha512WithRSAEncryption
  '1.2.840.10045.4.3.2', // ecdsa-with-SHA256
  '1.2.840.10045.4.3.3', // ecdsa-with-SHA384
  '1.2.840.10045.4.3.4', // ecdsa-with-SHA512
]);

/** A hash AlgorithmIdentifier inside PSS parameters: its OID, with NULL or no parameters (else null). */
function hashAI(b: Buffer, e: Element | undefined): string | null {
  if (e === undefined || e.tag !== SEQUENCE) return null;
  const [oid, params, extra] = children(b, e, 'x509: malformed PSS parameters');
  if (oid === undefined || oid.tag !== OID || extra !== undefined) return null;
  if (params !== undefined && !(params.tag === NULL && params.end === params.contentStart)) return null;
  return objectIdentifier(b, oid);
}

/** getSignatureAlgorithmFromAI's PSS: MGF1 with the message hash, salt = hash length, trailer 1. */
function canonicalPSS(b: Buffer, params: Element | undefined): boolean {
  if (params === undefined || params.tag !== SEQUENCE) return false;
  // encoding/asn1 into pssParameters: hash [0], MGF [1] and salt [2] required, trailer [3] optional, in order.
  let hash: string | null = null;
  let mgfHash: string | null = null;
  let salt = -1n;
  let trailer = 1n;
  const fields = children(b, params, 'x509: malformed PSS parameters');
  if (fields.length < 3 || fields.some((f, i) => f.tag !== 0xa0 + i)) return false;
  for (const f of fields) {
    const [inner, extra] = children(b, f, 'x509: malformed PSS parameters');
    if (inner === undefined || extra !== undefined) return false;
    if (f.tag === 0xa0) hash = hashAI(b, inner);
    else if (f.tag === 0xa1) {
      if (inner.tag !== SEQUENCE) return false;
      const [mgf, mgfParams, more] = children(b, inner, 'x509: malformed PSS parameters');
      if (mgf === undefined || mgf.tag !== OID || objectIdentifier(b, mgf) !== OID_MGF1 || more !== undefined) return false;
      mgfHash = hashAI(b, mgfParams);
    } else if (f.tag === 0xa2 || f.tag === 0xa3) {
      if (inner.tag !== INTEGER || !int64Fits(b, inner)) return false;
      if (f.tag === 0xa2) salt = integerValue(b, inner);
      else trailer = integerValue(b, inner);
    } else return false;
  }
  return hash !== null && mgfHash === hash && trailer === 1n && salt === BigInt(HASH_LENGTH[hash] ?? -1);
}

function checkSignatureAlgorithm(der: Buffer, ai: Element): void {
  const [oid, params] = children(der, ai, 'x509: malformed signature algorithm identifier');
  const alg = oid !== undefined && oid.tag === OID ? objectIdentifier(der, oid) : null;
  if (alg === null) refuse('x509: malformed OID');
  if (ACCEPTED_SIGNATURES.has(alg!)) return;
  if (alg === OID_SIG_ED25519 && params === undefined) return;
  if (alg === OID_PSS && canonicalPSS(der, params)) return;
  refuse(`x509: cannot verify signature: insecure or unsupported algorithm (${alg})`);
}

// ---------------------------------------------------------------- extensions

/** Go's isIA5String over string(data): a byte ≥ 0x80 is a rune above ASCII (or U+FFFD). */
const ia5 = (v: Buffer) => v.every((c) => c < 0x80);

/** domainNameValid(s, false): no trailing dot, no empty label, visible ASCII. */
function domainNameValid(s: string, constraint = false): boolean {
  if (s === '') return true;
  if (s.endsWith('.')) return false;
  const d = constraint && s.startsWith('.') ? s.slice(1) : s;
  return d.split('.').every((l) => l.length > 0 && /^[\x21-\x7e]+$/.test(l));
}

/** isValidIPMask: ones, then zeros. */
function validIPMask(mask: Buffer): boolean {
  let zero = false;
  for (const b of mask) {
    if (zero) {
      if (b !== 0) return false;
    } else if (b !== 0xff) {
      if (![0x00, 0x80, 0xc0, 0xe0, 0xf0, 0xf8, 0xfc, 0xfe].includes(b)) return false;
      zero = true;
    }
  }
  return true;
}

/**
 * parseNameConstraintsExtension's errors, which fail the certificate's parse (on a CA: the whole CA
 * file, as kube-apiserver loads it). An email constraint naming a mailbox ("a@b") needs Go's
 * RFC 2821 parser, not ported: refused.
 */
function checkNameConstraints(value: Buffer): void {
  const bad = () => refuse('x509: invalid NameConstraints extension');
  const top = element(value, 0, value.length);
  if (top === null || top.tag !== SEQUENCE || top.end !== value.length) bad();
  const parts = children(value, top!, 'x509: invalid NameConstraints extension');
  let i = 0;
  const permitted = parts[i]?.tag === 0xa0 ? parts[i++] : undefined;
  const excluded = parts[i]?.tag === 0xa1 ? parts[i++] : undefined;
  if (i !== parts.length) bad();
  const size = (e: Element | undefined) => (e === undefined ? 0 : e.end - e.contentStart);
  if ((permitted === undefined && excluded === undefined) || (size(permitted) === 0 && size(excluded) === 0)) refuse('x509: empty name constraints extension');
  for (const subtrees of [permitted, excluded]) {
    if (subtrees === undefined) continue;
    for (const st of children(value, subtrees, 'x509: invalid NameConstraints extension')) {
      if (st.tag !== SEQUENCE || st.end === st.contentStart) bad();
      const base = element(value, st.contentStart, st.end);
      if (base === null) bad();
      const v = value.subarray(base!.contentStart, base!.end);
      const text = v.toString('latin1');
      switch (base!.tag) {
        case 0x82: // dNSName
          if (!ia5(v)) refuse('x509: invalid constraint value');
          if (!domainNameValid(text, true)) refuse(`x509: failed to parse dnsName constraint ${JSON.stringify(text)}`);
          break;
        case 0x87: // iPAddress: address and mask
          if (v.length !== 8 && v.length !== 32) refuse(`x509: IP constraint contained value of length ${v.length}`);
          if (!validIPMask(v.subarray(v.length / 2))) refuse('x509: IP constraint contained invalid mask');
          break;
        case 0x81: // rfc822Name
          if (!ia5(v)) refuse('x509: invalid constraint value');
          if (text.includes('@')) refuse(`an rfc822Name constraint naming a mailbox (${JSON.stringify(text)}), which mvproxy does not parse as Go does`);
          if (!domainNameValid(text, true)) refuse(`x509: failed to parse rfc822Name constraint ${JSON.stringify(text)}`);
          break;
        case 0x86: // uniformResourceIdentifier: a domain
          if (!ia5(v)) refuse('x509: invalid constraint value');
          if (isIP(text) !== 0) refuse(`x509: failed to parse URI constraint ${JSON.stringify(text)}: cannot be IP address`);
          if (!domainNameValid(text, true)) refuse(`x509: failed to parse URI constraint ${JSON.stringify(text)}`);
          break;
      }
    }
  }
}

/**
 * A URI SAN Go's url.Parse surely accepts, with the host domainNameValid takes there: a scheme, then
 * for "//" an authority that ends, as url.Parse ends it, at the first "/", "?" or "#", with no user
 * part, no escape and a port of digits only; then visible ASCII with well-formed %XX and one "#".
 * Go's URL parser has more corners than this (a regex that let the authority run on took
 * "http://h:80:90/" and "a://u@h./", which Go refuses: helper 23); a URI outside this shape is
 * refused, never guessed.
 */
function uriAccepted(s: string): boolean {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(s);
  if (scheme === null) return false;
  let rest = s.slice(scheme[0].length);
  if (rest.startsWith('//')) {
    const end = rest.slice(2).search(/[/?#]/);
    const authority = end === -1 ? rest.slice(2) : rest.slice(2, 2 + end);
    rest = end === -1 ? '' : rest.slice(2 + end);
    const a = /^([A-Za-z0-9._~!$&'()*+,;=-]*)(?::\d*)?$/.exec(authority);
    if (a === null || !domainNameValid(a[1]!)) return false;
  }
  return /^(?:[A-Za-z0-9._~!$&'()*+,;=:@/?#-]|%[0-9A-Fa-f]{2})*$/.test(rest) && (rest.match(/#/g)?.length ?? 0) <= 1;
}

/** forEachSAN + parseSANExtension: true when a name Go records was read (else a critical SAN is unhandled). */
function sanExtension(value: Buffer): boolean {
  const seq = element(value, 0, value.length);
  if (seq === null || seq.tag !== SEQUENCE) refuse('x509: invalid subject alternative names');
  let any = false;
  for (const n of children(value, seq!, 'x509: invalid subject alternative name')) {
    const data = value.subarray(n.contentStart, n.end);
    switch (n.tag ^ 0x80) {
      case 1: // rfc822Name
        if (!ia5(data)) refuse('x509: SAN rfc822Name is malformed');
        any = true;
        break;
      case 2: // dNSName
        if (!ia5(data)) refuse('x509: SAN dNSName is malformed');
        any = true;
        break;
      case 6: // uniformResourceIdentifier
        if (!ia5(data)) refuse('x509: SAN uniformResourceIdentifier is malformed');
        if (!uriAccepted(data.toString('latin1'))) refuse(`x509: cannot parse URI ${JSON.stringify(data.toString('latin1'))} (mvproxy refuses URI SANs of unusual syntax rather than guess Go's URL parser)`);
        any = true;
        break;
      case 7: // iPAddress
        if (data.length !== 4 && data.length !== 16) refuse(`x509: cannot parse IP address of length ${data.length}`);
        any = true;
        break;
    }
  }
  return any;
}

/** An OID's contents Go's newOIDFromDER takes: base-128 arcs, none starting 0x80, the last one ended. */
function validOIDBytes(v: Buffer): boolean {
  if (v.length === 0 || (v[v.length - 1]! & 0x80) !== 0) return false;
  for (let i = 0; i < v.length; i++) if (v[i] === 0x80 && (i === 0 || (v[i - 1]! & 0x80) === 0)) return false;
  return true;
}

const OID_AIA = '1.3.6.1.5.5.7.1.1';

interface ExtensionFacts {
  basicConstraintsValid: boolean;
  isCA: boolean;
  keyUsage: number;
  extKeyUsage: string[] | undefined;
  /** Name constraints or a policy extension: on a CA, why it verifies nothing here (below). */
  constrained: string | undefined;
}

/**
 * processExtensions for one extension: Go's errors for the ones it parses, and whether it is
 * handled (a critical unhandled one fails Verify: "x509: unhandled critical extension").
 */
function extension(oid: string, critical: boolean, value: Buffer, facts: ExtensionFacts, client: boolean): boolean {
  const top = element(value, 0, value.length);
  if (oid.startsWith('2.5.29.') && oid.split('.').length === 4) {
    switch (Number(oid.slice(7))) {
      case 15: {
        const bits = top === null ? null : bitString(value, top);
        if (bits === null) refuse('x509: invalid key usage');
        let usage = 0;
        for (let i = 0; i < 9; i++) if (i >> 3 < bits!.length && (bits![i >> 3]! & (0x80 >> (i & 7))) !== 0) usage |= 1 << i;
        facts.keyUsage = usage;
        return true;
      }
      case 19: {
        if (top === null || top.tag !== SEQUENCE) refuse('x509: invalid basic constraints');
        // cryptobyte's PeekASN1Tag looks at the tag byte alone: a BOOLEAN or INTEGER tag must then read.
        let p = top!.contentStart;
        if (p < top!.end && value[p] === BOOLEAN) {
          const b = element(value, p, top!.end);
          if (b === null || !validBoolean(value, b)) refuse('x509: invalid basic constraints');
          facts.isCA = value[b!.contentStart] === 0xff;
          p = b!.end;
        }
        if (p < top!.end && value[p] === INTEGER) {
          const n = element(value, p, top!.end);
          // into a Go uint no larger than MaxInt: minimal, non-negative, at most 8 octets
          if (n === null || !validInteger(value, n) || integerValue(value, n) < 0n || n.end - n.contentStart > 8) refuse('x509: invalid basic constraints');
        }
        facts.basicConstraintsValid = true;
        return true;
      }
      case 17:
        return sanExtension(value);
      case 30:
        // Name constraints belong to CAs; Go's parser of them (domain, mailbox, IP mask rules) is not
        // ported, so a client certificate carrying them is refused outright.
        if (client) refuse('a client certificate with a name constraints extension (mvproxy does not check it as Go would)');
        // On a CA, Go parses them (a constraint "a..b" fails the whole CA file: below), leaves kinds
        // it does not know unhandled (a critical dirName fails every leaf) and matches the leaf's names
        // against them: the matching is not ported, so such a CA verifies no leaf here (helpers 24, 25).
        checkNameConstraints(value);
        facts.constrained ??= 'name constraints, which mvproxy does not check as kube-apiserver (Go) does';
        return true;
      case 31: {
        if (top === null || top.tag !== SEQUENCE) refuse('x509: invalid CRL distribution points');
        for (const dp of children(value, top!, 'x509: invalid CRL distribution point')) {
          if (dp.tag !== SEQUENCE) refuse('x509: invalid CRL distribution point');
          if (dp.contentStart === dp.end || value[dp.contentStart] !== 0xa0) continue; // no distributionPoint
          const name = element(value, dp.contentStart, dp.end);
          if (name === null) refuse('x509: invalid CRL distribution point');
          const full = element(value, name!.contentStart, name!.end);
          if (full === null || full.tag !== 0xa0) refuse('x509: invalid CRL distribution point');
          for (let q = full!.contentStart; q < full!.end; ) {
            const u = element(value, q, full!.end);
            if (u === null) {
              if (value[q] === 0x86) refuse('x509: invalid CRL distribution point');
              break;
            }
            if (u.tag !== 0x86) break;
            q = u.end;
          }
        }
        return true;
      }
      case 35: {
        if (critical) refuse('x509: authority key identifier incorrectly marked critical');
        if (top === null || top.tag !== SEQUENCE) refuse('x509: invalid authority key identifier');
        const first = top!.end > top!.contentStart ? element(value, top!.contentStart, top!.end) : null;
        if (value[top!.contentStart] === 0x80 && top!.end > top!.contentStart && first === null) refuse('x509: invalid authority key identifier');
        return true;
      }
      case 14:
        if (critical) refuse('x509: subject key identifier incorrectly marked critical');
        if (top === null || top.tag !== OCTET_STRING) refuse('x509: invalid subject key identifier');
        return true;
      case 37: {
        if (top === null || top.tag !== SEQUENCE) refuse('x509: invalid extended key usages');
        facts.extKeyUsage = [];
        for (const u of children(value, top!, 'x509: invalid extended key usages')) {
          const usage = u.tag === OID ? objectIdentifier(value, u) : null;
          if (usage === null) refuse('x509: invalid extended key usages');
          facts.extKeyUsage.push(usage!);
        }
        return true;
      }
      case 32: {
        if (top === null || top.tag !== SEQUENCE) refuse('x509: invalid certificate policies');
        const seen = new Set<string>();
        for (const cp of children(value, top!, 'x509: invalid certificate policies')) {
          const id = cp.tag === SEQUENCE ? element(value, cp.contentStart, cp.end) : null;
          if (id === null || id.tag !== OID) refuse('x509: invalid certificate policies');
          const bytes = value.subarray(id!.contentStart, id!.end);
          if (seen.has(bytes.toString('hex')) || !validOIDBytes(bytes)) refuse('x509: invalid certificate policies');
          seen.add(bytes.toString('hex'));
        }
        return true;
      }
      case 33:
      case 36:
      case 54:
        // Policy mappings, policy constraints, inhibitAnyPolicy: CA extensions that steer Go's policy
        // validation (always on since Go 1.22, off by default in OpenSSL); not ported.
        if (client) refuse(`a client certificate with a policy extension (${oid}) mvproxy does not check as Go would`);
        facts.constrained ??= `a policy extension (${oid}), which mvproxy does not check as kube-apiserver (Go) does`;
        return true;
    }
    return false;
  }
  if (oid === OID_AIA) {
    if (critical) refuse('x509: authority info access incorrectly marked critical');
    if (top === null || top.tag !== SEQUENCE) refuse('x509: invalid authority info access');
    for (const a of children(value, top!, 'x509: invalid authority info access')) {
      const method = a.tag === SEQUENCE ? element(value, a.contentStart, a.end) : null;
      if (method === null || method.tag !== OID || objectIdentifier(value, method) === null) refuse('x509: invalid authority info access');
      const loc = element(value, method!.end, a.end);
      if (loc === null && method!.end < a.end && value[method!.end] === 0x86) refuse('x509: invalid authority info access');
    }
    return true;
  }
  return false;
}

// ---------------------------------------------------------------- the certificate

/**
 * Go's parseCertificate after the names (x509-name.ts reads up to them), with the client's checks
 * when `client` (the certificate the client authenticates with: its key as crypto/tls checks it, the
 * signature algorithm Verify accepts, no critical extension Go leaves unhandled). Throws GoRefusal
 * (or x509-name's GoX509Error) where kube-apiserver refuses the certificate.
 */
export function goCertificate(der: Buffer, client: boolean): GoCertificate {
  certificateNames(der); // up to the subject, as Go: the version (≤ 3), serial, algorithms, names
  const cert = expect(der, 0, der.length, SEQUENCE, 'x509: malformed certificate');
  if (cert.end !== der.length) refuse('x509: trailing data');
  const tbs = expect(der, cert.contentStart, cert.end, SEQUENCE, 'x509: malformed tbs certificate');
  const fields = children(der, tbs, 'x509: malformed tbs certificate');
  let i = 0;
  let version = 1;
  if (fields[0]?.tag === 0xa0) {
    const v = fields[i++]!;
    version = Number(integerValue(der, expect(der, v.contentStart, v.end, INTEGER, 'x509: malformed version'))) + 1;
  }
  const [, sigAlg, , validity, , spki] = fields.slice(i, i + 6);
  if (sigAlg === undefined || validity === undefined || spki === undefined) throw new GoX509Error('x509: malformed tbs certificate');
  const times = validity.tag === SEQUENCE ? children(der, validity, 'x509: malformed validity') : [];
  const notBefore = times.length < 2 ? undefined : goTime(der, times[0]!);
  const notAfter = times.length < 2 ? undefined : goTime(der, times[1]!);
  if (notBefore === undefined || notAfter === undefined) return refuse('x509: malformed validity');
  if (spki.tag !== SEQUENCE) refuse('x509: malformed spki');
  let signerProblem: string | undefined;
  if (client) {
    checkClientKey(der, spki);
    checkSignatureAlgorithm(der, sigAlg);
  } else {
    // A CA's key verifies the leaf's signature in Go's Verify: the same kinds and RSA rules (crypto/rsa
    // refused e = 2^31+1 on a client CA that OpenSSL took: helper 24).
    try {
      checkClientKey(der, spki);
    } catch (e) {
      // Go's parse errors ("x509: …") fail the certificate, and so the CA file; the rest (crypto/rsa's,
      // crypto/tls's) only leave this CA verifying nothing (helper 26: a secp256k1 CA beside a good one).
      if (!(e instanceof GoRefusal) || e.message.startsWith('x509:')) throw e;
      signerProblem = `its key: ${e.message}`;
    }
  }
  const facts: ExtensionFacts = { basicConstraintsValid: false, isCA: false, keyUsage: 0, extKeyUsage: undefined, constrained: undefined };
  let rest = fields.slice(i + 6);
  if (version > 1) {
    if (rest[0]?.tag === 0x81) rest = rest.slice(1); // issuerUniqueID
    if (rest[0]?.tag === 0x82) rest = rest.slice(1); // subjectUniqueID
    if (version === 3 && rest[0]?.tag === 0xa3) {
      const exts = expect(der, rest[0].contentStart, rest[0].end, SEQUENCE, 'x509: malformed extensions');
      const seen = new Set<string>();
      for (const ext of children(der, exts, 'x509: malformed extension')) {
        if (ext.tag !== SEQUENCE) refuse('x509: malformed extension');
        const [idEl, second, third] = children(der, ext, 'x509: malformed extension');
        const id = idEl !== undefined && idEl.tag === OID ? objectIdentifier(der, idEl) : null;
        if (id === null) refuse('x509: malformed extension OID field');
        let critical = false;
        let valueEl = second;
        if (second?.tag === BOOLEAN) {
          if (!validBoolean(der, second)) refuse('x509: malformed extension critical field');
          critical = der[second.contentStart] === 0xff;
          valueEl = third;
        }
        if (valueEl === undefined || valueEl.tag !== OCTET_STRING) refuse('x509: malformed extension value field');
        if (seen.has(id!)) refuse(`x509: certificate contains duplicate extension with OID "${id}"`);
        seen.add(id!);
        const handled = extension(id!, critical, der.subarray(valueEl!.contentStart, valueEl!.end), facts, client);
        if (critical && !handled) {
          // isValid runs on every certificate of the chain, the CA too.
          if (client) refuse(`x509: unhandled critical extension (${id})`);
          signerProblem ??= `x509: unhandled critical extension (${id})`;
        }
      }
    }
  }
  const signature = children(der, cert, 'x509: malformed signature')[2];
  if (signature === undefined || bitString(der, signature) === null) refuse('x509: malformed signature');
  // Policy constraints, mappings and inhibitAnyPolicy steer Go's policy validation (not ported).
  const { constrained, ...kept } = facts;
  const go: GoCertificate = { version, ...kept, signerProblem: signerProblem ?? constrained, notBefore, notAfter };
  if (client && !clientAuthAllowed(go)) refuse('x509: certificate specifies an incompatible key usage');
  return go;
}

const EKU_ANY = '2.5.29.37.0';
const EKU_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/**
 * verify.go checkChainForKeyUsage for the x509 authenticator's KeyUsages (ClientAuth): no extended
 * key usage (or an empty list) allows any; else anyExtendedKeyUsage or clientAuth must be there.
 */
function clientAuthAllowed(c: GoCertificate): boolean {
  const eku = c.extKeyUsage;
  return eku === undefined || eku.length === 0 || eku.includes(EKU_ANY) || eku.includes(EKU_CLIENT_AUTH);
}

/**
 * x509.go CheckSignatureFrom's checks of the issuing CA (a v3 CA needs basicConstraints CA:TRUE; a
 * keyUsage without keyCertSign may not sign) and checkChainForKeyUsage's of its extended key usages,
 * or the reason Go refuses it as the issuer.
 */
export function issuerProblem(ca: GoCertificate): string | undefined {
  if (ca.signerProblem !== undefined) return ca.signerProblem;
  if ((ca.version === 3 && !ca.basicConstraintsValid) || (ca.basicConstraintsValid && !ca.isCA)) return 'x509: the issuing certificate is not a CA (basic constraints)';
  if (ca.keyUsage !== 0 && (ca.keyUsage & KEY_USAGE_CERT_SIGN) === 0) return 'x509: the issuing certificate may not sign certificates (key usage)';
  if (!clientAuthAllowed(ca)) return 'x509: certificate specifies an incompatible key usage (the CA\'s extended key usages do not allow client authentication)';
  return undefined;
}
