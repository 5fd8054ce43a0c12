// Who may use the peer listener, on either front end: a client certificate the request-header CA
// verified (checked in the TLS handshake), whose common name is in --requestheader-allowed-names
// when that list is set (kube's requestheader authenticator, docs/kubernetes-mvp.md §2.5).

/** Why a connection's certificate may not use the peer listener, or null when it may. `verified` = the handshake verified one. */
export function peerCertificateProblem(verified: boolean, why: string, commonName: string | string[] | undefined, allowed: ReadonlySet<string>): string | null {
  if (!verified) return `client certificate not verified: ${why}`;
  if (allowed.size === 0) return null;
  const names = Array.isArray(commonName) ? commonName : commonName ? [commonName] : [];
  return names.some((n) => allowed.has(n)) ? null : `client certificate CN ${JSON.stringify(names.join(','))} is not in --requestheader-allowed-names`;
}
