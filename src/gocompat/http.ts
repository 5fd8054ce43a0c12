// What Go's net/http accepts of a request's bytes: ports of the checks kube-apiserver's own server
// runs before any handler (go/src/net/http/server.go readRequest, request.go parseRequestLine and
// validMethod, net/url parse and unescape, golang.org/x/net/http/httpguts ValidHeaderFieldName,
// ValidHeaderFieldValue, ValidHostHeader, as vendored in Go 1.26), and that its client runs before it
// writes a request (request.go Request.write, transport.go). mvproxy's front ends refuse what these
// refuse (listener/head-check.ts), and the one writer of upstream heads checks every field it writes
// with them again (upstream/request-head.ts): Go is the parser on the other side of every hop.
//
// What differs: Go strings are bytes; these take byte strings, one character a byte (latin1), as
// both front ends hand them over (uWS's UTF-8 is turned into its bytes first). A character above
// U+00FF is no byte at all, and is refused wherever one is checked.

/** RFC 7230 tchar: the bytes of a token (httpguts isTokenTable). */
function isTokenChar(c: number): boolean {
  if (c >= 0x61 && c <= 0x7a) return true; // a-z
  if (c >= 0x41 && c <= 0x5a) return true; // A-Z
  if (c >= 0x30 && c <= 0x39) return true; // 0-9
  switch (c) {
    case 0x21: // !
    case 0x23: // #
    case 0x24: // $
    case 0x25: // %
    case 0x26: // &
    case 0x27: // '
    case 0x2a: // *
    case 0x2b: // +
    case 0x2d: // -
    case 0x2e: // .
    case 0x5e: // ^
    case 0x5f: // _
    case 0x60: // `
    case 0x7c: // |
    case 0x7e: // ~
      return true;
  }
  return false;
}

/** A non-empty token (httpguts ValidHeaderFieldName; request.go validMethod is the same rule). */
export function isToken(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) if (!isTokenChar(s.charCodeAt(i))) return false;
  return true;
}

/**
 * httpguts.ValidHeaderFieldValue: no control byte but HTAB, no DEL; obs-text (0x80-0xFF) allowed.
 * Here also: no character above U+00FF (it would not be the byte it claims to be).
 */
export function validHeaderFieldValue(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 ? c !== 0x09 : c === 0x7f || c > 0xff) return false;
  }
  return true;
}

/** httpguts.ValidHostHeader: only the bytes of uri-host [":" port] (and IPv6 zones). */
export function validHostHeader(h: string): boolean {
  for (let i = 0; i < h.length; i++) {
    const c = h.charCodeAt(i);
    if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39)) continue;
    // ! $ % & ' ( ) * + , - . : ; = [ ] _ ~
    if (c === 0x21 || c === 0x24 || c === 0x25 || c === 0x26 || c === 0x27 || c === 0x28 || c === 0x29 || c === 0x2a || c === 0x2b || c === 0x2c || c === 0x2d || c === 0x2e || c === 0x3a || c === 0x3b || c === 0x3d || c === 0x5b || c === 0x5d || c === 0x5f || c === 0x7e) continue;
    return false;
  }
  return true;
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

/**
 * Why Go's server refuses a request target, as its message says it, or undefined when it takes it:
 * - a space or HTAB ends the request-URI (parseRequestLine cuts at the first space; what follows is
 *   read as the protocol: "malformed HTTP version");
 * - a control byte or DEL anywhere (url.parse stringContainsCTLByte: "invalid control character in URL");
 * - '%' in the path not followed by two hex digits (url.setPath unescape: "invalid URL escape");
 *   the query is not unescaped when the request is read;
 * - here also: a character above U+00FF.
 * Bytes 0x80-0xFF are taken as they are, in the path and in the query.
 */
export function requestTargetProblem(t: string): string | undefined {
  let inPath = true;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return c === 0x20 || c === 0x09 ? 'malformed HTTP request: a space in the request target' : 'net/url: invalid control character in URL';
    if (c > 0xff) return 'a character that is not a byte in the request target';
    if (c === 0x3f /* ? */) inPath = false;
    else if (c === 0x25 /* % */ && inPath && !(i + 2 < t.length && isHex(t.charCodeAt(i + 1)) && isHex(t.charCodeAt(i + 2)))) return 'invalid URL escape in the request path';
  }
  return undefined;
}
