// RequestInfo: a port of Kubernetes' RequestInfoFactory.NewRequestInfo
// (kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go at
// db8b216c) with APIPrefixes {"api","apis"} and GrouplessAPIPrefixes {"api"}, as kube-apiserver
// configures it (pkg/server/config.go NewRequestInfoResolver; spec §2.1).
//
// Go works on req.URL.Path (already percent-decoded by url.ParseRequestURI) and on req.URL.Query()
// (url.ParseQuery). Both are rebuilt here: the path is decoded the way net/url's unescape(encodePath)
// does, and the few query keys NewRequestInfo reads are found the way parseQuery finds them.
//
// Hot path: this runs for every request. The common case (no '%' in the path) is a handful of
// indexOf/charCodeAt scans; the only allocations are the result object and its substrings.
// The list/watch branch reads the query in place, by index, and decodes a value only when it holds
// '%' or '+'.
//
// Deliberate differences from Go (strings vs bytes):
// - Go strings are bytes; ours are UTF-16. Decoded bytes are read as UTF-8 and invalid sequences
//   become U+FFFD, where Go keeps the raw bytes. Such names can never match a served resource.
// - Characters >= U+0080 in rawPath/rawQuery are taken to stand for their own UTF-8 encoding.
// - rawPath is used as given when it does not start with '/' (Go's server would reject such a target
//   as "invalid URI for request"; NewRequestInfo itself, which the Go tests call with "", does not).

export interface RequestInfo {
  isResourceRequest: boolean;
  /** Decoded path, as Go's req.URL.Path (leading and trailing slashes kept). */
  path: string;
  /** get/list/watch/create/update/patch/delete/deletecollection/proxy, or '' for other methods; for
   *  non-resource requests the lowercase HTTP method. */
  verb: string;
  apiPrefix: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

/**
 * Why a request target has no RequestInfo. Stable codes (`code`):
 * - MVP_ERR_REQUESTINFO_INVALID_ESCAPE: '%' in the path not followed by two hex digits. Go's server
 *   rejects the request line with 400 before any handler runs (url.ParseRequestURI → unescape).
 * - MVP_ERR_REQUESTINFO_CONTROL_CHARACTER: a byte < 0x20 or 0x7f in the path or query. Go's server
 *   answers 400 ("net/url: invalid control character in URL", url.parse).
 * - MVP_ERR_REQUESTINFO_WATCH_PATH / MVP_ERR_REQUESTINFO_PROXY_PATH: `.../watch` or `.../proxy` with
 *   nothing after it. NewRequestInfo returns "unable to determine kind and namespace from url" and the
 *   WithRequestInfo filter answers 500 (responsewriters.InternalError).
 */
export class RequestInfoError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'RequestInfoError';
    this.code = code;
  }
}

const CODE_INVALID_ESCAPE = 'MVP_ERR_REQUESTINFO_INVALID_ESCAPE';
const CODE_CONTROL_CHARACTER = 'MVP_ERR_REQUESTINFO_CONTROL_CHARACTER';
const CODE_WATCH_PATH = 'MVP_ERR_REQUESTINFO_WATCH_PATH';
const CODE_PROXY_PATH = 'MVP_ERR_REQUESTINFO_PROXY_PATH';

const SLASH = 0x2f;
const PERCENT = 0x25;
const PLUS = 0x2b;
const SEMI = 0x3b;
const EQ = 0x3d;

/**
 * NewRequestInfo for one request. Never throws: every string input gives a RequestInfo or a
 * RequestInfoError.
 * @param method the HTTP method, case-sensitive as on the wire ("GET", not "get")
 * @param rawPath the request target's path as received (origin-form, still percent-encoded)
 * @param rawQuery everything after the first '?', without it; '' when there is none
 */
export function newRequestInfo(method: string, rawPath: string, rawQuery: string): RequestInfo | RequestInfoError {
  if (typeof method !== 'string') method = '';
  if (typeof rawPath !== 'string') rawPath = '';
  if (typeof rawQuery !== 'string') rawQuery = '';

  // url.parse checks the whole request URI for control bytes before it unescapes anything.
  const pathScan = scanPath(rawPath);
  if (pathScan === SCAN_CTL || hasControlChar(rawQuery)) {
    return new RequestInfoError(CODE_CONTROL_CHARACTER, 'net/url: invalid control character in URL');
  }
  let path = rawPath;
  if (pathScan === SCAN_PERCENT) {
    const decoded = unescape(rawPath, 0, rawPath.length, false);
    if (decoded === null) return new RequestInfoError(CODE_INVALID_ESCAPE, `invalid URL escape in ${JSON.stringify(rawPath)}`);
    path = decoded;
  }

  // splitPath: strings.Split(strings.Trim(path, "/"), "/"). Parts are walked as [start, end) ranges.
  let lo = 0;
  let hi = path.length;
  while (lo < hi && path.charCodeAt(lo) === SLASH) lo++;
  while (hi > lo && path.charCodeAt(hi - 1) === SLASH) hi--;
  if (lo === hi) return nonResource(path, method, '');
  const e0 = segEnd(path, lo, hi);
  if (e0 === hi) return nonResource(path, method, '');
  const s1 = e0 + 1;
  const e1 = segEnd(path, s1, hi);
  if (e1 === hi) return nonResource(path, method, ''); // fewer than 3 parts
  const s2 = e1 + 1;
  const e2 = segEnd(path, s2, hi);

  let apiPrefix: string;
  let apiGroup = '';
  let apiVersion: string;
  let cur: number; // start of currentParts[0]; never past hi (the last part is never empty)
  if (isSeg(path, lo, e0, 'api')) {
    apiPrefix = 'api';
    apiVersion = path.substring(s1, e1);
    cur = s2;
  } else if (isSeg(path, lo, e0, 'apis')) {
    apiPrefix = 'apis';
    // Go sets APIPrefix before the "do we have four parts?" check, so /apis/g/v keeps it.
    if (e2 === hi) return nonResource(path, method, apiPrefix);
    apiGroup = path.substring(s1, e1);
    apiVersion = path.substring(s2, e2);
    cur = e2 + 1;
  } else {
    return nonResource(path, method, '');
  }
  let curEnd = segEnd(path, cur, hi);

  // /{watch|proxy}/... is a verb via path; it needs something after it.
  let verb: string;
  if (isSeg(path, cur, curEnd, 'watch') || isSeg(path, cur, curEnd, 'proxy')) {
    const w = path.charCodeAt(cur) === 0x77; // 'w'
    if (curEnd === hi) {
      return new RequestInfoError(w ? CODE_WATCH_PATH : CODE_PROXY_PATH, `unable to determine kind and namespace from url, ${rawPath}`);
    }
    verb = w ? 'watch' : 'proxy';
    cur = curEnd + 1;
    curEnd = segEnd(path, cur, hi);
  } else {
    verb = verbForMethod(method);
  }

  // /namespaces/{namespace}/{kind}/*: parts move past namespaces/<ns> unless the next part is a
  // namespace subresource (status, finalize), so /api/v1/namespaces/ns1 is namespace ns1 itself.
  let namespace = '';
  if (isSeg(path, cur, curEnd, 'namespaces') && curEnd < hi) {
    const nsStart = curEnd + 1;
    const nsEnd = segEnd(path, nsStart, hi);
    namespace = path.substring(nsStart, nsEnd);
    if (nsEnd < hi) {
      const third = nsEnd + 1;
      const thirdEnd = segEnd(path, third, hi);
      if (!isSeg(path, third, thirdEnd, 'status') && !isSeg(path, third, thirdEnd, 'finalize')) {
        cur = third;
        curEnd = thirdEnd;
      }
    }
  }

  // parts: resource/name/subresource/anything/else; proxy takes no subresource.
  const resource = path.substring(cur, curEnd);
  let name = '';
  let subresource = '';
  if (curEnd < hi) {
    const nStart = curEnd + 1;
    const nEnd = segEnd(path, nStart, hi);
    name = path.substring(nStart, nEnd);
    if (nEnd < hi && verb !== 'proxy') subresource = path.substring(nEnd + 1, segEnd(path, nEnd + 1, hi));
  }

  if (name.length === 0 && verb === 'get') {
    const lw = listOrWatch(rawQuery);
    verb = lw.watch ? 'watch' : 'list';
    if (lw.name !== undefined) name = lw.name;
  }
  if (name.length === 0 && verb === 'delete') verb = 'deletecollection';

  return {
    isResourceRequest: true,
    path,
    verb,
    apiPrefix,
    apiGroup,
    apiVersion,
    namespace,
    resource,
    subresource,
    name,
  };
}

function nonResource(path: string, method: string, apiPrefix: string): RequestInfo {
  return {
    isResourceRequest: false,
    path,
    verb: lowerMethod(method),
    apiPrefix,
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
  };
}

function verbForMethod(method: string): string {
  switch (method) {
    case 'POST':
      return 'create';
    case 'GET':
    case 'HEAD':
      return 'get';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      return '';
  }
}

/** strings.ToLower(req.Method); constants for the usual methods so nothing is allocated. */
function lowerMethod(method: string): string {
  switch (method) {
    case 'GET':
      return 'get';
    case 'HEAD':
      return 'head';
    case 'POST':
      return 'post';
    case 'PUT':
      return 'put';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    case 'OPTIONS':
      return 'options';
    case 'CONNECT':
      return 'connect';
    case 'TRACE':
      return 'trace';
    default:
      // Go's server only lets token methods (ASCII) through, where both lowercasings agree.
      return method.toLowerCase();
  }
}

function segEnd(s: string, start: number, hi: number): number {
  const j = s.indexOf('/', start);
  return j === -1 || j > hi ? hi : j;
}

function isSeg(s: string, start: number, end: number, lit: string): boolean {
  return end - start === lit.length && s.startsWith(lit, start);
}

// ---------------------------------------------------------------------------------------------
// net/url: control bytes and unescaping (golang/go src/net/url/url.go stringContainsCTLByte, unescape)

const SCAN_PLAIN = 0;
const SCAN_PERCENT = 1;
const SCAN_CTL = 2;

function scanPath(s: string): number {
  let r = SCAN_PLAIN;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return SCAN_CTL;
    if (c === PERCENT) r = SCAN_PERCENT;
  }
  return r;
}

function hasControlChar(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

function hexVal(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/** Whether s[start, end) is a valid escape sequence for url.unescape (every '%' has two hex digits). */
function validEscapes(s: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    if (s.charCodeAt(i) === PERCENT) {
      if (i + 2 >= end || hexVal(s.charCodeAt(i + 1)) < 0 || hexVal(s.charCodeAt(i + 2)) < 0) return false;
      i += 2;
    }
  }
  return true;
}

const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/**
 * url.unescape(s[start:end], encodePath) or (plusToSpace) encodeQueryComponent. Returns null where Go
 * returns an EscapeError. The bytes are read back as UTF-8 (U+FFFD for invalid sequences).
 */
function unescape(s: string, start: number, end: number, plusToSpace: boolean): string | null {
  let special = false;
  let ascii = true;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c === PERCENT) {
      if (i + 2 >= end) return null;
      const h = hexVal(s.charCodeAt(i + 1));
      const l = hexVal(s.charCodeAt(i + 2));
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
        out += s.substring(run, i) + String.fromCharCode((hexVal(s.charCodeAt(i + 1)) << 4) | hexVal(s.charCodeAt(i + 2)));
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
      bytes[n++] = (hexVal(s.charCodeAt(i + 1)) << 4) | hexVal(s.charCodeAt(i + 2));
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

// ---------------------------------------------------------------------------------------------
// get without a name: list or watch, and a name from fieldSelector=metadata.name=X.
//
// Go (requestinfo.go): DecodeParameters(req.URL.Query(), metav1 ListOptions) into the internal
// ListOptions. That is Convert_url_Values_To_v1_ListOptions (first value of each key,
// apimachinery meta/v1 zz_generated.conversion.go), then Convert_v1_ListOptions_To_internalversion:
// fields.ParseSelector(fieldSelector) and labels.Parse(labelSelector). Any conversion error
// (labelSelector, fieldSelector, limit or timeoutSeconds that do not parse) drops the whole result:
// no name, and watch is re-read from Query()["watch"][0] with strings.ToLower ∈ {"false","0"}.
// Without an error, watch is Convert_Slice_string_To_bool: "0" or strings.EqualFold(v, "false") is
// false, anything else (even "") is true.

interface ListOrWatch {
  watch: boolean;
  name: string | undefined;
}

const LIST: ListOrWatch = { watch: false, name: undefined };
const WATCH: ListOrWatch = { watch: true, name: undefined };

// Go 1.24.12/1.25.6+ url.ParseQuery: more than this many '&'-separated parameters and the whole
// query parses to no values at all (GODEBUG urlmaxqueryparams, default 10000).
const MAX_QUERY_PARAMS = 10000;

const K_WATCH = 0;
const K_FIELD = 1;
const K_LABEL = 2;
const K_LIMIT = 3;
const K_TIMEOUT = 4;
const NKEYS = 5;
// First-value ranges into rawQuery, reused between calls (newRequestInfo is synchronous).
const vStart = new Int32Array(NKEYS);
const vEnd = new Int32Array(NKEYS);

function keyIndex(k: string): number {
  switch (k) {
    case 'watch':
      return K_WATCH;
    case 'fieldSelector':
      return K_FIELD;
    case 'labelSelector':
      return K_LABEL;
    case 'limit':
      return K_LIMIT;
    case 'timeoutSeconds':
      return K_TIMEOUT;
    default:
      return -1;
  }
}

function rawKeyIndex(q: string, a: number, b: number): number {
  switch (b - a) {
    case 5:
      if (q.startsWith('watch', a)) return K_WATCH;
      if (q.startsWith('limit', a)) return K_LIMIT;
      return -1;
    case 13:
      if (q.startsWith('fieldSelector', a)) return K_FIELD;
      if (q.startsWith('labelSelector', a)) return K_LABEL;
      return -1;
    case 14:
      return q.startsWith('timeoutSeconds', a) ? K_TIMEOUT : -1;
    default:
      return -1;
  }
}

/** url.ParseQuery restricted to the first value of the five keys above, recorded in vStart/vEnd. */
function scanQuery(q: string): boolean {
  vStart.fill(-1);
  const len = q.length;
  if (len === 0) return false;
  if (len >= MAX_QUERY_PARAMS) {
    let amps = 0;
    for (let i = q.indexOf('&'); i !== -1; i = q.indexOf('&', i + 1)) amps++;
    if (amps + 1 > MAX_QUERY_PARAMS) return false;
  }
  let found = false;
  let pos = 0;
  while (pos < len) {
    let end = q.indexOf('&', pos);
    if (end === -1) end = len;
    const pairStart = pos;
    pos = end + 1;
    if (end === pairStart) continue;
    // One pass over the pair: ';' anywhere rejects it (Go 1.17+), '=' splits it, '%'/'+' in the key
    // means it must be unescaped before comparing.
    let eq = -1;
    let keyEscaped = false;
    let semi = false;
    for (let i = pairStart; i < end; i++) {
      const c = q.charCodeAt(i);
      if (c === SEMI) {
        semi = true;
        break;
      }
      if (eq === -1) {
        if (c === EQ) eq = i;
        else if (c === PERCENT || c === PLUS) keyEscaped = true;
      }
    }
    if (semi) continue;
    const keyEnd = eq === -1 ? end : eq;
    const valStart = eq === -1 ? end : eq + 1;
    let k: number;
    if (keyEscaped) {
      const key = unescape(q, pairStart, keyEnd, true);
      if (key === null) continue;
      k = keyIndex(key);
    } else {
      k = rawKeyIndex(q, pairStart, keyEnd);
    }
    if (k === -1 || vStart[k] !== -1) continue;
    // Go drops the pair when its value does not unescape; a later pair may then be the first value.
    if (!validEscapes(q, valStart, end)) continue;
    vStart[k] = valStart;
    vEnd[k] = end;
    found = true;
  }
  return found;
}

function queryValue(q: string, k: number): string | undefined {
  const a = vStart[k];
  if (a === -1) return undefined;
  return unescape(q, a, vEnd[k], true) ?? undefined;
}

function listOrWatch(rawQuery: string): ListOrWatch {
  if (!scanQuery(rawQuery)) return LIST;
  const watchValue = queryValue(rawQuery, K_WATCH);
  if (
    !int64OrAbsent(queryValue(rawQuery, K_LIMIT)) ||
    !int64OrAbsent(queryValue(rawQuery, K_TIMEOUT)) ||
    !validLabelSelector(queryValue(rawQuery, K_LABEL) ?? '')
  ) {
    return watchFallback(watchValue);
  }
  const fieldName = parseFieldSelectorName(queryValue(rawQuery, K_FIELD) ?? '');
  if (fieldName === null) return watchFallback(watchValue);
  const watch = watchValue !== undefined && watchValue !== '0' && !equalFoldFalse(watchValue);
  if (fieldName === undefined || !validPathSegmentName(fieldName)) return watch ? WATCH : LIST;
  return { watch, name: fieldName };
}

/** The error branch of requestinfo.go: strings.ToLower(values[0]) in {"false", "0"} means list. */
function watchFallback(v: string | undefined): ListOrWatch {
  if (v === undefined || v === '0' || asciiLowerEquals(v, 'false')) return LIST;
  return WATCH;
}

function asciiLowerEquals(v: string, lower: string): boolean {
  if (v.length !== lower.length) return false;
  for (let i = 0; i < v.length; i++) {
    let c = v.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    if (c !== lower.charCodeAt(i)) return false;
  }
  return true;
}

/** strings.EqualFold(v, "false"): simple case folding, where 's' also matches U+017F (ſ). */
function equalFoldFalse(v: string): boolean {
  if (v.length !== 5) return false;
  for (let i = 0; i < 5; i++) {
    let c = v.charCodeAt(i);
    if (i === 3 && c === 0x17f) continue;
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    if (c !== 'false'.charCodeAt(i)) return false;
  }
  return true;
}

/** path.IsValidPathSegmentName (apimachinery pkg/api/validation/path/name.go). */
function validPathSegmentName(name: string): boolean {
  return name !== '.' && name !== '..' && name.indexOf('/') === -1 && name.indexOf('%') === -1;
}

/** An absent value converts without error; a present one must be strconv.ParseInt(v, 10, 64). */
function int64OrAbsent(v: string | undefined): boolean {
  return v === undefined || isInt64(v);
}

const INT64_MAX = '9223372036854775807';
const INT64_MIN_ABS = '9223372036854775808';

/** strconv.ParseInt(s, 10, 64) succeeds: optional sign, ASCII digits only, within int64. */
function isInt64(s: string): boolean {
  let i = 0;
  let neg = false;
  const c0 = s.charCodeAt(0);
  if (c0 === 0x2b) i = 1;
  else if (c0 === 0x2d) {
    neg = true;
    i = 1;
  }
  if (i >= s.length) return false;
  for (let j = i; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (c < 0x30 || c > 0x39) return false;
  }
  while (i < s.length - 1 && s.charCodeAt(i) === 0x30) i++;
  const digits = s.length - i;
  const limit = neg ? INT64_MIN_ABS : INT64_MAX;
  if (digits !== limit.length) return digits < limit.length;
  return s.substring(i) <= limit;
}

// ---------------------------------------------------------------------------------------------
// fields.ParseSelector + RequiresExactMatch("metadata.name")
// (apimachinery pkg/fields/selector.go: splitTerms, sort, splitTerm, UnescapeValue, andTerm)

/**
 * The value RequiresExactMatch("metadata.name") returns for this selector, undefined when there is
 * none, or null when ParseSelector fails. Go sorts the raw terms and returns the
 * first hasTerm on metadata.name, i.e. the one whose raw term sorts lowest (byte order).
 */
function parseFieldSelectorName(sel: string): string | undefined | null {
  if (sel.length === 0) return undefined;
  let bestTerm: string | undefined;
  let bestValue: string | undefined;
  let start = 0;
  let inSlash = false;
  for (let i = 0; i <= sel.length; i++) {
    if (i < sel.length) {
      const c = sel.charCodeAt(i);
      if (inSlash) {
        inSlash = false;
        continue;
      }
      if (c === 0x5c) {
        inSlash = true;
        continue;
      }
      if (c !== 0x2c) continue;
    }
    // a term is sel[start, i)
    if (i > start) {
      const term = sel.substring(start, i);
      const op = splitTerm(term);
      if (op === -1) return null;
      const isNot = term.charCodeAt(op) === 0x21;
      const isDouble = !isNot && term.charCodeAt(op + 1) === EQ;
      const rhs = term.substring(op + (isNot || isDouble ? 2 : 1));
      const value = unescapeFieldValue(rhs);
      if (value === undefined) return null;
      if (!isNot && op === 13 && term.startsWith('metadata.name') && (bestTerm === undefined || compareUTF8(term, bestTerm) < 0)) {
        bestTerm = term;
        bestValue = value;
      }
    }
    start = i + 1;
  }
  return bestValue;
}

/** Index of the first operator ("!=", "==" or "=", checked in that order at each index), or -1. */
function splitTerm(term: string): number {
  for (let i = 0; i < term.length; i++) {
    const c = term.charCodeAt(i);
    if (c === EQ) return i;
    if (c === 0x21 && term.charCodeAt(i + 1) === EQ) return i;
  }
  return -1;
}

/** fields.UnescapeValue: `\\`, `\,`, `\=` are escapes; any other escape, or a bare ',' or '=', fails. */
function unescapeFieldValue(s: string): string | undefined {
  if (s.indexOf('\\') === -1 && s.indexOf(',') === -1 && s.indexOf('=') === -1) return s;
  let out = '';
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (inSlash) {
      if (c !== 0x5c && c !== 0x2c && c !== EQ) return undefined;
      out += s[i];
      inSlash = false;
      continue;
    }
    if (c === 0x5c) inSlash = true;
    else if (c === 0x2c || c === EQ) return undefined;
    else out += s[i];
  }
  return inSlash ? undefined : out;
}

/** Go string order (UTF-8 bytes) on UTF-16 strings: surrogates sort above U+E000..U+FFFF. */
function compareUTF8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

// ---------------------------------------------------------------------------------------------
// labels.Parse, reduced to "does it parse and validate?"
// (apimachinery pkg/labels/selector.go: Lexer, Parser, NewRequirement; util/validation
// IsQualifiedName, IsValidLabelValue, IsDNS1123Subdomain). Byte lexer: a NUL byte ends a token the
// same way the end of input does, exactly as Lexer.read() returning 0.

const T_ERROR = 0;
const T_EOS = 1;
const T_CLOSEPAR = 2;
const T_COMMA = 3;
const T_NOT = 4; // "!" DoesNotExistToken
const T_DEQ = 5; // "=="
const T_EQ = 6; // "="
const T_GT = 7;
const T_IDENT = 8;
const T_IN = 9;
const T_LT = 10;
const T_NEQ = 11;
const T_NOTIN = 12;
const T_OPENPAR = 13;

function specialToken(s: string): number {
  switch (s) {
    case ')':
      return T_CLOSEPAR;
    case ',':
      return T_COMMA;
    case '!':
      return T_NOT;
    case '==':
      return T_DEQ;
    case '=':
      return T_EQ;
    case '>':
      return T_GT;
    case '<':
      return T_LT;
    case '!=':
      return T_NEQ;
    case '(':
      return T_OPENPAR;
    default:
      return T_ERROR;
  }
}

function isLabelWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
}

function isLabelSpecial(c: number): boolean {
  return c === 0x3d || c === 0x21 || c === 0x28 || c === 0x29 || c === 0x2c || c === 0x3e || c === 0x3c;
}

function lexLabelSelector(s: string, toks: number[], lits: string[]): void {
  const len = s.length;
  let pos = 0;
  for (;;) {
    // Lex: skipWhiteSpaces(read()); read() gives 0 at the end, and for a NUL byte (after moving on)
    let ch = 0;
    while (pos < len) {
      ch = s.charCodeAt(pos++);
      if (!isLabelWhitespace(ch)) break;
      ch = 0;
    }
    if (ch === 0) {
      toks.push(T_EOS);
      lits.push('');
      return;
    }
    pos--;
    if (isLabelSpecial(ch)) {
      // scanSpecialSymbol: the longest run of special characters that is still a token
      let buf = '';
      let tok = T_ERROR;
      let lit = '';
      while (pos < len) {
        const c = s.charCodeAt(pos);
        if (c === 0) {
          pos++;
          break;
        }
        if (!isLabelSpecial(c)) break;
        buf += s[pos++];
        const t = specialToken(buf);
        if (t !== T_ERROR) {
          tok = t;
          lit = buf;
        } else if (tok !== T_ERROR) {
          pos--;
          break;
        }
      }
      toks.push(tok);
      lits.push(lit);
    } else {
      // scanIDOrKeyword: up to a special character, whitespace, NUL or the end
      const start = pos;
      let end = len;
      while (pos < len) {
        const c = s.charCodeAt(pos);
        if (c === 0) {
          end = pos++;
          break;
        }
        if (isLabelSpecial(c) || isLabelWhitespace(c)) {
          end = pos;
          break;
        }
        pos++;
      }
      const lit = s.substring(start, end);
      toks.push(lit === 'in' ? T_IN : lit === 'notin' ? T_NOTIN : T_IDENT);
      lits.push(lit);
    }
  }
}

/** labels.Parse(sel) returns no error. */
function validLabelSelector(sel: string): boolean {
  if (sel.length === 0) return true;
  const toks: number[] = [];
  const lits: string[] = [];
  lexLabelSelector(sel, toks, lits);
  let p = 0;
  // In the Values context "in" and "notin" are identifiers.
  const look = (values: boolean): number => {
    const t = toks[Math.min(p, toks.length - 1)];
    return values && (t === T_IN || t === T_NOTIN) ? T_IDENT : t;
  };
  const consume = (values: boolean): number => {
    const t = look(values);
    p++;
    return t;
  };
  for (;;) {
    const t = look(true);
    if (t === T_EOS) return true;
    if (t !== T_IDENT && t !== T_NOT) return false;
    // parseRequirement → parseKeyAndInferOperator
    let tok = consume(true);
    let op: 'exists' | 'notexists' | '' = '';
    if (tok === T_NOT) {
      op = 'notexists';
      tok = consume(true);
    }
    if (tok !== T_IDENT) return false;
    const key = lits[p - 1];
    if (!isQualifiedName(key)) return false;
    const after = look(true);
    if ((after === T_EOS || after === T_COMMA) && op !== 'notexists') op = 'exists';
    if (op === '') {
      // parseOperator (KeyAndOperator context), then the values
      const opTok = consume(false);
      if (opTok === T_IN || opTok === T_NOTIN) {
        if (consume(true) !== T_OPENPAR) return false;
        const first = look(true);
        if (first === T_CLOSEPAR) {
          p++; // "()" is the set {""}
        } else if (first === T_IDENT || first === T_COMMA) {
          // parseIdentifiersList; "" is always a valid label value, identifiers are checked
          for (;;) {
            const vt = consume(true);
            if (vt === T_IDENT) {
              if (!isValidLabelValue(lits[p - 1])) return false;
              const nx = look(true);
              if (nx === T_COMMA) continue;
              if (nx === T_CLOSEPAR) break;
              return false;
            }
            if (vt !== T_COMMA) return false;
            const nx = look(true);
            if (nx === T_CLOSEPAR) break;
            if (nx === T_COMMA) p++;
          }
          if (consume(true) !== T_CLOSEPAR) return false;
        } else {
          return false;
        }
      } else if (opTok === T_EQ || opTok === T_DEQ || opTok === T_NEQ || opTok === T_GT || opTok === T_LT) {
        // parseExactValue
        let value = '';
        const nx = look(true);
        if (nx !== T_EOS && nx !== T_COMMA) {
          if (consume(true) !== T_IDENT) return false;
          value = lits[p - 1];
        }
        if ((opTok === T_GT || opTok === T_LT) && !isInt64(value)) return false;
        if (!isValidLabelValue(value)) return false;
      } else {
        return false;
      }
    }
    // back in parse(): the requirement must be followed by end of string, or ',' and another one
    const t2 = consume(true);
    if (t2 === T_EOS) return true;
    if (t2 !== T_COMMA) return false;
    const t3 = look(true);
    if (t3 !== T_IDENT && t3 !== T_NOT) return false;
  }
}

function isAlnum(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

/** ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], the qualified-name (and label value) form. */
function isQualifiedNamePart(s: string, a: number, b: number): boolean {
  if (b <= a || !isAlnum(s.charCodeAt(a)) || !isAlnum(s.charCodeAt(b - 1))) return false;
  for (let i = a + 1; i < b - 1; i++) {
    const c = s.charCodeAt(i);
    if (!isAlnum(c) && c !== 0x2d && c !== 0x5f && c !== 0x2e) return false;
  }
  return true;
}

function isQualifiedName(s: string): boolean {
  const slash = s.indexOf('/');
  let nameStart = 0;
  if (slash !== -1) {
    if (s.indexOf('/', slash + 1) !== -1) return false;
    if (slash === 0 || slash > 253 || !isDNS1123Subdomain(s, 0, slash)) return false;
    nameStart = slash + 1;
  }
  const len = s.length - nameStart;
  return len > 0 && len <= 63 && isQualifiedNamePart(s, nameStart, s.length);
}

function isValidLabelValue(v: string): boolean {
  return v.length === 0 || (v.length <= 63 && isQualifiedNamePart(v, 0, v.length));
}

/** [a-z0-9]([-a-z0-9]*[a-z0-9])? labels joined by '.'. */
function isDNS1123Subdomain(s: string, a: number, b: number): boolean {
  let labelStart = a;
  for (let i = a; i <= b; i++) {
    if (i < b && s.charCodeAt(i) !== 0x2e) continue;
    if (i === labelStart) return false;
    for (let j = labelStart; j < i; j++) {
      const c = s.charCodeAt(j);
      const lowerAlnum = (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a);
      if (!lowerAlnum && (c !== 0x2d || j === labelStart || j === i - 1)) return false;
    }
    labelStart = i + 1;
  }
  return true;
}
