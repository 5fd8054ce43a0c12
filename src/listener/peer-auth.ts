// Who may use the peer listener, on either front end: a client certificate the request-header CA
// verified (checked in the TLS handshake), whose common name is in --requestheader-allowed-names
// when that list is set (kube's requestheader authenticator, docs/kubernetes-mvp.md §2.5).
import { X509Certificate } from 'node:crypto';
import type { ClientCA } from '../api/client-ca';
import { goCommonName, GoX509Error } from '../api/x509-name';

/**
 * Why a connection's certificate may not use the peer listener, or null when it may. `verified` =
 * the handshake verified one; `commonName` = the CN Go reads (x509-name.ts goCommonName: the last).
 */
export function peerCertificateProblem(verified: boolean, why: string, commonName: string | undefined, allowed: ReadonlySet<string>): string | null {
  if (!verified) return `client certificate not verified: ${why}`;
  if (allowed.size === 0) return null;
  return commonName !== undefined && allowed.has(commonName) ? null : `client certificate CN ${JSON.stringify(commonName ?? '')} is not in --requestheader-allowed-names`;
}

/**
 * A peer's verified certificate, as kube-apiserver's requestheader authenticator would take it: a
 * certificate of --requestheader-client-ca-file, read as Go reads the file, signed it directly, and
 * Go takes it whole (api/client-ca.ts: the key crypto/tls takes, a signature algorithm Verify takes,
 * a client-auth usage; OpenSSL and BoringSSL verify certificates and chains Go refuses: helper 22),
 * and its CN (the last, as Go reads it) is in --requestheader-allowed-names when that is set. Why
 * not, or null.
 */
export function peerDERProblem(der: Buffer, allowed: ReadonlySet<string>, ca: ClientCA): string | null {
  try {
    const p = ca.problem(new X509Certificate(der));
    if (p !== undefined) return `client certificate refused as kube-apiserver (Go) would refuse it: ${p.why}`;
    return peerCertificateProblem(true, '', goCommonName(der), allowed);
  } catch (e) {
    if (e instanceof GoX509Error) return `client certificate refused as kube-apiserver (Go) refuses it: ${e.message}`;
    return `client certificate unreadable: ${(e as Error).message}`;
  }
}
