// labelSelector / fieldSelector matching for list, watch and deletecollection.
import type { KubeObject } from './store';

export type Matcher = (o: KubeObject) => boolean;

export class SelectorError extends Error {}

const MATCH_ALL: Matcher = () => true;

function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === '(') depth++;
    else if (ch === ')') depth--;
    else if (ch === ',' && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out.map((x) => x.trim()).filter((x) => x.length > 0);
}

const KEY = /^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?$/;

function checkKey(k: string, whole: string): string {
  if (!KEY.test(k)) throw new SelectorError(`unable to parse requirement: invalid label key "${k}" in "${whole}"`);
  return k;
}

/** labels.Parse: =, ==, !=, in (...), notin (...), key, !key. */
export function parseLabelSelector(sel: string | null | undefined): Matcher {
  if (!sel || !sel.trim()) return MATCH_ALL;
  const reqs: Matcher[] = [];
  for (const term of splitTopLevel(sel)) {
    let m: RegExpMatchArray | null;
    if ((m = term.match(/^(\S+?)\s+(in|notin)\s*\(([^)]*)\)$/))) {
      const key = checkKey(m[1]!, sel);
      const values = new Set(m[3]!.split(',').map((v) => v.trim()).filter((v) => v.length));
      if (m[2] === 'in') reqs.push((o) => { const v = o.metadata.labels?.[key]; return v !== undefined && values.has(v); });
      else reqs.push((o) => { const v = o.metadata.labels?.[key]; return v === undefined || !values.has(v); });
    } else if ((m = term.match(/^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/))) {
      const key = checkKey(m[1]!, sel);
      const value = m[3]!;
      if (m[2] === '!=') reqs.push((o) => o.metadata.labels?.[key] !== value);
      else reqs.push((o) => o.metadata.labels?.[key] === value);
    } else if ((m = term.match(/^!\s*(\S+)$/))) {
      const key = checkKey(m[1]!, sel);
      reqs.push((o) => o.metadata.labels?.[key] === undefined);
    } else if (KEY.test(term)) {
      reqs.push((o) => o.metadata.labels?.[term] !== undefined);
    } else {
      throw new SelectorError(`unable to parse requirement: found '${term}', expected: in, notin, =, ==, !=, gt, lt`);
    }
  }
  return reqs.length === 1 ? reqs[0]! : (o) => reqs.every((r) => r(o));
}

function fieldValue(o: KubeObject, path: string): string {
  let cur: unknown = o;
  for (const p of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = (cur as Record<string, unknown>)[p];
  }
  if (cur === undefined || cur === null) return '';
  return typeof cur === 'object' ? JSON.stringify(cur) : String(cur);
}

export interface FieldSelector {
  matcher: Matcher;
  /** Set when the selector pins metadata.name (as RequestInfo does for list/watch). */
  name?: string;
}

/** fields.Parse: `path=value`, `path==value`, `path!=value`, comma-separated. Any dotted path is accepted. */
export function parseFieldSelector(sel: string | null | undefined): FieldSelector {
  if (!sel || !sel.trim()) return { matcher: MATCH_ALL };
  const reqs: Matcher[] = [];
  let name: string | undefined;
  for (const term of splitTopLevel(sel)) {
    const m = term.match(/^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/);
    if (!m) throw new SelectorError(`invalid selector: '${sel}'; can't understand '${term}'`);
    const [, path, op, value] = m as unknown as [string, string, string, string];
    if (op === '!=') reqs.push((o) => fieldValue(o, path) !== value);
    else {
      reqs.push((o) => fieldValue(o, path) === value);
      if (path === 'metadata.name') name = value;
    }
  }
  const matcher: Matcher = reqs.length === 1 ? reqs[0]! : (o) => reqs.every((r) => r(o));
  return name !== undefined ? { matcher, name } : { matcher };
}

export function both(a: Matcher, b: Matcher): Matcher {
  if (a === MATCH_ALL) return b;
  if (b === MATCH_ALL) return a;
  return (o) => a(o) && b(o);
}

export { MATCH_ALL };
