// A purpose-built HTTP/2 client connection for long-running streams (issue 40 §1): once a watch's
// head is out, it is a byte pump, and node:http2 spent more per event than the rest of mvproxy
// (a Readable, an EventEmitter and nghttp2's callbacks per stream and frame). Here frames are read
// straight off the TLS socket's chunks; a DATA frame's payload is handed on as a view of that chunk
// (no copy, no per-stream stream object); HPACK runs only for HEADERS (hpack.ts); window updates are
// batched (one per half window a stream consumed); a turn's outgoing frames leave in one write.
// Measured first as a floor (bench/floor-pump.ts, npm run test:scale -- --cases pumpfloor-local,...):
// 10.2 µs per event against HAProxy's 10.2 and node:http2's floor's 13.5 in the same run.
//
// What it does and does not do. Requests are HEADERS only, with END_STREAM (long-running requests
// carry no body: proxy/proxied.ts sends bodies on HTTP/1.1), so there is no sending-side flow
// control to keep. Receiving: each stream's window is STREAM_WINDOW_BYTES, granted again only as the
// consumer takes the bytes (a paused stream holds at most that much here, then the server waits);
// the connection's window is large so one slow stream never stalls the others. A peer breaking the
// protocol (an oversized frame, a bad header block, PUSH_PROMISE we disabled, DATA past a window) ends
// the stream or the connection as RFC 9113 says; response fields Go's server would never send (a name
// no token, a value with a control byte) end the stream, since the front ends relay them.

import type tls from 'node:tls';
import { isToken, validHeaderFieldValue } from '../../gocompat/http';
import { HpackDecoder, HpackError } from './hpack';

// Frame types, flags, settings and error codes (RFC 9113 §6, §7, §11).
const DATA = 0x0, HEADERS = 0x1, RST_STREAM = 0x3, SETTINGS = 0x4, PUSH_PROMISE = 0x5, PING = 0x6, GOAWAY = 0x7, WINDOW_UPDATE = 0x8, CONTINUATION = 0x9;
const END_STREAM = 0x1, ACK = 0x1, END_HEADERS = 0x4, PADDED = 0x8, PRIORITY_FLAG = 0x20;
const SETTINGS_ENABLE_PUSH = 0x2, SETTINGS_MAX_CONCURRENT_STREAMS = 0x3, SETTINGS_INITIAL_WINDOW_SIZE = 0x4, SETTINGS_MAX_FRAME_SIZE = 0x5, SETTINGS_MAX_HEADER_LIST_SIZE = 0x6;
export const H2_NO_ERROR = 0x0, H2_PROTOCOL_ERROR = 0x1, H2_INTERNAL_ERROR = 0x2, H2_FLOW_CONTROL_ERROR = 0x3, H2_FRAME_SIZE_ERROR = 0x6, H2_REFUSED_STREAM = 0x7, H2_CANCEL = 0x8, H2_COMPRESSION_ERROR = 0x9, H2_ENHANCE_YOUR_CALM = 0xb;
/** Our own frames (ACKs, window updates) the upstream has not read, at most: past it the connection is cut (a PING or SETTINGS flood from a server that never reads). */
const MAX_UNREAD_OUTPUT = 1024 * 1024;
/** What a header block's frames are charged beyond their payload: an empty CONTINUATION is not free. */
const FRAME_CHARGE = 9;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
/** The largest frame we accept: SETTINGS_MAX_FRAME_SIZE is left at its default. */
const MAX_FRAME = 16_384;
const DEFAULT_WINDOW = 65_535;

export interface H2ConnectionOptions {
  /** Each stream's receive window. */
  streamWindow: number;
  /** The connection's receive window. */
  connectionWindow: number;
  /** A response's header list (RFC 7541 §4.1 sizes) and its compressed block at most this. */
  maxHeaderListBytes: number;
}

/** What a stream tells its owner (h2/attempt.ts); each at most once but data, and nothing after end or closed. */
export interface H2StreamSink {
  /** A response head (1xx included), as a flat [name, value, ...] list with :status. */
  head(fields: string[]): void;
  /** A DATA payload (a view of the read; kept by the consumer as long as it likes). False: pause. */
  data(chunk: Buffer): boolean;
  end(): void;
  /** Ended before its end: RST_STREAM's code, REFUSED_STREAM for a stream a GOAWAY did not cover, or the connection's error. */
  closed(code: number): void;
}

export class H2Stream {
  private paused = false;
  /** What arrived while paused, copied into owned pieces (`tail` the one being filled): 1-byte frames cannot cost an object each. */
  private queued: Buffer[] | null = null;
  private tail: Buffer | null = null;
  private tailBytes = 0;
  private endPending = false;
  /** Payloads of the current read, handed on together at its end (connection.ts read): one write per stream per read. */
  batch: Buffer[] | null = null;
  batchFlow = 0;
  batchEnd = false;
  /** Bytes the consumer took since the last WINDOW_UPDATE for this stream. */
  unacked = 0;
  /** What the server may still send on this stream before we grant more. */
  window: number;
  /** The final head arrived (DATA before it is a protocol error). */
  gotHead = false;
  /** END_STREAM came: the stream is out of the connection's table (later frames for its id are a closed stream's), only its queue is left to hand on. */
  remoteEnded = false;
  /** The body's length the head declared (0 for HEAD, 204, 304), or -1; DATA must match it (RFC 9113 §8.1.1). */
  expected = -1;
  received = 0;
  done = false;

  constructor(
    readonly id: number,
    readonly sink: H2StreamSink,
    private readonly conn: H2Connection,
    window: number,
    /** The request was a HEAD: no body follows whatever the head says. */
    readonly head: boolean,
  ) {
    this.window = window;
  }

  /** One read's payloads for this stream (and its end, if it came): to the consumer, or queued while it is paused. */
  deliver(chunk: Buffer, flowLength: number, end: boolean): void {
    if (this.paused) {
      if (chunk.length > 0) this.enqueue(chunk);
      this.unacked += flowLength - chunk.length; // padding is consumed at once
      if (end) this.endPending = true;
      return;
    }
    this.unacked += flowLength;
    if (chunk.length > 0 && !this.sink.data(chunk)) this.paused = true;
    if (end) {
      if (this.paused) this.endPending = true;
      else this.conn.finish(this, true);
      return;
    }
    if (!this.paused) this.conn.grant(this, false);
  }

  /** Copied, never kept as a view: a view of a few bytes would keep its whole read alive (a 16 KiB record for a 4 KiB payload: helper 7). */
  private enqueue(chunk: Buffer): void {
    if (this.tail === null || this.tailBytes + chunk.length > this.tail.length) {
      this.closeTail();
      this.tail = Buffer.allocUnsafe(Math.max(QUEUE_PIECE, chunk.length));
    }
    chunk.copy(this.tail, this.tailBytes);
    this.tailBytes += chunk.length;
  }

  private closeTail(): void {
    if (this.tail === null) return;
    (this.queued ??= []).push(this.tail.subarray(0, this.tailBytes));
    this.tail = null;
    this.tailBytes = 0;
  }

  /** The consumer caught up: what arrived meanwhile goes to it, then the window opens again. */
  resume(): void {
    if (!this.paused || this.done) return;
    this.paused = false;
    this.closeTail();
    const q = this.queued;
    this.queued = null;
    if (q !== null) {
      for (let i = 0; i < q.length; i++) {
        this.unacked += q[i]!.length;
        if (!this.sink.data(q[i]!)) {
          this.paused = true;
          const rest = q.slice(i + 1);
          if (rest.length > 0) this.queued = rest;
          return this.conn.flushSoon();
        }
      }
    }
    if (this.endPending) return this.conn.finish(this, true);
    this.conn.grant(this, true);
  }

  /** The consumer went away: RST_STREAM(CANCEL), no more calls. */
  cancel(): void {
    if (this.done) return;
    this.conn.reset(this, H2_CANCEL, false);
  }
}

/** While a stream is paused what arrives is copied into pieces of this size (at most a window's worth in all). */
const QUEUE_PIECE = 16 * 1024;

export interface H2ConnectionEvents {
  /** Every SETTINGS from the server (the first one: the connection may take streams). */
  settings(maxConcurrentStreams: number | undefined): void;
  goaway(): void;
  close(): void;
}

export class H2Connection {
  private readonly streams = new Map<number, H2Stream>();
  private readonly decoder = new HpackDecoder();
  private nextId = 1;
  private out: Buffer[] = [];
  private flushQueued = false;
  private pending: Buffer | null = null;
  private gotSettings = false;
  /** A header block being continued: its stream, flags and fragments. */
  private blockId = 0;
  private blockFlags = 0;
  private block: Buffer[] | null = null;
  private blockBytes = 0;
  private connUnacked = 0;
  private connWindow: number;
  private peerMaxFrame = MAX_FRAME;
  /** The server's SETTINGS_MAX_HEADER_LIST_SIZE (unlimited until it says one): attempt.ts sends no request above it. */
  peerMaxHeaderList = Infinity;
  /** Streams with DATA payloads in this read, handed on at its end (handOn). */
  private batched: H2Stream[] = [];
  private goneAway = false;
  private ended = false;

  constructor(
    private readonly socket: tls.TLSSocket,
    private readonly o: H2ConnectionOptions,
    private readonly events: H2ConnectionEvents,
  ) {
    this.connWindow = o.connectionWindow;
    const s = Buffer.allocUnsafe(18);
    s.writeUInt16BE(SETTINGS_ENABLE_PUSH, 0);
    s.writeUInt32BE(0, 2);
    s.writeUInt16BE(SETTINGS_INITIAL_WINDOW_SIZE, 6);
    s.writeUInt32BE(o.streamWindow, 8);
    s.writeUInt16BE(SETTINGS_MAX_HEADER_LIST_SIZE, 12);
    s.writeUInt32BE(o.maxHeaderListBytes, 14);
    this.queue(PREFACE);
    this.queue(frame(SETTINGS, 0, 0, s));
    if (o.connectionWindow > DEFAULT_WINDOW) this.queue(frame(WINDOW_UPDATE, 0, 0, u32(o.connectionWindow - DEFAULT_WINDOW)));
    this.flush();
    socket.on('data', (d: Buffer) => this.read(d));
    socket.on('error', () => undefined); // 'close' follows
    socket.on('close', () => this.gone());
  }

  /** Opens a stream: HEADERS with END_STREAM carrying `block` (hpack.ts encodeFields). Throws (nothing written) when the connection takes no streams. */
  request(block: Buffer, sink: H2StreamSink, head = false): H2Stream {
    if (this.ended || this.goneAway) throw Object.assign(new Error('the HTTP/2 connection takes no new streams'), { code: 'ERR_HTTP2_GOAWAY_SESSION' });
    const id = this.nextId;
    this.nextId += 2;
    const st = new H2Stream(id, sink, this, this.o.streamWindow, head);
    this.streams.set(id, st);
    // One HEADERS, or HEADERS and CONTINUATIONs when the block is larger than the server's frame size.
    const max = this.peerMaxFrame;
    for (let at = 0, first = true; first || at < block.length; first = false) {
      const part = block.subarray(at, at + max);
      at += part.length;
      const last = at >= block.length;
      this.queue(frame(first ? HEADERS : CONTINUATION, (first ? END_STREAM : 0) | (last ? END_HEADERS : 0), id, part));
    }
    this.flushSoon();
    return st;
  }

  /** No new streams; the socket ends once the open ones have (graceful). */
  close(): void {
    if (this.ended) return;
    if (!this.goneAway) this.queue(goaway(0, H2_NO_ERROR));
    this.goneAway = true;
    this.flush();
    if (this.streams.size === 0) this.socket.end();
  }

  /** Ends the connection now; its streams are closed with `code`. */
  destroy(code = H2_CANCEL): void {
    if (this.ended) return;
    this.queue(goaway(0, code));
    this.flush();
    // The GOAWAY goes out before the socket closes; a server that never reads it is cut off in 1 s.
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1000).unref();
    this.gone(code);
  }

  // ------------------------------------------------------------ used by H2Stream

  /** Grants the stream (and nothing else) the bytes its consumer took: at half a window, or all of them when `now`. */
  grant(st: H2Stream, now: boolean): void {
    if (st.unacked === 0 || (!now && st.unacked < this.o.streamWindow / 2)) return;
    this.queue(frame(WINDOW_UPDATE, 0, st.id, u32(st.unacked)));
    st.window += st.unacked;
    st.unacked = 0;
    this.flushSoon();
  }

  finish(st: H2Stream, ok: boolean, code = H2_NO_ERROR): void {
    if (st.done) return;
    st.done = true;
    this.streams.delete(st.id);
    if (ok) st.sink.end();
    else st.sink.closed(code);
    if (this.goneAway && this.streams.size === 0 && !this.ended) this.socket.end();
  }

  /** RST_STREAM(code) to the server; the sink hears `closed` unless it asked for it (cancel). */
  reset(st: H2Stream, code: number, tell: boolean): void {
    if (st.done) return;
    // A stream the server ended is closed at both ends: nothing to reset there.
    if (!st.remoteEnded) {
      this.queue(frame(RST_STREAM, 0, st.id, u32(code)));
      this.flushSoon();
    }
    if (tell) this.finish(st, false, code);
    else {
      st.done = true;
      this.streams.delete(st.id);
      if (this.goneAway && this.streams.size === 0 && !this.ended) this.socket.end();
    }
  }

  flushSoon(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    process.nextTick(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  // ------------------------------------------------------------ the wire

  private queue(b: Buffer): void {
    this.out.push(b);
  }

  private flush(): void {
    const out = this.out;
    if (out.length === 0) return;
    this.out = [];
    if (this.socket.destroyed) return;
    if (out.length === 1) return void this.socket.write(out[0]!);
    this.socket.write(Buffer.concat(out));
  }

  private read(d: Buffer): void {
    let b = d;
    let i = 0;
    if (this.pending !== null) {
      // A frame cut by the last read: only its missing bytes are copied to it (at most one frame,
      // 16 KiB), then this read is parsed in place. Joining the whole read to it copied every byte
      // of most reads once more (a TLS record rarely ends on a frame boundary): GC 9 % of busy time.
      const head = this.pending;
      const needHead = Math.max(0, 9 - head.length);
      const len = head.length >= 9 ? (head[0]! << 16) | (head[1]! << 8) | head[2]! : d.length >= needHead ? Buffer.concat([head, d.subarray(0, needHead)]).readUIntBE(0, 3) : -1;
      const missing = len < 0 ? Infinity : 9 + len - head.length;
      if (len > MAX_FRAME) return this.fail(H2_FRAME_SIZE_ERROR);
      if (d.length < missing) {
        this.pending = Buffer.concat([head, d]);
        return;
      }
      this.pending = null;
      b = Buffer.concat([head, d.subarray(0, missing)]);
      this.frames(b, 0);
      b = d;
      i = missing;
    }
    i = this.frames(b, i);
    this.handOn();
    if (!this.ended && i < b.length) this.pending = b.subarray(i);
    this.flush();
    // An upstream that sends PINGs or SETTINGS and never reads their ACKs: cut off, as nghttp2 does.
    if (!this.ended && this.socket.writableLength > MAX_UNREAD_OUTPUT) this.fail(H2_ENHANCE_YOUR_CALM);
  }

  /** Parses the whole frames of `b` from `i`; returns where the first incomplete one starts. */
  private frames(b: Buffer, i: number): number {
    while (!this.ended && b.length - i >= 9) {
      const len = (b[i]! << 16) | (b[i + 1]! << 8) | b[i + 2]!;
      if (len > MAX_FRAME) {
        this.fail(H2_FRAME_SIZE_ERROR);
        break;
      }
      if (b.length - i < 9 + len) break;
      const type = b[i + 3]!;
      const flags = b[i + 4]!;
      const id = b.readUInt32BE(i + 5) & 0x7fffffff;
      const p = b.subarray(i + 9, i + 9 + len);
      i += 9 + len;
      this.onFrame(type, flags, id, p);
    }
    return i;
  }

  /** Each stream's payloads of this read, handed on as one chunk (one copy when there were several). */
  private handOn(): void {
    const streams = this.batched;
    if (streams.length === 0) return;
    this.batched = [];
    for (const st of streams) this.handOnStream(st);
  }

  private handOnStream(st: H2Stream): void {
    const parts = st.batch;
    if (parts === null) return;
    st.batch = null;
    const flow = st.batchFlow;
    const end = st.batchEnd;
    st.batchFlow = 0;
    st.batchEnd = false;
    if (st.done) return;
    st.deliver(parts.length === 0 ? EMPTY : parts.length === 1 ? parts[0]! : Buffer.concat(parts), flow, end);
  }

  /** A connection error (RFC 9113 §5.4.1): GOAWAY with the code, then the socket ends; every stream is closed with it. */
  private fail(code: number): void {
    this.destroy(code);
  }

  private onFrame(type: number, flags: number, id: number, p: Buffer): void {
    if (!this.gotSettings && type !== SETTINGS) return this.fail(H2_PROTOCOL_ERROR); // the server's preface is a SETTINGS frame
    if (this.block !== null && type !== CONTINUATION) return this.fail(H2_PROTOCOL_ERROR);
    switch (type) {
      case DATA:
        return this.onData(flags, id, p);
      case HEADERS: {
        if (id === 0) return this.fail(H2_PROTOCOL_ERROR);
        let s = 0;
        let e = p.length;
        if (flags & PADDED) {
          if (p.length < 1) return this.fail(H2_FRAME_SIZE_ERROR);
          e -= p[0]!;
          s = 1;
        }
        if (flags & PRIORITY_FLAG) s += 5;
        if (e < s) return this.fail(H2_PROTOCOL_ERROR);
        this.blockId = id;
        this.blockFlags = flags;
        this.block = [p.subarray(s, e)];
        this.blockBytes = FRAME_CHARGE + e - s;
        if (flags & END_HEADERS) return this.endBlock();
        return this.checkBlockSize();
      }
      case CONTINUATION:
        if (this.block === null || id !== this.blockId) return this.fail(H2_PROTOCOL_ERROR);
        this.block.push(p);
        this.blockBytes += FRAME_CHARGE + p.length;
        if (flags & END_HEADERS) return this.endBlock();
        return this.checkBlockSize();
      case RST_STREAM: {
        if (p.length !== 4) return this.fail(H2_FRAME_SIZE_ERROR);
        if (id === 0) return this.fail(H2_PROTOCOL_ERROR);
        const st = this.streams.get(id);
        if (st === undefined) return;
        this.handOnStream(st);
        if (!st.done) this.finish(st, false, p.readUInt32BE(0));
        return;
      }
      case SETTINGS:
        return this.onSettings(flags, id, p);
      case PUSH_PROMISE:
        return this.fail(H2_PROTOCOL_ERROR); // we sent SETTINGS_ENABLE_PUSH 0
      case PING:
        if (p.length !== 8) return this.fail(H2_FRAME_SIZE_ERROR);
        if (id !== 0) return this.fail(H2_PROTOCOL_ERROR);
        if (!(flags & ACK)) this.queue(frame(PING, ACK, 0, Buffer.from(p)));
        return;
      case GOAWAY:
        if (p.length < 8) return this.fail(H2_FRAME_SIZE_ERROR);
        return this.onGoaway(p.readUInt32BE(0) & 0x7fffffff);
      case WINDOW_UPDATE:
        // We send no DATA: the server's grants are not needed; only the frame's shape is checked.
        if (p.length !== 4) return this.fail(H2_FRAME_SIZE_ERROR);
        return;
      default:
        return; // PRIORITY and unknown types are ignored (RFC 9113 §5.5)
    }
  }

  private checkBlockSize(): void {
    if (this.blockBytes > this.o.maxHeaderListBytes) this.fail(H2_PROTOCOL_ERROR);
  }

  private onSettings(flags: number, id: number, p: Buffer): void {
    if (id !== 0) return this.fail(H2_PROTOCOL_ERROR);
    if (flags & ACK) return p.length === 0 ? undefined : this.fail(H2_FRAME_SIZE_ERROR);
    if (p.length % 6 !== 0) return this.fail(H2_FRAME_SIZE_ERROR);
    let maxStreams: number | undefined;
    for (let j = 0; j < p.length; j += 6) {
      const k = p.readUInt16BE(j);
      const v = p.readUInt32BE(j + 2);
      if (k === SETTINGS_MAX_CONCURRENT_STREAMS) maxStreams = v;
      else if (k === SETTINGS_MAX_FRAME_SIZE) {
        if (v < MAX_FRAME || v > 16_777_215) return this.fail(H2_PROTOCOL_ERROR);
        this.peerMaxFrame = v;
      } else if (k === SETTINGS_INITIAL_WINDOW_SIZE && v > 0x7fffffff) return this.fail(H2_FLOW_CONTROL_ERROR);
      else if (k === SETTINGS_MAX_HEADER_LIST_SIZE) this.peerMaxHeaderList = v;
    }
    this.queue(frame(SETTINGS, ACK, 0));
    this.gotSettings = true;
    this.events.settings(maxStreams);
  }

  private onGoaway(lastId: number): void {
    this.goneAway = true;
    // Streams above the last one the server processed were not processed: refused, so retriable (RFC 9113 §6.8).
    for (const st of [...this.streams.values()]) if (st.id > lastId) this.finish(st, false, H2_REFUSED_STREAM);
    this.events.goaway();
    if (this.streams.size === 0 && !this.ended) this.socket.end();
  }

  private onData(flags: number, id: number, p: Buffer): void {
    if (id === 0) return this.fail(H2_PROTOCOL_ERROR);
    const flowLength = p.length;
    this.connWindow -= flowLength;
    if (this.connWindow < 0) return this.fail(H2_FLOW_CONTROL_ERROR);
    this.connUnacked += flowLength;
    if (this.connUnacked >= this.o.connectionWindow / 2) {
      this.queue(frame(WINDOW_UPDATE, 0, 0, u32(this.connUnacked)));
      this.connWindow += this.connUnacked;
      this.connUnacked = 0;
    }
    const st = this.streams.get(id);
    if (st === undefined) return; // a stream we cancelled or finished: its bytes in flight are dropped
    st.window -= flowLength;
    if (st.window < 0 || !st.gotHead) return this.malformed(st, st.window < 0 ? H2_FLOW_CONTROL_ERROR : H2_PROTOCOL_ERROR);
    let s = 0;
    let e = p.length;
    if (flags & PADDED) {
      if (p.length < 1 || p[0]! >= p.length) return this.fail(H2_PROTOCOL_ERROR);
      e -= p[0]!;
      s = 1;
    }
    const end = (flags & END_STREAM) !== 0;
    // The body must be as long as the head said (RFC 9113 §8.1.1): more or less is a malformed answer,
    // never relayed as if whole (a longer one would frame bytes of the upstream's choosing as the
    // client's next answer).
    st.received += e - s;
    if (st.expected >= 0 && (st.received > st.expected || (end && st.received !== st.expected))) return this.malformed(st, H2_PROTOCOL_ERROR);
    const payload = s === 0 && e === p.length ? p : p.subarray(s, e);
    if (st.batch === null) {
      st.batch = [];
      this.batched.push(st);
    }
    if (payload.length > 0) st.batch.push(payload);
    st.batchFlow += flowLength;
    if (end) {
      st.batchEnd = true;
      this.remoteEnd(st);
    }
  }

  /**
   * END_STREAM arrived: the answer is complete. The stream leaves the table at once, so a later
   * RST_STREAM, DATA or HEADERS for its id, or the connection closing, cannot cut what a paused
   * consumer has not taken yet (helper 7: a slow watcher lost its last events when the server closed).
   */
  private remoteEnd(st: H2Stream): void {
    st.remoteEnded = true;
    this.streams.delete(st.id);
  }

  /** A stream error: RST_STREAM, the owner told; what this read brought for the stream is dropped (its answer is cut either way). */
  private malformed(st: H2Stream, code: number): void {
    st.batch = null;
    this.reset(st, code, true);
  }

  private endBlock(): void {
    const parts = this.block!;
    this.block = null;
    const block = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    let fields: string[];
    try {
      // Decoded whatever the stream: the table is the connection's and must stay in step.
      fields = this.decoder.decode(block, this.o.maxHeaderListBytes);
    } catch (e) {
      if (e instanceof HpackError) return this.fail(H2_COMPRESSION_ERROR);
      throw e;
    }
    const st = this.streams.get(this.blockId);
    if (st === undefined) return;
    const end = (this.blockFlags & END_STREAM) !== 0;
    if (st.gotHead) {
      // Trailers: not relayed (the front ends frame bodies themselves); they must end the stream,
      // and the body must have been as long as the head said.
      if (!end || (st.expected >= 0 && st.received !== st.expected)) return this.malformed(st, H2_PROTOCOL_ERROR);
      this.remoteEnd(st);
      this.handOnStream(st);
      if (!st.done) st.deliver(EMPTY, 0, true);
      return;
    }
    const status = responseStatus(fields);
    if (status < 0) return this.reset(st, H2_PROTOCOL_ERROR, true);
    if (status < 200) {
      if (end) return this.reset(st, H2_PROTOCOL_ERROR, true);
      return st.sink.head(fields); // informational: the owner ignores it
    }
    const length = contentLength(fields);
    if (length === -2) return this.reset(st, H2_PROTOCOL_ERROR, true);
    // No body after a HEAD, a 204 or a 304, whatever Content-Length says (RFC 9110 §6.4.1).
    st.expected = st.head || status === 204 || status === 304 ? 0 : length;
    if (end && st.expected > 0) return this.reset(st, H2_PROTOCOL_ERROR, true);
    st.gotHead = true;
    if (end) this.remoteEnd(st);
    st.sink.head(fields);
    if (end && !st.done) st.deliver(EMPTY, 0, true);
  }

  /** The socket closed: every open stream is closed with `code`. */
  private gone(code = H2_INTERNAL_ERROR): void {
    if (this.ended) return;
    this.ended = true;
    this.block = null;
    this.pending = null;
    const open = [...this.streams.values()];
    this.streams.clear();
    for (const st of open) {
      st.done = true;
      st.sink.closed(code);
    }
    this.events.close();
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * A response's :status when its fields are what Go's server sends and the front ends may relay: one
 * :status of three digits, first; no other pseudo-header; every name a lowercase token; every value
 * without a control byte. -1 otherwise.
 */
export function responseStatus(fields: string[]): number {
  let status = -1;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!;
    const value = fields[i + 1]!;
    if (name.charCodeAt(0) === 0x3a) {
      if (name !== ':status' || i !== 0 || !/^[1-9]\d\d$/.test(value)) return -1;
      status = Number(value);
      continue;
    }
    if (!isToken(name) || name !== name.toLowerCase() || !validHeaderFieldValue(value)) return -1;
  }
  return status;
}

/** The Content-Length the fields declare: -1 when none, -2 when malformed or when values differ. */
function contentLength(fields: string[]): number {
  let n = -1;
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i] !== 'content-length') continue;
    const v = fields[i + 1]!;
    if (!/^\d{1,15}$/.test(v)) return -2;
    const x = Number(v);
    if (n >= 0 && x !== n) return -2;
    n = x;
  }
  return n;
}

function frame(type: number, flags: number, id: number, payload?: Buffer): Buffer {
  const len = payload?.length ?? 0;
  const b = Buffer.allocUnsafe(9 + len);
  b[0] = len >>> 16;
  b[1] = (len >>> 8) & 0xff;
  b[2] = len & 0xff;
  b[3] = type;
  b[4] = flags;
  b.writeUInt32BE(id, 5);
  if (payload) payload.copy(b, 9);
  return b;
}

function u32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

function goaway(lastId: number, code: number): Buffer {
  const p = Buffer.allocUnsafe(8);
  p.writeUInt32BE(lastId >>> 0, 0);
  p.writeUInt32BE(code, 4);
  return frame(GOAWAY, 0, 0, p);
}
