// A client certificate's names read exactly as kube-apiserver reads them: Go's crypto/x509
// (parser.go parseCertificate up to the subject, parseName, parseASN1String; cryptobyte's DER
// rules) and pkix.Name.FillFromRDNSequence. OpenSSL (node:tls, uSockets) reads the same
// certificate differently: it verifies certificates Go refuses to parse (a negative serial, a
// NumericString with a letter, a high-tag-number value), and node's legacy subject object gives
// the *first* CN where Go keeps the last. Issue 27 item 2 found `CN=first, CN=system:admin`
// asserted as `first`; kube-apiserver talking to the same client says `system:admin`.
//
// Only what decides a user is read (version, serial, the two signature algorithms, issuer,
// subject); the public key, validity and extensions are OpenSSL's to verify.

/** Go refused the certificate; the message is Go's own (x509: ...), so logs match kube-apiserver's handshake error. */
export class GoX509Error extends Error {}

/** One attribute of a name, in certificate order. */
export interface NameAttribute {
  /** Dotted OID, e.g. 2.5.4.3. */
  readonly type: string;
  readonly value: string;
}

export interface CertificateNames {
  /** The DER of the issuer Name (Go's RawIssuer): Go finds the issuing CA by these exact bytes. */
  readonly rawIssuer: Buffer;
  readonly subject: readonly NameAttribute[];
}

export const OID_COMMON_NAME = '2.5.4.3';
export const OID_ORGANIZATION = '2.5.4.10';
/** k8s.io/apimachinery/pkg/apis/asn1 X509UID: the user's UID (kube-apiserver 1.33+, AllowParsingUserUIDFromCertAuth, beta, on). */
export const OID_KUBERNETES_UID = '1.3.6.1.4.1.57683.2';

// Universal tags (cryptobyte/asn1).
export const INTEGER = 0x02;
export const OID = 0x06;
const UTF8_STRING = 0x0c;
const NUMERIC_STRING = 0x12;
const PRINTABLE_STRING = 0x13;
const T61_STRING = 0x14;
const IA5_STRING = 0x16;
const BMP_STRING = 0x1e;
export const SEQUENCE = 0x30;
const SET = 0x31;
const VERSION_TAG = 0xa0; // [0] EXPLICIT, constructed

// ignoreBOM: Go keeps a leading U+FEFF (a default TextDecoder drops it, and "\uFEFFsystem:masters" was asserted as
// system:masters: helper 28).
const fatalUTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A DER element: its tag and where its header and contents are. */
export interface Element {
  tag: number;
  start: number;
  contentStart: number;
  end: number;
}

/**
 * cryptobyte's readASN1: a low-tag-number identifier and a DER length (short form under 128, long
 * form of 1 to 4 minimal octets), within [pos, limit). null where cryptobyte returns false.
 */
export function element(b: Buffer, pos: number, limit: number): Element | null {
  if (limit - pos < 2) return null;
  const tag = b[pos]!;
  const lenByte = b[pos + 1]!;
  if ((tag & 0x1f) === 0x1f) return null; // high-tag-number form: unsupported
  let length: number;
  let header: number;
  if ((lenByte & 0x80) === 0) {
    length = lenByte;
    header = 2;
  } else {
    const lenLen = lenByte & 0x7f;
    if (lenLen === 0 || lenLen > 4 || limit - pos < 2 + lenLen) return null;
    length = 0;
    for (let i = 0; i < lenLen; i++) length = length * 256 + b[pos + 2 + i]!;
    if (length < 128) return null; // should have been short form
    if (b[pos + 2] === 0) return null; // a leading zero octet: not minimal
    header = 2 + lenLen;
  }
  if (length > limit - pos - header) return null;
  return { tag, start: pos, contentStart: pos + header, end: pos + header + length };
}

export function expect(b: Buffer, pos: number, limit: number, tag: number, what: string): Element {
  const e = element(b, pos, limit);
  if (e === null || e.tag !== tag) throw new GoX509Error(what);
  return e;
}

/** cryptobyte checkASN1Integer: non-empty and minimally encoded. */
export function validInteger(b: Buffer, e: Element): boolean {
  const n = e.end - e.contentStart;
  if (n === 0) return false;
  if (n === 1) return true;
  const first = b[e.contentStart]!;
  const second = b[e.contentStart + 1]!;
  if (first === 0 && (second & 0x80) === 0) return false;
  if (first === 0xff && (second & 0x80) === 0x80) return false;
  return true;
}

/** cryptobyte readBase128Int: at most 4 octets' worth below 2^31, no leading 0x80. Returns [value, next] or null. */
function base128(b: Buffer, pos: number, end: number): [number, number] | null {
  let ret = 0;
  for (let i = 0; pos < end; i++) {
    if (i === 5) return null;
    if (ret >= 1 << 24) return null;
    const c = b[pos++]!;
    if (i === 0 && c === 0x80) return null;
    ret = ret * 128 + (c & 0x7f);
    if ((c & 0x80) === 0) return [ret, pos];
  }
  return null;
}

/** cryptobyte ReadASN1ObjectIdentifier, as dotted text. */
export function objectIdentifier(b: Buffer, e: Element): string | null {
  if (e.end === e.contentStart) return null;
  const first = base128(b, e.contentStart, e.end);
  if (first === null) return null;
  const parts = first[0] < 80 ? [Math.floor(first[0] / 40), first[0] % 40] : [2, first[0] - 80];
  let pos = first[1];
  while (pos < e.end) {
    const next = base128(b, pos, e.end);
    if (next === null) return null;
    parts.push(next[0]);
    pos = next[1];
  }
  return parts.join('.');
}

/** Go's isPrintable (parser.go): PrintableString plus '*' and '&', which real certificates use. */
function isPrintable(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || (c >= 0x27 && c <= 0x29) || (c >= 0x2b && c <= 0x2f) || c === 0x20 || c === 0x3a || c === 0x3d || c === 0x3f || c === 0x2a || c === 0x26;
}

/** Go's parseASN1String: the six string types it reads, each validated as Go validates it. */
function asn1String(tag: number, v: Buffer): string {
  switch (tag) {
    case T61_STRING:
      // Go reads T.61 as Latin-1, one byte a code point (as BoringSSL does).
      return v.toString('latin1');
    case PRINTABLE_STRING:
      for (const c of v) if (!isPrintable(c)) throw new GoX509Error('invalid PrintableString');
      return v.toString('latin1');
    case UTF8_STRING:
      try {
        return fatalUTF8.decode(v); // rejects what Go's utf8.Valid rejects: bad sequences, overlongs, surrogates
      } catch {
        throw new GoX509Error('invalid UTF-8 string');
      }
    case BMP_STRING: {
      if (v.length % 2 !== 0) throw new GoX509Error('invalid BMPString');
      let n = v.length;
      if (n >= 2 && v[n - 1] === 0 && v[n - 2] === 0) n -= 2; // a terminator, stripped
      let s = '';
      for (let i = 0; i < n; i += 2) {
        const p = (v[i]! << 8) | v[i + 1]!;
        // UCS-2: surrogates and the permanent noncharacters are refused, as Go and BoringSSL do.
        if (p === 0xfffe || p === 0xffff || (p >= 0xfdd0 && p <= 0xfdef) || (p >= 0xd800 && p <= 0xdfff)) throw new GoX509Error('invalid BMPString');
        s += String.fromCharCode(p);
      }
      return s;
    }
    case IA5_STRING:
      for (const c of v) if (c >= 0x80) throw new GoX509Error('invalid IA5String');
      return v.toString('latin1');
    case NUMERIC_STRING:
      for (const c of v) if (!((c >= 0x30 && c <= 0x39) || c === 0x20)) throw new GoX509Error('invalid NumericString');
      return v.toString('latin1');
  }
  throw new GoX509Error(`unsupported string type: ${tag}`);
}

/** Go's parseName: a SEQUENCE of SETs of {OID, string}, every value one of the string types above. */
function name(b: Buffer, seq: Element): NameAttribute[] {
  const out: NameAttribute[] = [];
  let pos = seq.contentStart;
  while (pos < seq.end) {
    const set = element(b, pos, seq.end);
    if (set === null || set.tag !== SET) throw new GoX509Error('x509: invalid RDNSequence');
    let p = set.contentStart;
    while (p < set.end) {
      const atv = element(b, p, set.end);
      if (atv === null || atv.tag !== SEQUENCE) throw new GoX509Error('x509: invalid RDNSequence: invalid attribute');
      const oid = element(b, atv.contentStart, atv.end);
      const type = oid !== null && oid.tag === OID ? objectIdentifier(b, oid) : null;
      if (oid === null || type === null) throw new GoX509Error('x509: invalid RDNSequence: invalid attribute type');
      const value = element(b, oid.end, atv.end);
      if (value === null) throw new GoX509Error('x509: invalid RDNSequence: invalid attribute value');
      // Bytes after the value inside the attribute are ignored by Go (cryptobyte reads what it asks for).
      try {
        out.push({ type, value: asn1String(value.tag, b.subarray(value.contentStart, value.end)) });
      } catch (e) {
        throw new GoX509Error(`x509: invalid RDNSequence: invalid attribute value: ${(e as Error).message}`);
      }
      p = atv.end;
    }
    pos = set.end;
  }
  return out;
}

/**
 * The issuer bytes and subject attributes of a DER certificate, or GoX509Error where Go's
 * x509.ParseCertificate fails before or at the subject (kube-apiserver's TLS handshake then fails:
 * "tls: failed to parse client certificate").
 */
export function certificateNames(der: Buffer): CertificateNames {
  const cert = expect(der, 0, der.length, SEQUENCE, 'x509: malformed certificate');
  const tbs = expect(der, cert.contentStart, cert.end, SEQUENCE, 'x509: malformed tbs certificate');
  let pos = tbs.contentStart;
  const first = element(der, pos, tbs.end);
  if (first === null) throw new GoX509Error('x509: malformed version');
  if (first.tag === VERSION_TAG) {
    const v = expect(der, first.contentStart, first.end, INTEGER, 'x509: malformed version');
    if (!validInteger(der, v) || v.end - v.contentStart > 8) throw new GoX509Error('x509: malformed version');
    if ((der[v.contentStart]! & 0x80) !== 0) throw new GoX509Error('x509: malformed version');
    let version = 0;
    for (let i = v.contentStart; i < v.end; i++) version = version * 256 + der[i]!;
    if (version > 2) throw new GoX509Error('x509: invalid version');
    pos = first.end;
  }
  const serial = expect(der, pos, tbs.end, INTEGER, 'x509: malformed serial number');
  if (!validInteger(der, serial)) throw new GoX509Error('x509: malformed serial number');
  // Go 1.23+ refuses negative serials unless GODEBUG x509negativeserial=1 (kube-apiserver does not set it).
  if ((der[serial.contentStart]! & 0x80) !== 0) throw new GoX509Error('x509: negative serial number');
  const sigAlg = expect(der, serial.end, tbs.end, SEQUENCE, 'x509: malformed signature algorithm identifier');
  const outerSigAlg = expect(der, tbs.end, cert.end, SEQUENCE, 'x509: malformed algorithm identifier');
  if (!der.subarray(sigAlg.start, sigAlg.end).equals(der.subarray(outerSigAlg.start, outerSigAlg.end))) {
    throw new GoX509Error("x509: inner and outer signature algorithm identifiers don't match");
  }
  const issuer = expect(der, sigAlg.end, tbs.end, SEQUENCE, 'x509: malformed issuer');
  name(der, issuer);
  const validity = expect(der, issuer.end, tbs.end, SEQUENCE, 'x509: malformed validity');
  const subject = expect(der, validity.end, tbs.end, SEQUENCE, 'x509: malformed issuer'); // sic: Go's message
  return { rawIssuer: der.subarray(issuer.start, issuer.end), subject: name(der, subject) };
}

/** The DER of a certificate's subject Name (for the client CAs: Go matches a leaf's RawIssuer against these bytes). */
export function rawSubject(der: Buffer): Buffer {
  const cert = expect(der, 0, der.length, SEQUENCE, 'x509: malformed certificate');
  const tbs = expect(der, cert.contentStart, cert.end, SEQUENCE, 'x509: malformed tbs certificate');
  let e = element(der, tbs.contentStart, tbs.end);
  if (e !== null && e.tag === VERSION_TAG) e = element(der, e.end, tbs.end);
  // serial, signature algorithm, issuer, validity, then the subject.
  for (let i = 0; i < 4 && e !== null; i++) e = element(der, e.end, tbs.end);
  if (e === null || e.tag !== SEQUENCE) throw new GoX509Error('x509: malformed subject');
  return der.subarray(e.start, e.end);
}

/** The CN Go reads (the last one; "" without one): --requestheader-allowed-names is judged on it. Throws GoX509Error where Go cannot parse the certificate. */
export function goCommonName(der: Buffer): string {
  let cn = '';
  for (const a of certificateNames(der).subject) if (a.type === OID_COMMON_NAME) cn = a.value;
  return cn;
}
