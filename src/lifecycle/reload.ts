// Which files are reloaded into what (lifecycle/certs.ts has the rules). One ReloadableTLS per
// destination, so a file used twice (the proxy client pair goes to peers and to the local
// apiserver) is checked and swapped for each.

import { tlsPolicy } from '../config/tls-policy';
import type https from 'node:https';
import type { CertificateUsers } from '../api/identity';
import type { ClientCA } from '../api/client-ca';
import type { DaemonConfig } from '../config/types';
import type { PeerPools, TLSFiles } from '../upstream/pools';
import type { UwsRunningListener } from '../listener/uws';
import type { Logger } from '../telemetry/log';
import type { CertificateInUse } from '../telemetry/metrics';
import { ReloadableTLS, type TLSMaterial, type TLSMaterialSpec } from './certs';

export interface CertReloadTargets {
  config: DaemonConfig;
  log: Logger;
  /** Peer mTLS client material (mutated in place, then PeerPools.setTLS). */
  peerPools?: PeerPools;
  peerTLS?: TLSFiles;
  /** The peer listener: node:https, or uWS (reloaded by listening anew, listener/uws.ts). */
  peerServer?: https.Server;
  peerUWS?: UwsRunningListener;
  /** The peer listener's --requestheader-client-ca-file as Go reads it (api/client-ca.ts): given the new file on a reload. */
  peerCA?: ClientCA;
  /** The uWS front end's client listener, when it serves TLS. */
  clientUWS?: UwsRunningListener;
  /** The node front end's client listener, when it serves TLS. */
  clientServer?: https.Server;
  /** Reads client certificate users against the client CA bundle: given the new bundle on a reload. */
  certificateUsers?: CertificateUsers;
  /** The local apiserver's clients to swap (mvproxy's own pool; the relay's, with and without the client certificate) and their TLS material (mutated in place: upgrade tunnels read it too). */
  local?: { swap(): void }[];
  localTLS?: TLSFiles;
  resyncMs?: number;
}

export function startCertReload(t: CertReloadTargets): { stop(): void; certificates(): Iterable<CertificateInUse> } {
  const c = t.config;
  const specs: TLSMaterialSpec[] = [];
  // A new secure context starts from Node's defaults: the listeners' policy goes with every swap.
  const policy = tlsPolicy(c.tlsMinVersion, c.tlsCipherSuites);
  if (t.peerPools && t.peerTLS) {
    const tls = t.peerTLS;
    const pools = t.peerPools;
    specs.push({
      name: 'proxy-client',
      certFile: c.proxyClientCertFile,
      keyFile: c.proxyClientKeyFile,
      caFile: c.peerCAFile,
      pairTrustFile: c.requestheaderClientCAFile,
      apply: (m) => {
        Object.assign(tls, { cert: m.cert, key: m.key, ca: m.ca });
        pools.setTLS({ ...tls });
      },
    });
  }
  if (t.peerServer || t.peerUWS) {
    const server = t.peerServer;
    const uwsListener = t.peerUWS;
    specs.push({
      name: 'peer-serving',
      certFile: c.peerTLSCertFile ?? c.tlsCertFile,
      keyFile: c.peerTLSPrivateKeyFile ?? c.tlsPrivateKeyFile,
      caFile: c.requestheaderClientCAFile,
      pairTrustFile: c.peerCAFile,
      apply: (m) => {
        if (server) server.setSecureContext({ cert: m.cert, key: m.key, ca: m.ca, ...policy });
        else if (uwsListener) reloadUWS(uwsListener, m, 'the peer listener', t.log);
        if (m.ca) t.peerCA?.set(m.ca);
      },
    });
  }
  if (t.local && t.localTLS) {
    const tls = t.localTLS;
    const local = t.local;
    specs.push({
      name: 'local-apiserver',
      // The proxy client pair is presented to the local apiserver too when the daemon sends it there.
      ...(tls.cert ? { certFile: c.proxyClientCertFile, keyFile: c.proxyClientKeyFile, pairTrustFile: c.requestheaderClientCAFile } : {}),
      caFile: c.localAPIServerCAFile,
      apply: (m) => {
        Object.assign(tls, { ca: m.ca, ...(tls.cert ? { cert: m.cert, key: m.key } : {}) });
        for (const p of local) p.swap();
      },
    });
  }
  if (c.tlsCertFile && c.tlsPrivateKeyFile) {
    if (t.clientServer) {
      const server = t.clientServer;
      specs.push({
        name: 'serving',
        certFile: c.tlsCertFile,
        keyFile: c.tlsPrivateKeyFile,
        caFile: c.clientCAFile,
        apply: (m) => {
          server.setSecureContext({ cert: m.cert, key: m.key, ...(m.ca ? { ca: m.ca } : {}), ...policy });
          if (m.ca) t.certificateUsers?.setClientCA(m.ca);
        },
      });
    } else if (t.clientUWS) {
      const uwsListener = t.clientUWS;
      specs.push({
        name: 'serving',
        certFile: c.tlsCertFile,
        keyFile: c.tlsPrivateKeyFile,
        caFile: c.clientCAFile,
        apply: (m) => {
          reloadUWS(uwsListener, m, 'the client listener', t.log);
          if (m.ca) t.certificateUsers?.setClientCA(m.ca);
        },
      });
    }
  }
  const reloaders = specs.filter((s) => s.certFile || s.caFile).map((s) => new ReloadableTLS(s, { log: t.log, resyncMs: t.resyncMs }));
  for (const r of reloaders) r.start();
  return {
    stop() {
      for (const r of reloaders) r.stop();
    },
    *certificates() {
      const seen = new Set<string>();
      for (const r of reloaders) {
        // local-apiserver presents the proxy client pair (when identity goes to the apiserver).
        const certificate = r.name === 'local-apiserver' ? 'proxy-client' : r.name;
        const notAfterSeconds = r.notAfterSeconds();
        if (notAfterSeconds === undefined || seen.has(certificate)) continue;
        seen.add(certificate);
        yield { certificate, notAfterSeconds };
      }
    },
  };
}

/** A uWS listener takes new material by listening anew (listener/uws.ts listenApps); a failure keeps the old. */
function reloadUWS(l: UwsRunningListener, m: TLSMaterial, what: string, log: Logger): void {
  if (!m.cert || !m.key) return;
  l.reload({ cert: m.cert, key: m.key, ...(m.ca ? { ca: m.ca } : {}) }).catch((e: unknown) => log.error(`${what} kept its previous certificate: the new one could not be served`, e));
}
