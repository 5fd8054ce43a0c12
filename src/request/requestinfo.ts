// RequestInfo: a port of Kubernetes' RequestInfoFactory.NewRequestInfo
// (kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go at
// db8b216c) with APIPrefixes {"api","apis"} and GrouplessAPIPrefixes {"api"}, as kube-apiserver
// configures it (pkg/server/config.go NewRequestInfoResolver; docs/kubernetes-mvp.md §2.1).
//
// Go works on req.URL.Path (already percent-decoded by url.ParseRequestURI) and on req.URL.Query()
// (url.ParseQuery). Both are rebuilt with the net/url ports in src/gocompat/ (url.ts, query.ts); their
// header comments say how our UTF-16 strings differ from Go's bytes (a name decoded from invalid
// UTF-8 holds U+FFFD where Go keeps the bytes; such a name can never match a served resource).
// strconv.ParseInt and strings.EqualFold/ToLower come from there too (strconv.ts, strings.ts), and
// so do the label and field selectors DecodeParameters parses (labels.ts, fields.ts: apimachinery's
// packages, not the standard library's). This file keeps Kubernetes' logic.
//
// Hot path: this runs for every request. The path is written to bytes once and read once
// (TargetBytes.scanPath: control bytes, '%', the '/' between parts); parts are then ranges, compared
// with literals and the route table's names through those bytes (names.ts says why). The only
// allocations are the result object and the substrings that are no known name. The list/watch
// branch reads the query in place, by index, and decodes a value only when it holds '%' or '+'; the
// proxy's call (selectorName false) reads only the watch value, and not even that when the query
// cannot hold a watch key.
//
// Deliberate difference from Go: rawPath is used as given when it does not start with '/' (Go's
// server would reject such a target as "invalid URI for request"; NewRequestInfo itself, which the
// Go tests call with "", does not).

import { parseInt64OK } from '../gocompat/strconv';
import { equalFoldLower, toLowerIs } from '../gocompat/strings';
import { MAX_QUERY_PARAMS, QueryValues } from '../gocompat/query';
import { validLabelSelector } from '../gocompat/labels';
import { selectorExactMatch } from '../gocompat/fields';
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
const EQ = 0x3d;

// What TargetBytes.scanPath and scanQuery found. scanPath does in one pass what Go does in two
// (stringContainsCTLByte on the whole URI, then unescape's count of '%').
const SCAN_PLAIN = 0;
const SCAN_PERCENT = 1;
const SCAN_CTL = 2;

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
  const t = TARGET;

  // url.parse checks the whole request URI for control bytes before it unescapes anything. One pass
  // over the path also finds its parts and whether it holds a '%'.
  let path = rawPath;
  const scan = t.scanPath(rawPath, true);
  const queryScan = scan === SCAN_CTL ? SCAN_CTL : t.scanQuery(rawQuery, rawPath.length);
  if (queryScan === SCAN_CTL) return new RequestInfoError(CODE_CONTROL_CHARACTER, 'net/url: invalid control character in URL');
  if (scan === SCAN_PERCENT) {
    const decoded = unescape(rawPath, 0, rawPath.length, false);
    if (decoded === null) return new RequestInfoError(CODE_INVALID_ESCAPE, `invalid URL escape in ${JSON.stringify(rawPath)}`);
    path = decoded;
    t.scanPath(path, false); // Go splits the decoded path (an escaped %2F is a '/' too); control bytes decoded from %XX are allowed
  }

  // splitPath: strings.Split(strings.Trim(path, "/"), "/"), as t's parts of path.
  const parts = t.parts;
  if (parts < 3) return nonResource(path, method, '');

  let apiPrefix: string;
  let apiGroup = '';
  let apiVersion: string;
  let cur: number; // index of currentParts[0]
  // part 0 is "api" or "apis": read once, its length first
  const bs = t.bytes;
  const lo = t.partsFrom;
  const n0 = t.partEnd(0) - lo;
  const api = (n0 === 3 || n0 === 4) && bs[lo] === 0x61 && bs[lo + 1] === 0x70 && bs[lo + 2] === 0x69; // "api"
  if (api && n0 === 3) {
    apiPrefix = 'api';
    apiVersion = t.namePart(path, 1, names);
    cur = 2;
  } else if (api && bs[lo + 3] === 0x73) {
    apiPrefix = 'apis';
    // Go sets APIPrefix before the "do we have four parts?" check, so /apis/g/v keeps it.
    if (parts < 4) return nonResource(path, method, apiPrefix);
    apiGroup = t.namePart(path, 1, names);
    apiVersion = t.namePart(path, 2, names);
    cur = 3;
  } else {
    return nonResource(path, method, '');
  }

  // /{watch|proxy}/... is a verb via path; it needs something after it.
  let verb: string;
  const curStart = t.partStart(cur);
  if (t.partEnd(cur) - curStart === 5 && (t.isPart(cur, P_WATCH) || t.isPart(cur, P_PROXY))) {
    const w = bs[curStart] === 0x77; // 'w'
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
  if (cur + 1 < parts && t.isPart(cur, P_NAMESPACES)) {
    namespace = t.part(path, cur + 1);
    if (cur + 2 < parts && !t.isPart(cur + 2, P_STATUS) && !t.isPart(cur + 2, P_FINALIZE)) cur += 2;
  }

  // parts: resource/name/subresource/anything/else; proxy takes no subresource.
  const resource = t.namePart(path, cur, names);
  let name = '';
  let subresource = '';
  if (cur + 1 < parts) {
    name = t.part(path, cur + 1);
    if (cur + 2 < parts && verb !== 'proxy') subresource = t.part(path, cur + 2);
  }

  if (name.length === 0 && verb === 'get') {
    const lw = listOrWatch(rawQuery, t, selectorName);
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

// Routing reads at most 9 parts (apis/g/v/watch/namespaces/ns/resource/name/subresource), so the
// first SLASH_CAP '/' of a path are enough to find them.
const SLASH_CAP = 16;
const NON_ASCII = 0x80;

/** The result of TargetBytes.plainWatchValue. */
const WATCH_ABSENT = 0;
const WATCH_FOUND = 1;
const WATCH_UNREAD = 2;

/**
 * The parse state of one request target: its bytes and what the scans recorded of them. scanPath
 * writes a path and records its parts (the fields under "scanPath"), which partStart, partEnd, part,
 * namePart and isPart read; scanQuery writes the query behind the path (the fields under
 * "scanQuery"), which plainWatchValue reads. A later scanPath, of the decoded path, records that
 * the query's bytes are gone (queryFrom -1): its UTF-8 may be longer than the raw path and reach
 * them. One instance (TARGET) serves every call: newRequestInfo is synchronous and keeps nothing of
 * it once it returns.
 */
class TargetBytes {
  /**
   * The path as bytes, one per character, then the query's: parts are compared with literals and
   * names through them (names.ts). An ASCII path is written by one native call (Buffer write, one
   * byte per character); reading a Buffer is an indexed load where charCodeAt costs ~1.6 ns per
   * character (a scan of the native-bench paths measured 165 → 125 ns, 2026-12-04). A path with
   * other characters is copied with charCodeAt, each of them as 0x80: it is no '/', '%' or control
   * byte, and a part holding one matches no name (names.ts says why). Grown to the longest target seen.
   */
  bytes = Buffer.allocUnsafe(1024);
  /** The same bytes, for names.ts. */
  view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);

  // scanPath: the path it wrote last is bytes[0, path.length); part k is bytes[partStart(k), partEnd(k)).
  /** How many parts strings.Split gives for the trimmed path, 0 when it is empty: exact up to
   *  SLASH_CAP + 1, and SLASH_CAP + 1 for any path with more (newRequestInfo reads no further). */
  parts = 0;
  /** Where part 0 starts (after the leading '/'). */
  partsFrom = 0;
  /** Where the last part ends (before the trailing '/'). */
  partsTo = 0;
  /** How many '/' follow partsFrom (trailing ones too); slashAt[k] is the one that ends part k, for k < SLASH_CAP. */
  slashCount = 0;
  readonly slashAt = new Int32Array(SLASH_CAP);

  // scanQuery: the query's bytes are bytes[queryFrom, queryTo), UTF-8; queryFrom is -1 when they are
  // not there (a path was scanned since).
  queryFrom = -1;
  queryTo = 0;
  /** The query holds "watch" or an escape of one of its letters: else no pair can be keyed "watch". */
  queryMayWatch = false;

  // plainWatchValue, after WATCH_FOUND: Values.Get("watch") is query[watchFrom, watchTo).
  watchFrom = 0;
  watchTo = 0;

  /** A larger buffer, holding the first `keep` bytes. */
  private grow(size: number, keep: number): void {
    const grown = Buffer.allocUnsafe(Math.max(size, this.bytes.length * 2));
    this.bytes.copy(grown, 0, 0, keep);
    this.bytes = grown;
    this.view = new DataView(grown.buffer, grown.byteOffset, grown.byteLength);
  }

  /** One pass over path: writes it and records its parts; SCAN_CTL on a control byte when checkCTL
   *  (then nothing is recorded), else SCAN_PERCENT when it holds a '%' (its parts are not recorded:
   *  the decoded path is scanned next), else SCAN_PLAIN. */
  scanPath(s: string, checkCTL: boolean): number {
    const len = s.length;
    this.queryFrom = -1;
    // write() writes at most the room there is: 3 bytes per UTF-16 unit is the most it can need
    if (len * 3 > this.bytes.length) this.grow(len * 3, 0);
    const bs = this.bytes;
    if (bs.write(s, 0, 'utf8') !== len) {
      for (let i = 0; i < len; i++) {
        const c = s.charCodeAt(i);
        bs[i] = c < 0x80 ? c : NON_ASCII;
      }
    }
    const slashAt = this.slashAt;
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
    if (r === SCAN_PERCENT) return r;
    let hi = len;
    while (hi > lo && bs[hi - 1] === SLASH) hi--;
    let parts = 0;
    if (lo < hi) {
      // the '/' before hi end parts; beyond the recorded ones only "more than SLASH_CAP" matters
      const m = n < SLASH_CAP ? n : SLASH_CAP;
      parts = 1;
      while (parts - 1 < m && slashAt[parts - 1] < hi) parts++;
    }
    this.slashCount = n;
    this.partsFrom = lo;
    this.partsTo = hi;
    this.parts = parts;
    return r;
  }

  /**
   * SCAN_CTL when stringContainsCTLByte(query), else SCAN_PLAIN; read through bytes like the path:
   * written behind the path's bytes (which stay), at `at`. UTF-8 keeps every byte < 0x80 as it is
   * and writes other characters as bytes >= 0x80, so the answer is exact whatever the query holds
   * (~20 % less time than a charCodeAt loop on the native-bench queries). While the bytes are read,
   * records queryMayWatch, so that a list's query is read once.
   */
  scanQuery(query: string, at: number): number {
    const len = query.length;
    this.queryFrom = at;
    this.queryTo = at;
    this.queryMayWatch = false;
    if (len === 0) return SCAN_PLAIN;
    if (at + len * 3 > this.bytes.length) this.grow(at + len * 3, at);
    const bs = this.bytes;
    const end = at + bs.write(query, at, 'utf8');
    this.queryTo = end;
    let mayWatch = false;
    for (let i = at; i < end; i++) {
      const c = bs[i];
      // '&' to 'v' (0x26–0x76): letters before 'w', digits, '=', '&', '.', '-' go on after one unsigned
      // compare; control bytes, '%', 'w' and DEL are all outside that range.
      if (((c - 0x26) >>> 0) < 0x51) continue;
      if (c < 0x20 || c === 0x7f) return SCAN_CTL;
      // "watch", or '%' before 61, 63, 68, 74 or 77 (an escaped 'a', 'c', 'h', 't' or 'w'; only
      // digits, so no case)
      if (c === 0x77 || c === PERCENT) mayWatch ||= watchAt(bs, i, end);
    }
    this.queryMayWatch = mayWatch;
    return SCAN_PLAIN;
  }

  partStart(k: number): number {
    return k === 0 ? this.partsFrom : this.slashAt[k - 1] + 1;
  }

  partEnd(k: number): number {
    if (k >= this.slashCount) return this.partsTo;
    const e = this.slashAt[k];
    return e < this.partsTo ? e : this.partsTo;
  }

  /** Part k of s, the path scanned last. */
  part(s: string, k: number): string {
    return s.substring(this.partStart(k), this.partEnd(k));
  }

  /** Part k of s, the path scanned last, as one of names when it is one, else cut out of s. */
  namePart(s: string, k: number, names: Names): string {
    const a = this.partStart(k);
    const b = this.partEnd(k);
    const known = names.find(this.view, a, b);
    return known !== undefined ? known : s.substring(a, b);
  }

  /** Part k is lit: lengths first (most parts differ there), then a byte loop over a literal of 5 to
   *  10 bytes on the Buffer itself. */
  isPart(k: number, lit: Literal): boolean {
    const a = this.partStart(k);
    const lb = lit.bytes;
    const n = lb.length;
    if (this.partEnd(k) - a !== n) return false;
    const bs = this.bytes;
    for (let i = 0; i < n; i++) if (bs[a + i] !== lb[i]) return false;
    return true;
  }

  /**
   * Values.Get("watch") read from the query's bytes, without url.ParseQuery, when Go would unescape
   * and reject nothing up to the first pair keyed "watch": no '%', ';' or non-ASCII byte before that
   * pair's end (pairs after it cannot change Values.Get("watch")). Up to there a byte is a character,
   * so WATCH_FOUND's range (watchFrom, watchTo) is one in the query string. WATCH_ABSENT when no
   * pair is keyed "watch"; WATCH_UNREAD when the bytes cannot tell: they are gone (queryFrom -1),
   * they break the rule above, or the query has MAX_QUERY_PARAMS or more bytes (it may have too many
   * pairs: no values at all). The usual watch queries (watch=true&resourceVersion=…) are read here;
   * QueryValues.parse cost them ~300 ns more than a list's query, this read ~150 (a loop over one
   * request each, 2026-12-04).
   */
  plainWatchValue(): number {
    const from = this.queryFrom;
    const to = this.queryTo;
    if (from === -1 || to - from >= MAX_QUERY_PARAMS) return WATCH_UNREAD;
    const bs = this.bytes;
    let pair = from; // where the current pair starts
    for (let i = from; i <= to; i++) {
      const c = i < to ? bs[i] : AMP;
      if (c === AMP) {
        // the pair bs[pair, i): key "watch" alone (the value ""), or "watch=" then the value
        if (bs[pair] === 0x77 && watchAt(bs, pair, i) && (i - pair === 5 || bs[pair + 5] === EQ)) {
          this.watchFrom = (i - pair === 5 ? i : pair + 6) - from;
          this.watchTo = i - from;
          return WATCH_FOUND;
        }
        pair = i + 1;
      } else if (c === PERCENT || c === SEMI || c >= 0x80) {
        // '+' needs no check: it unescapes to ' ', so a key holding one is never "watch" and a value
        // holding one is never "0" or "false", raw or unescaped
        return WATCH_UNREAD;
      }
    }
    return WATCH_ABSENT;
  }
}

const TARGET = new TargetBytes();

/** At bs[i] ('w' or '%'): "watch", or an escape of one of its letters. */
function watchAt(bs: Buffer, i: number, end: number): boolean {
  if (bs[i] === 0x77) return i + 5 <= end && bs[i + 1] === 0x61 && bs[i + 2] === 0x74 && bs[i + 3] === 0x63 && bs[i + 4] === 0x68;
  if (i + 3 > end) return false;
  const hi = bs[i + 1];
  const lo = bs[i + 2];
  return hi === 0x36 ? lo === 0x31 || lo === 0x33 || lo === 0x38 : hi === 0x37 && (lo === 0x34 || lo === 0x37);
}

const P_WATCH = new Literal('watch');
const P_PROXY = new Literal('proxy');
const P_NAMESPACES = new Literal('namespaces');
const P_STATUS = new Literal('status');
const P_FINALIZE = new Literal('finalize');

// ---------------------------------------------------------------------------------------------
// get without a name: list or watch, and a name from fieldSelector=metadata.name=X.
//
// Go (requestinfo.go): DecodeParameters(req.URL.Query(), metav1 ListOptions) into the internal
// ListOptions. That is Convert_url_Values_To_v1_ListOptions (first value of each key,
// apimachinery meta/v1 zz_generated.conversion.go), then Convert_v1_ListOptions_To_internalversion:
// fields.ParseSelector(fieldSelector) and labels.Parse(labelSelector). Any conversion error
// (labelSelector, fieldSelector, limit or timeoutSeconds that do not parse) drops the whole result:
// no name, and watch is re-read from Query()["watch"][0] (isWatch says how).

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
// req.URL.Query(), reused between calls (newRequestInfo is synchronous): all ListOptions keys, or
// only "watch" for the verb alone.
const listOptions = new QueryValues(LIST_OPTIONS_KEYS);
const watchOnly = new QueryValues(['watch']);

/**
 * The verb of a get without a name, and the name its fieldSelector gives when selectorName. Two
 * steps: where Values.Get("watch") is (and whether DecodeParameters fails, when that can matter),
 * then isWatch. With selectorName, url.ParseQuery reads every ListOptions key. Without it, only the
 * watch value is looked for: nowhere when the query cannot hold the key (TargetBytes.queryMayWatch),
 * in the query's bytes when they can tell (TargetBytes.plainWatchValue), else by url.ParseQuery of
 * "watch" alone; DecodeParameters is asked only for a non-ASCII value, the one kind on which
 * isWatch's two rules disagree.
 */
function listOrWatch(rawQuery: string, t: TargetBytes, selectorName: boolean): ListOrWatch {
  let found = false;
  let s = rawQuery;
  let a = 0;
  let b = 0;
  let decodeFailed = false;
  let name: string | undefined;
  if (selectorName) {
    const q = listOptions;
    if (q.parse(rawQuery)) {
      const selected = decodeListOptions(q);
      decodeFailed = selected === null;
      if (selected != null && validPathSegmentName(selected)) name = selected;
      found = q.get(K_WATCH);
      s = q.str;
      a = q.start;
      b = q.end;
    }
  } else if (t.queryMayWatch) {
    const plain = t.plainWatchValue();
    if (plain !== WATCH_UNREAD) {
      found = plain === WATCH_FOUND;
      a = t.watchFrom;
      b = t.watchTo;
    } else {
      const q = watchOnly;
      found = q.parse(rawQuery) && q.get(0);
      s = q.str;
      a = q.start;
      b = q.end;
      if (found && !isASCII(s, a, b)) decodeFailed = listOptions.parse(rawQuery) && decodeListOptions(listOptions) === null;
    }
  }
  const watch = isWatch(found, s, a, b, decodeFailed);
  if (name === undefined) return watch ? WATCH : LIST;
  return { watch, name };
}

/**
 * The one rule for list or watch, on Values.Get("watch") = s[a, b) when found (else a list):
 * Convert_Slice_string_To_bool makes "0" or strings.EqualFold(v, "false") false and anything else,
 * even "", true; after a DecodeParameters error requestinfo.go asks strings.ToLower(v) ∈ {"false",
 * "0"} instead. The two agree on every ASCII value: 'ſ' (U+017F) folds to 's' but does not lower to it.
 */
function isWatch(found: boolean, s: string, a: number, b: number, decodeFailed: boolean): boolean {
  if (!found || (b - a === 1 && s.charCodeAt(a) === 0x30)) return false;
  return decodeFailed ? !toLowerIs(s, a, b, 'false') : !equalFoldLower(s, a, b, 'false');
}

/**
 * DecodeParameters into ListOptions, on a parsed query: null when it fails (limit or timeoutSeconds
 * not an int64, a labelSelector labels.Parse rejects, a fieldSelector fields.ParseSelector rejects),
 * else RequiresExactMatch("metadata.name") of the fieldSelector, undefined when there is none.
 */
function decodeListOptions(q: QueryValues): string | undefined | null {
  if (q.get(K_LIMIT) && !parseInt64OK(q.str, q.start, q.end)) return null;
  if (q.get(K_TIMEOUT) && !parseInt64OK(q.str, q.start, q.end)) return null;
  if (q.get(K_LABEL) && !validLabelSelector(q.str, q.start, q.end)) return null;
  return q.get(K_FIELD) ? selectorExactMatch(q.str.substring(q.start, q.end), 'metadata.name') : undefined;
}

function isASCII(s: string, a: number, b: number): boolean {
  for (let i = a; i < b; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** path.IsValidPathSegmentName (apimachinery pkg/api/validation/path/name.go). */
function validPathSegmentName(name: string): boolean {
  return name !== '.' && name !== '..' && name.indexOf('/') === -1 && name.indexOf('%') === -1;
}
