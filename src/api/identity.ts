// The user of a request as mvproxy authenticated it itself (a verified client certificate): read by
// a front end at the TLS handshake, written upstream as front-proxy identity headers
// (upstream/headers.ts). The user is the one kube-apiserver would read from the same certificate,
// or none: a certificate whose user the headers cannot carry exactly is refused with a 401 Status.

import { X509Certificate } from 'node:crypto';
import { ERRORS } from './errors';
import { certificateNames, GoX509Error, OID_COMMON_NAME, OID_KUBERNETES_UID, OID_ORGANIZATION } from './x509-name';
import { ClientCA, VerdictCache } from './client-ca';

/** A user authenticated by mvproxy itself (a verified client certificate): forwarded as front-proxy headers. */
export interface Identity {
  readonly user: string;
  readonly groups: readonly string[];
  /** The user's UID (kube-apiserver reads it from the certificate's 1.3.6.1.4.1.57683.2 attribute). */
  readonly uid?: string;
  /** Extra attributes (X-Remote-Extra-<key>), e.g. the certificate's credential ID. */
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** A verified certificate whose user mvproxy will not assert: why (the 401 Status says it). */
export interface CertificateRefusal {
  readonly refused: string;
  /**
   * kube-apiserver's x509 authenticator finds no user or fails (no CN, an issuer it cannot find,
   * two UIDs): a bearer token that the next authenticator accepts still decides the user there, so
   * a request with one is forwarded without the certificate's identity; without one it is a 401
   * there too (union.NewFailOnError keeps anonymous from covering a failed authenticator).
   * Unset: the certificate itself authenticates there (or fails the handshake): always refused.
   */
  readonly tokenMayDecide?: true;
}

/** What a verified client certificate makes of a request: a user, or a refusal; null: no verified certificate. */
export type CertificateUser = Identity | CertificateRefusal | null;

export function isRefusal(u: CertificateUser | undefined): u is CertificateRefusal {
  return u != null && 'refused' in u;
}

/**
 * The 401 message a request gets for its certificate, or undefined: forward it (as the certificate's
 * user, or with no user of mvproxy's when a token decides; see tokenMayDecide).
 * @param headers flat [name, value, ...], names lowercased
 */
export function certificateRefusal(user: CertificateUser, headers: readonly string[]): string | undefined {
  if (!isRefusal(user)) return undefined;
  return user.tokenMayDecide && carriesToken(headers) ? undefined : user.refused;
}

/** A bearer token kube-apiserver's token authenticators read: Authorization, or a WebSocket's bearer sub-protocol. */
function carriesToken(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) {
    const n = headers[i];
    if (n === 'authorization' || (n === 'sec-websocket-protocol' && headers[i + 1]!.includes('base64url.bearer.authorization.k8s.io.'))) return true;
  }
  return false;
}

/** The extra key kube-apiserver's x509 authenticator records a certificate's SHA-256 under (1.33+). */
export const CREDENTIAL_ID_KEY = 'authentication.kubernetes.io/credential-id';

/**
 * Whether Go's net/http hands a header value to kube-apiserver as these exact bytes: no control
 * byte but HTAB (httpguts.ValidHeaderFieldValue refuses the request), no leading or trailing space
 * or tab (net/textproto trims them: " admin" would arrive as "admin"), and not empty
 * (requestheader's allHeaderValues drops an empty group).
 */
export function headerSafe(v: string): boolean {
  if (v.length === 0) return false;
  const first = v.charCodeAt(0);
  const last = v.charCodeAt(v.length - 1);
  if (first === 0x20 || first === 0x09 || last === 0x20 || last === 0x09) return false;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return false;
  }
  return true;
}

/** A refusal, its message the Status's (errors.ts MVP_ERR_CERTIFICATE_USER's, then why). */
function refuse(why: string, tokenMayDecide?: true): CertificateRefusal {
  const refused = `${ERRORS.MVP_ERR_CERTIFICATE_USER.message}: ${why}`;
  return tokenMayDecide ? { refused, tokenMayDecide } : { refused };
}

/** Shows a name in a refusal: JSON quoting makes control bytes and spaces visible. */
const shown = (v: string) => JSON.stringify(v.length > 64 ? v.slice(0, 64) + '…' : v);

export interface CertificateUserOptions {
  /** A UID header is configured (--requestheader-uid-headers): a certificate's UID can be forwarded. */
  readonly uidHeader: boolean;
}

/**
 * The user kube-apiserver v1.34/v1.37 derives from a verified client certificate
 * (k8s.io/apiserver pkg/authentication/request/x509 CommonNameUserConversion over Go's pkix.Name):
 *   - Go must parse the certificate (x509-name.ts), else kube-apiserver's handshake fails: refused;
 *   - user = the *last* CN (FillFromRDNSequence overwrites CommonName); empty: no user (a 401 there
 *     unless a token decides: tokenMayDecide);
 *   - groups = every O, in certificate order;
 *   - uid = the one 1.3.6.1.4.1.57683.2 attribute (parseUIDFromCert: two, or an empty one, is an
 *     authentication error there: refused here); forwarded only with a UID header configured;
 *   - extra credential-id = "X509SHA256=" + hex SHA-256 of the DER (1.33+);
 * and each value must reach the apiserver byte for byte through a header (headerSafe), as UTF-8.
 */
export function certificateUser(der: Buffer, fingerprint256: string, o: CertificateUserOptions): CertificateUser {
  let attrs;
  try {
    attrs = certificateNames(der).subject;
  } catch (e) {
    if (e instanceof GoX509Error) return refuse(`kube-apiserver (Go's crypto/x509) cannot parse this certificate: ${e.message}`);
    throw e;
  }
  let user = '';
  const groups: string[] = [];
  const uids: string[] = [];
  for (const a of attrs) {
    if (a.type === OID_COMMON_NAME) user = a.value;
    else if (a.type === OID_ORGANIZATION) groups.push(a.value);
    else if (a.type === OID_KUBERNETES_UID) uids.push(a.value);
  }
  // No CN: kube-apiserver's x509 authenticator finds no user, the front-proxy one fails on a
  // certificate its CA did not sign, and the request is a 401 unless a token decides (measured,
  // v1.34.4 and v1.37.2: test/kube/identity-certs.test.ts); never anonymous.
  if (user === '') return refuse('the certificate has no common name (no user) and the request carries no token', true);
  if (uids.length > 1) return refuse(`the certificate has ${uids.length} UIDs (1.3.6.1.4.1.57683.2); kube-apiserver accepts one`, true);
  const uid = uids[0];
  if (uid === '') return refuse('the certificate has an empty UID (1.3.6.1.4.1.57683.2), which kube-apiserver refuses', true);
  if (uid !== undefined && !o.uidHeader) return refuse('the certificate carries a user UID (1.3.6.1.4.1.57683.2) and no --requestheader-uid-headers is set to forward it');
  if (!headerSafe(user)) return refuse(`the user name ${shown(user)} cannot be sent in a header unchanged (control characters, or leading/trailing space)`);
  for (const g of groups) if (!headerSafe(g)) return refuse(`the group ${shown(g)} cannot be sent in a header unchanged (empty, control characters, or leading/trailing space)`);
  if (uid !== undefined && !headerSafe(uid)) return refuse(`the UID ${shown(uid)} cannot be sent in a header unchanged`);
  // kube-apiserver (1.33+) records which certificate authenticated: extra credential-id =
  // "X509SHA256=<hex of the SHA-256 of its DER>" (x509.go). Without it a certificate user looked
  // different through mvproxy than directly (SelfSubjectReview, audit; test/kube/identity.test.ts).
  const extra = { [CREDENTIAL_ID_KEY]: [`X509SHA256=${fingerprint256.replace(/:/g, '').toLowerCase()}`] };
  return uid === undefined ? { user, groups, extra } : { user, groups, uid, extra };
}

/**
 * The certificate users of one client listener: certificateUser with the listener's options, the
 * issuer check of client-ca.ts, and a bounded cache (uWS hands the PEM per request, and parsing costs ~30 µs
 * where a Map lookup costs well under 1).
 */
export class CertificateUsers {
  /** By certificate: its user while that holds (a validity period ends: ClientCA.check). */
  private readonly cache = new VerdictCache<CertificateUser>();
  /** --client-ca-file as kube-apiserver reads it: a user only under a CA of it that signed the leaf directly. */
  private ca: ClientCA | undefined;

  constructor(private readonly o: CertificateUserOptions, clientCA?: Buffer | string) {
    if (clientCA !== undefined) this.setClientCA(clientCA);
  }

  /** The client CA bundle (--client-ca-file), again after a reload. */
  setClientCA(pem: Buffer | string): void {
    if (this.ca === undefined) this.ca = new ClientCA('--client-ca-file', pem);
    else this.ca.set(pem);
  }

  /**
   * By the PEM uWS hands over per request. Asked per request, as kube-apiserver verifies per request:
   * a user holds until its certificate or its CA expires, and a reloaded file judges anew.
   */
  ofPEM(pem: string, now = Date.now()): CertificateUser {
    return this.cached(pem, pem, now);
  }

  /** By the DER node:tls gives, keyed by its SHA-256 (which node:tls has computed already); per request, as ofPEM. */
  ofDER(der: Buffer, fingerprint256: string, now = Date.now()): CertificateUser {
    return this.cached(fingerprint256, der, now);
  }

  private cached(key: string, cert: string | Buffer, now: number): CertificateUser {
    return this.cache.get(key, now, this.ca?.generation ?? 0, () => this.read(cert, now));
  }

  private read(cert: string | Buffer, now: number): { value: CertificateUser; until: number } {
    let x: X509Certificate;
    try {
      x = new X509Certificate(cert);
    } catch (e) {
      return { value: refuse(`the certificate cannot be read: ${(e as Error).message}`), until: Infinity }; // the handshake read it; defensive
    }
    const u = certificateUser(x.raw, x.fingerprint256, this.o);
    if (isRefusal(u)) return { value: u, until: Infinity };
    if (this.ca === undefined) return { value: refuse('no --client-ca-file is loaded to check its issuer against'), until: Infinity };
    // kube-apiserver's x509 authenticator finds no issuer for a leaf whose issuer name is no CA's
    // subject byte for byte: no user there, and a token may decide (tokenMayDecide).
    let verdict;
    try {
      verdict = this.ca.check(x, now);
    } catch (e) {
      // Never out into the request (it would take the daemon down): no user.
      return { value: refuse(`the certificate cannot be checked against --client-ca-file: ${(e as Error).message}`), until: Infinity };
    }
    const { problem: p, until } = verdict;
    return { value: p === undefined ? u : p.noIssuer ? refuse(p.why, true) : refuse(p.why), until };
  }
}
