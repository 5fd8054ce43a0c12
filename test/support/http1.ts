// HTTP/1.1 on a raw socket, for tests that must control which connection a request goes on.
import type net from 'node:net';

/** Reads one HTTP/1.1 response with a Content-Length body from the socket's data so far. */
export function readResponse(s: net.Socket, timeoutMs = 5000): Promise<{ status: number; head: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    let closed = false;
    const t = setTimeout(() => done(new Error(`no whole response within ${timeoutMs} ms: ${JSON.stringify(buf.toString('latin1').slice(0, 200))}`)), timeoutMs);
    const tryParse = () => {
      const text = buf.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return false;
      const head = text.slice(0, end);
      const m = /\r\ncontent-length: *(\d+)/i.exec(head);
      if (!m || buf.length < end + 4 + Number(m[1])) return false;
      buf = buf.subarray(end + 4 + Number(m[1]));
      done(undefined, { status: Number(head.split(' ')[1]), head, closed });
      return true;
    };
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      tryParse();
    };
    const onClose = () => {
      closed = true;
      if (!tryParse()) done(new Error(`closed before a whole response: ${JSON.stringify(buf.toString('latin1').slice(0, 200))}`));
    };
    function done(err?: Error, r?: { status: number; head: string; closed: boolean }) {
      clearTimeout(t);
      s.off('data', onData);
      s.off('close', onClose);
      if (err) reject(err);
      else resolve(r!);
    }
    s.on('data', onData);
    s.on('close', onClose);
  });
}

export function closedWithin(s: net.Socket, ms: number): Promise<boolean> {
  if (s.destroyed || s.readableEnded) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    const yes = () => {
      clearTimeout(t);
      resolve(true);
    };
    s.once('end', yes);
    s.once('close', yes);
  });
}
