// A CA file as kube-apiserver reads it, and the one question asked of it: did one of its
// certificates sign this client certificate, as Go's x509 Verify would take it? Two files are read
// this way: --client-ca-file (the users mvproxy asserts, api/identity.ts CertificateUsers) and
// --requestheader-client-ca-file (the peers whose identity headers the peer listener believes,
// listener/peer-auth.ts). kube-apiserver checks both with the same Verify (the x509 authenticator
// and the requestheader one: Roots from the file, KeyUsages client auth); OpenSSL and BoringSSL,
// which verify the handshake, take certificates and chains Go refuses (helpers 22-26).

import { X509Certificate, type KeyObject } from 'node:crypto';
import { certificateNames, GoX509Error, rawSubject } from './x509-name';
import { goPEMBlocks } from './go-pem';
import { goCertificate, GoRefusal, issuerProblem, type GoCertificate } from './x509-go';

/** crypto/x509 verify.go maxChainSignatureChecks. */
const MAX_SIGNATURE_CHECKS = 100;

/** A certificate of the file as an issuer of leaves. */
interface Issuer {
  readonly ca: X509Certificate;
  /** Its public key as OpenSSL reads it, or undefined (X509Certificate.publicKey throws for a key Go parses and OpenSSL does not: helper 30). */
  readonly key: KeyObject | undefined;
  /** Why Go would not verify a leaf it signed (x509-go.ts issuerProblem), or undefined. */
  readonly problem: string | undefined;
  /** Its validity period (ms): Go's Verify takes a root only within it (isValid, on every certificate of a chain). */
  readonly notBefore: number;
  readonly notAfter: number;
}

/** Why a client certificate is not one of the file's CAs signed for Go. */
export interface SignerProblem {
  readonly why: string;
  /** kube-apiserver's authenticator finds no issuer (it does not fail the request on it): a token may still decide. */
  readonly noIssuer?: true;
}

/** ClientCA.check's answer, and until when it holds (ms since the epoch, exclusive): a validity period ends or starts then. */
export interface SignerVerdict {
  readonly problem: SignerProblem | undefined;
  readonly until: number;
}

/**
 * A CA file as kube-apiserver loads it (client-go ParseCertsPEM: the CERTIFICATE blocks without
 * headers Go's pem.Decode finds), as a PEM of just those blocks the TLS library reads: what a reload
 * hands the TLS library and ClientCA. Throws only for a file without any such block (kube-apiserver
 * keeps the last good one, as the reload does). A file OpenSSL reads otherwise (a block with a
 * header, an indented or broken one that Go skips) used to fail the reload, and the CA it removed
 * stayed trusted (helper 29). A certificate Go (or mvproxy's stricter port) refuses does not keep
 * the old file either: ClientCA then takes no certificate under the new one (fails closed, where
 * kube-apiserver would keep the old file or load the new one: helper 30).
 */
export function goCABundle(pem: Buffer, what: string): { pem: Buffer; certificates: number } {
  const ders = goPEMBlocks(pem.toString('latin1'))
    .filter((b) => b.type === 'CERTIFICATE' && b.headers === 0)
    .map((b) => b.bytes);
  if (ders.length === 0) throw new Error(`${what}: no certificate kube-apiserver (Go) reads`);
  // One the TLS library cannot read would fail the whole context: left out (ClientCA skips it too).
  const readable = ders.filter((der) => {
    try {
      new X509Certificate(der);
      return true;
    } catch {
      return false;
    }
  });
  if (readable.length === 0) throw new Error(`${what}: no certificate both kube-apiserver (Go) and the TLS library read`);
  const text = readable.map((d) => `-----BEGIN CERTIFICATE-----\n${d.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END CERTIFICATE-----\n`).join('');
  return { pem: Buffer.from(text), certificates: readable.length };
}

/** The leaf's signature checks with the key (false where OpenSSL cannot check it at all). */
function verifies(x: X509Certificate, key: KeyObject): boolean {
  try {
    return x.verify(key);
  } catch {
    return false;
  }
}

/**
 * Answers about certificates (a user, a peer's verdict), by certificate (the PEM uWS hands over per
 * request, or the SHA-256 node:tls has computed), kept while they hold: within [at, until) of the
 * answer (a validity period ends; a clock stepped back before the answer was made asks again: helper
 * 29) and under the file it was made with (ClientCA.generation). Bounded: at MAX entries it starts
 * over. Parsing a certificate costs ~30 µs, a lookup well under 1.
 */
export class VerdictCache<T> {
  static readonly MAX = 1024;
  private readonly entries = new Map<string, { value: T; at: number; until: number }>();
  private generation = -1;

  get(key: string, now: number, generation: number, answer: () => { value: T; until: number }): T {
    if (generation !== this.generation) {
      this.entries.clear(); // a reloaded file: every certificate is judged again
      this.generation = generation;
    }
    const hit = this.entries.get(key);
    if (hit !== undefined && hit.at <= now && now < hit.until) return hit.value;
    const fresh = { ...answer(), at: now };
    if (this.entries.size >= VerdictCache.MAX) this.entries.clear();
    this.entries.set(key, fresh);
    return fresh.value;
  }
}

export class ClientCA {
  /** The CAs by their exact subject bytes, each with why Go would not take it as an issuer (or undefined). */
  private issuers = new Map<string, Issuer[]>();
  /** Why kube-apiserver would not load the file at all, or undefined. */
  private bundleProblem: string | undefined;
  /** Counts set() calls: a cache of verdicts made under an older file knows to drop them. */
  generation = 0;

  /** @param flag the file's flag, named in every reason (--client-ca-file, --requestheader-client-ca-file) */
  constructor(
    private readonly flag: string,
    pem: Buffer | string,
  ) {
    this.set(pem);
  }

  /** The file's content, again after a reload. */
  set(pem: Buffer | string): void {
    // kube-apiserver loads the file with client-go's ParseCertsPEM: one certificate Go cannot parse
    // fails the whole file (it does not start; a reload keeps the old bundle), where OpenSSL skips it
    // and verified the other CAs' leaves (helper 25). Here such a file signs nothing.
    // The blocks Go's pem.Decode finds, and their exact bytes (OpenSSL's reader loads more, and
    // re-encodes a certificate it reads in BER or with a trailer Go refuses: helper 26). A leaf is
    // taken only under one of these CAs, whatever else the TLS library trusts.
    let bundleProblem: string | undefined;
    const ders = goPEMBlocks(Buffer.isBuffer(pem) ? pem.toString('latin1') : pem)
      .filter((b) => b.type === 'CERTIFICATE' && b.headers === 0)
      .map((b) => b.bytes);
    if (ders.length === 0) bundleProblem = `${this.flag} holds no certificate kube-apiserver (Go) reads; kube-apiserver does not load such a file`;
    const issuers = new Map<string, Issuer[]>();
    for (const der of ders) {
      let go: GoCertificate;
      try {
        go = goCertificate(der, false);
      } catch (e) {
        if (!(e instanceof GoRefusal || e instanceof GoX509Error)) throw e;
        bundleProblem ??= `${this.flag} holds a certificate kube-apiserver (Go) cannot parse (${e.message}); kube-apiserver does not load such a file`;
        continue;
      }
      let ca: X509Certificate;
      try {
        ca = new X509Certificate(der);
      } catch {
        continue; // Go reads it, OpenSSL does not: no leaf of it passes the handshake either
      }
      const subject = rawSubject(der).toString('latin1');
      let key: KeyObject | undefined;
      try {
        key = ca.publicKey;
      } catch {
        key = undefined; // verifies nothing here (it would have thrown per request)
      }
      issuers.set(subject, [...(issuers.get(subject) ?? []), { ca, key, problem: issuerProblem(go), notBefore: go.notBefore, notAfter: go.notAfter }]);
    }
    this.issuers = issuers;
    this.bundleProblem = bundleProblem;
    this.generation++;
  }

  /**
   * Why Go would not verify `x` (a certificate the TLS library verified) at `now` as signed directly
   * by a CA of the file, or no problem: the file loads; the leaf is within its validity period; its
   * issuer name is byte for byte a CA's subject; Go parses the leaf whole with a key crypto/tls takes
   * and a signature algorithm Verify takes (x509-go.ts); a CA of that name, itself within its
   * validity period, signed it, and Go would take that CA as an issuer. kube-apiserver runs Verify on
   * every request, at that request's time and with the file of that moment: callers ask again per
   * request (a cache keeps an answer until `until` or the next set()).
   */
  check(x: X509Certificate, now: number): SignerVerdict {
    const always = (problem: SignerProblem): SignerVerdict => ({ problem, until: Infinity });
    if (this.bundleProblem !== undefined) return always({ why: this.bundleProblem });
    // Go finds a certificate's CA by the exact bytes of its issuer name (CertPool byName);
    // OpenSSL compares names canonically (case and space folded, string types unified). A leaf whose
    // issuer is spelled differently from its CA's subject verifies there and is "signed by unknown
    // authority" to kube-apiserver.
    const issuer = certificateNames(x.raw).rawIssuer.toString('latin1');
    const candidates = this.issuers.get(issuer);
    if (candidates === undefined) {
      for (const list of this.issuers.values()) {
        if (list.some(({ ca }) => x.checkIssued(ca))) return always({ why: `the certificate's issuer name is not byte for byte its CA's subject; kube-apiserver (Go) would not find the CA`, noIssuer: true });
      }
      // Signed by an intermediate the client sent: Go checks every certificate of that chain by its
      // own rules (keys, signature algorithms, extensions, policies), which OpenSSL and BoringSSL do
      // not share (an RSA-512 or SHA-1-signed intermediate verified on uWS: helper 22), and uWS
      // shows mvproxy only the leaf. Put the intermediate in the file to use such leaves.
      return always({ why: `the certificate was issued by an intermediate the client sent, not by a certificate of ${this.flag}; mvproxy takes only certificates its CAs signed directly (add the intermediate to ${this.flag})` });
    }
    // The rest of what kube-apiserver (Go) checks: the whole certificate as Go parses it, the key
    // crypto/tls takes, the signature algorithm Verify takes (x509-go.ts).
    let leaf;
    try {
      leaf = goCertificate(x.raw, true);
    } catch (e) {
      if (e instanceof GoRefusal || e instanceof GoX509Error) return always({ why: `kube-apiserver (Go) refuses this certificate: ${e.message}` });
      throw e;
    }
    // The validity period, the leaf's and its CA's, at this request's time, as Go's Verify checks it:
    // the TLS library checked it once, at the handshake, and a connection (or a resumed session)
    // lives on (helper 28: 200 after the leaf expired, on an open connection and on a resumption).
    if (now < leaf.notBefore) return { problem: { why: 'the certificate is not yet valid' }, until: leaf.notBefore };
    // Go compares nanoseconds (valid while now <= NotAfter); Date.now() is whole milliseconds, so the
    // millisecond of notAfter counts as after it (stricter by under 1 ms).
    if (now >= leaf.notAfter) return always({ why: 'the certificate has expired' });
    // Go's Verify gives up after 100 signature checks (maxChainSignatureChecks), trying the CAs of the
    // issuer's name in an order of its own: where it could run out, refused (helper 25).
    if (candidates.length > MAX_SIGNATURE_CHECKS) return always({ why: `${candidates.length} certificates of ${this.flag} share its issuer name; kube-apiserver (Go) stops after ${MAX_SIGNATURE_CHECKS} signature checks` });
    const signers = candidates.filter(({ key }) => key !== undefined && verifies(x, key));
    if (signers.length === 0) return always({ why: `no certificate of ${this.flag} with its issuer name signed it` });
    const usable = signers.filter((s) => s.problem === undefined);
    if (usable.length === 0) return always({ why: `kube-apiserver (Go) would not take its CA as the issuer: ${signers[0]!.problem}` });
    // Only a CA within its own validity period signs: OpenSSL picks a valid one of a name where
    // mvproxy took any usable one (helper 28: a valid CA Go would not use beside an expired twin).
    const current = usable.filter((s) => s.notBefore <= now && now < s.notAfter);
    if (current.length === 0) {
      const later = usable.filter((s) => now < s.notBefore).map((s) => s.notBefore);
      return { problem: { why: `the CA of ${this.flag} that signed it is ${later.length > 0 ? 'not yet valid' : 'expired'}` }, until: later.length > 0 ? Math.min(...later) : Infinity };
    }
    return { problem: undefined, until: Math.min(leaf.notAfter, Math.max(...current.map((s) => s.notAfter))) };
  }
}
