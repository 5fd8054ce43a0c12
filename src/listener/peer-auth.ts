// Who may use the peer listener, on either front end: a client certificate the request-header CA
// verified (checked in the TLS handshake), whose common name is in --requestheader-allowed-names
// when that list is set (kube's requestheader authenticator, docs/kubernetes-mvp.md §2.5).

/**
 * Why a connection's certificate may not use the peer listener, or null when it may. `verified` =
 * the handshake verified one; `commonName` = the CN Go reads (x509-name.ts goCommonName: the last).
 */
export function peerCertificateProblem(verified: boolean, why: string, commonName: string | undefined, allowed: ReadonlySet<string>): string | null {
  if (!verified) return `client certificate not verified: ${why}`;
  if (allowed.size === 0) return null;
  return commonName !== undefined && allowed.has(commonName) ? null : `client certificate CN ${JSON.stringify(commonName ?? '')} is not in --requestheader-allowed-names`;
}
