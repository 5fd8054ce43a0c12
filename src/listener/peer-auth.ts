// Who may use the peer listener, on either front end: a client certificate the request-header CA
// verified (checked in the TLS handshake), whose common name is in --requestheader-allowed-names
// when that list is set (kube's requestheader authenticator, docs/kubernetes-mvp.md §2.5).
import { X509Certificate } from 'node:crypto';
import { VerdictCache, type ClientCA } from '../api/client-ca';
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
 * A peer's verified certificate at `now`, as kube-apiserver's requestheader authenticator would take
 * it: a certificate of --requestheader-client-ca-file, read as Go reads the file, signed it directly,
 * both within their validity periods, and Go takes it whole (api/client-ca.ts: the key crypto/tls
 * takes, a signature algorithm Verify takes, a client-auth usage; OpenSSL and BoringSSL verify
 * certificates and chains Go refuses: helper 22), and its CN (the last, as Go reads it) is in
 * --requestheader-allowed-names when that is set. Why not (or null), and until when that holds.
 */
function peerVerdict(der: Buffer, allowed: ReadonlySet<string>, ca: ClientCA, now: number): { why: string | null; until: number } {
  try {
    const { problem, until } = ca.check(new X509Certificate(der), now);
    if (problem !== undefined) return { why: `client certificate refused as kube-apiserver (Go) would refuse it: ${problem.why}`, until };
    return { why: peerCertificateProblem(true, '', goCommonName(der), allowed), until };
  } catch (e) {
    if (e instanceof GoX509Error) return { why: `client certificate refused as kube-apiserver (Go) refuses it: ${e.message}`, until: Infinity };
    return { why: `client certificate unreadable: ${(e as Error).message}`, until: Infinity };
  }
}

/** peerVerdict's reason alone (tests). */
export function peerDERProblem(der: Buffer, allowed: ReadonlySet<string>, ca: ClientCA, now = Date.now()): string | null {
  return peerVerdict(der, allowed, ca, now).why;
}

/**
 * The peer listener's verdicts, asked per request on both front ends (kube-apiserver verifies every
 * request, at its time, with the file of the moment: helper 28 had a request on an open connection,
 * or on a resumed TLS session, served after the peer's certificate expired or its CA left the file).
 * Kept by certificate (its PEM on uWS, its SHA-256 on node) in a VerdictCache (api/client-ca.ts)
 * until the answer's validity ends or the file is reloaded.
 */
export class PeerVerdicts {
  private readonly cache = new VerdictCache<string | null>();

  constructor(
    private readonly allowed: ReadonlySet<string>,
    private readonly ca: ClientCA,
  ) {}

  /** Why the certificate under `key` may not use the listener now, or null; `der` is read only on a miss. */
  of(key: string, der: () => Buffer, now = Date.now()): string | null {
    return this.cache.get(key, now, this.ca.generation, () => {
      try {
        const { why, until } = peerVerdict(der(), this.allowed, this.ca, now);
        return { value: why, until };
      } catch (e) {
        return { value: `client certificate unreadable: ${(e as Error).message}`, until: Infinity };
      }
    });
  }
}
