// The user of a request as mvproxy authenticated it itself (a verified client certificate): read by
// a front end at the TLS handshake, written upstream as front-proxy identity headers
// (upstream/headers.ts).

/** A user authenticated by mvproxy itself (a verified client certificate): forwarded as front-proxy headers. */
export interface Identity {
  readonly user: string;
  readonly groups: readonly string[];
  /** Extra attributes (X-Remote-Extra-<key>), e.g. the certificate's credential ID. */
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** The extra key kube-apiserver's x509 authenticator records a certificate's SHA-256 under (1.33+). */
export const CREDENTIAL_ID_KEY = 'authentication.kubernetes.io/credential-id';

/**
 * The user of a verified client certificate, as kube-apiserver's x509 authenticator reads it
 * (k8s.io/apiserver x509 CommonNameUserConversion): user = CN, groups = every O. No CN: no user
 * (the request may still carry a token). `subject` as node:tls reports it (a repeated field is an array).
 */
export function subjectIdentity(subject: { CN?: string | string[]; O?: string | string[] } | undefined, fingerprint256?: string): Identity | null {
  const cn = subject?.CN;
  const user = Array.isArray(cn) ? cn[0] : cn;
  if (!user) return null;
  const o = subject!.O;
  const groups = Array.isArray(o) ? o : o ? [o] : [];
  // kube-apiserver (1.33+) records which certificate authenticated: extra credential-id =
  // "X509SHA256=<hex of the SHA-256 of its DER>" (x509.go). Without it a certificate user looked
  // different through mvproxy than directly (SelfSubjectReview, audit; test/kube/identity.test.ts).
  if (!fingerprint256) return { user, groups };
  return { user, groups, extra: { [CREDENTIAL_ID_KEY]: [`X509SHA256=${fingerprint256.replace(/:/g, '').toLowerCase()}`] } };
}
