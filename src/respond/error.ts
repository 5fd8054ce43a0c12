// mvproxy's own errors as a client sees them: the metav1.Status of an ErrorCode, with its headers
// (one place for both front ends and for raw sockets: a connection node:http handed over for an
// upgrade, which no ServerResponse serves any more).

import http from 'node:http';
import type { Duplex } from 'node:stream';
import { statusBody, STATUS_CONTENT_TYPE } from './status';
import { ERRORS, type ErrorCode } from '../upstream/errors';

export interface ErrorResponse {
  status: number;
  /** flat [name, value, ...], lowercased names; no Content-Length (the body's length is known) */
  headers: string[];
  body: Buffer;
}

/** The response for one of mvproxy's own errors; `message` replaces the table's (the code is always appended). */
export function errorResponse(code: ErrorCode, message?: string): ErrorResponse {
  const spec: (typeof ERRORS)[ErrorCode] = ERRORS[code];
  const retryAfter = 'retryAfter' in spec ? spec.retryAfter : undefined;
  const body = statusBody(spec.status, spec.reason, `${message ?? spec.message} (${code})`, retryAfter ? { retryAfterSeconds: retryAfter } : undefined);
  const headers = ['content-type', STATUS_CONTENT_TYPE, 'x-content-type-options', 'nosniff', 'cache-control', 'no-cache, private'];
  if (retryAfter) headers.push('retry-after', String(retryAfter));
  return { status: spec.status, headers, body };
}

/** Writes one of mvproxy's errors as a metav1.Status on a raw client socket and closes it. */
export function answerStatus(client: Duplex, code: ErrorCode, message?: string): void {
  if (client.destroyed) return;
  const r = errorResponse(code, message);
  let head = `HTTP/1.1 ${r.status} ${http.STATUS_CODES[r.status]}\r\n`;
  for (let i = 0; i < r.headers.length; i += 2) head += `${r.headers[i]}: ${r.headers[i + 1]}\r\n`;
  client.write(head + `content-length: ${r.body.length}\r\nconnection: close\r\n\r\n`);
  client.write(r.body);
  closeAfterAnswer(client);
}

/**
 * Ends the client connection after an answer: FIN now, destroy 500 ms later (Go's
 * rstAvoidanceDelay), so a client that already sent more bytes (never read: the socket stays
 * paused) still reads the answer instead of a reset.
 */
export function closeAfterAnswer(client: Duplex): void {
  client.end();
  const t = setTimeout(() => client.destroy(), 500);
  t.unref();
  client.once('close', () => clearTimeout(t));
}
