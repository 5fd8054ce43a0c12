// mvproxy's own errors on a raw client socket: a connection node:http handed over for an upgrade,
// which no ServerResponse serves any more (the peer listener's refused upgrades, the node front
// end's upgrade tunnel in upstream/upgrade.ts). The response itself is api/errors.ts errorResponse.

import http from 'node:http';
import type { Duplex } from 'node:stream';
import { errorResponse, type AnsweredCode } from '../api/errors';

/** Writes one of mvproxy's errors as a metav1.Status on a raw client socket and closes it. */
export function answerStatus(client: Duplex, code: AnsweredCode, message?: string): void {
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
