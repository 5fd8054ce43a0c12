// The user of a request as mvproxy authenticated it itself (a verified client certificate): read by
// a front end at the TLS handshake, written upstream as front-proxy identity headers
// (upstream/headers.ts). The user is the one kube-apiserver would read from the same certificate,
// or none: a certificate whose user the headers cannot carry exactly is refused with a 401 Status.

import { X509Certificate } from 'node:crypto';
import { ERRORS } from './errors';
import { certificateNames, GoX509Error, OID_COMMON_NAME, OID_KUBERNETES_UID, OID_ORGANIZATION, rawSubject } from './x509-name';
import { goPEMBlocks } from './go-pem';
import { goCertificate, GoRefusal, issuerProblem, type GoCertificate } from './x509-go';

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

/** crypto/x509 verify.go maxChainSignatureChecks. */
const MAX_SIGNATURE_CHECKS = 100;

/** A certificate of --client-ca-file as an issuer of leaves. */
interface Issuer {
  readonly ca: X509Certificate;
  /** Why Go would not verify a leaf it signed (x509-go.ts issuerProblem), or undefined. */
  readonly problem: string | undefined;
}

/**
 * The certificate users of one client listener: certificateUser with the listener's options, the
 * issuer check below, and a bounded cache (uWS hands the PEM per request, and parsing costs ~30 µs
 * where a Map lookup costs well under 1).
 */
export class CertificateUsers {
  private readonly cache = new Map<string, CertificateUser>();
  private cas: X509Certificate[] = [];
  /** The CAs by their exact subject bytes, each with why Go would not take it as an issuer (or undefined). */
  private issuers = new Map<string, Issuer[]>();
  /** Why kube-apiserver would not load this --client-ca-file at all, or undefined. */
  private bundleProblem: string | undefined;
  static readonly CACHE_MAX = 1024;

  constructor(private readonly o: CertificateUserOptions, clientCA?: Buffer | string) {
    if (clientCA !== undefined) this.setClientCA(clientCA);
  }

  /** The client CA bundle (--client-ca-file), again after a reload. */
  setClientCA(pem: Buffer | string): void {
    const cas: X509Certificate[] = [];
    // kube-apiserver loads the file with client-go's ParseCertsPEM: one certificate Go cannot parse
    // fails the whole file (it does not start; a reload keeps the old bundle), where OpenSSL skips it
    // and verified the other CAs' leaves (helper 25). Here such a file asserts no user at all.
    // The blocks Go's pem.Decode finds, and their exact bytes (OpenSSL's reader loads more, and
    // re-encodes a certificate it reads in BER or with a trailer Go refuses: helper 26). A leaf is
    // asserted only under one of these CAs, whatever else the TLS library trusts.
    let bundleProblem: string | undefined;
    const ders = goPEMBlocks(Buffer.isBuffer(pem) ? pem.toString('latin1') : pem)
      .filter((b) => b.type === 'CERTIFICATE' && b.headers === 0)
      .map((b) => b.bytes);
    if (ders.length === 0) bundleProblem = '--client-ca-file holds no certificate kube-apiserver (Go) reads; kube-apiserver does not load such a file';
    const issuers = new Map<string, Issuer[]>();
    for (const der of ders) {
      let go: GoCertificate;
      try {
        go = goCertificate(der, false);
      } catch (e) {
        if (!(e instanceof GoRefusal || e instanceof GoX509Error)) throw e;
        bundleProblem ??= `--client-ca-file holds a certificate kube-apiserver (Go) cannot parse (${e.message}); kube-apiserver does not load such a file`;
        continue;
      }
      let ca: X509Certificate;
      try {
        ca = new X509Certificate(der);
      } catch {
        continue; // Go reads it, OpenSSL does not: no leaf of it passes the handshake either
      }
      cas.push(ca);
      const subject = rawSubject(der).toString('latin1');
      issuers.set(subject, [...(issuers.get(subject) ?? []), { ca, problem: issuerProblem(go) }]);
    }
    this.cas = cas;
    this.issuers = issuers;
    this.bundleProblem = bundleProblem;
    this.cache.clear();
  }

  /** By the PEM uWS hands over per request. */
  ofPEM(pem: string): CertificateUser {
    return this.cached(pem, pem);
  }

  /** By the DER node:tls gives, keyed by its SHA-256 (which node:tls has computed already). */
  ofDER(der: Buffer, fingerprint256: string): CertificateUser {
    return this.cached(fingerprint256, der);
  }

  private cached(key: string, cert: string | Buffer): CertificateUser {
    let u = this.cache.get(key);
    if (u === undefined) {
      u = this.read(cert);
      if (this.cache.size >= CertificateUsers.CACHE_MAX) this.cache.clear();
      this.cache.set(key, u);
    }
    return u;
  }

  private read(cert: string | Buffer): CertificateUser {
    let x: X509Certificate;
    try {
      x = new X509Certificate(cert);
    } catch (e) {
      return refuse(`the certificate cannot be read: ${(e as Error).message}`); // the handshake read it; defensive
    }
    const u = certificateUser(x.raw, x.fingerprint256, this.o);
    if (isRefusal(u)) return u;
    if (this.bundleProblem !== undefined) return refuse(this.bundleProblem);
    // Go finds a certificate's CA by the exact bytes of its issuer name (CertPool byName);
    // OpenSSL compares names canonically (case and space folded, string types unified). A leaf whose
    // issuer is spelled differently from its CA's subject verifies here and is "signed by unknown
    // authority" to kube-apiserver: refused.
    const issuer = certificateNames(x.raw).rawIssuer.toString('latin1');
    if (!this.issuers.has(issuer)) {
      if (this.cas.some((ca) => x.checkIssued(ca))) return refuse("the certificate's issuer name is not byte for byte its CA's subject; kube-apiserver (Go) would not find the CA", true);
      // Signed by an intermediate the client sent: Go checks every certificate of that chain by its
      // own rules (keys, signature algorithms, extensions, policies), which OpenSSL and BoringSSL do
      // not share (an RSA-512 or SHA-1-signed intermediate verified on uWS: helper 22), and uWS
      // shows mvproxy only the leaf. Put the intermediate in --client-ca-file to use such leaves.
      return refuse('the certificate was issued by an intermediate the client sent, not by a certificate of --client-ca-file; mvproxy asserts only users its client CAs signed directly (add the intermediate to --client-ca-file)');
    }
    // The rest of what kube-apiserver (Go) checks before it believes the names: the whole
    // certificate as Go parses it, the key crypto/tls takes, the signature algorithm Verify takes
    // (x509-go.ts), and a CA of that exact name that signed it and may sign.
    try {
      goCertificate(x.raw, true);
    } catch (e) {
      if (e instanceof GoRefusal || e instanceof GoX509Error) return refuse(`kube-apiserver (Go) refuses this certificate: ${e.message}`);
      throw e;
    }
    const candidates = this.issuers.get(issuer) ?? [];
    // Go's Verify gives up after 100 signature checks (maxChainSignatureChecks), trying the CAs of the
    // issuer's name in an order of its own: where it could run out, no user (helper 25).
    if (candidates.length > MAX_SIGNATURE_CHECKS) return refuse(`${candidates.length} certificates of --client-ca-file share its issuer name; kube-apiserver (Go) stops after ${MAX_SIGNATURE_CHECKS} signature checks`);
    const signers = candidates.filter(({ ca }) => x.verify(ca.publicKey));
    if (signers.length === 0) return refuse('no certificate of --client-ca-file with its issuer name signed it');
    const usable = signers.filter((s) => s.problem === undefined);
    if (usable.length === 0) return refuse(`kube-apiserver (Go) would not take its CA as the issuer: ${signers[0]!.problem}`);
    return u;
  }
}
