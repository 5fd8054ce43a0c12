// Certificate reload (docs/operating.md §3; kube-apiserver pkg/server/dynamiccertificates): the files
// behind every TLS setting are watched (lifecycle/filewatch.ts) and swapped in while the daemon
// runs; connections already open keep the material they were made with, so nothing in flight is
// dropped. Rules, in kube's words and order:
//
//   1. Unchanged content is ignored (a touch, an event for a neighbouring file).
//   2. A new certificate and key are checked against each other (X509Certificate.checkPrivateKey)
//      before the swap; a certificate without its new key yet (one file replaced, the other not)
//      is refused until both agree.
//   3. Beyond kube: a pair that chained to its trust bundle (the CA its verifiers use: peers check
//      our proxy client certificate against the front-proxy CA, our peer serving certificate
//      against the peer CA) must still chain to it. A certificate from a foreign CA would be
//      refused by every peer on the next connection; refusing it here keeps the last good pair
//      working instead. (A pair that never chained, e.g. a lab setup with mixed CAs, is not
//      judged.)
//   4. Anything invalid (unreadable, not PEM, mismatched, foreign) keeps the last good material,
//      and says why in the log (an error line); a good swap logs "Loaded a new cert/key pair" or
//      "Loaded a new CA bundle" at V(2).
//
// Where material goes (daemon/run.ts wires it):
//   - proxy client certificate + --peer-ca-file → PeerPools.setTLS: new peer connections use it,
//     the old pools drain (watches through them keep running);
//   - peer listener serving certificate + --requestheader-client-ca-file → https
//     server.setSecureContext: new handshakes use it;
//   - --local-apiserver-ca-file → a new local connection pool (ReloadablePool), the old one drains;
//   - the node front end's serving certificate → setSecureContext.
//   The uWebSockets.js front end cannot swap its certificate (uWS.SSLApp takes files once): it
//   keeps the certificate it started with until mvproxy restarts; the daemon says so at start.

import { X509Certificate, createPrivateKey } from 'node:crypto';
import type { OwnDispatcher, OwnRequestOptions, OwnResponse } from '../api/own-requests';
import { ErrorCode } from '../api/errors';
import { goCABundle } from '../api/client-ca';
import { WatchedFiles, type FileContents } from './filewatch';
import type { Logger } from '../telemetry/log';

/** kube's resync period for certificate files: one minute, whatever fs.watch reports. */
export const CERT_RESYNC_MS = 60_000;

export interface TLSMaterial {
  cert?: Buffer;
  key?: Buffer;
  ca?: Buffer;
}

export interface TLSMaterialSpec {
  /** Names the material in logs: proxy-client, peer-serving, serving, local-apiserver. */
  name: string;
  certFile?: string;
  keyFile?: string;
  /** CA bundle carried with the pair (trust for the other side of the connection). */
  caFile?: string;
  /** Bundle the pair must keep chaining to (rule 3). */
  pairTrustFile?: string;
  /** Installs new material: only called with a checked pair and a parseable CA bundle. */
  apply(m: TLSMaterial): void;
}

export class CertificateError extends Error {
  readonly code = ErrorCode.MVP_ERR_CERTIFICATE;
}

/** The certificates of a PEM bundle, leaf first. Throws CertificateError when there is none or one is malformed. */
export function parseCertificates(pem: Buffer | string, what: string): X509Certificate[] {
  const text = pem.toString();
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new CertificateError(`${what}: no PEM certificate found`);
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b);
    } catch (e) {
      throw new CertificateError(`${what}: certificate ${i + 1}: ${(e as Error).message}`);
    }
  });
}

/** Checks a certificate/key pair (rule 2); returns the certificate chain, leaf first. */
/** notAfter (Unix seconds) of the first certificate of a PEM bundle; undefined when it does not parse. */
export function leafNotAfterSeconds(pem: Buffer, what: string): number | undefined {
  try {
    return Date.parse(parseCertificates(pem, what)[0].validTo) / 1000;
  } catch {
    return undefined;
  }
}

export function checkKeyPair(cert: Buffer, key: Buffer, what = 'certificate'): X509Certificate[] {
  const chain = parseCertificates(cert, what);
  let k;
  try {
    k = createPrivateKey(key);
  } catch (e) {
    throw new CertificateError(`${what}: the private key cannot be read: ${(e as Error).message}`);
  }
  if (!chain[0].checkPrivateKey(k)) throw new CertificateError(`${what}: the private key does not match the certificate (${chain[0].subject.replace(/\n/g, ', ')})`);
  return chain;
}

/**
 * Whether the chain's leaf is signed, through the chain's own intermediates, by a certificate of
 * `roots` (issuer name and signature checked; validity periods are not: kube does not judge them
 * at reload either).
 */
export function chainsTo(chain: readonly X509Certificate[], roots: readonly X509Certificate[]): boolean {
  const issued = (issuer: X509Certificate, c: X509Certificate) => c.checkIssued(issuer) && c.verify(issuer.publicKey);
  let cur = chain[0];
  const rest = chain.slice(1);
  for (let depth = 0; cur && depth < 10; depth++) {
    if (roots.some((r) => r.fingerprint256 === cur.fingerprint256 || issued(r, cur))) return true;
    const next = rest.find((c) => c !== cur && issued(c, cur));
    if (!next) return false;
    cur = next;
  }
  return false;
}

interface Current {
  cert?: Buffer;
  key?: Buffer;
  ca?: Buffer;
  /** The CA file's bytes `ca` was read from (a reload compares these). */
  caFile?: Buffer;
  /** The pair chained to pairTrustFile's bundle when it was loaded (rule 3 applies). */
  chained: boolean;
}

/** Watches one material's files and applies checked changes. */
export class ReloadableTLS {
  private current: Current | undefined;
  private readonly watched: WatchedFiles;

  constructor(private readonly spec: TLSMaterialSpec, private readonly o: { log: Logger; resyncMs?: number }) {
    this.watched = new WatchedFiles([spec.certFile, spec.keyFile, spec.caFile, spec.pairTrustFile], {
      resyncMs: o.resyncMs ?? CERT_RESYNC_MS,
      log: o.log,
      onChange: (c) => this.changed(c),
    });
  }

  /** Takes the files' current content as the material in use (the daemon started with it), then watches. */
  start(): void {
    this.watched.start();
  }

  stop(): void {
    this.watched.stop();
  }

  /** The name of the material (TLSMaterialSpec.name). */
  get name(): string {
    return this.spec.name;
  }

  /** notAfter (Unix seconds) of the leaf certificate in use, if this material presents one. */
  notAfterSeconds(): number | undefined {
    const cert = this.current?.cert;
    if (cert === undefined) return undefined;
    if (this.expiry?.cert !== cert) this.expiry = { cert, t: leafNotAfterSeconds(cert, this.spec.name) };
    return this.expiry.t;
  }
  private expiry: { cert: Buffer; t: number | undefined } | undefined;

  /** Re-reads the files now (tests; the watcher does it by itself). */
  check(): void {
    this.watched.check();
  }

  private changed(files: FileContents): void {
    const s = this.spec;
    const read = (f: string | undefined): Buffer | undefined => {
      if (!f) return undefined;
      const c = files.get(f);
      if (c instanceof Error) throw new CertificateError(`${f}: ${c.message}`);
      return c;
    };
    const first = this.current === undefined;
    const prev: Current = this.current ?? { chained: false };
    const next: Current = { ...prev };

    if (s.certFile && s.keyFile) {
      try {
        const cert = read(s.certFile)!;
        const key = read(s.keyFile)!;
        if (first || !prev.cert || !prev.key || !cert.equals(prev.cert) || !key.equals(prev.key)) {
          const chain = checkKeyPair(cert, key, s.certFile);
          const trust = this.trustBundle(files);
          const chained = trust !== undefined && chainsTo(chain, trust);
          if (!first && prev.chained && !chained) {
            throw new CertificateError(`${s.certFile}: the new certificate (${describe(chain[0])}) does not chain to ${s.pairTrustFile}, which its peers verify it with, while the one in use does`);
          }
          next.cert = cert;
          next.key = key;
          next.chained = chained;
          if (!first) this.o.log.info(2, 'Loaded a new cert/key pair', { name: s.name, certFile: s.certFile, keyFile: s.keyFile, ...certKV(chain[0]) });
        }
      } catch (e) {
        if (first) {
          // The daemon started with these files: keep whatever they hold as "in use".
          next.cert = files.get(s.certFile) instanceof Buffer ? (files.get(s.certFile) as Buffer) : undefined;
          next.key = files.get(s.keyFile) instanceof Buffer ? (files.get(s.keyFile) as Buffer) : undefined;
        } else this.o.log.error('not loading the changed certificate or key; keeping the last good pair', e, { name: s.name, certFile: s.certFile, keyFile: s.keyFile });
      }
    }
    if (s.caFile) {
      try {
        const ca = read(s.caFile)!;
        if (first || !prev.caFile || !ca.equals(prev.caFile)) {
          // As kube-apiserver reads it: the TLS library and ClientCA get the blocks Go reads (api/client-ca.ts).
          const bundle = goCABundle(ca, s.caFile);
          next.ca = bundle.pem;
          next.caFile = ca;
          if (!first) this.o.log.info(2, 'Loaded a new CA bundle', { name: s.name, caFile: s.caFile, certificates: bundle.certificates });
        }
      } catch (e) {
        if (first) next.ca = next.caFile = files.get(s.caFile) instanceof Buffer ? (files.get(s.caFile) as Buffer) : undefined;
        else this.o.log.error('not loading the changed CA bundle; keeping the last good one', e, { name: s.name, caFile: s.caFile });
      }
    }
    this.current = next;
    if (first) return;
    if (next.cert !== prev.cert || next.key !== prev.key || next.ca !== prev.ca) {
      try {
        s.apply({ cert: next.cert, key: next.key, ca: next.ca });
      } catch (e) {
        // e.g. setSecureContext refusing material: keep the old one in place, try again on the next change.
        this.current = prev;
        this.o.log.error('installing the new TLS material failed; the last good one stays in use', e, { name: s.name });
      }
    }
  }

  private trustBundle(files: FileContents): X509Certificate[] | undefined {
    const f = this.spec.pairTrustFile;
    const c = f ? files.get(f) : undefined;
    if (!(c instanceof Buffer)) return undefined;
    try {
      return parseCertificates(c, f!);
    } catch {
      return undefined;
    }
  }
}

function describe(c: X509Certificate): string {
  return `subject ${c.subject.replace(/\n/g, ', ')}, issuer ${c.issuer.replace(/\n/g, ', ')}`;
}

function certKV(c: X509Certificate): Record<string, string> {
  return { subject: c.subject.replace(/\n/g, ', '), issuer: c.issuer.replace(/\n/g, ', '), serial: c.serialNumber, notAfter: new Date(c.validTo).toISOString() };
}

/**
 * A connection pool whose TLS settings can change: requests go to the current pool; a swap makes a
 * new one for new requests and closes the old one gracefully (its in-flight requests, a Lease
 * watch included, finish on their connections). Its users hold this object, never a pool, so
 * nothing there changes on a swap.
 */
export class ReloadablePool implements OwnDispatcher {
  private pool: OwnDispatcher;
  /** Swapped-out pools still finishing their requests (a Lease watch runs for minutes): destroy() ends them too. */
  private readonly draining = new Set<OwnDispatcher>();
  constructor(private readonly make: () => OwnDispatcher) {
    this.pool = make();
  }

  request(o: OwnRequestOptions): Promise<OwnResponse> {
    return this.pool.request(o);
  }

  /** New requests use a freshly made pool; the previous one drains. */
  swap(): void {
    const old = this.pool;
    this.pool = this.make();
    this.draining.add(old);
    void old
      .close()
      .catch(() => undefined)
      .then(() => this.draining.delete(old));
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  destroy(): Promise<void> {
    const old = [...this.draining];
    this.draining.clear();
    return Promise.all([this.pool.destroy(), ...old.map((d) => d.destroy().catch(() => undefined))]).then(() => undefined);
  }
}
