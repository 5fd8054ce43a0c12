// Throwaway PKI for the embedded demo and the tests: a CA and leaf certificates made in memory
// at start (EC P-256, ~40–55 ms for a CA + two leaves, docs/dependencies.md §8). Never for production: real
// control planes use kubeadm's /etc/kubernetes/pki.

import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
x509.cryptoProvider.set(webcrypto);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface PemPair {
  cert: string;
  key: string;
}

export interface CA extends PemPair {
  issue(o: LeafOptions): Promise<PemPair>;
}

export interface LeafOptions {
  commonName: string;
  organization?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client' | 'both';
  /** Validity start offset in ms from now (negative = in the past); default -60 s for clock skew. */
  notBeforeOffsetMs?: number;
  validForMs?: number;
}

let serial = 1;
function nextSerial(): string {
  return (Date.now().toString(16) + (serial++).toString(16).padStart(4, '0')).padStart(16, '0');
}

async function exportKey(k: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', k));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
}

function dn(cn: string, o?: string[]): string {
  return [...(o ?? []).map((x) => `O=${x}`), `CN=${cn}`].join(', ');
}

export async function createCA(commonName: string): Promise<CA> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as unknown as CryptoKeyPair;
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: nextSerial(),
    name: dn(commonName),
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 365 * 24 * 3600_000),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const caPem = cert.toString('pem') + '\n';
  return {
    cert: caPem,
    key: await exportKey(keys.privateKey),
    async issue(o: LeafOptions): Promise<PemPair> {
      const leafKeys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as unknown as CryptoKeyPair;
      const n = Date.now();
      const eku = o.usage === 'server' ? [x509.ExtendedKeyUsage.serverAuth] : o.usage === 'client' ? [x509.ExtendedKeyUsage.clientAuth] : [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth];
      const san = [...(o.dnsNames ?? []).map((v) => ({ type: 'dns' as const, value: v })), ...(o.ipAddresses ?? []).map((v) => ({ type: 'ip' as const, value: v }))];
      const leaf = await x509.X509CertificateGenerator.create({
        serialNumber: nextSerial(),
        subject: dn(o.commonName, o.organization),
        issuer: cert.subject,
        notBefore: new Date(n + (o.notBeforeOffsetMs ?? -60_000)),
        notAfter: new Date(n + (o.validForMs ?? 365 * 24 * 3600_000)),
        signingAlgorithm: ALG,
        publicKey: leafKeys.publicKey,
        signingKey: keys.privateKey,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
          new x509.ExtendedKeyUsageExtension(eku, false),
          ...(san.length ? [new x509.SubjectAlternativeNameExtension(san, false)] : []),
          await x509.AuthorityKeyIdentifierExtension.create(cert, false),
        ],
      });
      return { cert: leaf.toString('pem') + '\n', key: await exportKey(leafKeys.privateKey) };
    },
  };
}
