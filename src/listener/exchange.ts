// The contract between a front end (uWebSockets.js or node:http/https) and the proxy core.
// No uWS or node:http type crosses it: the core reads a request's few fields and writes a
// response through ClientResponse, whatever carries the bytes.

import type { Readable } from 'node:stream';
import type { Identity } from '../api/identity';
import { FIELD_OVERHEAD_BYTES } from '../api/headers';
import type { Refusal } from './head-check';

/** Request header block limit of both front ends (node: maxHeaderSize; uWS: UWS_HTTP_MAX_HEADERS_SIZE). */
export const MAX_HEADER_BYTES = 16 * 1024;

/**
 * Header fields a request may have on node:http2 (maxHeaderListPairs; node's default is 128, and a
 * watch with ~125 fields, or a certificate user's groups as identity headers, got its stream reset:
 * a 503 on the peer route, helper 9). RFC 9113 §6.5.2 counts 32 bytes a field, so no list within
 * MAX_HEADER_BYTES has more than 512: a bound that refuses nothing the byte limit lets through. It
 * also bounds what node decodes before that limit is checked (listener/node-http.ts): a client that
 * never acknowledges the SETTINGS can reference one ~4 KB HPACK table entry once per field, 8 MB a
 * request at the 2,000 this was (helper 10), 2 MB at 512.
 */
export const MAX_HEADER_FIELDS = MAX_HEADER_BYTES / FIELD_OVERHEAD_BYTES;

/**
 * Response headers to pass back to the client: hop-by-hop headers dropped, and Content-Length
 * reported separately because each front end writes it itself from the body it sends (writing it
 * twice would corrupt the response). mvproxy's own answers give the headers as a list; a relayed
 * answer (upstream/h1/response-parser.ts UpstreamHead) also gives them as byte ranges of the
 * upstream's own head (`raw`), which the uWS front end writes without building strings.
 */
export interface ResponseHead {
  /** flat [name, value, ...]; names as the upstream sent them; latin1 byte strings */
  readonly headers: string[];
  /** -1 when the upstream sent no Content-Length (chunked or close-delimited) */
  readonly contentLength: number;
  readonly contentType: string;
  /** A relayed answer's head bytes (the Date line not among the runs: uWS writes its own). */
  readonly raw?: RawResponseHead;
}

/** A relayed head as bytes: the reason phrase's range, and runs of header lines (UpstreamHead says how). */
export interface RawResponseHead {
  readonly buf: Buffer;
  /** "200 OK": the status line after "HTTP/1.1 ". */
  readonly statusStart: number;
  readonly statusEnd: number;
  /** Four numbers a run: name start, name end, value start, the run's end (its value spans the run's later lines). */
  readonly runs: readonly number[];
}

/**
 * A response closes its connection after it (both front ends) when:
 * - it ends before the request body was read to its end and the body cannot be skipped safely
 *   (a reader had started on it, or its framing is in doubt): the unread rest must not hold the
 *   socket;
 * - the listener is draining (ListenerState): as Go's Server.Shutdown disables keep-alives, so a
 *   client's next request opens a new connection (to another server) instead of racing the exit.
 */
export interface ClientResponse {
  /**
   * Status and headers. `flushNow` asks for them to reach the client before any body byte (a watch
   * with no event yet sees its 200 at once, as kube-apiserver sends it) where the front end can
   * send a head alone (node); uWS cannot, and sends it with the first body bytes. No front end
   * ever adds a byte to a body to get a head out (issue 33).
   */
  writeHead(status: number, head: ResponseHead, flushNow: boolean): void;
  /**
   * Writes a body chunk. false = the client is slow: stop until onDrain fires. The chunk is valid
   * during the call only (the relay's reads land in one reused buffer): a front end copies what it
   * keeps past the call, unless `kept` says the chunk stays valid (an HTTP/2 upstream's DATA).
   */
  write(chunk: Buffer, kept?: boolean): boolean;
  /** Ends the response normally. */
  end(): void;
  /** Cuts the client connection: the upstream failed mid-body, so a clean end would be a lie (docs/kubernetes-mvp.md §2.4). */
  destroy(): void;
  /** Set by the core; called each time write() may be called again after it returned false. */
  onDrain: (() => void) | null;
  readonly headersSent: boolean;
}

/**
 * One request as a front end read it. Every string is a byte string, one character a byte (latin1),
 * as the client sent it (listener/head-check.ts: uWS's UTF-8 is turned back into bytes), and the
 * head passed HeadCheck unless `refusal` says why not.
 */
export interface Exchange {
  /** Method as sent, e.g. GET. */
  readonly method: string;
  /** The request target exactly as sent: what goes upstream (path, '?' if sent, query). */
  readonly target: string;
  /** Raw path of the request target, still percent-encoded. */
  readonly path: string;
  /** Raw query without '?', or ''. */
  readonly query: string;
  /** Request headers, flat [name, value, ...], names lowercased, wire order, duplicates kept. */
  readonly headers: readonly string[];
  /** The request's Content-Length, or -1 when it sent none (no body, or chunked / an HTTP/2 body of unknown length). */
  readonly contentLength: number;
  /** First value of x-kubernetes-peer-proxied, if sent. */
  readonly peerProxied: string | undefined;
  readonly remoteAddress: string;
  /** The request body as a stream, or null when the request has none. */
  readonly body: Readable | null;
  readonly res: ClientResponse;
  /** Set by the core; the front end calls it once if the client goes away before the response ended. */
  onClientClose: (() => void) | null;
  /** True once the client went away. */
  readonly clientClosed: boolean;
  /**
   * Set when the request is refused before anything is forwarded (listener/head-check.ts): a
   * request line, field or body framing Go's server refuses, or an Expect other than 100-continue.
   * Answered with it, and the connection closes after the answer, as Go's net/http closes it:
   * nothing pipelined behind it is read.
   */
  readonly refusal: Refusal | undefined;
  /** The user of a client certificate the front end verified (--client-ca-file), if any. */
  readonly identity?: Identity;
  /** A verified client certificate whose user mvproxy will not assert (api/identity.ts): the 401 Status's message. */
  readonly identityRefusal?: string;
}

/**
 * Whether a listener drains (shutdown): every response from then on closes its connection. Read
 * from the daemon's lifecycle (lifecycle/state.ts) when the listener is given it, and set by the
 * listener's own stopAccepting() either way (a listener used alone, as in the benches).
 */
export class ListenerState {
  private stopped = false;
  constructor(private readonly lifecycle?: { readonly draining: boolean }) {}

  get draining(): boolean {
    return this.stopped || (this.lifecycle?.draining ?? false);
  }

  stopAccepting(): void {
    this.stopped = true;
  }
}

/** A listening front end (uWS, node:http, the peer and ops listeners), as the daemon stops it. */
export interface RunningListener {
  readonly port: number;
  /** Stops accepting connections; open ones keep being served (shutdown drain). */
  stopAccepting(): void;
  /** Closes everything at once, open connections included. */
  close(): void;
}
