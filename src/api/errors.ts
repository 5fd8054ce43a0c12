// mvproxy's own failures: one stable code each (like undici's UND_ERR_* and fastify's FST_ERR_*),
// with the HTTP status and metav1.Status reason a client gets. One table, so the code that
// detects a failure never chooses a status by itself. Codes appear in logs and Status messages.
// errorResponse() is the one encoding of a code as a response, shared by both front ends, raw
// sockets (listener/answer.ts) and the proxy core.

import { statusBody, STATUS_CONTENT_TYPE, type StatusReason } from './status';
import { NotSentHeader } from './headers';

export interface ErrorSpec {
  readonly status: number;
  readonly reason: StatusReason;
  /** Seconds a client should wait before retrying (Retry-After and details.retryAfterSeconds), if any. */
  readonly retryAfter?: number;
  readonly message: string;
  /**
   * The request provably reached no apiserver (no connection was made, or mvproxy refused it before
   * forwarding): the answer carries NotSentHeader, so a source mvproxy asking peers after a local
   * 404 may ask the next one even for a create (proxy/proxied.ts). Never set where the request may
   * have run.
   */
  readonly notSent?: boolean;
  /**
   * The request may have run (the connection failed after it was sent, or the apiserver did not
   * answer in time): Retry-After only for a safe method. client-go resends *any* request, a create
   * too, on a 5xx or 429 that carries Retry-After (rest/request.go checkWait); after a SIGKILL of the
   * local apiserver mid-create it resent one 1 s later through a peer and got 409 AlreadyExists:
   * created twice (test/kube/upgrade.test.ts, "run twice"). kube-apiserver's own 504 carries none.
   */
  readonly mayHaveRun?: boolean;
}

export const ERRORS = {
  /** Peers serve the GVR, but none has a usable address (docs/kubernetes-mvp.md §2 step 8; Kubernetes: endpoint_resolution). */
  MVP_ERR_PEER_NO_ENDPOINT: { status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: 'error getting ip and port info of the remote server while proxying' },
  /** Every peer that serves the GVR failed to connect or complete TLS (counted as rerouted with code 503, as upstream counts a failed dial). */
  MVP_ERR_PEER_UNAVAILABLE: { status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: 'no peer apiserver that serves this resource could be reached', mayHaveRun: true },
  /** The local kube-apiserver did not accept a connection or failed before answering. */
  MVP_ERR_LOCAL_UNAVAILABLE: { status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: 'the local kube-apiserver could not be reached', notSent: true },
  /** The connection to the local kube-apiserver failed after the request was (or may have been) sent, before any answer. */
  MVP_ERR_LOCAL_FAILED: { status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: 'the connection to the local kube-apiserver failed before it answered', mayHaveRun: true },
  /**
   * The upstream's answer broke HTTP/1.1 framing in a way two readers could read differently
   * (upstream/h1/response-parser.ts): refused, its connection discarded, as Go's ReverseProxy
   * answers a transport error.
   */
  MVP_ERR_UPSTREAM_PROTOCOL: { status: 502, reason: 'InternalError', message: "the upstream's answer could not be read safely" },
  /** The upstream did not send response headers within --request-timeout. */
  MVP_ERR_UPSTREAM_TIMEOUT: { status: 504, reason: 'Timeout', retryAfter: 1, message: 'the apiserver did not answer within the request timeout', mayHaveRun: true },
  /** The client listener's front end cannot carry this protocol upgrade. */
  MVP_ERR_UPGRADE_UNSUPPORTED: { status: 400, reason: 'BadRequest', message: 'this protocol upgrade is not carried by the uWebSockets.js front end: it carries WebSocket (kubectl 1.30 and newer); SPDY (kubectl 1.29 and older exec, attach, port-forward) needs --frontend=node' },
  /** An upgrade request that cannot switch protocols safely (HTTP/1.0, h2c, a body): refused before anything is sent (upstream/upgrade.ts). */
  MVP_ERR_UPGRADE_REFUSED: { status: 400, reason: 'BadRequest', message: 'this protocol upgrade is not accepted' },
  /** The apiserver answered a WebSocket upgrade with a 101 that is not a valid WebSocket handshake. */
  MVP_ERR_UPGRADE_FAILED: { status: 502, reason: 'InternalError', message: "the apiserver's answer to the WebSocket upgrade was not a valid handshake" },
  /** An upgrade on the peer listener: exec/attach/port-forward are served by the local apiserver of the node the client reached. */
  MVP_ERR_PEER_UPGRADE: { status: 400, reason: 'BadRequest', message: 'this peer listener does not take protocol upgrades (the uWebSockets.js peer listener; the node one takes them from verified peers): exec, attach and port-forward are served by the apiserver beside the mvproxy the client reached' },
  /** The request's Expect is not 100-continue (Go's net/http answers 417 too). metav1 has no reason for 417. */
  MVP_ERR_EXPECTATION_FAILED: { status: 417, reason: 'BadRequest', message: 'only the expectation 100-continue is supported' },
  /** A peer listener request without a verified client certificate, or with a CN not in --requestheader-allowed-names. */
  MVP_ERR_PEER_UNAUTHORIZED: { status: 401, reason: 'Unauthorized', message: 'the peer listener requires a client certificate from the request-header CA with an allowed common name' },
  /**
   * A verified client certificate whose user mvproxy will not assert: kube-apiserver would read it
   * differently or refuse it (api/identity.ts certificateUser). The message says which rule; the
   * request is not forwarded, never as another user.
   */
  MVP_ERR_CERTIFICATE_USER: { status: 401, reason: 'Unauthorized', message: "the client certificate's user cannot be forwarded as kube-apiserver would read it", notSent: true },
  /** The request target could not be read (invalid percent-encoding, absolute or asterisk form). */
  MVP_ERR_BAD_REQUEST_TARGET: { status: 400, reason: 'BadRequest', message: 'the request target is not a valid path' },
  /** Two Content-Length fields, or Content-Length with Transfer-Encoding: the body could be read two ways (listener/framing.ts). */
  MVP_ERR_BAD_FRAMING: { status: 400, reason: 'BadRequest', message: 'the request body framing is ambiguous (more than one Content-Length, or Content-Length with Transfer-Encoding)' },
  /**
   * A Transfer-Encoding other than exactly `chunked`. 501 as Go's net/http answers; metav1 has no
   * NotImplemented reason, and the fault is the request's, so BadRequest.
   */
  MVP_ERR_UNSUPPORTED_TRANSFER_ENCODING: { status: 501, reason: 'BadRequest', message: 'unsupported transfer encoding: only chunked is accepted' },
  /**
   * A request from a peer while this daemon drains: 503 with Retry-After, as kube-apiserver's
   * WithWaitGroup filter answers while it drains ("apiserver is shutting down"), so the source's
   * client sees the peer-served GVR unavailable for a moment, as when the peer is down (a 429 would
   * read as throttling).
   */
  MVP_ERR_PEER_SHUTTING_DOWN: { status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: 'the peer apiserver is shutting down', notSent: true },
  /** A request body held for the retry after a local 404 (proxy/held-bodies.ts) stopped arriving before its Content-Length within --request-timeout. metav1 has no reason for 408. */
  MVP_ERR_REQUEST_BODY_TIMEOUT: { status: 408, reason: 'Timeout', message: 'the request body did not arrive within the request timeout' },
  /**
   * No upstream connection could be opened because mvproxy is out of file descriptors (EMFILE: its
   * RLIMIT_NOFILE; ENFILE: the system's): its own shortage, not the apiserver's, so the request is
   * not failed over and the local apiserver is not marked down (api/fd-limit.ts). The message names
   * the limit; streams already open keep flowing.
   */
  MVP_ERR_FD_LIMIT: { status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: "no connection to the apiserver could be opened: mvproxy's open files limit (RLIMIT_NOFILE) is reached", notSent: true },
  /** The daemon is shutting down and no longer accepts new requests. */
  MVP_ERR_SHUTTING_DOWN: { status: 429, reason: 'TooManyRequests', retryAfter: 1, message: 'the proxy is shutting down, please try again' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

export interface ErrorResponse {
  status: number;
  /** flat [name, value, ...], lowercased names; no Content-Length (the body's length is known) */
  headers: string[];
  body: Buffer;
}

/**
 * The response for one of mvproxy's own errors; `message` replaces the table's (the code is always
 * appended). `method`, the request's when known: a request that may have run gets Retry-After only
 * if its method is safe (ErrorSpec.mayHaveRun).
 */
export function errorResponse(code: ErrorCode, message?: string, method?: string): ErrorResponse {
  const spec: ErrorSpec = ERRORS[code];
  const retryAfter = spec.mayHaveRun && method !== undefined && method !== 'GET' && method !== 'HEAD' ? undefined : spec.retryAfter;
  const body = statusBody(spec.status, spec.reason, `${message ?? spec.message} (${code})`, retryAfter ? { retryAfterSeconds: retryAfter } : undefined);
  const headers = ['content-type', STATUS_CONTENT_TYPE, 'x-content-type-options', 'nosniff', 'cache-control', 'no-cache, private'];
  if (retryAfter) headers.push('retry-after', String(retryAfter));
  if ('notSent' in spec && spec.notSent) headers.push(NotSentHeader, 'true');
  return { status: spec.status, headers, body };
}
