// net/url's unescaping: a port of go/src/net/url/url.go of Go 1.26 (unescape in its
// encodePath/encodePathSegment and encodeQueryComponent modes, ishex, unhex). Its control-byte check
// (stringContainsCTLByte) runs in src/request/requestinfo.ts, in the same pass that reads the request
// target's bytes. url.ParseRequestURI unescapes req.URL.Path with unescape, and url.ParseQuery each
// query key and value (src/gocompat/query.ts).
//
// What differs:
// - Ranges: the functions read s[start, end) in place, so the callers slice nothing; unescape returns
//   null where Go returns an EscapeError.
// - Go strings are bytes; ours are UTF-16. A character >= U+0080 stands for its own UTF-8 encoding
//   (a lone surrogate for U+FFFD's), and the unescaped bytes are read back as UTF-8, invalid
//   sequences becoming U+FFFD where Go keeps the raw bytes.

const PERCENT = 0x25;
const PLUS = 0x2b;

/** unhex for a character ishex accepts ([0-9a-fA-F]); -1 for any other. */
function unhex(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/**
 * unescape's first loop alone in encodeQueryComponent mode (QueryUnescape): -1 when it would return an
 * EscapeError, 1 when unescaping changes the text ('%XX' or '+'), 0 when s[start, end) is its own result.
 */
export function queryUnescapeCheck(s: string, start: number, end: number): number {
  let r = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c === PERCENT) {
      if (i + 2 >= end || unhex(s.charCodeAt(i + 1)) < 0 || unhex(s.charCodeAt(i + 2)) < 0) return -1;
      r = 1;
      i += 2;
    } else if (c === PLUS) {
      r = 1;
    }
  }
  return r;
}

const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/**
 * unescape(s[start:end], mode): PathUnescape when plusToSpace is false (encodePath and
 * encodePathSegment unescape alike), QueryUnescape ('+' is a space) when true. null where Go returns
 * an EscapeError ('%' not followed by two hex digits).
 */
export function unescape(s: string, start: number, end: number, plusToSpace: boolean): string | null {
  let special = false;
  let ascii = true;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c === PERCENT) {
      if (i + 2 >= end) return null;
      const h = unhex(s.charCodeAt(i + 1));
      const l = unhex(s.charCodeAt(i + 2));
      if (h < 0 || l < 0) return null;
      if (h >= 8) ascii = false;
      special = true;
      i += 2;
    } else if (c === PLUS) {
      if (plusToSpace) special = true;
    } else if (c >= 0x80) {
      ascii = false;
    }
  }
  if (!special) return s.substring(start, end);
  if (ascii) {
    // Every decoded byte is ASCII: join the plain runs and the decoded characters directly.
    let out = '';
    let run = start;
    for (let i = start; i < end; i++) {
      const c = s.charCodeAt(i);
      if (c === PERCENT) {
        out += s.substring(run, i) + String.fromCharCode((unhex(s.charCodeAt(i + 1)) << 4) | unhex(s.charCodeAt(i + 2)));
        i += 2;
        run = i + 1;
      } else if (c === PLUS && plusToSpace) {
        out += s.substring(run, i) + ' ';
        run = i + 1;
      }
    }
    return out + s.substring(run, end);
  }
  // General case: build the byte string Go would hold, then read it as UTF-8.
  const bytes = new Uint8Array((end - start) * 3);
  let n = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c === PERCENT) {
      bytes[n++] = (unhex(s.charCodeAt(i + 1)) << 4) | unhex(s.charCodeAt(i + 2));
      i += 2;
    } else if (c === PLUS && plusToSpace) {
      bytes[n++] = 0x20;
    } else if (c < 0x80) {
      bytes[n++] = c;
    } else if (c < 0x800) {
      bytes[n++] = 0xc0 | (c >> 6);
      bytes[n++] = 0x80 | (c & 0x3f);
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < end && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      const cp = 0x10000 + ((c - 0xd800) << 10) + (s.charCodeAt(i + 1) - 0xdc00);
      bytes[n++] = 0xf0 | (cp >> 18);
      bytes[n++] = 0x80 | ((cp >> 12) & 0x3f);
      bytes[n++] = 0x80 | ((cp >> 6) & 0x3f);
      bytes[n++] = 0x80 | (cp & 0x3f);
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      // A lone surrogate has no UTF-8 form; U+FFFD, as TextEncoder would write.
      bytes[n++] = 0xef;
      bytes[n++] = 0xbf;
      bytes[n++] = 0xbd;
    } else {
      bytes[n++] = 0xe0 | (c >> 12);
      bytes[n++] = 0x80 | ((c >> 6) & 0x3f);
      bytes[n++] = 0x80 | (c & 0x3f);
    }
  }
  return utf8.decode(bytes.subarray(0, n));
}
