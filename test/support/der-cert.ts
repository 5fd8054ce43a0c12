// Client certificates with subjects no certificate library writes: two CNs, T.61 and BMP strings,
// control characters, a negative serial, an issuer spelled differently from its CA's subject.
// Built from DER here and signed with the CA's key (node:crypto), so tests can ask what
// kube-apiserver and mvproxy each make of exactly these bytes (issue 27 item 2).
import { createPrivateKey, generateKeyPairSync, sign, X509Certificate } from 'node:crypto';
import { rawSubject } from '../../src/api/x509-name';

/** DER string tags. */
export const TAG = { UTF8: 0x0c, NUMERIC: 0x12, PRINTABLE: 0x13, T61: 0x14, IA5: 0x16, BMP: 0x1e, INTEGER: 0x02 } as const;

export interface Attr {
  /** Dotted OID; CN 2.5.4.3, O 2.5.4.10, UID 1.3.6.1.4.1.57683.2. */
  oid: string;
  /** DER tag of the value (default UTF8String). */
  tag?: number;
  /** The value: a string (UTF-8, or one byte a character for T61/Printable/IA5/Numeric, UTF-16BE for BMP) or raw bytes. */
  value: string | Buffer;
}

export const CN = (value: string | Buffer, tag?: number): Attr => ({ oid: '2.5.4.3', value, tag });
export const O = (value: string | Buffer, tag?: number): Attr => ({ oid: '2.5.4.10', value, tag });
export const UID = (value: string | Buffer, tag?: number): Attr => ({ oid: '1.3.6.1.4.1.57683.2', value, tag });

export interface DerCertOptions {
  /** One RDN (SET) per element; an element that is an array is a multi-valued RDN. */
  subject: (Attr | Attr[])[];
  /** Serial number content bytes (two's complement); default a random positive 16 bytes. */
  serial?: Buffer;
  /** The issuer Name's DER; default the CA's subject, byte for byte. */
  issuer?: Buffer;
}

function len(n: number): Buffer {
  if (n < 128) return Buffer.from([n]);
  const b: number[] = [];
  for (let x = n; x > 0; x = Math.floor(x / 256)) b.unshift(x & 0xff);
  return Buffer.from([0x80 | b.length, ...b]);
}
export const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const c = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(c.length), c]);
};
const seq = (...c: Buffer[]) => tlv(0x30, ...c);
function oid(dotted: string): Buffer {
  const p = dotted.split('.').map(Number);
  const out = [40 * p[0]! + p[1]!];
  for (const n of p.slice(2)) {
    const b: number[] = [n & 0x7f];
    for (let x = Math.floor(n / 128); x > 0; x = Math.floor(x / 128)) b.unshift(0x80 | (x & 0x7f));
    out.push(...b);
  }
  return tlv(0x06, Buffer.from(out));
}

function valueBytes(a: Attr): Buffer {
  if (Buffer.isBuffer(a.value)) return a.value;
  const tag = a.tag ?? TAG.UTF8;
  if (tag === TAG.UTF8) return Buffer.from(a.value, 'utf8');
  if (tag === TAG.BMP) return Buffer.from(a.value, 'utf16le').swap16();
  return Buffer.from(a.value, 'latin1');
}

/** The DER of a Name. */
export function nameDER(rdns: (Attr | Attr[])[]): Buffer {
  return seq(...rdns.map((r) => tlv(0x31, ...(Array.isArray(r) ? r : [r]).map((a) => seq(oid(a.oid), tlv(a.tag ?? TAG.UTF8, valueBytes(a)))))));
}

const utcTime = (d: Date) => tlv(0x17, Buffer.from(d.toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z'));

/** A client certificate (clientAuth) with exactly these names, signed by the CA; PEM pair. */
export function derClientCert(ca: { cert: string; key: string }, o: DerCertOptions): { cert: string; key: string } {
  const caKey = createPrivateKey(ca.key);
  const ec = caKey.asymmetricKeyType === 'ec';
  // ecdsa-with-SHA256 (no parameters) or sha256WithRSAEncryption (NULL parameters).
  const sigAlg = ec ? seq(oid('1.2.840.10045.4.3.2')) : seq(oid('1.2.840.113549.1.1.11'), Buffer.from([0x05, 0x00]));
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  let serial = o.serial;
  if (serial === undefined) {
    serial = Buffer.from(Array.from({ length: 16 }, () => Math.floor(Math.random() * 256)));
    serial[0] = (serial[0]! & 0x7f) | 0x01;
  }
  const now = Date.now();
  const extensions = tlv(
    0xa3,
    seq(
      seq(oid('2.5.29.19'), tlv(0x01, Buffer.from([0xff])), tlv(0x04, seq())), // basicConstraints, critical, CA:false
      seq(oid('2.5.29.15'), tlv(0x01, Buffer.from([0xff])), tlv(0x04, tlv(0x03, Buffer.from([0x07, 0x80])))), // keyUsage digitalSignature
      seq(oid('2.5.29.37'), tlv(0x04, seq(oid('1.3.6.1.5.5.7.3.2')))), // extKeyUsage clientAuth
    ),
  );
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))), // v3
    tlv(0x02, serial),
    sigAlg,
    o.issuer ?? Buffer.from(rawSubject(new X509Certificate(ca.cert).raw)),
    seq(utcTime(new Date(now - 3_600_000)), utcTime(new Date(now + 86_400_000))),
    nameDER(o.subject),
    spki,
    extensions,
  );
  const signature = sign('sha256', tbs, caKey);
  const der = seq(tbs, sigAlg, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const cert = `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
  return { cert, key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
