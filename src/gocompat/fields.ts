// fields.ParseSelector followed by RequiresExactMatch(field): a port of Kubernetes'
// staging/src/k8s.io/apimachinery/pkg/fields/selector.go (ParseSelector, parseSelector, splitTerms,
// splitTerm, UnescapeValue, andTerm.RequiresExactMatch, hasTerm). Kubernetes keeps it in a package
// of its own, apart from requestinfo.go, and so does mvproxy: RequestInfo reads a list's or watch's
// name from fieldSelector=metadata.name=X (src/request/requestinfo.ts).
//
// What differs: no Selector is built, only the one answer; a notHasTerm ("!=") is parsed and
// validated but never kept, since RequiresExactMatch reads hasTerms only. Byte order of the raw
// terms (Go's sort.StringSlice) is compareByteOrder (./strings.ts), which orders UTF-16 as Go orders
// UTF-8.

import { compareByteOrder } from './strings';

const EQ = 0x3d;
const NOT = 0x21;
const COMMA = 0x2c;
const BACKSLASH = 0x5c;

/**
 * RequiresExactMatch(field) on ParseSelector(sel): the value of the "field=value" or
 * "field==value" term, undefined when there is none, or null when ParseSelector fails. Go sorts the
 * raw terms and returns the first hasTerm on field, i.e. the one whose raw term sorts lowest (byte
 * order).
 */
export function selectorExactMatch(sel: string, field: string): string | undefined | null {
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
      if (c === BACKSLASH) {
        inSlash = true;
        continue;
      }
      if (c !== COMMA) continue;
    }
    // a term is sel[start, i)
    if (i > start) {
      const term = sel.substring(start, i);
      const op = splitTerm(term);
      if (op === -1) return null;
      const isNot = term.charCodeAt(op) === NOT;
      const isDouble = !isNot && term.charCodeAt(op + 1) === EQ;
      const rhs = term.substring(op + (isNot || isDouble ? 2 : 1));
      const value = unescapeValue(rhs);
      if (value === undefined) return null;
      if (!isNot && op === field.length && term.startsWith(field) && (bestTerm === undefined || compareByteOrder(term, bestTerm) < 0)) {
        bestTerm = term;
        bestValue = value;
      }
    }
    start = i + 1;
  }
  return bestValue;
}

/** splitTerm: the index of the first operator ("!=", "==" or "=", checked in that order at each index), or -1. */
function splitTerm(term: string): number {
  for (let i = 0; i < term.length; i++) {
    const c = term.charCodeAt(i);
    if (c === EQ) return i;
    if (c === NOT && term.charCodeAt(i + 1) === EQ) return i;
  }
  return -1;
}

/** UnescapeValue: `\\`, `\,`, `\=` are escapes; any other escape, or a bare ',' or '=', fails (undefined). */
function unescapeValue(s: string): string | undefined {
  if (s.indexOf('\\') === -1 && s.indexOf(',') === -1 && s.indexOf('=') === -1) return s;
  let out = '';
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (inSlash) {
      if (c !== BACKSLASH && c !== COMMA && c !== EQ) return undefined;
      out += s[i];
      inSlash = false;
      continue;
    }
    if (c === BACKSLASH) inSlash = true;
    else if (c === COMMA || c === EQ) return undefined;
    else out += s[i];
  }
  return inSlash ? undefined : out;
}
