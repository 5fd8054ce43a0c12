// Who may use the peer listener, on either front end: a client certificate the request-header CA
// verified (checked in the TLS handshake), whose common name is in --requestheader-allowed-names
// when that list is set (kube's requestheader authenticator, docs/kubernetes-mvp.md §2.5).
import { goCertificate, GoRefusal } from '../api/x509-go';
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
 * A peer's verified certificate, as kube-apiserver's requestheader authenticator would take it: Go
 * parses it whole, with a key crypto/tls takes, a signature algorithm Verify takes and a client-auth
 * usage (api/x509-go.ts; OpenSSL and BoringSSL verify certificates Go refuses: helper 22), and its
 * CN (the last, as Go reads it) in --requestheader-allowed-names when that is set. Why not, or null.
 */
export function peerDERProblem(der: Buffer, allowed: ReadonlySet<string>): string | null {
  try {
    goCertificate(der, true);
    return peerCertificateProblem(true, '', goCommonName(der), allowed);
  } catch (e) {
    if (e instanceof GoRefusal || e instanceof GoX509Error) return `client certificate refused as kube-apiserver (Go) refuses it: ${e.message}`;
    return `client certificate unreadable: ${(e as Error).message}`;
  }
}
