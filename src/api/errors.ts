// mvproxy's own failures: one stable code each (like undici's UND_ERR_* and fastify's FST_ERR_*).
// ERRORS below is the one list of every code: its meaning (the doc comment), and the HTTP status and
// metav1.Status reason a client gets if it is answered as a Status, so the code that detects a
// failure never chooses a status by itself. Codes appear in logs ("CODE: message", telemetry/log.ts)
// and Status messages. Code elsewhere names a code as ErrorCode.X (a misspelt one is a type error;
// test/unit/errors-table.test.ts fails on a code written as a string outside this module), makes an
// error with codedError() and tests one with hasCode() or errorCode(). Codes from Node and undici
// (ECONNRESET, UND_ERR_*) are not in the table and are compared as their own strings.
// errorResponse() is the one encoding of a code as a response, shared by both front ends, raw
// sockets (listener/answer.ts) and the proxy core.

import { statusBody, STATUS_CONTENT_TYPE, type StatusReason } from './status';
import { NotSentHeader } from './headers';

/** A failure answered to a client as a metav1.Status with this code (errorResponse). */
export interface ErrorSpec {
  readonly scope: 'answered';
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

/**
 * A failure mvproxy handles itself: logged with its code, turned into another code's answer (a
 * connect timeout is answered MVP_ERR_LOCAL_UNAVAILABLE or MVP_ERR_PEER_UNAVAILABLE), or no
 * request's at all (configuration, discovery, Leases, listening). `status` and `reason` are what it
 * would be answered as: 503 ServiceUnavailable when the other side gave no answer, 502
 * InternalError when it answered something mvproxy cannot use (as MVP_ERR_UPSTREAM_PROTOCOL), 500
 * InternalError for mvproxy's own (configuration, listening, certificates), and for a request
 * target what Go's server answers.
 */
export interface InternalSpec {
  readonly scope: 'internal';
  readonly status: number;
  readonly reason: StatusReason;
}

/**
 * Every code, each with a `scope`: 'answered', a failure a client gets as this code's Status
 * (ErrorSpec); 'internal', one mvproxy handles itself (InternalSpec). A field rather than a second
 * table, so one list holds every code with its meaning; and AnsweredCode, derived from it, is what
 * errorResponse() takes, so an internal code cannot become a client's answer by mistake.
 */
export const ERRORS = {
  // ---- answered to a client

  /** Peers serve the GVR, but none has a usable address (docs/kubernetes-mvp.md §2 step 8; Kubernetes: endpoint_resolution). */
  MVP_ERR_PEER_NO_ENDPOINT: { scope: 'answered', status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: 'error getting ip and port info of the remote server while proxying' },
  /** Every peer that serves the GVR failed to connect or complete TLS (counted as rerouted with code 503, as upstream counts a failed dial). */
  MVP_ERR_PEER_UNAVAILABLE: { scope: 'answered', status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: 'no peer apiserver that serves this resource could be reached', mayHaveRun: true },
  /** The local kube-apiserver did not accept a connection or failed before answering. */
  MVP_ERR_LOCAL_UNAVAILABLE: { scope: 'answered', status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: 'the local kube-apiserver could not be reached', notSent: true },
  /** The connection to the local kube-apiserver failed after the request was (or may have been) sent, before any answer. */
  MVP_ERR_LOCAL_FAILED: { scope: 'answered', status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: 'the connection to the local kube-apiserver failed before it answered', mayHaveRun: true },
  /**
   * The upstream's answer broke HTTP/1.1 framing in a way two readers could read differently
   * (upstream/h1/response-parser.ts): refused, its connection discarded, as Go's ReverseProxy
   * answers a transport error.
   */
  MVP_ERR_UPSTREAM_PROTOCOL: { scope: 'answered', status: 502, reason: 'InternalError', message: "the upstream's answer could not be read safely" },
  /** The upstream did not send response headers within --request-timeout. */
  MVP_ERR_UPSTREAM_TIMEOUT: { scope: 'answered', status: 504, reason: 'Timeout', retryAfter: 1, message: 'the apiserver did not answer within the request timeout', mayHaveRun: true },
  /** The client listener's front end cannot carry this protocol upgrade. */
  MVP_ERR_UPGRADE_UNSUPPORTED: { scope: 'answered', status: 400, reason: 'BadRequest', message: 'this protocol upgrade is not carried by the uWebSockets.js front end: it carries WebSocket (kubectl 1.30 and newer); SPDY (kubectl 1.29 and older exec, attach, port-forward) needs --frontend=node' },
  /** An upgrade request that cannot switch protocols safely (HTTP/1.0, h2c, a body): refused before anything is sent (upstream/upgrade.ts). */
  MVP_ERR_UPGRADE_REFUSED: { scope: 'answered', status: 400, reason: 'BadRequest', message: 'this protocol upgrade is not accepted' },
  /** The apiserver answered a WebSocket upgrade with a 101 that is not a valid WebSocket handshake. */
  MVP_ERR_UPGRADE_FAILED: { scope: 'answered', status: 502, reason: 'InternalError', message: "the apiserver's answer to the WebSocket upgrade was not a valid handshake" },
  /** An upgrade on the peer listener: exec/attach/port-forward are served by the local apiserver of the node the client reached. */
  MVP_ERR_PEER_UPGRADE: { scope: 'answered', status: 400, reason: 'BadRequest', message: 'this peer listener does not take protocol upgrades (the uWebSockets.js peer listener; the node one takes them from verified peers): exec, attach and port-forward are served by the apiserver beside the mvproxy the client reached' },
  /** The request's Expect is not 100-continue (Go's net/http answers 417 too). metav1 has no reason for 417. */
  MVP_ERR_EXPECTATION_FAILED: { scope: 'answered', status: 417, reason: 'BadRequest', message: 'only the expectation 100-continue is supported' },
  /** A peer listener request without a verified client certificate, or with a CN not in --requestheader-allowed-names. */
  MVP_ERR_PEER_UNAUTHORIZED: { scope: 'answered', status: 401, reason: 'Unauthorized', message: 'the peer listener requires a client certificate from the request-header CA with an allowed common name' },
  /**
   * A verified client certificate whose user mvproxy will not assert: kube-apiserver would read it
   * differently or refuse it (api/identity.ts certificateUser). The message says which rule; the
   * request is not forwarded, never as another user.
   */
  MVP_ERR_CERTIFICATE_USER: { scope: 'answered', status: 401, reason: 'Unauthorized', message: "the client certificate's user cannot be forwarded as kube-apiserver would read it", notSent: true },
  /**
   * The request target is one Go's server refuses (a control byte, a space, DEL, an invalid escape
   * in the path: gocompat/http.ts), not in origin-form (absolute or asterisk form), or not bytes
   * mvproxy can forward as the client sent them (listener/head-check.ts). The connection closes.
   */
  MVP_ERR_BAD_REQUEST_TARGET: { scope: 'answered', status: 400, reason: 'BadRequest', message: 'the request target is not a valid path' },
  /** A request line Go's server refuses: a method that is not a token, a protocol other than HTTP/1.x or HTTP/2. The connection closes. */
  MVP_ERR_BAD_REQUEST_LINE: { scope: 'answered', status: 400, reason: 'BadRequest', message: 'malformed HTTP request' },
  /** A request line whose protocol is not HTTP/1.x on an HTTP/1 connection (HTTP/2.0 said there, HTTP/3.0): Go's 505 "unsupported protocol version". The connection closes. */
  MVP_ERR_HTTP_VERSION: { scope: 'answered', status: 505, reason: 'BadRequest', message: 'HTTP version not supported' },
  /**
   * A header field Go's server refuses: a name that is not a token, a value with a control byte or
   * DEL, a missing, repeated or malformed Host (listener/head-check.ts). The connection closes.
   */
  MVP_ERR_BAD_HEADER_FIELD: { scope: 'answered', status: 400, reason: 'BadRequest', message: 'invalid header field' },
  /**
   * A request's header list is larger than its next hop takes (RFC 9113 §6.5.2 counts each field's
   * name and value and 32 bytes): on an HTTP/2 listener, above MAX_HEADER_BYTES, which node:http2
   * applies only once the client acknowledged the SETTINGS that say it (listener/node-http.ts); or
   * above the SETTINGS_MAX_HEADER_LIST_SIZE of the upstream's HTTP/2 connection (upstream/h2/attempt.ts),
   * where the server would have ended the whole connection, every other client's watch on it too
   * (helper 10: ~6 KB of HPACK references decoded to 8 MB and closed the shared connection). Go's
   * server answers 431 to the first and its Transport refuses the second alone. Nothing was sent.
   */
  MVP_ERR_HEADER_LIST_TOO_LARGE: { scope: 'answered', status: 431, reason: 'BadRequest', message: 'request header fields too large', notSent: true },
  /**
   * The one writer of upstream request heads refused a field (upstream/request-head.ts): a
   * method, target, name or value with a byte no request line or field line may carry (CR, LF, NUL,
   * a control byte, a character above U+00FF). Nothing was written. The front ends refuse all of
   * these first; this is the defence behind them, counted (mvproxy_upstream_writes_refused_total).
   */
  MVP_ERR_UNSAFE_REQUEST_FIELD: { scope: 'answered', status: 400, reason: 'BadRequest', message: 'the request carries a byte mvproxy will not write upstream', notSent: true },
  /** The upstream's address (the Host mvproxy writes) is not a valid host: a peer address from a Lease, say. Nothing was written. */
  MVP_ERR_UNSAFE_UPSTREAM_ADDRESS: { scope: 'answered', status: 502, reason: 'InternalError', message: "the upstream's address is not a valid Host", notSent: true },
  /**
   * /apis or legacy discovery while this daemon's discovery is not complete (it just started and has
   * not merged every peer it knows of, snapshot/holder.ts Snapshot.complete): a local-only view would
   * hide what only peers serve, and a namespace controller that read it would finalize a namespace
   * with objects of those kinds left in etcd (issue 39). Clients retry discovery.
   */
  MVP_ERR_DISCOVERY_INCOMPLETE: { scope: 'answered', status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: 'mvproxy has not merged the discovery of every peer yet (it just started): ask again in a moment', notSent: true },
  /** Two Content-Length fields, or Content-Length with Transfer-Encoding: the body could be read two ways (listener/head-check.ts). */
  MVP_ERR_BAD_FRAMING: { scope: 'answered', status: 400, reason: 'BadRequest', message: 'the request body framing is ambiguous (more than one Content-Length, or Content-Length with Transfer-Encoding)' },
  /**
   * A Transfer-Encoding other than exactly `chunked`. 501 as Go's net/http answers; metav1 has no
   * NotImplemented reason, and the fault is the request's, so BadRequest.
   */
  MVP_ERR_UNSUPPORTED_TRANSFER_ENCODING: { scope: 'answered', status: 501, reason: 'BadRequest', message: 'unsupported transfer encoding: only chunked is accepted' },
  /**
   * A request from a peer while this daemon drains: 503 with Retry-After, as kube-apiserver's
   * WithWaitGroup filter answers while it drains ("apiserver is shutting down"), so the source's
   * client sees the peer-served GVR unavailable for a moment, as when the peer is down (a 429 would
   * read as throttling).
   */
  MVP_ERR_PEER_SHUTTING_DOWN: { scope: 'answered', status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: 'the peer apiserver is shutting down', notSent: true },
  /** A request body held for the retry after a local 404 (proxy/held-bodies.ts) stopped arriving before its Content-Length within --request-timeout. metav1 has no reason for 408. */
  MVP_ERR_REQUEST_BODY_TIMEOUT: { scope: 'answered', status: 408, reason: 'Timeout', message: 'the request body did not arrive within the request timeout' },
  /**
   * No upstream connection could be opened because mvproxy is out of file descriptors (EMFILE: its
   * RLIMIT_NOFILE; ENFILE: the system's): its own shortage, not the apiserver's, so the request is
   * not failed over and the local apiserver is not marked down (api/fd-limit.ts). The message names
   * the limit; streams already open keep flowing.
   */
  MVP_ERR_FD_LIMIT: { scope: 'answered', status: 503, reason: 'ServiceUnavailable', retryAfter: 1, message: "no connection to the apiserver could be opened: mvproxy's open files limit (RLIMIT_NOFILE) is reached", notSent: true },
  /**
   * The daemon is shutting down: a new request while it drains, and a request still waiting for its
   * upstream's answer when the drain ends (proxy/proxied.ts endCleanly: a watch ended before its
   * head reached the client).
   */
  MVP_ERR_SHUTTING_DOWN: { scope: 'answered', status: 429, reason: 'TooManyRequests', retryAfter: 1, message: 'the proxy is shutting down, please try again' },

  // ---- internal: handled by mvproxy, never answered under their own code (InternalSpec)

  /** Opening a connection (TCP and TLS) to an upstream took longer than --upstream-connect-timeout: nothing was sent, so it may go elsewhere (upstream/failover.ts isNotSent). */
  MVP_ERR_CONNECT_TIMEOUT: { scope: 'internal', status: 503, reason: 'ServiceUnavailable' },
  /** The upstream refused an HTTP/2 stream (REFUSED_STREAM, RFC 9113 §8.7): it processed nothing, so the request may go elsewhere (upstream/h2/attempt.ts). */
  MVP_ERR_STREAM_REFUSED: { scope: 'internal', status: 503, reason: 'ServiceUnavailable' },
  /** The peer failed its health probe while a request waited for its answer (proxy/inflight.ts abandonPeer): a safe method goes to another peer. */
  MVP_ERR_PEER_DOWN: { scope: 'internal', status: 503, reason: 'ServiceUnavailable' },
  /** A '%' in the path not followed by two hex digits (request/requestinfo.ts): routed to the local apiserver, whose server answers 400. */
  MVP_ERR_REQUESTINFO_INVALID_ESCAPE: { scope: 'internal', status: 400, reason: 'BadRequest' },
  /** A byte < 0x20 or 0x7f in the path or query (request/requestinfo.ts): routed to the local apiserver, whose server answers 400. */
  MVP_ERR_REQUESTINFO_CONTROL_CHARACTER: { scope: 'internal', status: 400, reason: 'BadRequest' },
  /** `.../watch` with nothing after it (request/requestinfo.ts): routed to the local apiserver, whose WithRequestInfo filter answers 500. */
  MVP_ERR_REQUESTINFO_WATCH_PATH: { scope: 'internal', status: 500, reason: 'InternalError' },
  /** `.../proxy` with nothing after it (request/requestinfo.ts): routed to the local apiserver, whose WithRequestInfo filter answers 500. */
  MVP_ERR_REQUESTINFO_PROXY_PATH: { scope: 'internal', status: 500, reason: 'InternalError' },
  /** A discovery fetch got no answer: connect, TLS, timeout, reset (snapshot/fetch.ts). */
  MVP_ERR_DISCOVERY_TRANSPORT: { scope: 'internal', status: 503, reason: 'ServiceUnavailable' },
  /** A discovery fetch was answered other than 200 (or 304 with nothing cached) (snapshot/fetch.ts). */
  MVP_ERR_DISCOVERY_STATUS: { scope: 'internal', status: 502, reason: 'InternalError' },
  /** A discovery fetch's 200 is not aggregated discovery by its Content-Type (snapshot/fetch.ts). */
  MVP_ERR_DISCOVERY_NOT_AGGREGATED: { scope: 'internal', status: 502, reason: 'InternalError' },
  /** A discovery body over MAX_DISCOVERY_BODY_BYTES (aggregation/decode.ts), counted as refused by bytes. */
  MVP_ERR_DISCOVERY_TOO_LARGE: { scope: 'internal', status: 502, reason: 'InternalError' },
  /** A discovery body Kubernetes' decoder would refuse, or the decode worker failed on it (aggregation/decode.ts, merger.ts). */
  MVP_ERR_DISCOVERY_DECODE: { scope: 'internal', status: 502, reason: 'InternalError' },
  /** A peer's discovery lists more groups, versions or resources than PEER_DISCOVERY_LIMITS allow (aggregation/decode.ts). */
  MVP_ERR_DISCOVERY_OVER_LIMIT: { scope: 'internal', status: 502, reason: 'InternalError' },
  /** A flag that cannot be parsed (cli/flags.ts): exit 2 with nothing started. */
  MVP_ERR_FLAG: { scope: 'internal', status: 500, reason: 'InternalError' },
  /** A config file that cannot be read, parsed or accepted (config/load.ts): exit 2. */
  MVP_ERR_CONFIG_FILE: { scope: 'internal', status: 500, reason: 'InternalError' },
  /** Settings that are each valid but do not fit together, or files they name that cannot be used (config/validate.ts): exit 2. */
  MVP_ERR_CONFIG_INVALID: { scope: 'internal', status: 500, reason: 'InternalError' },
  /** A configuration the daemon refuses as it starts (daemon/validate.ts), or a peers file it cannot use (peers/static.ts): exit 2 at start; a bad peers file later keeps the last good list. */
  MVP_ERR_CONFIG: { scope: 'internal', status: 500, reason: 'InternalError' },
  /** The apiserver answered an identity Lease request other than with success (peers/lease-api.ts). */
  MVP_ERR_LEASE_API: { scope: 'internal', status: 502, reason: 'InternalError' },
  /** The Lease watch's resourceVersion is older than the apiserver keeps (410): relist (peers/lease-api.ts). */
  MVP_ERR_WATCH_EXPIRED: { scope: 'internal', status: 502, reason: 'InternalError' },
  /** uWebSockets.js could not listen on an address; it does not say why (listener/uws.ts, cli/start-failure.ts). */
  MVP_ERR_LISTEN: { scope: 'internal', status: 500, reason: 'InternalError' },
  /** A certificate, key or CA bundle that cannot be loaded or does not match (lifecycle/certs.ts): the old one stays on a reload. */
  MVP_ERR_CERTIFICATE: { scope: 'internal', status: 500, reason: 'InternalError' },
} as const satisfies Record<string, ErrorSpec | InternalSpec>;

/** Every code of mvproxy's. */
export type ErrorCode = keyof typeof ERRORS;

/** The codes a client gets as a Status (scope 'answered'): what errorResponse() takes. */
export type AnsweredCode = { [C in ErrorCode]: (typeof ERRORS)[C]['scope'] extends 'answered' ? C : never }[ErrorCode];

/** Each code by name (`ErrorCode.MVP_ERR_FD_LIMIT`), its value the code itself: how code outside this module writes one. */
export const ErrorCode = Object.freeze(Object.fromEntries(Object.keys(ERRORS).map((c) => [c, c]))) as { readonly [C in ErrorCode]: C };

/** An Error that carries one of mvproxy's codes. */
export type CodedError<C extends ErrorCode = ErrorCode> = Error & { readonly code: C };

/** An Error with `code` (for a class of its own, `readonly code = ErrorCode.X` in it instead). */
export function codedError<C extends ErrorCode>(code: C, message: string): CodedError<C> {
  return Object.assign(new Error(message), { code });
}

/** Does `e` (an Error or a plain object carried from a worker) carry `code`? */
export function hasCode<C extends ErrorCode>(e: unknown, code: C): e is { readonly code: C } {
  return (e as { code?: unknown } | null | undefined)?.code === code;
}

/** The mvproxy code `e` carries, or undefined: none, or one of Node's or undici's (ECONNRESET, UND_ERR_*). */
export function errorCode(e: unknown): ErrorCode | undefined {
  const c = (e as { code?: unknown } | null | undefined)?.code;
  return typeof c === 'string' && Object.hasOwn(ERRORS, c) ? (c as ErrorCode) : undefined;
}

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
export function errorResponse(code: AnsweredCode, message?: string, method?: string): ErrorResponse {
  const spec: ErrorSpec = ERRORS[code];
  const retryAfter = spec.mayHaveRun && method !== undefined && method !== 'GET' && method !== 'HEAD' ? undefined : spec.retryAfter;
  const body = statusBody(spec.status, spec.reason, `${message ?? spec.message} (${code})`, retryAfter ? { retryAfterSeconds: retryAfter } : undefined);
  const headers = ['content-type', STATUS_CONTENT_TYPE, 'x-content-type-options', 'nosniff', 'cache-control', 'no-cache, private'];
  if (retryAfter) headers.push('retry-after', String(retryAfter));
  if ('notSent' in spec && spec.notSent) headers.push(NotSentHeader, 'true');
  return { status: spec.status, headers, body };
}
