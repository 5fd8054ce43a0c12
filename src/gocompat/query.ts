// url.ParseQuery, read the way Values.Get reads it: a port of go/src/net/url/url.go of Go 1.26
// (ParseQuery, parseQuery, urlParamsWithinMax, Values.Get).
//
// What differs: only the first value of a few keys fixed up front is kept, as a range into the query
// (QueryValues.get), so a query with nothing to unescape is read without building a map or a string;
// the request path parses one per list/watch request (src/request/requestinfo.ts). Unescaping is
// src/gocompat/url.ts (its differences apply). GODEBUG urlmaxqueryparams is not read: the limit is
// Go's default.

import { queryUnescapeCheck, unescape } from './url';

// More '&'-separated parameters than this and parseQuery returns an error before it stores any value
// (urlParamsWithinMax, defaultMaxParams; Go 1.24.12 and 1.25.6 on).
export const MAX_QUERY_PARAMS = 10000;

const PERCENT = 0x25;
const PLUS = 0x2b;
const SEMI = 0x3b;
const EQ = 0x3d;
const AMP = 0x26;

/**
 * The first value of each of `keys` in one query, as url.ParseQuery(query) then Values.Get(key)
 * give it. One instance is reused call after call (the request path is synchronous): parse() fills
 * it, get() reads a key's value into str[start, end).
 */
export class QueryValues {
  /** After get() returned true: the value is str.substring(start, end). */
  str = '';
  start = 0;
  end = 0;
  private query = '';
  private readonly keys: readonly string[];
  private readonly vStart: Int32Array;
  private readonly vEnd: Int32Array;
  /** 1 when the value holds '%' or '+' and must be unescaped first */
  private readonly vEscaped: Uint8Array;

  constructor(keys: readonly string[]) {
    this.keys = keys;
    this.vStart = new Int32Array(keys.length);
    this.vEnd = new Int32Array(keys.length);
    this.vEscaped = new Uint8Array(keys.length);
  }

  /** parseQuery(query): records the first value of every key; whether any key has one. */
  parse(query: string): boolean {
    this.query = query;
    const vStart = this.vStart;
    vStart.fill(-1);
    const len = query.length;
    if (len === 0) return false;
    if (len >= MAX_QUERY_PARAMS) {
      // A plain loop: one indexOf call per '&' cost ~5× more per character on a query of only '&'
      // (npm run fuzz: a jump at this threshold that fitted as time ~ length^1.42).
      let amps = 0;
      for (let i = 0; i < len; i++) if (query.charCodeAt(i) === AMP) amps++;
      if (amps + 1 > MAX_QUERY_PARAMS) return false;
    }
    let found = false;
    let pos = 0;
    while (pos < len) {
      let end = query.indexOf('&', pos);
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
        const c = query.charCodeAt(i);
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
        const key = unescape(query, pairStart, keyEnd, true);
        if (key === null) continue;
        k = this.keys.indexOf(key);
      } else {
        k = this.rawKeyIndex(query, pairStart, keyEnd);
      }
      if (k === -1 || vStart[k] !== -1) continue;
      // Go drops the pair when its value does not unescape; a later pair may then be the first value.
      const flags = queryUnescapeCheck(query, valStart, end);
      if (flags === -1) continue;
      vStart[k] = valStart;
      this.vEnd[k] = end;
      this.vEscaped[k] = flags;
      found = true;
    }
    return found;
  }

  /**
   * Values.Get(keys[k]) for the last parse(), as str[start, end): in place in the query when it needs
   * no unescaping, so the usual list/watch queries allocate nothing here. false when the key is absent.
   */
  get(k: number): boolean {
    const a = this.vStart[k];
    if (a === -1) return false;
    if (this.vEscaped[k] === 0) {
      this.str = this.query;
      this.start = a;
      this.end = this.vEnd[k];
    } else {
      const v = unescape(this.query, a, this.vEnd[k], true) ?? '';
      this.str = v;
      this.start = 0;
      this.end = v.length;
    }
    return true;
  }

  /** The index of query[a, b) in keys, or -1: compares in place, without slicing the key out. */
  private rawKeyIndex(query: string, a: number, b: number): number {
    const keys = this.keys;
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k];
      if (key.length === b - a && query.startsWith(key, a)) return k;
    }
    return -1;
  }
}
