// Whether a failed attempt may be sent again elsewhere (proxy/proxied.ts decides with these), and
// the errors the request path gives an attempt that it ends itself.

import { ErrorCode } from '../api/errors';
import type { ResponseHead } from '../listener/exchange';

/**
 * Did the request certainly reach no server? Only when the connection (TCP or TLS) was never
 * established, so no request byte was written. A reset on an established connection is ambiguous:
 * the server may have run the request.
 */
export function isNotSent(err: Error & { code?: string }): boolean {
  switch (err.code) {
    case ErrorCode.MVP_ERR_CONNECT_TIMEOUT:
    case 'ECONNREFUSED':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return true;
    default:
      // TLS verification failures carry OpenSSL-style codes: the handshake never completed.
      return typeof err.code === 'string' && TLS_FAILURE.test(err.code);
  }
}

const TLS_FAILURE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|SELF_SIGNED_|DEPTH_ZERO_|ERR_OSSL_)/;

/** GET and HEAD: Kubernetes treats them as safe, so running one twice changes nothing. */
export function isSafeMethod(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

/**
 * May a request that failed on one peer be sent to another? When the first certainly did not act
 * on it (`notSent`: no connection was made); after an ambiguous failure on an established
 * connection (a reset, the peer's probe failing while it waited) only for a safe method. Never once
 * the upstream started reading a streamed body (it cannot be replayed), and never after a timeout
 * (the request may be running).
 */
export function isFailoverSafe(err: Error & { code?: string }, notSent: boolean, method: string, bodyTouched: boolean): boolean {
  if (bodyTouched) return false;
  if (notSent || isNotSent(err)) return true;
  switch (err.code) {
    case 'ECONNRESET':
    case 'EPIPE':
    case ErrorCode.MVP_ERR_PEER_DOWN:
      return isSafeMethod(method);
    default:
      return false;
  }
}

/** An answer held back (a local 404 asked of peers): its status, head and body, to be the client's answer if nobody else has one. */
export interface HeldAnswer {
  status: number;
  head: ResponseHead;
  body: Buffer[];
  /** The upstream failed before the body's end: relayed, this answer must end cut, never as whole. */
  cut?: boolean;
}

/** The peer failed its health probe while this request waited for its answer (proxy/inflight.ts abandonPeer). */
export class PeerDownError extends Error {
  readonly code = ErrorCode.MVP_ERR_PEER_DOWN;
  constructor(why: string) {
    super(`the peer stopped answering while the request waited: ${why}`);
  }
}
