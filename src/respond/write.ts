// The answers mvproxy writes itself onto a client's Exchange: its own errors as metav1.Status,
// health answers, and an upstream answer that was held back (proxy/proxied.ts). Everything a
// proxied upstream answers streams through upstream/h1/attempt.ts instead.

import type { Exchange } from '../listener/exchange';
import { errorResponse, type AnsweredCode } from '../api/errors';
import { STATUS_CONTENT_TYPE } from '../api/status';
import type { HealthResponse } from '../observability/healthz';
import type { HeldAnswer } from '../upstream/failover';

/** Writes one of mvproxy's own errors as a metav1.Status. */
export function writeStatus(ex: Exchange, code: AnsweredCode, message?: string): void {
  const { status, headers, body } = errorResponse(code, message, ex.method);
  // Answered before the request body was read whole (the upstream died mid-upload): the front end
  // closes the connection after this response (ClientResponse contract).
  ex.res.writeHead(status, { headers, contentLength: body.length, contentType: STATUS_CONTENT_TYPE }, false);
  ex.res.write(body);
  ex.res.end();
}

/** A health answer in Kubernetes' text format (observability/healthz.ts). */
export function writeHealth(ex: Exchange, h: HealthResponse): void {
  const body = Buffer.from(ex.method === 'HEAD' ? '' : h.body);
  const headers = Object.entries(h.headers).flat();
  ex.res.writeHead(h.status, { headers, contentLength: Buffer.byteLength(h.body), contentType: h.headers['content-type'] ?? 'text/plain; charset=utf-8' }, false);
  if (body.length) ex.res.write(body);
  ex.res.end();
}

/** An upstream answer held back (ForwardOptions.holdStatuses) that is the client's answer after all. */
export function writeHeld(ex: Exchange, held: HeldAnswer): void {
  const body = Buffer.concat(held.body);
  if (held.cut) {
    // The upstream failed mid-body: the head as it came, what arrived, then the connection is cut,
    // as for any answer that fails mid-body, so the client sees a truncated answer. Framed with the
    // body it had, it looked whole (a 404 cut at 32 bytes went out as a complete 404).
    ex.res.writeHead(held.status, { headers: held.head.headers, contentLength: held.head.contentLength, contentType: held.head.contentType }, false);
    if (body.length) ex.res.write(body);
    ex.res.destroy();
    return;
  }
  // The held head's lines, its length now the body's (the held head may be a relayed one: its raw
  // runs are not written here, since the framing of what is sent is this body's: the whole body is
  // here, so a chunked answer goes out with its Content-Length, the same bytes). A HEAD answer keeps
  // the length the upstream gave of the body it did not send.
  const length = ex.method === 'HEAD' && held.head.contentLength >= 0 ? held.head.contentLength : body.length;
  ex.res.writeHead(held.status, { headers: held.head.headers, contentLength: length, contentType: held.head.contentType }, false);
  if (body.length && ex.method !== 'HEAD') ex.res.write(body);
  ex.res.end();
}

/** A document mvproxy serves from its snapshot (the /openapi/v3 index): 200, no-cache, as the apiserver's. */
export function writeDocument(ex: Exchange, body: Buffer, contentType: string): void {
  ex.res.writeHead(200, { headers: ['content-type', contentType, 'cache-control', 'no-cache, private'], contentLength: body.length, contentType }, false);
  if (ex.method === 'GET') ex.res.write(body);
  ex.res.end();
}
