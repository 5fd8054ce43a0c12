// Complete (kube-apiserver's Complete(), which returns a CompletedConfig): everything the daemon
// derives from a valid configuration, once, before it builds anything: whether the proxy is on, the
// TLS policy, the certificate files read, the identity header rules and the client listener's front
// end. Nothing here listens or starts a timer.

import { readFileSync } from 'node:fs';
import type { DaemonConfig } from '../config/types';
import { tlsPolicy, type TLSPolicy } from '../config/tls-policy';
import { chooseFrontend, type UWSLoad } from '../listener/frontend';
import { IdentityHeaderRules } from '../upstream/headers';
import { PEER_SERVER_NAME, type TLSFiles } from '../upstream/pools';
import type { Logger } from '../telemetry/log';
import { ConfigError, proxyEnabled } from './validate';

type UWS = typeof import('uwebsockets');

export interface CompletedConfig {
  readonly config: DaemonConfig;
  /** The feature gate on and --peer-ca-file set (validate.ts proxyEnabled): the peer listener, peering and peer routing. */
  readonly proxyEnabled: boolean;
  /** --tls-min-version / --tls-cipher-suites: every listener and every upstream connection. */
  readonly policy: TLSPolicy;
  /** The client listener's TLS; undefined: plain HTTP (loopback only, validate.ts). */
  readonly clientTLS: { cert: Buffer; key: Buffer; clientCA?: Buffer; policy: TLSPolicy } | undefined;
  /** The client listener's front end as --frontend chose it; run.ts falls back to node:http when uWS cannot listen under auto. */
  readonly frontend: { frontend: 'uws'; uws: UWS; reason: string } | { frontend: 'node'; reason: string };
  readonly localURL: URL;
  /**
   * TLS to the local apiserver, with the proxy client certificate: it is what makes the identity
   * headers of certificate users (--client-ca-file) and of peers' users trusted there. A reload
   * changes it in place (lifecycle/reload.ts): upgrade tunnels read it when they dial.
   */
  readonly localTLS: TLSFiles | undefined;
  /**
   * The same without the client certificate, for requests with no front-proxy identity (bearer
   * tokens, anonymous, mvproxy's own token: they must reach the apiserver as they would directly).
   * A function: made from localTLS as it is at each call.
   */
  localPlainTLS(): TLSFiles | undefined;
  /** Mutual TLS to peers' peer listeners (changed in place by a reload, lifecycle/reload.ts). */
  readonly peerTLS: TLSFiles;
  /** The peer listener's serving pair and the CA of peers' client certificates (proxy on). */
  readonly peerListener: { cert: Buffer; key: Buffer; clientCA: Buffer } | undefined;
  /** Front-proxy identity header names (--requestheader-*-headers). */
  readonly identityRules: IdentityHeaderRules;
}

/** `loadUWS`: loads the uWebSockets.js module (listener/uws.ts loadUWS; replaceable to exercise the fallback). */
export function complete(config: DaemonConfig, log: Logger, loadUWS: () => UWSLoad): CompletedConfig {
  const read = (f: string | undefined) => (f ? readFileSync(f) : undefined);
  const proxy = proxyEnabled(config);
  if (config.featureGates.UnknownVersionInteroperabilityProxy !== false && !config.peerCAFile) log.info(0, '--peer-ca-file is not set: the mixed version proxy is off and every request goes to the local apiserver');

  const policy = tlsPolicy(config.tlsMinVersion, config.tlsCipherSuites);
  const clientTLS = config.tlsCertFile && config.tlsPrivateKeyFile ? { cert: read(config.tlsCertFile)!, key: read(config.tlsPrivateKeyFile)!, clientCA: read(config.clientCAFile), policy } : undefined;
  const frontend = chooseFrontend(config.frontend, { clientCertificates: !!clientTLS?.clientCA, tlsMinVersion: clientTLS ? policy.minVersion : undefined }, loadUWS);
  if ('error' in frontend) throw new ConfigError(frontend.error);

  const localURL = new URL(config.localAPIServer);
  const localTLS: TLSFiles | undefined =
    localURL.protocol === 'https:' ? { ca: read(config.localAPIServerCAFile), servername: config.localAPIServerServerName, cert: read(config.proxyClientCertFile), key: read(config.proxyClientKeyFile), policy } : undefined;
  const peerTLS: TLSFiles = { ca: read(config.peerCAFile), cert: read(config.proxyClientCertFile), key: read(config.proxyClientKeyFile), servername: PEER_SERVER_NAME, policy };
  // validate.ts checked the three are set when the proxy is on.
  const peerListener = proxy ? { cert: read(config.peerTLSCertFile ?? config.tlsCertFile)!, key: read(config.peerTLSPrivateKeyFile ?? config.tlsPrivateKeyFile)!, clientCA: read(config.requestheaderClientCAFile)! } : undefined;
  return {
    config,
    proxyEnabled: proxy,
    policy,
    clientTLS,
    frontend,
    localURL,
    localTLS,
    localPlainTLS: () => localTLS && { ca: localTLS.ca, servername: localTLS.servername, policy },
    peerTLS,
    peerListener,
    identityRules: new IdentityHeaderRules(config.requestheaderUsernameHeaders, config.requestheaderGroupHeaders, config.requestheaderExtraHeadersPrefix, config.requestheaderUidHeaders),
  };
}
