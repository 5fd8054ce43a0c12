// Validate (kube-apiserver's options.Validate()): what startDaemon refuses before it reads a file or
// opens a port. The CLI has already run config/validate.ts validateConfig, which reports these with
// their setting names among every other problem; startDaemon is also called with configurations
// that never went through it (tests, the demo, bench), so the two rules a running daemon depends on
// are checked here again.

import { ErrorCode } from '../api/errors';
import type { DaemonConfig } from '../config/types';
import { isLoopback } from '../config/values';

export class ConfigError extends Error {
  readonly code = ErrorCode.MVP_ERR_CONFIG;
}

/** As kube-apiserver 1.36: the proxy needs the feature gate and --peer-ca-file; without the file it is off (complete.ts says so). */
export function proxyEnabled(config: DaemonConfig): boolean {
  return config.featureGates.UnknownVersionInteroperabilityProxy !== false && !!config.peerCAFile;
}

/** Throws ConfigError for a configuration the daemon cannot serve. */
export function validate(config: DaemonConfig): void {
  if (!(config.tlsCertFile && config.tlsPrivateKeyFile) && !isLoopback(config.bindAddress)) {
    throw new ConfigError(`--bind-address=${config.bindAddress} is not a loopback address: plain HTTP is only served on loopback; set --tls-cert-file and --tls-private-key-file`);
  }
  if (proxyEnabled(config) && (!(config.peerTLSCertFile ?? config.tlsCertFile) || !(config.peerTLSPrivateKeyFile ?? config.tlsPrivateKeyFile) || !config.requestheaderClientCAFile)) {
    throw new ConfigError('the peer listener needs a serving certificate (--peer-tls-cert-file/--peer-tls-private-key-file or --tls-cert-file/--tls-private-key-file) and --requestheader-client-ca-file');
  }
}
