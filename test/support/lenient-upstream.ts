// A deliberately lenient "kube-apiserver" on a raw net.Server, for the request-smuggling tests
// (after unjs/httpxy test/request-smuggling.test.ts, GHSA-ggv3-7p47-pfv8): it records exactly the bytes
// it received on each connection, splits them into requests as loosely as a sloppy server would,
// and answers each with a small 200. The tests then read the recorded bytes with a *strict*
// RFC 9112 reader (strictFraming) and assert that nothing forwarded could be read two ways.
//
// Framing used to answer (lenient on purpose): a head ends at the first "\r\n\r\n" (or "\n\n");
// a body is chunked if any Transfer-Encoding mentions "chunked", else the *last* Content-Length
// (a server that disagrees with the proxy about which one counts is exactly the smuggling risk).
// /api and /apis get aggregated discovery, so a daemon can start its sync against it.

import net from 'node:net';
import { readFixture } from './fixtures';

const AGG = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const API = JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{ metadata: { name: '' }, versions: [{ version: 'v1', resources: [{ resource: 'configmaps', scope: 'Namespaced', singularResource: 'configmap', verbs: ['create', 'get', 'list'] }] }] }] });
const APIS = readFixture('v1.33-0b1dcaba/aggregated_v2.json').toString('latin1');

export interface LenientRequest {
  /** Connection number (0-based, in accept order). */
  conn: number;
  /** The request head exactly as received, including the final blank line. */
  head: string;
  /** The body bytes this server took as the body (by its lenient framing). */
  body: Buffer;
  /** The request line's method and target, split on spaces (lenient). */
  method: string;
  target: string;
}

export interface LenientUpstream {
  readonly url: string;
  readonly port: number;
  /** Every byte received, by connection number, in order (sparse after reset()). */
  readonly raw: Buffer[];
  /** Requests as this server split them (discovery fetches included: see `appRequests`). */
  readonly requests: LenientRequest[];
  /**
   * Requests the daemon forwarded for a client: those carrying X-Forwarded-For, which mvproxy
   * appends to every proxied request and never sends on its own fetches (discovery, CRD and
   * APIService lists, OpenAPI, leases).
   */
  appRequests(): LenientRequest[];
  /** Open connections right now. */
  readonly openConnections: number;
  /** Connection numbers the peer (the daemon) has closed. */
  readonly closed: Set<number>;
  /** Forgets what was recorded so far. */
  reset(): void;
  close(): Promise<void>;
}

/** Paths the daemon fetches on its own (discovery sync), never a client's request. */
export function isDaemonOwnFetch(target: string): boolean {
  const p = target.split('?')[0];
  return p === '/api' || p === '/apis' || p === '/openapi/v3' || p === '/apis/apiextensions.k8s.io/v1/customresourcedefinitions' || p === '/apis/apiregistration.k8s.io/v1/apiservices';
}

export interface LenientUpstreamOptions {
  /** The answer to a complete request (default: 200 with a small JSON echo of the target). */
  answer?: (r: LenientRequest) => { status: number; body: string; contentType?: string };
  /**
   * Answers as soon as a request's head is in, before its body, then closes the connection, as Go's
   * net/http does when a handler (authentication, say) refuses a request without reading its body.
   */
  early?: (head: string) => { status: number; body: string } | undefined;
}

export async function startLenientUpstream(opts: LenientUpstreamOptions = {}): Promise<LenientUpstream> {
  const raw: Buffer[] = [];
  const requests: LenientRequest[] = [];
  const sockets = new Set<net.Socket>();
  const closed = new Set<number>();
  let nextConn = 0;

  const server = net.createServer((sock) => {
    const conn = nextConn++;
    sockets.add(sock);
    sock.on('close', () => {
      sockets.delete(sock);
      closed.add(conn);
    });
    sock.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    let discarding = false;
    sock.on('data', (d: Buffer) => {
      raw[conn] = raw[conn] ? Buffer.concat([raw[conn], d]) : d;
      if (discarding) return;
      buf = Buffer.concat([buf, d]);
      if (opts.early) {
        const end = buf.indexOf('\r\n\r\n');
        const a = end === -1 ? undefined : opts.early(buf.subarray(0, end + 4).toString('latin1'));
        if (a) {
          discarding = true;
          sock.end(`HTTP/1.1 ${a.status} X\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(a.body)}\r\nconnection: close\r\n\r\n${a.body}`);
          return;
        }
      }
      for (;;) {
        const taken = takeRequest(buf, conn);
        if (!taken) break;
        buf = buf.subarray(taken.used);
        requests.push(taken.req);
        const a = answer(taken.req, opts.answer);
        sock.write(`HTTP/1.1 ${a.status} X\r\ncontent-type: ${a.contentType ?? 'application/json'}\r\ncontent-length: ${Buffer.byteLength(a.body)}\r\n\r\n${a.body}`);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    raw,
    requests,
    appRequests: () => requests.filter((r) => /\r\nx-forwarded-for:/i.test(r.head)),
    get openConnections() {
      return sockets.size;
    },
    closed,
    reset() {
      raw.length = 0; // connections still open keep their numbers; their later bytes are recorded afresh
      requests.length = 0;
    },
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function answer(r: LenientRequest, custom?: (r: LenientRequest) => { status: number; body: string; contentType?: string }) {
  const path = r.target.split('?')[0];
  if (path === '/api') return { status: 200, body: API, contentType: AGG };
  if (path === '/apis') return { status: 200, body: APIS, contentType: AGG };
  if (custom) return custom(r);
  if (isDaemonOwnFetch(r.target)) return { status: 404, body: '{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}' };
  return { status: 200, body: JSON.stringify({ kind: 'Lenient', target: r.target, bodyBytes: r.body.length }) };
}

/**
 * What a lenient server reads of a request head's lines: the method and target (split on spaces),
 * chunked if any Transfer-Encoding names it, the last of a comma list of Content-Lengths, whether an
 * Upgrade field is there. No check at all: these servers record what arrived, whatever it is.
 */
export function lenientHead(lines: string[]): { method: string; target: string; chunked: boolean; length: number; upgrade: boolean } {
  const [method = '', target = ''] = (lines[0] ?? '').split(' ');
  let chunked = false;
  let length = 0;
  let upgrade = false;
  for (const l of lines.slice(1)) {
    const c = l.indexOf(':');
    if (c <= 0) continue;
    const name = l.slice(0, c).trim().toLowerCase();
    const value = l.slice(c + 1).trim();
    if (name === 'transfer-encoding' && /chunked/i.test(value)) chunked = true;
    if (name === 'content-length') length = Number(value.split(',').pop()) || 0;
    if (name === 'upgrade') upgrade = true;
  }
  return { method, target, chunked, length, upgrade };
}

/** Splits one request off the front of buf, leniently; null = need more bytes. */
function takeRequest(buf: Buffer, conn: number): { req: LenientRequest; used: number } | null {
  const s = buf.toString('latin1');
  let end = s.indexOf('\r\n\r\n');
  let sepLen = 4;
  const lf = s.indexOf('\n\n');
  if (lf !== -1 && (end === -1 || lf < end)) {
    end = lf;
    sepLen = 2;
  }
  if (end === -1) return null;
  const head = s.slice(0, end + sepLen);
  const { method, target, chunked, length } = lenientHead(head.split(/\r?\n/));
  const bodyStart = end + sepLen;
  if (chunked) {
    const used = chunkedEnd(s, bodyStart);
    if (used === -1) return null;
    return { req: { conn, head, body: buf.subarray(bodyStart, used), method, target }, used };
  }
  if (buf.length - bodyStart < length) return null;
  return { req: { conn, head, body: buf.subarray(bodyStart, bodyStart + length), method, target }, used: bodyStart + length };
}

/** End offset of a chunked body starting at i (chunk extensions and trailers skipped), or -1 if incomplete. */
function chunkedEnd(s: string, i: number): number {
  for (;;) {
    const eol = s.indexOf('\r\n', i);
    if (eol === -1) return -1;
    const size = parseInt(s.slice(i, eol).split(';')[0].trim() || '0', 16) || 0;
    if (size === 0) {
      const end = s.indexOf('\r\n\r\n', eol);
      if (s.startsWith('\r\n', eol + 2)) return eol + 4;
      return end === -1 ? -1 : end + 4;
    }
    if (s.length < eol + 2 + size + 2) return -1;
    i = eol + 2 + size + 2;
  }
}

/**
 * Reads one recorded request head the strict way (RFC 9112 §2.2, §5, §6.3) and lists everything a
 * different server could read differently: bare CR or LF, obs-fold, a field name that is not a
 * token, whitespace before the colon, control characters in a value, duplicate or non-numeric
 * Content-Length, Content-Length together with Transfer-Encoding, a Transfer-Encoding other than
 * exactly "chunked", a chunked body whose framing is not well formed. [] = unambiguous.
 */
export function strictFramingProblems(r: Pick<LenientRequest, 'head' | 'body'>): string[] {
  const problems: string[] = [];
  const head = r.head;
  if (!head.endsWith('\r\n\r\n')) problems.push('head does not end in CRLF CRLF');
  const body = head.slice(0, head.length - 4);
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    if (c === 0x0d && body.charCodeAt(i + 1) !== 0x0a) problems.push(`bare CR at ${i}`);
    if (c === 0x0a && body.charCodeAt(i - 1) !== 0x0d) problems.push(`bare LF at ${i}`);
  }
  const lines = body.split('\r\n');
  if (!/^[A-Z]+ \S+ HTTP\/1\.1$/.test(lines[0])) problems.push(`request line ${JSON.stringify(lines[0])}`);
  let cl = 0;
  let te: string[] = [];
  let hosts = 0;
  for (const l of lines.slice(1)) {
    if (/^[ \t]/.test(l)) {
      problems.push(`obs-fold line ${JSON.stringify(l)}`);
      continue;
    }
    const m = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*$/.exec(l);
    if (!m) {
      problems.push(`malformed field line ${JSON.stringify(l)}`);
      continue;
    }
    const name = m[1].toLowerCase();
    const value = m[2];
    if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value)) problems.push(`control character in ${name}`);
    if (name === 'content-length') {
      cl++;
      if (!/^\d+$/.test(value)) problems.push(`content-length ${JSON.stringify(value)}`);
    }
    if (name === 'transfer-encoding') te.push(value);
    if (name === 'host') hosts++;
  }
  if (cl > 1) problems.push(`${cl} content-length fields`);
  if (cl > 0 && te.length > 0) problems.push('content-length with transfer-encoding');
  te = te.flatMap((v) => v.split(',').map((x) => x.trim().toLowerCase())).filter(Boolean);
  if (te.length > 0 && (te.length !== 1 || te[0] !== 'chunked')) problems.push(`transfer-encoding ${JSON.stringify(te)}`);
  if (hosts !== 1) problems.push(`${hosts} host fields`);
  if (te.length === 1 && te[0] === 'chunked') {
    const bad = chunkedProblem(r.body.toString('latin1'));
    if (bad) problems.push(bad);
  }
  return problems;
}

function chunkedProblem(s: string): string | null {
  let i = 0;
  for (;;) {
    const eol = s.indexOf('\r\n', i);
    if (eol === -1) return 'chunk size line without CRLF';
    const sizeLine = s.slice(i, eol);
    if (!/^[0-9a-fA-F]+$/.test(sizeLine)) return `chunk size line ${JSON.stringify(sizeLine)}`;
    const size = parseInt(sizeLine, 16);
    if (size === 0) return s.slice(eol) === '\r\n\r\n' ? null : 'bytes after the last chunk';
    const dataEnd = eol + 2 + size;
    if (s.slice(dataEnd, dataEnd + 2) !== '\r\n') return 'chunk data not followed by CRLF';
    i = dataEnd + 2;
  }
}

// ---------- the raw client side ----------

export interface RawReply {
  /** Every byte the server sent, latin1. */
  out: string;
  /** The status code of the first response, or 0 if none arrived. */
  status: number;
  /** The server closed the connection within the wait. */
  closed: boolean;
  /** ms from connect to the first byte of the reply (Infinity if none). */
  firstByteMs: number;
  /** ms from connect to close (or to the end of the wait). */
  ms: number;
}

/**
 * Sends bytes on a fresh TCP connection, optionally in several writes `gapMs` apart (each its own
 * TCP segment on loopback), and collects what comes back until the server closes or `waitMs`
 * passes after the last write. `keepOpen` returns the socket still open instead of destroying it;
 * `endOnResponse` returns as soon as one complete Content-Length response arrived on a connection
 * the server keeps alive.
 */
export function sendRaw(port: number, data: string | Buffer | (string | Buffer)[], o: { waitMs?: number; gapMs?: number; keepOpen?: boolean; endOnResponse?: boolean } = {}): Promise<RawReply & { socket?: net.Socket }> {
  const parts = Array.isArray(data) ? data : [data];
  const waitMs = o.waitMs ?? 1500;
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.setNoDelay(true);
    let out = '';
    const t0 = Date.now();
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    let firstByteMs = Infinity;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      if (timer) clearTimeout(timer);
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(out)?.[1];
      if (!closed && !o.keepOpen) s.destroy();
      resolve({ out, status: status ? Number(status) : 0, closed, ms: Date.now() - t0, firstByteMs, ...(o.keepOpen && !closed ? { socket: s } : {}) });
    };
    s.on('data', (d) => {
      if (out === '') firstByteMs = Date.now() - t0;
      out += d.toString('latin1');
      if (o.endOnResponse) {
        // A complete Content-Length response on a connection the server keeps open: no need to wait.
        // (A response that says "connection: close" waits for the close, which the caller may check.)
        const he = out.indexOf('\r\n\r\n');
        if (he === -1) return;
        const head = out.slice(0, he).toLowerCase();
        const cl = /\r\ncontent-length: *(\d+)/.exec(head);
        if (!/\r\nconnection: *close/.test(head) && cl && out.length >= he + 4 + Number(cl[1])) finish(false);
      }
    });
    s.on('error', () => undefined);
    s.on('close', () => finish(true));
    // The writes cannot reject: the async body's promise is dropped on purpose.
    s.on('connect', () => void (async () => {
      for (let i = 0; i < parts.length; i++) {
        if (s.destroyed) break;
        s.write(parts[i]);
        if (i < parts.length - 1) await new Promise((r) => setTimeout(r, o.gapMs ?? 30));
      }
      timer = setTimeout(() => finish(false), waitMs);
    })());
  });
}

/** Resolves true when the socket closes within ms, false otherwise (the socket is then destroyed). */
export function closedWithin(s: net.Socket, ms: number): Promise<boolean> {
  if (s.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      s.destroy();
      resolve(false);
    }, ms);
    s.once('close', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}
