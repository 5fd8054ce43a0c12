// The HTTP/1.1 response reader of mvproxy's own upstream client (issue 28): one pass over the bytes
// an upstream (the local kube-apiserver, a peer mvproxy) sends, no header object built.
//
// - The head is found with one indexOf("\r\n\r\n") (across reads when it is split), scanned once: the
//   status, the framing fields, and the runs of header lines the client gets (hop-by-hop lines,
//   Content-Length, Transfer-Encoding and Date left out: each front end writes its own framing and
//   uWS its own Date). The relayed lines are byte ranges of the upstream's head (UpstreamHead).
// - Bodies are slices (subarray) of the socket's reads: Content-Length counted down, chunked
//   de-chunked without copying, close-delimited read to EOF.
//
// Strict framing is a security boundary (request smuggling, response splitting): anything two
// parsers could read two ways is refused, and the connection discarded, as a 502 Status before
// anything reached the client (or a cut connection after). Refused (ParseError): both
// Content-Length and Transfer-Encoding; repeated or non-decimal Content-Length; a Transfer-Encoding
// other than exactly one `chunked` (Go's transport: unsupportedTEError); invalid chunk sizes or a
// chunk not followed by CRLF; obs-fold (a line starting with SP or HTAB); a bare CR or LF, NUL or
// another control byte in a field; whitespace before a colon; a name that is not a token; a head
// over MAX_HEAD_BYTES; a 101 (this path never asks to switch), a 1xx that closes the connection, and more than MAX_INFORMATIONAL 1xx
// answers (Go's transport allows 5; 1xx answers are read and not relayed: neither front end can
// write an interim answer). test/unit/response-parser.test.ts compares every decision with
// Node's own llhttp on generated and mutated byte streams.

import { ErrorCode } from '../../api/errors';
import type { RawResponseHead, ResponseHead } from '../../listener/exchange';

/** The longest response head accepted (status line, fields, final CRLF): kube-apiserver's are < 1 KiB; llhttp's default is 16 KiB. */
export const MAX_HEAD_BYTES = 64 * 1024;
/** The longest chunk-size line (with its extensions) and trailer section accepted. */
const MAX_CHUNK_LINE_BYTES = 4 * 1024;
const MAX_TRAILER_BYTES = 16 * 1024;
/** 1xx answers before the final one (Go's transport: max1xxResponses = 5). */
const MAX_INFORMATIONAL = 5;
/** 2^53 − 1 fits 13 hex digits; more can only overflow. */
const MAX_CHUNK_SIZE_DIGITS = 13;

export class ParseError extends Error {
  readonly code = ErrorCode.MVP_ERR_UPSTREAM_PROTOCOL;
}

/** RFC 9110 tchar, as a lookup table. */
const TCHAR = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~") TCHAR[c.charCodeAt(0)] = 1;
for (let c = 0x30; c <= 0x39; c++) TCHAR[c] = 1;
for (let c = 0x41; c <= 0x5a; c++) TCHAR[c] = 1;
for (let c = 0x61; c <= 0x7a; c++) TCHAR[c] = 1;
/** Bytes allowed in a field value and the reason phrase: HTAB, SP, VCHAR, obs-text (RFC 9110 §5.5). */
const FIELD_BYTE = new Uint8Array(256);
FIELD_BYTE[0x09] = 1;
for (let c = 0x20; c <= 0xff; c++) if (c !== 0x7f) FIELD_BYTE[c] = 1;
const HEX = new Int8Array(256).fill(-1);
for (let c = 0; c < 10; c++) HEX[0x30 + c] = c;
for (let c = 0; c < 6; c++) HEX[0x41 + c] = HEX[0x61 + c] = 10 + c;

/** What kind of header a name is, by the lowercase bytes (classify). */
const H_OTHER = 0;
const H_CONTENT_LENGTH = 1;
const H_TRANSFER_ENCODING = 2;
const H_CONNECTION = 3;
const H_HOP = 4; // keep-alive, proxy-connection, proxy-authenticate, proxy-authorization, te, trailer, upgrade
const H_DATE = 5;
const H_CONTENT_TYPE = 6;
const H_NOT_SENT = 7; // x-mvproxy-not-sent (api/headers.ts NotSentHeader)
const H_KEEP_ALIVE = 8;

const NAMES: [string, number][] = [
  ['content-length', H_CONTENT_LENGTH],
  ['transfer-encoding', H_TRANSFER_ENCODING],
  ['connection', H_CONNECTION],
  ['keep-alive', H_KEEP_ALIVE],
  ['proxy-connection', H_HOP],
  ['proxy-authenticate', H_HOP],
  ['proxy-authorization', H_HOP],
  ['te', H_HOP],
  ['trailer', H_HOP],
  ['upgrade', H_HOP],
  ['date', H_DATE],
  ['content-type', H_CONTENT_TYPE],
  ['x-mvproxy-not-sent', H_NOT_SENT],
];
/** By length, the names of that length. */
const BY_LENGTH: [Buffer, number][][] = [];
for (const [n, k] of NAMES) (BY_LENGTH[n.length] ??= []).push([Buffer.from(n, 'latin1'), k]);

function classify(b: Buffer, start: number, end: number): number {
  const cands = BY_LENGTH[end - start];
  if (cands === undefined) return H_OTHER;
  outer: for (const [name, kind] of cands) {
    // Names are tokens (checked before): OR-ing 0x20 lowercases letters and leaves '-' and digits.
    for (let i = 0; i < name.length; i++) if ((b[start + i]! | 0x20) !== name[i]) continue outer;
    return kind;
  }
  return H_OTHER;
}

/**
 * The final response head as the client gets it: the status, and the header lines to relay as
 * byte ranges of the upstream's own head (nothing re-encoded).
 */
export class UpstreamHead implements ResponseHead, RawResponseHead {
  /** The head's bytes, status line to the blank line. */
  readonly buf: Buffer;
  readonly status: number;
  /** The reason phrase's range in buf ("200 OK" starts at statusStart; end excludes CRLF). */
  readonly statusStart: number;
  readonly statusEnd: number;
  /**
   * Runs of consecutive relayed header lines, four numbers each: the first line's name start and
   * end, its value start, and the end of the run's last line (before its CRLF). A run's value range
   * therefore spans the following lines with their CRLFs, so one "name: value" write relays a run
   * byte for byte (listener/uws.ts). Date lines are not in any run (uWS writes its own).
   */
  readonly runs: number[];
  /** Where the Date line's value is (start, end), or -1: the node front end relays it. */
  dateStart = -1;
  dateEnd = -1;
  /** -1 when the upstream sent no Content-Length. */
  contentLength = -1;
  /** Keep-Alive: timeout=N, in seconds (node:http servers send 5), or -1: how long the upstream keeps an idle connection. */
  keepAliveSeconds = -1;
  chunked = false;
  /** The upstream closes the connection after this response (Connection: close, HTTP/1.0, close-delimited body). */
  close = false;
  /** Header names a Connection header listed (lowercased), dropped from the relayed lines: rare. */
  private named: Set<string> | undefined;
  private typeStart = -1;
  private typeEnd = -1;
  private pairs: string[] | undefined;

  constructor(buf: Buffer, status: number, statusStart: number, statusEnd: number, runs: number[]) {
    this.buf = buf;
    this.status = status;
    this.statusStart = statusStart;
    this.statusEnd = statusEnd;
    this.runs = runs;
  }

  /** ResponseHead: the head is its own byte form. */
  get raw(): RawResponseHead {
    return this;
  }

  get contentType(): string {
    return this.typeStart < 0 ? '' : this.buf.toString('latin1', this.typeStart, this.typeEnd);
  }

  /**
   * The relayed headers as a flat [name, value, ...] list of byte strings (latin1: one character a
   * byte), Date included in its place: for the node front end, held answers and logs. Built on
   * first use.
   */
  get headers(): string[] {
    if (this.pairs !== undefined) return this.pairs;
    const out: string[] = [];
    const b = this.buf;
    const r = this.runs;
    let run = 0;
    // Walk the runs line by line; the Date line, outside them, goes back in order.
    let dateDone = this.dateStart < 0;
    for (; run < r.length; run += 4) {
      let lineStart = r[run]!;
      const runEnd = r[run + 3]!;
      if (!dateDone && this.dateStart < lineStart) {
        out.push('Date', b.toString('latin1', this.dateStart, this.dateEnd));
        dateDone = true;
      }
      while (lineStart < runEnd) {
        let lineEnd = b.indexOf(CRLF, lineStart);
        if (lineEnd < 0 || lineEnd > runEnd) lineEnd = runEnd;
        const colon = b.indexOf(0x3a, lineStart);
        let v = colon + 1;
        while (b[v] === 0x20 || b[v] === 0x09) v++;
        let e = lineEnd;
        while (e > v && (b[e - 1] === 0x20 || b[e - 1] === 0x09)) e--;
        out.push(b.toString('latin1', lineStart, colon), b.toString('latin1', v, e));
        lineStart = lineEnd + 2;
      }
    }
    if (!dateDone) out.push('Date', b.toString('latin1', this.dateStart, this.dateEnd));
    this.pairs = out;
    return out;
  }

  /** The first value of a relayed header (name lowercase), or ''. Not for the hot path: it builds the pairs. */
  get(lowerName: string): string {
    const h = this.headers;
    for (let i = 0; i < h.length; i += 2) if (h[i]!.toLowerCase() === lowerName) return h[i + 1]!;
    return '';
  }

  /** Called by the parser: remember the Content-Type value's range. */
  setType(start: number, end: number): void {
    this.typeStart = start;
    this.typeEnd = end;
  }

  /** Called by the parser for a Connection header naming other headers: they are dropped from the runs. */
  setNamed(named: Set<string>): void {
    this.named = named;
  }

  /** Whether a Connection header named this lowercase header name. */
  isNamed(lowerName: string): boolean {
    return this.named?.has(lowerName) ?? false;
  }
}

const CRLF = Buffer.from('\r\n');
const CRLFCRLF = Buffer.from('\r\n\r\n');

/** What a parser tells the attempt reading through it. */
export interface ResponseSink {
  /** The final (non-1xx) head. */
  onHead(head: UpstreamHead): void;
  /** A body slice: a view of the read, valid during the call only (reads land in one reused buffer): pass it on or copy it. */
  onBody(chunk: Buffer): void;
  /** The response is complete; `extra` bytes followed it in the same read (a server that sends more than it was asked for). */
  onEnd(extra: boolean): void;
}

const S_HEAD = 0;
const S_LENGTH = 1;
const S_CHUNK_SIZE = 2;
const S_CHUNK_DATA = 3;
const S_CHUNK_CRLF = 4;
const S_TRAILERS = 5;
const S_UNTIL_CLOSE = 6;
const S_DONE = 7;

/**
 * One response at a time on one connection (reset() before each request). execute() takes each
 * read in order and throws ParseError on anything it refuses; finish() is called at EOF.
 */
export class ResponseParser {
  private state = S_DONE;
  /** The request was HEAD: the response has no body whatever its framing says. */
  private noBody = false;
  /** Drop x-mvproxy-not-sent from the relayed lines (the upstream is an apiserver, not a peer mvproxy). */
  private fromAPIServer = false;
  private sink: ResponseSink | null = null;
  /** Head bytes of earlier reads when the head is split across reads. */
  private pending: Buffer | null = null;
  private informational = 0;
  /** Bytes left of the body (S_LENGTH) or of the chunk (S_CHUNK_DATA). */
  private remaining = 0;
  /** A chunk-size line or trailer section split across reads. */
  private line = '';
  private lineBytes = 0;
  /** The head of the response under way (its framing decides the body states). */
  head: UpstreamHead | null = null;

  /** The response ended: the parser keeps nothing of it (the connection is idle, maybe for long). */
  detach(): void {
    this.sink = null;
    this.head = null;
    this.pending = null;
  }

  reset(sink: ResponseSink, noBody: boolean, fromAPIServer: boolean): void {
    this.sink = sink;
    this.noBody = noBody;
    this.fromAPIServer = fromAPIServer;
    this.state = S_HEAD;
    this.pending = null;
    this.informational = 0;
    this.remaining = 0;
    this.line = '';
    this.lineBytes = 0;
    this.head = null;
  }

  /** Whether a response is being read (reset() called, onEnd not yet). */
  get busy(): boolean {
    return this.state !== S_DONE;
  }

  /** Whether the response ended on a boundary the connection can be reused after. */
  get reusable(): boolean {
    return this.state === S_DONE && this.head !== null && !this.head.close;
  }

  execute(data: Buffer): void {
    let pos = 0;
    const len = data.length;
    while (pos < len) {
      switch (this.state) {
        case S_HEAD:
          pos = this.readHead(data, pos);
          // A head with no body (HEAD, 204, 304, Content-Length: 0) ends the response here: bytes
          // after it in the same read make the connection unusable (end(true)). Ended with
          // end(false) before looking, a stray answer behind a 204 went back to the pool, and the
          // next client on that connection got it (test/security/hostile-upstream.test.ts).
          if ((this.state as number) === S_DONE) return this.end(pos < len);
          break;
        case S_LENGTH: {
          const n = Math.min(this.remaining, len - pos);
          this.remaining -= n;
          const chunk = pos === 0 && n === len ? data : data.subarray(pos, pos + n);
          pos += n;
          if (this.remaining === 0) this.state = S_DONE;
          this.sink!.onBody(chunk);
          if (this.state === S_DONE) return this.end(pos < len);
          break;
        }
        case S_CHUNK_SIZE:
          pos = this.readChunkSize(data, pos);
          break;
        case S_CHUNK_DATA: {
          const n = Math.min(this.remaining, len - pos);
          this.remaining -= n;
          const chunk = data.subarray(pos, pos + n);
          pos += n;
          if (this.remaining === 0) this.state = S_CHUNK_CRLF;
          this.sink!.onBody(chunk);
          break;
        }
        case S_CHUNK_CRLF:
          pos = this.readChunkCRLF(data, pos);
          break;
        case S_TRAILERS:
          pos = this.readTrailers(data, pos);
          if ((this.state as number) === S_DONE) return this.end(pos < len);
          break;
        case S_UNTIL_CLOSE:
          this.sink!.onBody(pos === 0 ? data : data.subarray(pos));
          return;
        default:
          // Bytes after a complete response, with no request asked: the upstream is out of step.
          throw new ParseError('the upstream sent bytes after a complete response');
      }
    }
  }

  /** The upstream closed the connection: the end of a close-delimited body, else a truncated response. */
  finish(): void {
    if (this.state === S_UNTIL_CLOSE) {
      this.state = S_DONE;
      this.end(false);
      return;
    }
    if (this.state !== S_DONE) throw new ParseError(this.state === S_HEAD ? 'the upstream closed the connection before a complete response head' : 'the upstream closed the connection in the middle of the body');
  }

  private end(extra: boolean): void {
    this.sink!.onEnd(extra);
  }

  private readHead(data: Buffer, pos: number): number {
    let buf: Buffer;
    let from: number;
    let end: number;
    if (this.pending === null) {
      end = data.indexOf(CRLFCRLF, pos);
      if (end < 0) {
        if (data.length - pos > MAX_HEAD_BYTES) throw new ParseError('the upstream response head is too large');
        this.pending = Buffer.from(data.subarray(pos)); // a copy: the read's buffer may be reused
        return data.length;
      }
      buf = data;
      from = pos;
    } else {
      // Split head: search the joined bytes from just before the join (the CRLFCRLF may straddle it).
      const before = this.pending.length;
      buf = Buffer.concat([this.pending, data.subarray(pos)]);
      end = buf.indexOf(CRLFCRLF, Math.max(0, before - 3));
      if (end < 0) {
        if (buf.length > MAX_HEAD_BYTES) throw new ParseError('the upstream response head is too large');
        this.pending = buf;
        return data.length;
      }
      this.pending = null;
      from = 0;
      // The bytes of `data` consumed: those up to the head's end within the joined buffer.
      const consumed = end + 4 - before;
      const head = this.parseHead(buf.subarray(0, end + 4));
      return this.afterHead(head, pos + consumed);
    }
    if (end + 4 - from > MAX_HEAD_BYTES) throw new ParseError('the upstream response head is too large');
    // The head's own bytes, copied out of the read: reads land in one reused buffer (origin.ts), and
    // the head outlives the read (uWS writes it with the first body bytes; a held answer keeps it).
    const headBuf = Buffer.from(buf.subarray(from, end + 4));
    return this.afterHead(this.parseHead(headBuf), end + 4);
  }

  /** After a head: the next state from its framing; a 1xx is skipped and the next head read. */
  private afterHead(head: UpstreamHead | null, pos: number): number {
    if (head === null) {
      // 1xx: informational, not relayed; the final answer follows.
      this.state = S_HEAD;
      return pos;
    }
    this.head = head;
    this.sink!.onHead(head);
    if (this.noBody || head.status === 204 || head.status === 304) this.state = S_DONE;
    else if (head.chunked) this.state = S_CHUNK_SIZE;
    else if (head.contentLength >= 0) {
      this.remaining = head.contentLength;
      this.state = head.contentLength === 0 ? S_DONE : S_LENGTH;
    } else {
      head.close = true;
      this.state = S_UNTIL_CLOSE;
    }
    return pos;
  }

  /** Parses one head (status line through the blank line): the final head, or null for a 1xx. */
  private parseHead(b: Buffer): UpstreamHead | null {
    const n = b.length - 2; // the blank line's CRLF
    // Status line: HTTP/1.1 or HTTP/1.0, SP, three digits, then SP and a reason (optional, as Go and llhttp read it).
    if (n < 14 || b[0] !== 0x48 || b[1] !== 0x54 || b[2] !== 0x54 || b[3] !== 0x50 || b[4] !== 0x2f || b[5] !== 0x31 || b[6] !== 0x2e || (b[7] !== 0x31 && b[7] !== 0x30) || b[8] !== 0x20) {
      throw new ParseError('the upstream response has no HTTP/1.x status line');
    }
    const http10 = b[7] === 0x30;
    const d0 = b[9]! - 0x30;
    const d1 = b[10]! - 0x30;
    const d2 = b[11]! - 0x30;
    if (d0 < 1 || d0 > 5 || d1 < 0 || d1 > 9 || d2 < 0 || d2 > 9) throw new ParseError('the upstream response has an invalid status code');
    const status = d0 * 100 + d1 * 10 + d2;
    let i = 12;
    if (b[i] === 0x20) {
      i++;
      while (i < n && b[i] !== 0x0d) {
        if (FIELD_BYTE[b[i]!] === 0) throw new ParseError('the upstream status line holds a control byte');
        i++;
      }
    }
    if (b[i] !== 0x0d || b[i + 1] !== 0x0a) throw new ParseError('the upstream status line does not end with CRLF');
    const statusEnd = i;
    if (status < 200) {
      if (status === 101) throw new ParseError('the upstream switched protocols on a request that did not ask to');
      if (++this.informational > MAX_INFORMATIONAL) throw new ParseError('the upstream sent too many 1xx responses');
    }
    const runs: number[] = [];
    const head = new UpstreamHead(b, status, 9, statusEnd, runs);
    let runStart = -1;
    let runValue = -1;
    let runNameEnd = -1;
    let lastEnd = -1;
    let sawLength = false;
    let sawTE = false;
    let close = http10;
    let connectionValues: string | undefined;
    i += 2;
    while (i < n) {
      const lineStart = i;
      const first = b[i]!;
      if (first === 0x20 || first === 0x09) throw new ParseError('the upstream response folds a header line (obs-fold)');
      while (TCHAR[b[i]!] === 1) i++;
      if (i === lineStart || b[i] !== 0x3a) throw new ParseError(i === lineStart ? 'the upstream response has an empty header name' : 'the upstream response has a header name that is not a token');
      const nameEnd = i;
      i++;
      while (b[i] === 0x20 || b[i] === 0x09) i++;
      const valueStart = i;
      while (FIELD_BYTE[b[i]!] === 1) i++;
      if (b[i] !== 0x0d || b[i + 1] !== 0x0a) throw new ParseError('the upstream response has a bare CR, LF or control byte in a header value');
      const lineEnd = i;
      let valueEnd = i;
      while (valueEnd > valueStart && (b[valueEnd - 1] === 0x20 || b[valueEnd - 1] === 0x09)) valueEnd--;
      i += 2;
      const kind = classify(b, lineStart, nameEnd);
      let relay = true;
      switch (kind) {
        case H_CONTENT_LENGTH: {
          if (sawLength) throw new ParseError('the upstream response repeats Content-Length');
          sawLength = true;
          // The untrimmed value (lineEnd): trailing whitespace on a framing field is refused, not
          // trimmed (llhttp reads "chunked\t" as not chunked where Go trims it: two readings).
          head.contentLength = decimal(b, valueStart, lineEnd);
          relay = false;
          break;
        }
        case H_TRANSFER_ENCODING:
          if (sawTE) throw new ParseError('the upstream response repeats Transfer-Encoding');
          sawTE = true;
          if (!isChunked(b, valueStart, lineEnd)) throw new ParseError('the upstream response has a Transfer-Encoding other than chunked');
          head.chunked = true;
          relay = false;
          break;
        case H_CONNECTION: {
          const v = b.toString('latin1', valueStart, valueEnd);
          connectionValues = connectionValues === undefined ? v : connectionValues + ',' + v;
          relay = false;
          break;
        }
        case H_KEEP_ALIVE: {
          const m = /(?:^|[\s,])timeout=(\d{1,6})/i.exec(b.toString('latin1', valueStart, valueEnd));
          if (m) head.keepAliveSeconds = Number(m[1]);
          relay = false;
          break;
        }
        case H_HOP:
          relay = false;
          break;
        case H_DATE:
          head.dateStart = valueStart;
          head.dateEnd = valueEnd;
          relay = false;
          break;
        case H_CONTENT_TYPE:
          head.setType(valueStart, valueEnd);
          break;
        case H_NOT_SENT:
          relay = !this.fromAPIServer;
          break;
      }
      if (relay) {
        if (runStart < 0) {
          runStart = lineStart;
          runNameEnd = nameEnd;
          runValue = valueStart;
        }
        lastEnd = lineEnd;
      } else if (runStart >= 0) {
        runs.push(runStart, runNameEnd, runValue, lastEnd);
        runStart = -1;
      }
    }
    if (runStart >= 0) runs.push(runStart, runNameEnd, runValue, lastEnd);
    if (sawLength && sawTE) throw new ParseError('the upstream response has both Content-Length and Transfer-Encoding');
    if (connectionValues !== undefined) {
      let named: Set<string> | undefined;
      for (const t of connectionValues.split(',')) {
        const token = t.trim().toLowerCase();
        if (token === 'close') close = true;
        else if (token === 'keep-alive') {
          if (http10) close = false;
        } else if (token !== '') (named ??= new Set()).add(token);
      }
      if (named !== undefined) dropNamed(head, named);
    }
    if (status < 200) {
      // HTTP/1.0 has no 1xx (RFC 9110 §15.2), and a 1xx saying the connection closes leaves what
      // follows read two ways: llhttp refuses it (HPE_CLOSED_CONNECTION), Go's transport reads on.
      if (close) throw new ParseError('the upstream sent a 1xx answer that closes the connection (HTTP/1.0 or Connection: close)');
      return null;
    }
    head.close = close;
    return head;
  }

  private readChunkSize(data: Buffer, pos: number): number {
    const lf = data.indexOf(0x0a, pos);
    const end = lf < 0 ? data.length : lf + 1;
    this.lineBytes += end - pos;
    if (this.lineBytes > MAX_CHUNK_LINE_BYTES) throw new ParseError('the upstream chunk-size line is too long');
    if (lf < 0) {
      this.line += data.toString('latin1', pos, end);
      return end;
    }
    const line = this.line + data.toString('latin1', pos, end);
    this.line = '';
    this.lineBytes = 0;
    // 1*HEXDIG [ ";" ext ] CRLF, the extension printable, no whitespace (stricter than RFC 9112's BWS: refused, never misread).
    let size = 0;
    let i = 0;
    for (; i < line.length; i++) {
      const h = HEX[line.charCodeAt(i)]!;
      if (h < 0) break;
      if (i >= MAX_CHUNK_SIZE_DIGITS) throw new ParseError('the upstream chunk size is too large');
      size = size * 16 + h;
    }
    if (i === 0) throw new ParseError('the upstream chunk size is not hexadecimal');
    // Extensions: *( ";" token [ "=" token ] ), no whitespace or quoted strings (refused, not read
    // one way here and another by llhttp, which checks them in strict mode). kube-apiserver sends none.
    while (line.charCodeAt(i) === 0x3b /* ; */) {
      const nameStart = ++i;
      while (TCHAR[line.charCodeAt(i)] === 1) i++;
      if (i === nameStart) throw new ParseError('the upstream chunk extension is malformed');
      if (line.charCodeAt(i) === 0x3d /* = */) {
        const valueStart = ++i;
        while (TCHAR[line.charCodeAt(i)] === 1) i++;
        if (i === valueStart) throw new ParseError('the upstream chunk extension is malformed');
      }
    }
    if (i !== line.length - 2 || line.charCodeAt(i) !== 0x0d) throw new ParseError('the upstream chunk-size line is malformed');
    if (size === 0) {
      this.state = S_TRAILERS;
      return end;
    }
    this.remaining = size;
    this.state = S_CHUNK_DATA;
    return end;
  }

  private readChunkCRLF(data: Buffer, pos: number): number {
    // The CRLF after a chunk's data, possibly split across two reads (lineBytes: how much was seen).
    while (pos < data.length && this.lineBytes < 2) {
      if (data[pos] !== (this.lineBytes === 0 ? 0x0d : 0x0a)) throw new ParseError('the upstream chunk is not followed by CRLF');
      pos++;
      this.lineBytes++;
    }
    if (this.lineBytes === 2) {
      this.lineBytes = 0;
      this.state = S_CHUNK_SIZE;
    }
    return pos;
  }

  /** The trailer section after the last chunk: field lines (dropped, as Go's ReverseProxy without announced trailers) and a blank line. */
  private readTrailers(data: Buffer, pos: number): number {
    while (pos < data.length) {
      const lf = data.indexOf(0x0a, pos);
      const end = lf < 0 ? data.length : lf + 1;
      this.lineBytes += end - pos;
      if (this.lineBytes > MAX_TRAILER_BYTES) throw new ParseError('the upstream trailer section is too large');
      this.line += data.toString('latin1', pos, end);
      pos = end;
      if (lf < 0) return pos;
      const line = this.line;
      this.line = '';
      if (line.length < 2 || line.charCodeAt(line.length - 2) !== 0x0d) throw new ParseError('the upstream trailer line does not end with CRLF');
      if (line.length === 2) {
        this.lineBytes = 0;
        this.state = S_DONE;
        return pos;
      }
      if (!isFieldLine(line)) throw new ParseError('the upstream trailer line is malformed');
      // Framing fields may not be trailers (RFC 9110 §6.5.1; llhttp refuses them): a reader that took one would reframe.
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).toLowerCase();
      if (name === 'content-length' || name === 'transfer-encoding') throw new ParseError('the upstream sent a framing field as a trailer');
    }
    return pos;
  }
}

/** A Content-Length value: 1*DIGIT, at most 2^53 − 1 (llhttp and Go refuse signs, spaces and commas inside). */
function decimal(b: Buffer, start: number, end: number): number {
  if (start === end || end - start > 15) throw new ParseError('the upstream Content-Length is not a decimal number');
  let n = 0;
  for (let i = start; i < end; i++) {
    const d = b[i]! - 0x30;
    if (d < 0 || d > 9) throw new ParseError('the upstream Content-Length is not a decimal number');
    n = n * 10 + d;
  }
  return n;
}

function isChunked(b: Buffer, start: number, end: number): boolean {
  if (end - start !== 7) return false;
  const s = 'chunked';
  for (let i = 0; i < 7; i++) if ((b[start + i]! | 0x20) !== s.charCodeAt(i)) return false;
  return true;
}

/** name ":" OWS value OWS CRLF, name a token, value without control bytes. */
function isFieldLine(line: string): boolean {
  let i = 0;
  while (i < line.length && TCHAR[line.charCodeAt(i)] === 1) i++;
  if (i === 0 || line.charCodeAt(i) !== 0x3a) return false;
  for (i++; i < line.length - 2; i++) if (FIELD_BYTE[line.charCodeAt(i)] !== 1) return false;
  return true;
}

/** Rebuilds the runs without the lines whose names a Connection header listed (RFC 9110 §7.6.1). Rare: a second pass. */
function dropNamed(head: UpstreamHead, named: Set<string>): void {
  head.setNamed(named);
  const b = head.buf;
  const old = head.runs.splice(0);
  for (let r = 0; r < old.length; r += 4) {
    let lineStart = old[r]!;
    const runEnd = old[r + 3]!;
    let start = -1;
    let nameEnd = -1;
    let value = -1;
    let last = -1;
    while (lineStart < runEnd) {
      let lineEnd = b.indexOf(CRLF, lineStart);
      if (lineEnd < 0 || lineEnd > runEnd) lineEnd = runEnd;
      const colon = b.indexOf(0x3a, lineStart);
      if (named.has(b.toString('latin1', lineStart, colon).toLowerCase())) {
        if (start >= 0) head.runs.push(start, nameEnd, value, last);
        start = -1;
        if (b.toString('latin1', lineStart, colon).toLowerCase() === 'content-type') head.setType(-1, -1);
      } else {
        if (start < 0) {
          start = lineStart;
          nameEnd = colon;
          value = colon + 1;
          while (b[value] === 0x20 || b[value] === 0x09) value++;
        }
        last = lineEnd;
      }
      lineStart = lineEnd + 2;
    }
    if (start >= 0) head.runs.push(start, nameEnd, value, last);
  }
}
