// TLS policy with kube-apiserver's flag names and semantics: --tls-min-version (VersionTLS10 …
// VersionTLS13) and --tls-cipher-suites (Go's cipher-suite names, mapped to OpenSSL's), applied to
// every TLS mvproxy speaks: the client and peer listeners (both front ends) and its connections to
// the local apiserver and to peers. Without the flags: TLS 1.2 and newer with Go's default suites,
// as kube-apiserver serves (Go >= 1.23: ECDHE only, no RSA key exchange, no 3DES), so e.g.
// AES128-SHA is refused. TLS 1.3 suites are fixed by the protocol, as in Go: their names are
// accepted and change nothing.
import { constants } from 'node:crypto';
import type { SecureVersion } from 'node:tls';

/** Go's TLS 1.0–1.2 suite names (tls.CipherSuites() and tls.InsecureCipherSuites()) → OpenSSL's. */
export const GO_CIPHER_SUITES: Readonly<Record<string, string>> = {
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 'ECDHE-ECDSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 'ECDHE-RSA-RC4-SHA',
  TLS_RSA_WITH_RC4_128_SHA: 'RC4-SHA',
};

/** TLS 1.3 suites: accepted by name, not configurable (Go ignores them in Config.CipherSuites). */
const TLS13_SUITES = new Set(['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256']);

/** Go's default TLS 1.2 suites (crypto/tls defaultCipherSuites, Go 1.23+), what kube-apiserver serves without the flag. */
export const DEFAULT_CIPHER_SUITES = [
  'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA',
  'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA',
  'TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA',
  'TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA',
] as const;

export const TLS_VERSIONS: Readonly<Record<string, SecureVersion>> = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

/**
 * No TLS renegotiation, on every TLS mvproxy speaks, as Go's crypto/tls: its server never
 * renegotiates, and its client refuses by default (RenegotiateNever). Node's TLS servers accept a
 * client's renegotiation (3 in 10 minutes), and a socket verified once stays `authorized` after it:
 * a client holding any certificate of the client CA renegotiated (TLS 1.2) with a self-signed one
 * naming system:admin in system:masters, and the node front end sent that user upstream as its
 * identity; kube-apiserver v1.34.4's audit log named system:admin (helper 20). uWS refuses it itself.
 */
export const NO_RENEGOTIATION = constants.SSL_OP_NO_RENEGOTIATION;

/** Spread into any node:tls options (servers, setSecureContext, connections): the names are Node's. */
export interface TLSPolicy {
  readonly minVersion: SecureVersion;
  /** OpenSSL cipher list for TLS 1.2 and older (TLS 1.3 keeps its fixed suites). */
  readonly ciphers: string;
  /** OpenSSL options: NO_RENEGOTIATION. */
  readonly secureOptions: number;
}

/** The reason a --tls-min-version value is refused, or undefined. */
export function checkTLSVersion(v: string): string | undefined {
  return v in TLS_VERSIONS ? undefined : `unknown TLS version "${v}": one of ${Object.keys(TLS_VERSIONS).join(', ')}`;
}

/** The reason a --tls-cipher-suites list is refused, or undefined. */
export function checkCipherSuites(names: readonly string[]): string | undefined {
  const unknown = names.filter((n) => !(n in GO_CIPHER_SUITES) && !TLS13_SUITES.has(n));
  return unknown.length ? `unknown cipher suite${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n}"`).join(', ')}: Go's names, e.g. ${DEFAULT_CIPHER_SUITES[0]}` : undefined;
}

export function tlsPolicy(minVersion: string, cipherSuites: readonly string[]): TLSPolicy {
  const names = cipherSuites.length ? cipherSuites : DEFAULT_CIPHER_SUITES;
  const openssl = [...new Set(names.filter((n) => !TLS13_SUITES.has(n)).map((n) => GO_CIPHER_SUITES[n]!))];
  // Only TLS 1.3 names given: TLS 1.2 gets Go's defaults, as Go keeps them when the list has none it applies.
  const ciphers = (openssl.length ? openssl : DEFAULT_CIPHER_SUITES.map((n) => GO_CIPHER_SUITES[n]!)).join(':');
  return Object.freeze({ minVersion: TLS_VERSIONS[minVersion] ?? 'TLSv1.2', ciphers, secureOptions: NO_RENEGOTIATION });
}

/** What kube-apiserver serves without the flags. */
export const DEFAULT_TLS_POLICY = tlsPolicy('VersionTLS12', []);
