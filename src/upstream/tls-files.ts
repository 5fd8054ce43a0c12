// The TLS material of a connection mvproxy makes to an upstream: the local apiserver, a peer's peer
// listener (mutual TLS). One type for both clients (own-client.ts's pools and the relay's own, h1/origin.ts).

import { isIP } from 'node:net';
import { checkServerIdentity as tlsCheckServerIdentity, type PeerCertificate } from 'node:tls';
import type { TLSPolicy } from '../config/tls-policy';

export interface TLSFiles {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  servername?: string;
  /** --tls-min-version / --tls-cipher-suites, as node:tls options. */
  policy?: TLSPolicy;
}

/**
 * The server name check of every upstream TLS connection, as Go's crypto/x509 makes it since Go 1.15
 * (VerifyHostname): a DNS name is matched against the certificate's DNS SANs only. node:tls falls back
 * to the subject's CN when a certificate has no DNS SAN, so a certificate from --peer-ca-file with
 * `CN=kubernetes.default.svc` and no SAN passed where kube-apiserver's own peer client refuses it
 * (helper 12). An IP address node already matches against IP SANs only.
 */
export function checkServerIdentity(host: string, cert: PeerCertificate): Error | undefined {
  if (!isIP(host) && !/(?:^|, )DNS:/.test(cert.subjectaltname ?? '')) {
    return Object.assign(new Error(`Hostname/IP does not match certificate's altnames: Host: ${host}. The certificate has no DNS subject alternative name (its common name is not read, as in Go)`), { code: 'ERR_TLS_CERT_ALTNAME_INVALID', reason: 'no DNS SAN', host, cert });
  }
  return tlsCheckServerIdentity(host, cert);
}
