// Request bodies held whole so that a request the local apiserver answers 404 can be sent again to
// a peer (handler.ts notFound). Each body is at most REPLAY_BODY_MAX, but a client can open many
// requests that send most of a body and stop: measured before this bound, 1,000 HTTP/2 streams of
// 1 MiB − 1 took RSS from 184 to 1,209 MiB for as long as they stayed open (issue 27). So the bytes
// held at once have one process-wide budget (--held-request-body-bytes), a body that stops arriving
// has a deadline (408), and a request past the budget streams its body and gets the local answer,
// as an oversized body does.

import type { Readable } from 'node:stream';
import { ErrorCode } from '../api/errors';

/** The largest request body kept whole to be sent again to a peer: Kubernetes objects written by controllers are a few KiB. */
export const REPLAY_BODY_MAX = 1024 * 1024;

export class HeldBodyBudget {
  private used = 0;
  /** Requests that streamed instead because the budget was spent (logged by the caller, counted here). */
  refused = 0;
  constructor(readonly limit: number) {}

  /** Bytes held now. */
  get held(): number {
    return this.used;
  }

  /** Reserves n bytes; false when they do not fit (the request then streams). */
  take(n: number): boolean {
    if (this.used + n > this.limit) {
      this.refused++;
      return false;
    }
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used -= n;
  }
}

export class BodyTimeoutError extends Error {
  readonly code = ErrorCode.MVP_ERR_REQUEST_BODY_TIMEOUT;
  constructor(ms: number) {
    super(`the request body did not arrive within ${ms} ms`);
  }
}

/**
 * The whole body, exactly `length` bytes, in one Buffer of that size (the budget reserved it; no
 * chunk list beside a concatenated copy). Rejects with BodyTimeoutError when the body has not
 * arrived within `deadlineMs`, and on a body longer or shorter than its Content-Length or a client
 * that went away; the stream is paused then, so nothing more is read into this buffer.
 */
export function readWhole(body: Readable, length: number, deadlineMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const out = Buffer.allocUnsafe(length);
    let got = 0;
    const fail = (err: Error) => {
      clearTimeout(timer);
      body.off('data', onData);
      // Paused, not destroyed: destroying node's IncomingMessage destroys its socket, and the 408
      // could not be written. The answer closes the connection (the body is unread: exchange.ts).
      body.pause();
      reject(err);
    };
    const timer = setTimeout(() => fail(new BodyTimeoutError(deadlineMs)), deadlineMs);
    const onData = (c: Buffer) => {
      if (got + c.length > length) return fail(new Error('body longer than its Content-Length'));
      c.copy(out, got);
      got += c.length;
    };
    body.on('data', onData);
    body.once('end', () => {
      clearTimeout(timer);
      if (got === length) resolve(out);
      else reject(new Error('body shorter than its Content-Length'));
    });
    body.once('error', (e) => fail(e));
    body.once('close', () => {
      if (got !== length || !body.readableEnded) fail(new Error('the client went away before its body arrived'));
    });
  });
}
