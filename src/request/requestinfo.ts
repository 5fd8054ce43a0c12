// RequestInfo: a port of Kubernetes' RequestInfoFactory.NewRequestInfo
// (kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go at
// db8b216c) with APIPrefixes {"api","apis"} and GrouplessAPIPrefixes {"api"}, as kube-apiserver
// configures it (pkg/server/config.go NewRequestInfoResolver; docs/kubernetes-mvp.md §2.1).
//
// Go works on req.URL.Path (already percent-decoded by url.ParseRequestURI) and on req.URL.Query()
// (url.ParseQuery). Both are rebuilt with the net/url ports in src/gocompat/ (url.ts, query.ts); their
// header comments say how our UTF-16 strings differ from Go's bytes (a name decoded from invalid
// UTF-8 holds U+FFFD where Go keeps the bytes; such a name can never match a served resource).
// strconv.ParseInt and strings.EqualFold/ToLower/Compare come from there too (strconv.ts,
// strings.ts). This file keeps Kubernetes' logic.
//
// Hot path: this runs for every request. The path is written to bytes once and read once (scanPath:
// control bytes, '%', the '/' between parts); parts are then ranges, compared with literals and the
// route table's names through those bytes (names.ts says why). The only allocations are the result
// object and the substrings that are no known name. The list/watch branch reads the query in place,
// by index, and decodes a value only when it holds '%' or '+'; the proxy's call (selectorName false)
// reads only the watch value, and not even that when the query cannot hold a watch key.
//
// Deliberate difference from Go: rawPath is used as given when it does not start with '/' (Go's
// server would reject such a target as "invalid URI for request"; NewRequestInfo itself, which the
// Go tests call with "", does not).

import { parseInt64OK } from '../gocompat/strconv';
import { compareByteOrder, equalFoldLower, toLowerIs } from '../gocompat/strings';
import { MAX_QUERY_PARAMS, QueryValues } from '../gocompat/query';
import { Literal, Names } from './names';
import { unescape } from '../gocompat/url';
import { ErrorCode } from '../api/errors';

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
  /** The object's name; for a list or watch, from fieldSelector=metadata.name=X, unless newRequestInfo
   *  was told not to read it (selectorName false: then '' for every list and watch). */
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
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'RequestInfoError';
    this.code = code;
  }
}

const CODE_INVALID_ESCAPE = ErrorCode.MVP_ERR_REQUESTINFO_INVALID_ESCAPE;
const CODE_CONTROL_CHARACTER = ErrorCode.MVP_ERR_REQUESTINFO_CONTROL_CHARACTER;
const CODE_WATCH_PATH = ErrorCode.MVP_ERR_REQUESTINFO_WATCH_PATH;
const CODE_PROXY_PATH = ErrorCode.MVP_ERR_REQUESTINFO_PROXY_PATH;

const SLASH = 0x2f;
const PERCENT = 0x25;
const AMP = 0x26;
const SEMI = 0x3b;

// What scanPath and scanQuery found. scanPath does in one pass what Go does in two
// (stringContainsCTLByte on the whole URI, then unescape's count of '%'); SCAN_MAY_WATCH is
// scanQuery's: the query holds "watch" or an escape of one of its letters.
const SCAN_PLAIN = 0;
const SCAN_PERCENT = 1;
const SCAN_CTL = 2;
const SCAN_MAY_WATCH = 3;
const EQ = 0x3d;

/**
 * NewRequestInfo for one request. Never throws: every string input gives a RequestInfo or a
 * RequestInfoError.
 * @param method the HTTP method, case-sensitive as on the wire ("GET", not "get")
 * @param rawPath the request target's path as received (origin-form, still percent-encoded)
 * @param rawQuery everything after the first '?', without it; '' when there is none
 * @param names the route table's names (RouteTable.names): a group, version or resource equal to one
 *   of them is that very string instead of a new one (names.ts says why); the values are the same
 * @param selectorName false: a list or watch gets no name from its fieldSelector, and its query is
 *   not validated as DecodeParameters would unless the verb depends on it (listOrWatch says when).
 *   The proxy reads only group, version, resource and verb; this saved ~45 % of what the list/watch
 *   queries cost (npm run native-bench, rows (a) and (a~), 2026-12-04).
 */
export function newRequestInfo(method: string, rawPath: string, rawQuery: string, names: Names = Names.EMPTY, selectorName = true): RequestInfo | RequestInfoError {
  if (typeof method !== 'string') method = '';
  if (typeof rawPath !== 'string') rawPath = '';
  if (typeof rawQuery !== 'string') rawQuery = '';

  // url.parse checks the whole request URI for control bytes before it unescapes anything. One pass
  // over the path also finds its '/' (the part boundaries below) and whether it holds a '%'.
  let path = rawPath;
  const scan = scanPath(rawPath, true);
  const queryScan = scan === SCAN_CTL ? SCAN_CTL : scanQuery(rawQuery, rawPath.length);
  if (queryScan === SCAN_CTL) return new RequestInfoError(CODE_CONTROL_CHARACTER, 'net/url: invalid control character in URL');
  if (scan === SCAN_PERCENT) {
    const decoded = unescape(rawPath, 0, rawPath.length, false);
    if (decoded === null) return new RequestInfoError(CODE_INVALID_ESCAPE, `invalid URL escape in ${JSON.stringify(rawPath)}`);
    path = decoded;
    scanPath(path, false); // Go splits the decoded path (an escaped %2F is a '/' too); control bytes decoded from %XX are allowed
  }

  // splitPath: strings.Split(strings.Trim(path, "/"), "/"). Part k is path[partStart(k), partEnd(k)).
  const lo = partsFrom;
  let hi = path.length;
  while (hi > lo && bytes[hi - 1] === SLASH) hi--; // bytes holds path (scanned last)
  partsTo = hi;
  if (lo === hi) return nonResource(path, method, '');
  const parts = partCount();
  if (parts < 3) return nonResource(path, method, '');

  let apiPrefix: string;
  let apiGroup = '';
  let apiVersion: string;
  let cur: number; // index of currentParts[0]
  // part 0 is "api" or "apis": read once, its length first
  const n0 = partEnd(0) - lo;
  const api = (n0 === 3 || n0 === 4) && bytes[lo] === 0x61 && bytes[lo + 1] === 0x70 && bytes[lo + 2] === 0x69; // "api"
  if (api && n0 === 3) {
    apiPrefix = 'api';
    apiVersion = namePart(path, 1, names);
    cur = 2;
  } else if (api && bytes[lo + 3] === 0x73) {
    apiPrefix = 'apis';
    // Go sets APIPrefix before the "do we have four parts?" check, so /apis/g/v keeps it.
    if (parts < 4) return nonResource(path, method, apiPrefix);
    apiGroup = namePart(path, 1, names);
    apiVersion = namePart(path, 2, names);
    cur = 3;
  } else {
    return nonResource(path, method, '');
  }

  // /{watch|proxy}/... is a verb via path; it needs something after it.
  let verb: string;
  const curStart = partStart(cur);
  if (partEnd(cur) - curStart === 5 && (isPart(cur, P_WATCH) || isPart(cur, P_PROXY))) {
    const w = bytes[curStart] === 0x77; // 'w'
    if (cur + 1 === parts) {
      return new RequestInfoError(w ? CODE_WATCH_PATH : CODE_PROXY_PATH, `unable to determine kind and namespace from url, ${rawPath}`);
    }
    verb = w ? 'watch' : 'proxy';
    cur++;
  } else {
    verb = verbForMethod(method);
  }

  // /namespaces/{namespace}/{kind}/*: parts move past namespaces/<ns> unless the next part is a
  // namespace subresource (status, finalize), so /api/v1/namespaces/ns1 is namespace ns1 itself.
  let namespace = '';
  if (cur + 1 < parts && isPart(cur, P_NAMESPACES)) {
    namespace = part(path, cur + 1);
    if (cur + 2 < parts && !isPart(cur + 2, P_STATUS) && !isPart(cur + 2, P_FINALIZE)) cur += 2;
  }

  // parts: resource/name/subresource/anything/else; proxy takes no subresource.
  const resource = namePart(path, cur, names);
  let name = '';
  let subresource = '';
  if (cur + 1 < parts) {
    name = part(path, cur + 1);
    if (cur + 2 < parts && verb !== 'proxy') subresource = part(path, cur + 2);
  }

  if (name.length === 0 && verb === 'get') {
    // the query's bytes are where scanQuery wrote them unless a decoded path was scanned over them
    const lw = selectorName ? listOrWatch(rawQuery) : listOrWatchVerb(rawQuery, queryScan === SCAN_MAY_WATCH, scan === SCAN_PERCENT ? -1 : rawPath.length);
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

// The parts of the path being read, as ranges (newRequestInfo is synchronous, so one set serves every
// call): partsFrom is where part 0 starts (after the leading '/'), partsTo where the last one ends
// (before the trailing '/'), slashAt[k] the '/' that ends part k. Routing reads at most 9 parts
// (apis/g/v/watch/namespaces/ns/resource/name/subresource), so the first SLASH_CAP are enough;
// slashCount counts them all.
const SLASH_CAP = 16;
const slashAt = new Int32Array(SLASH_CAP);
let slashCount = 0;
let partsFrom = 0;
let partsTo = 0;

// The path as bytes, one per character, written by scanPath: parts are compared with literals and
// names through them (names.ts). An ASCII path is written by one native call (Buffer write, one
// byte per character); reading a Buffer is an indexed load where charCodeAt costs ~1.6 ns per
// character (a scan of the native-bench paths measured 165 → 125 ns, 2026-12-04). A path with
// other characters is copied with charCodeAt, each of them as 0x80: it is no '/', '%' or control
// byte, and a part holding one matches no name (names.ts says why). The query's bytes go behind
// the path's (scanQuery). Grown to the longest target seen.
let bytes = Buffer.allocUnsafe(1024);
let view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength); // the same bytes, for names.ts
const NON_ASCII = 0x80;

// Where the last query scanQuery wrote ends in bytes.
let queryTo = 0;

/** A larger buffer for bytes, holding its first `keep` bytes. */
function growBytes(size: number, keep: number): void {
  const grown = Buffer.allocUnsafe(Math.max(size, bytes.length * 2));
  bytes.copy(grown, 0, 0, keep);
  bytes = grown;
  view = new DataView(grown.buffer, grown.byteOffset, grown.byteLength);
}

/** One pass over path: records its part boundaries; SCAN_CTL on a control byte when checkCTL (then
 *  nothing is recorded), else SCAN_PERCENT when it holds a '%', else SCAN_PLAIN. */
function scanPath(s: string, checkCTL: boolean): number {
  const len = s.length;
  // write() writes at most the room there is: 3 bytes per UTF-16 unit is the most it can need
  if (len * 3 > bytes.length) growBytes(len * 3, 0);
  const bs = bytes;
  if (bs.write(s, 0, 'utf8') !== len) {
    for (let i = 0; i < len; i++) {
      const c = s.charCodeAt(i);
      bs[i] = c < 0x80 ? c : NON_ASCII;
    }
  }
  let lo = 0;
  while (lo < len && bs[lo] === SLASH) lo++;
  let n = 0;
  let r = SCAN_PLAIN;
  for (let i = lo; i < len; i++) {
    const c = bs[i];
    // '0' to '~' (0x30–0x7e): letters and digits go on after one unsigned compare; '/' 0x2f, '%' 0x25,
    // the control bytes < 0x20 and DEL 0x7f are all outside that range
    if (((c - 0x30) >>> 0) < 0x4f) continue;
    if (c <= SLASH) {
      if (c === SLASH) {
        if (n < SLASH_CAP) slashAt[n] = i;
        n++;
      } else if (c === PERCENT) {
        r = SCAN_PERCENT;
      } else if (c < 0x20 && checkCTL) {
        return SCAN_CTL;
      }
    } else if (c === 0x7f && checkCTL) {
      return SCAN_CTL;
    }
  }
  slashCount = n;
  partsFrom = lo;
  return r;
}

/**
 * SCAN_CTL when stringContainsCTLByte(query), read through bytes like the path: written behind the
 * path's bytes (which stay). UTF-8 keeps every byte < 0x80 as it is and writes other characters as
 * bytes >= 0x80, so the answer is exact whatever the query holds (~20 % less time than a charCodeAt
 * loop on the native-bench queries). Else SCAN_MAY_WATCH when the query could hold a watch key (for
 * listOrWatchVerb, so that a list's query is read once), else SCAN_PLAIN.
 */
function scanQuery(query: string, at: number): number {
  const len = query.length;
  if (len === 0) return SCAN_PLAIN;
  if (at + len * 3 > bytes.length) growBytes(at + len * 3, at);
  const bs = bytes;
  const end = at + bs.write(query, at, 'utf8');
  queryTo = end;
  let mayWatch = false;
  for (let i = at; i < end; i++) {
    const c = bs[i];
    // '&' to 'v' (0x26–0x76): letters before 'w', digits, '=', '&', '.', '-' go on after one unsigned
    // compare; control bytes, '%', 'w' and DEL are all outside that range.
    if (((c - 0x26) >>> 0) < 0x51) continue;
    if (c < 0x20 || c === 0x7f) return SCAN_CTL;
    // while the bytes are here: "watch", or '%' before 61, 63, 68, 74 or 77 (an escaped 'a', 'c',
    // 'h', 't' or 'w'; only digits, so no case)
    if (c === 0x77 || c === PERCENT) mayWatch ||= watchAt(bs, i, end);
  }
  return mayWatch ? SCAN_MAY_WATCH : SCAN_PLAIN;
}

/** At bs[i] ('w' or '%'): "watch", or an escape of one of its letters. */
function watchAt(bs: Buffer, i: number, end: number): boolean {
  if (bs[i] === 0x77) return i + 5 <= end && bs[i + 1] === 0x61 && bs[i + 2] === 0x74 && bs[i + 3] === 0x63 && bs[i + 4] === 0x68;
  if (i + 3 > end) return false;
  const hi = bs[i + 1];
  const lo = bs[i + 2];
  return hi === 0x36 ? lo === 0x31 || lo === 0x33 || lo === 0x38 : hi === 0x37 && (lo === 0x34 || lo === 0x37);
}

/** How many parts strings.Split gives for path[partsFrom, partsTo) (not empty). */
function partCount(): number {
  let n = 1;
  const m = slashCount < SLASH_CAP ? slashCount : SLASH_CAP;
  while (n - 1 < m && slashAt[n - 1] < partsTo) n++;
  // beyond the recorded slashes only "more than SLASH_CAP" matters, never the exact number
  return n;
}

function partStart(k: number): number {
  return k === 0 ? partsFrom : slashAt[k - 1] + 1;
}

function partEnd(k: number): number {
  if (k >= slashCount) return partsTo;
  const e = slashAt[k];
  return e < partsTo ? e : partsTo;
}

function part(s: string, k: number): string {
  return s.substring(partStart(k), partEnd(k));
}

/** Part k as one of names when it is one, else cut out of s. */
function namePart(s: string, k: number, names: Names): string {
  const a = partStart(k);
  const b = partEnd(k);
  const known = names.find(view, a, b);
  return known !== undefined ? known : s.substring(a, b);
}

/** Part k is lit: lengths first (most parts differ there), then a byte loop over a literal of 5 to 10
 *  bytes on the Buffer itself. */
function isPart(k: number, lit: Literal): boolean {
  const a = partStart(k);
  const lb = lit.bytes;
  const n = lb.length;
  if (partEnd(k) - a !== n) return false;
  const bs = bytes;
  for (let i = 0; i < n; i++) if (bs[a + i] !== lb[i]) return false;
  return true;
}

const P_WATCH = new Literal('watch');
const P_PROXY = new Literal('proxy');
const P_NAMESPACES = new Literal('namespaces');
const P_STATUS = new Literal('status');
const P_FINALIZE = new Literal('finalize');

function isSeg(s: string, start: number, end: number, lit: string): boolean {
  return end - start === lit.length && s.startsWith(lit, start);
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

// The ListOptions keys DecodeParameters reads, by index into LIST_OPTIONS_KEYS.
const K_WATCH = 0;
const K_FIELD = 1;
const K_LABEL = 2;
const K_LIMIT = 3;
const K_TIMEOUT = 4;
const LIST_OPTIONS_KEYS = ['watch', 'fieldSelector', 'labelSelector', 'limit', 'timeoutSeconds'];
// req.URL.Query(), reused between calls (newRequestInfo is synchronous).
const query = new QueryValues(LIST_OPTIONS_KEYS);

function listOrWatch(rawQuery: string): ListOrWatch {
  const q = query;
  if (!q.parse(rawQuery)) return LIST;
  // DecodeParameters fails on the first value of limit or timeoutSeconds that is not an int64, and on
  // a labelSelector labels.Parse rejects (fieldSelector below).
  const decodeFailed =
    (q.get(K_LIMIT) && !parseInt64OK(q.str, q.start, q.end)) ||
    (q.get(K_TIMEOUT) && !parseInt64OK(q.str, q.start, q.end)) ||
    (q.get(K_LABEL) && !validLabelSelector(q.str, q.start, q.end));
  let fieldName: string | undefined | null;
  if (!decodeFailed) fieldName = q.get(K_FIELD) ? parseFieldSelectorName(q.str.substring(q.start, q.end)) : undefined;
  const hasWatch = q.get(K_WATCH);
  if (decodeFailed || fieldName === null) {
    // the error branch of requestinfo.go: strings.ToLower(values[0]) in {"false", "0"} means list
    return !hasWatch || isZero(q.str, q.start, q.end) || toLowerIs(q.str, q.start, q.end, 'false') ? LIST : WATCH;
  }
  const watch = hasWatch && !isZero(q.str, q.start, q.end) && !equalFoldLower(q.str, q.start, q.end, 'false');
  if (fieldName === undefined || !validPathSegmentName(fieldName)) return watch ? WATCH : LIST;
  return { watch, name: fieldName };
}

// Query()["watch"] alone, for listOrWatchVerb.
const watchQuery = new QueryValues(['watch']);

/**
 * listOrWatch's verb without its name. The verb reads the first watch value in either branch: the
 * error branch asks strings.ToLower(v) ∈ {"false", "0"}, the other v == "0" || strings.EqualFold(v,
 * "false"). For an ASCII value the two agree, so whether DecodeParameters fails (the expensive part:
 * selectors, limit, timeoutSeconds) does not matter. A non-ASCII one (U+017F 'ſ' folds to 's' but
 * does not lower to it) takes the whole of listOrWatch.
 */
function listOrWatchVerb(rawQuery: string, mayHoldWatch: boolean, queryFrom: number): ListOrWatch {
  // No pair can have the key "watch" when the query holds neither "watch" nor an escape of one of its
  // letters (scanQuery): a list, without parsing the query.
  if (!mayHoldWatch) return LIST;
  const plain = queryFrom === -1 ? undefined : plainWatchVerb(queryFrom, queryTo);
  if (plain !== undefined) return plain;
  const q = watchQuery;
  if (!q.parse(rawQuery) || !q.get(0)) return LIST; // no watch value: a list in both branches
  for (let i = q.start; i < q.end; i++) if (q.str.charCodeAt(i) >= 0x80) return listOrWatch(rawQuery).watch ? WATCH : LIST;
  return isZero(q.str, q.start, q.end) || equalFoldLower(q.str, q.start, q.end, 'false') ? LIST : WATCH;
}

/**
 * listOrWatchVerb read from the query's bytes bytes[from, to) (scanQuery), without url.ParseQuery,
 * when Go would unescape and reject nothing up to the first pair keyed "watch": no '%', ';' or
 * non-ASCII byte before that pair's end (pairs after it cannot change Values.Get("watch")).
 * undefined otherwise, and for a query with MAX_QUERY_PARAMS or more bytes (it may have too many
 * pairs: no values at all). newRequestInfo does not call it after a path with '%': the decoded
 * path is scanned again, and its UTF-8 can be longer than the raw path and reach the query's bytes.
 * The usual watch queries (watch=true&resourceVersion=…) are this case; QueryValues.parse cost them
 * ~300 ns more than a list's query, this read ~150 (a loop over one request each, 2026-12-04).
 */
function plainWatchVerb(from: number, to: number): ListOrWatch | undefined {
  if (to - from >= MAX_QUERY_PARAMS) return undefined;
  const bs = bytes;
  let pair = from; // where the current pair starts
  for (let i = from; i <= to; i++) {
    const c = i < to ? bs[i] : AMP;
    if (c === AMP) {
      // the pair bs[pair, i): key "watch" alone, or "watch=" then the value
      if (bs[pair] === 0x77 && watchAt(bs, pair, i)) {
        if (i - pair === 5) return WATCH; // "watch": the value "" is neither "0" nor "false"
        if (bs[pair + 5] === EQ) return plainFalse(bs, pair + 6, i) ? LIST : WATCH;
      }
      pair = i + 1;
    } else if (c === PERCENT || c === SEMI || c >= 0x80) {
      // '+' needs no check: it unescapes to ' ', so a key holding one is never "watch" and a value
      // holding one is never "0" or "false", raw or unescaped
      return undefined;
    }
  }
  return LIST; // no pair keyed "watch"
}

/** bs[a, b) is "0", or "false" in any ASCII case (b − a ≤ 5, no non-ASCII byte: EqualFold and ToLower agree). */
function plainFalse(bs: Buffer, a: number, b: number): boolean {
  if (b - a === 1) return bs[a] === 0x30;
  // | 0x20 lowers 'A'–'Z'; the bytes it would wrongly map to a letter are not among these
  return b - a === 5 && (bs[a] | 0x20) === 0x66 && (bs[a + 1] | 0x20) === 0x61 && (bs[a + 2] | 0x20) === 0x6c && (bs[a + 3] | 0x20) === 0x73 && (bs[a + 4] | 0x20) === 0x65;
}

function isZero(s: string, a: number, b: number): boolean {
  return b - a === 1 && s.charCodeAt(a) === 0x30;
}

/** path.IsValidPathSegmentName (apimachinery pkg/api/validation/path/name.go). */
function validPathSegmentName(name: string): boolean {
  return name !== '.' && name !== '..' && name.indexOf('/') === -1 && name.indexOf('%') === -1;
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
      if (!isNot && op === 13 && term.startsWith('metadata.name') && (bestTerm === undefined || compareByteOrder(term, bestTerm) < 0)) {
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

/** The token for a run of special characters, as labels' string2token; T_ERROR when it is none. */
function specialToken(s: string, a: number, b: number): number {
  const c0 = s.charCodeAt(a);
  if (b - a === 1) {
    switch (c0) {
      case 0x29:
        return T_CLOSEPAR;
      case 0x2c:
        return T_COMMA;
      case 0x21:
        return T_NOT;
      case 0x3d:
        return T_EQ;
      case 0x3e:
        return T_GT;
      case 0x3c:
        return T_LT;
      case 0x28:
        return T_OPENPAR;
      default:
        return T_ERROR;
    }
  }
  if (b - a === 2 && s.charCodeAt(a + 1) === 0x3d) {
    if (c0 === 0x3d) return T_DEQ;
    if (c0 === 0x21) return T_NEQ;
  }
  return T_ERROR;
}

function isLabelWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
}

function isLabelSpecial(c: number): boolean {
  return c === 0x3d || c === 0x21 || c === 0x28 || c === 0x29 || c === 0x2c || c === 0x3e || c === 0x3c;
}

// Token buffers reused between calls: kind and [start, end) of each literal in the selector.
let tokKind = new Int32Array(32);
let tokStart = new Int32Array(32);
let tokEnd = new Int32Array(32);

function pushToken(n: number, kind: number, a: number, b: number): number {
  if (n === tokKind.length) {
    const grow = (x: Int32Array) => {
      const y = new Int32Array(x.length * 2);
      y.set(x);
      return y;
    };
    tokKind = grow(tokKind);
    tokStart = grow(tokStart);
    tokEnd = grow(tokEnd);
  }
  tokKind[n] = kind;
  tokStart[n] = a;
  tokEnd[n] = b;
  return n + 1;
}

/** Lexer.Lex until EndOfStringToken; returns the token count (the last one is T_EOS). */
function lexLabelSelector(s: string, from: number, len: number): number {
  let pos = from;
  let n = 0;
  for (;;) {
    // skipWhiteSpaces(read()); read() gives 0 at the end, and for a NUL byte (after moving on)
    let ch = 0;
    while (pos < len) {
      ch = s.charCodeAt(pos++);
      if (!isLabelWhitespace(ch)) break;
      ch = 0;
    }
    if (ch === 0) return pushToken(n, T_EOS, pos, pos);
    pos--;
    const start = pos;
    if (isLabelSpecial(ch)) {
      // scanSpecialSymbol: the longest run of special characters that is still a token
      let tok = T_ERROR;
      let tokEndAt = start;
      while (pos < len) {
        const c = s.charCodeAt(pos);
        if (c === 0) {
          pos++;
          break;
        }
        if (!isLabelSpecial(c)) break;
        pos++;
        const t = specialToken(s, start, pos);
        if (t !== T_ERROR) {
          tok = t;
          tokEndAt = pos;
        } else if (tok !== T_ERROR) {
          pos--;
          break;
        }
      }
      n = pushToken(n, tok, start, tokEndAt);
    } else {
      // scanIDOrKeyword: up to a special character, whitespace, NUL or the end
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
      const kind = isSeg(s, start, end, 'in') ? T_IN : isSeg(s, start, end, 'notin') ? T_NOTIN : T_IDENT;
      n = pushToken(n, kind, start, end);
    }
  }
}

let tokCount = 0;

/** Parser.lookahead: the kind of token i; in the Values context "in" and "notin" are identifiers. */
function kindAt(i: number, values: boolean): number {
  const t = tokKind[i < tokCount ? i : tokCount - 1];
  return values && (t === T_IN || t === T_NOTIN) ? T_IDENT : t;
}

/** labels.Parse(sel[from:to]) returns no error. */
function validLabelSelector(sel: string, from: number, to: number): boolean {
  if (from === to) return true;
  tokCount = lexLabelSelector(sel, from, to);
  let p = 0;
  for (;;) {
    const t = kindAt(p, true);
    if (t === T_EOS) return true;
    if (t !== T_IDENT && t !== T_NOT) return false;
    // parseRequirement → parseKeyAndInferOperator
    let notExists = false;
    if (t === T_NOT) {
      notExists = true;
      p++;
    }
    if (kindAt(p, true) !== T_IDENT) return false;
    if (!isQualifiedName(sel, tokStart[p], tokEnd[p])) return false;
    p++;
    const after = kindAt(p, true);
    if (!notExists && after !== T_EOS && after !== T_COMMA) {
      // parseOperator (KeyAndOperator context), then the values
      const op = kindAt(p++, false);
      if (op === T_IN || op === T_NOTIN) {
        if (kindAt(p++, true) !== T_OPENPAR) return false;
        const first = kindAt(p, true);
        if (first === T_CLOSEPAR) {
          p++; // "()" is the set {""}
        } else if (first === T_IDENT || first === T_COMMA) {
          // parseIdentifiersList; "" is always a valid label value, identifiers are checked
          for (;;) {
            const vt = kindAt(p++, true);
            if (vt === T_IDENT) {
              if (!isValidLabelValue(sel, tokStart[p - 1], tokEnd[p - 1])) return false;
              const nx = kindAt(p, true);
              if (nx === T_COMMA) continue;
              if (nx === T_CLOSEPAR) break;
              return false;
            }
            if (vt !== T_COMMA) return false;
            const nx = kindAt(p, true);
            if (nx === T_CLOSEPAR) break;
            if (nx === T_COMMA) p++;
          }
          if (kindAt(p++, true) !== T_CLOSEPAR) return false;
        } else {
          return false;
        }
      } else if (op === T_EQ || op === T_DEQ || op === T_NEQ || op === T_GT || op === T_LT) {
        // parseExactValue: end of string or ',' means the value ""
        const nx = kindAt(p, true);
        let a = from;
        let b = from;
        if (nx !== T_EOS && nx !== T_COMMA) {
          if (kindAt(p++, true) !== T_IDENT) return false;
          a = tokStart[p - 1];
          b = tokEnd[p - 1];
        }
        if ((op === T_GT || op === T_LT) && !parseInt64OK(sel, a, b)) return false;
        if (!isValidLabelValue(sel, a, b)) return false;
      } else {
        return false;
      }
    }
    // back in parse(): the requirement must be followed by end of string, or ',' and another one
    const t2 = kindAt(p++, true);
    if (t2 === T_EOS) return true;
    if (t2 !== T_COMMA) return false;
    const t3 = kindAt(p, true);
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

/** validation.IsQualifiedName(s[a:b]): an optional DNS-1123 subdomain prefix and '/', then a name. */
function isQualifiedName(s: string, a: number, b: number): boolean {
  let nameStart = a;
  const slash = s.indexOf('/', a);
  if (slash !== -1 && slash < b) {
    const again = s.indexOf('/', slash + 1);
    if (again !== -1 && again < b) return false;
    if (slash === a || slash - a > 253 || !isDNS1123Subdomain(s, a, slash)) return false;
    nameStart = slash + 1;
  }
  return b - nameStart <= 63 && isQualifiedNamePart(s, nameStart, b);
}

/** validation.IsValidLabelValue(s[a:b]): empty, or a qualified-name part of at most 63 characters. */
function isValidLabelValue(s: string, a: number, b: number): boolean {
  return a === b || (b - a <= 63 && isQualifiedNamePart(s, a, b));
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
