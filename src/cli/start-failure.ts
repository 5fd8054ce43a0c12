// What an operator reads when the daemon cannot start for a reason outside the configuration's
// syntax (those exit 2 earlier): one line that names the flag and the cause, never a stack.
import { ErrorCode, hasCode } from '../api/errors';
import type { DaemonConfig } from '../config/types';

const LISTEN_REASONS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (another process listens there)',
  EACCES: 'permission denied (ports below 1024 need CAP_NET_BIND_SERVICE)',
  EADDRNOTAVAIL: 'the address is not on this machine',
};

/** The flags that set the listener on this port, from the configuration. */
function listenerFlags(port: number | undefined, c: DaemonConfig): string {
  if (port === undefined) return 'a listen address';
  if (port === c.securePort) return '--bind-address/--secure-port';
  if (port === c.peerPort) return '--peer-bind-address/--peer-port';
  if (c.metricsBindAddress.endsWith(`:${port}`)) return '--metrics-bind-address';
  return 'a listen address';
}

export function describeStartFailure(e: unknown, c: DaemonConfig): string {
  const err = e as Error & { code?: string; syscall?: string; address?: string; port?: number };
  if (err?.syscall === 'listen' || err?.syscall === 'bind') {
    return `cannot listen on ${err.address ?? '?'}:${err.port ?? '?'} (${listenerFlags(err.port, c)}): ${LISTEN_REASONS[err.code ?? ''] ?? err.code ?? err.message}`;
  }
  if (hasCode(err, ErrorCode.MVP_ERR_LISTEN)) {
    // uWebSockets.js says only that it failed: in use, not permitted, or not a local address.
    const port = Number(/:(\d+)$/.exec(err.message)?.[1]);
    return `${err.message} (${listenerFlags(Number.isFinite(port) ? port : undefined, c)}): the address is in use, not permitted, or not on this machine`;
  }
  return `could not start: ${err?.message ?? String(e)}`;
}
