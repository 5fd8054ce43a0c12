// application/json for aggregated discovery (docs/kubernetes-mvp.md §7.1): compact, as Go's encoding/json writes
// the apidiscovery structs.
//
// Written by hand rather than JSON.stringify(list) so that equal content always gives equal
// bytes (and so an equal ETag) whatever the key order of the input objects: a document parsed
// from a peer's JSON, decoded from protobuf or built by the merge all come out the same. Rules:
// - keys in Go struct order; omitempty fields left out when empty, the others always written
//   (`"verbs": null` when there are no verbs, `"resource"`, `"scope"`, `"singularResource"`,
//   `"version"`, `"subresource"`, and `group`/`version`/`kind` of a GroupVersionKind);
// - map keys (labels, annotations) sorted in byte order, as Go sorts them;
// - `<`, `>`, `&`, U+2028 and U+2029 escaped as \u003c … like Go's HTML-safe encoder;
// - keys unknown to the Go types are dropped (Go's decoder drops them too, and the protobuf
//   encoding cannot carry them, so both encodings carry the same content);
// - metav1.Time values normalised to RFC 3339 whole seconds in UTC; the zero time left out.
//
// Speed: a group, version or resource already in exactly that form (keys in Go order, nothing
// else, see "canonical" below; what a Go apiserver sends) is written by JSON.stringify, which
// gives the same bytes several times faster; the walk handles the rest. encodeJSONReference is the
// walk alone. Also here: splitting a list's JSON into its items (for parsing only what changed)
// and telling when a group's JSON text is already its encoding (isRawGroupJSON).

import { isAscii } from 'node:buffer';
import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  GroupVersionKind,
  ObjectMeta,
} from '../types';
import { compareByteOrder } from '../../gocompat/strings';
import { formatTime, parseTime } from './time';

/** The compact JSON body of an APIGroupDiscoveryList. */
export function encodeJSON(list: APIGroupDiscoveryList): Buffer {
  return Buffer.from(stringifyAPIGroupDiscoveryList(list), 'utf8');
}

/**
 * The same bytes as encodeJSON, written by the field-by-field walk alone (no JSON.stringify fast
 * path): the reference the fast path is tested against.
 */
export function encodeJSONReference(list: APIGroupDiscoveryList): Buffer {
  return Buffer.from(stringifyAPIGroupDiscoveryList(list, (g) => group(g, false)), 'utf8');
}

/**
 * The compact JSON of one group, exactly as it appears among the `items` of encodeJSON's output.
 * Callers that encode the same (immutable) group objects again and again memoise this.
 */
export function groupJSON(g: APIGroupDiscovery): string {
  return isCanonicalGroup(g) ? escapeHTML(JSON.stringify(g)) : group(g, true);
}

/**
 * The same as encodeJSON, as a string. `item` gives the JSON of one group (default groupJSON; a
 * memoising caller passes its cache).
 */
export function stringifyAPIGroupDiscoveryList(list: APIGroupDiscoveryList, item: (g: APIGroupDiscovery) => string = groupJSON): string {
  let out = '{';
  let sep = '';
  // TypeMeta (inline, both omitempty): kind, apiVersion.
  if (list.kind) {
    out += `"kind":${str(list.kind)}`;
    sep = ',';
  }
  if (list.apiVersion) {
    out += `${sep}"apiVersion":${str(list.apiVersion)}`;
    sep = ',';
  }
  out += `${sep}"metadata":${listMeta(list.metadata ?? {})},"items":`;
  const items = list.items;
  if (items == null) return `${out}null}`;
  out += '[';
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out += ',';
    out += item(items[i]!);
  }
  return `${out}]}`;
}

// The field-by-field walk. With `fast`, a part that is canonical (below) is written by
// JSON.stringify instead, which gives the same bytes.

function group(g: APIGroupDiscovery, fast: boolean): string {
  let out = `{"metadata":${objectMeta(g.metadata ?? {})}`;
  const versions = g.versions;
  if (versions != null && versions.length > 0) {
    out += ',"versions":[';
    for (let i = 0; i < versions.length; i++) {
      if (i > 0) out += ',';
      const v = versions[i]!;
      out += fast && isCanonicalVersion(v) ? escapeHTML(JSON.stringify(v)) : version(v, fast);
    }
    out += ']';
  }
  return `${out}}`;
}

function version(v: APIVersionDiscovery, fast: boolean): string {
  let out = `{"version":${str(v.version ?? '')}`;
  const resources = v.resources;
  if (resources != null && resources.length > 0) {
    out += ',"resources":[';
    for (let i = 0; i < resources.length; i++) {
      if (i > 0) out += ',';
      const r = resources[i]!;
      out += fast && isCanonicalResource(r) ? escapeHTML(JSON.stringify(r)) : resource(r);
    }
    out += ']';
  }
  if (v.freshness) out += `,"freshness":${str(v.freshness)}`;
  return `${out}}`;
}

function resource(r: APIResourceDiscovery): string {
  let out = `{"resource":${str(r.resource ?? '')}`;
  if (r.responseKind != null) out += `,"responseKind":${gvk(r.responseKind)}`;
  out += `,"scope":${str(r.scope ?? '')},"singularResource":${str(r.singularResource ?? '')},"verbs":${stringList(r.verbs)}`;
  if (r.shortNames != null && r.shortNames.length > 0) out += `,"shortNames":${stringList(r.shortNames)}`;
  if (r.categories != null && r.categories.length > 0) out += `,"categories":${stringList(r.categories)}`;
  const subs = r.subresources;
  if (subs != null && subs.length > 0) {
    out += ',"subresources":[';
    for (let i = 0; i < subs.length; i++) {
      if (i > 0) out += ',';
      out += subresource(subs[i]!);
    }
    out += ']';
  }
  return `${out}}`;
}

function subresource(s: APISubresourceDiscovery): string {
  let out = `{"subresource":${str(s.subresource ?? '')}`;
  if (s.responseKind != null) out += `,"responseKind":${gvk(s.responseKind)}`;
  const accepted = s.acceptedTypes;
  if (accepted != null && accepted.length > 0) {
    out += ',"acceptedTypes":[';
    for (let i = 0; i < accepted.length; i++) {
      if (i > 0) out += ',';
      out += gvk(accepted[i]!);
    }
    out += ']';
  }
  return `${out},"verbs":${stringList(s.verbs)}}`;
}

function gvk(k: GroupVersionKind): string {
  return `{"group":${str(k.group ?? '')},"version":${str(k.version ?? '')},"kind":${str(k.kind ?? '')}}`;
}

function listMeta(m: Record<string, unknown>): string {
  const fields: string[] = [];
  for (const k of ['selfLink', 'resourceVersion', 'continue']) {
    const v = m[k];
    if (typeof v === 'string' && v !== '') fields.push(`"${k}":${str(v)}`);
  }
  if (m['remainingItemCount'] != null) fields.push(`"remainingItemCount":${int(m['remainingItemCount'])}`);
  return `{${fields.join(',')}}`;
}

function objectMeta(m: ObjectMeta): string {
  // Fast path: the usual group metadata is just a name.
  const keys = Object.keys(m);
  if (keys.length === 1 && keys[0] === 'name' && typeof m.name === 'string') {
    return m.name === '' ? '{}' : `{"name":${str(m.name)}}`;
  }
  const fields: string[] = [];
  for (const k of ['name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion']) {
    const v = m[k];
    if (typeof v === 'string' && v !== '') fields.push(`"${k}":${str(v)}`);
  }
  if (m['generation'] != null && m['generation'] !== 0) fields.push(`"generation":${int(m['generation'])}`);
  const created = parseTime(m['creationTimestamp']);
  if (created !== undefined) fields.push(`"creationTimestamp":${str(formatTime(created.seconds))}`);
  if (m['deletionTimestamp'] != null) fields.push(`"deletionTimestamp":${timeOrNull(m['deletionTimestamp'])}`);
  if (m['deletionGracePeriodSeconds'] != null) {
    fields.push(`"deletionGracePeriodSeconds":${int(m['deletionGracePeriodSeconds'])}`);
  }
  for (const k of ['labels', 'annotations']) {
    const map = m[k];
    if (map != null && typeof map === 'object' && Object.keys(map).length > 0) fields.push(`"${k}":${stringMap(map as Record<string, unknown>)}`);
  }
  const refs = m['ownerReferences'];
  if (Array.isArray(refs) && refs.length > 0) fields.push(`"ownerReferences":[${refs.map(ownerReference).join(',')}]`);
  const finalizers = m['finalizers'];
  if (Array.isArray(finalizers) && finalizers.length > 0) fields.push(`"finalizers":${stringList(finalizers as string[])}`);
  const managed = m['managedFields'];
  if (Array.isArray(managed) && managed.length > 0) fields.push(`"managedFields":[${managed.map(managedFieldsEntry).join(',')}]`);
  return `{${fields.join(',')}}`;
}

function ownerReference(o: Record<string, unknown>): string {
  let out = `{"apiVersion":${str(asString(o['apiVersion']))},"kind":${str(asString(o['kind']))},"name":${str(asString(o['name']))},"uid":${str(asString(o['uid']))}`;
  if (o['controller'] != null) out += `,"controller":${o['controller'] === true}`;
  if (o['blockOwnerDeletion'] != null) out += `,"blockOwnerDeletion":${o['blockOwnerDeletion'] === true}`;
  return `${out}}`;
}

function managedFieldsEntry(e: Record<string, unknown>): string {
  const fields: string[] = [];
  for (const k of ['manager', 'operation', 'apiVersion']) {
    const v = e[k];
    if (typeof v === 'string' && v !== '') fields.push(`"${k}":${str(v)}`);
  }
  if (e['time'] != null) fields.push(`"time":${timeOrNull(e['time'])}`);
  if (typeof e['fieldsType'] === 'string' && e['fieldsType'] !== '') fields.push(`"fieldsType":${str(e['fieldsType'])}`);
  if (e['fieldsV1'] != null) fields.push(`"fieldsV1":${escapeHTML(JSON.stringify(e['fieldsV1']))}`);
  if (typeof e['subresource'] === 'string' && e['subresource'] !== '') fields.push(`"subresource":${str(e['subresource'])}`);
  return `{${fields.join(',')}}`;
}

function timeOrNull(value: unknown): string {
  const t = parseTime(value);
  return t === undefined ? 'null' : str(formatTime(t.seconds));
}

function stringMap(m: Record<string, unknown>): string {
  const keys = Object.keys(m).sort(compareByteOrder);
  return `{${keys.map((k) => `${str(k)}:${str(asString(m[k]))}`).join(',')}}`;
}

/** A string list; null for null/absent (Go nil slice), [] for an empty array. */
function stringList(list: readonly string[] | null | undefined): string {
  if (list == null) return 'null';
  let out = '[';
  for (let i = 0; i < list.length; i++) {
    if (i > 0) out += ',';
    out += str(list[i]!);
  }
  return `${out}]`;
}

function int(v: unknown): string {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new TypeError('expected an integer');
  return String(v);
}

function asString(v: unknown): string {
  if (v == null) return '';
  if (typeof v !== 'string') throw new TypeError(`expected a string, got ${typeof v}`);
  return v;
}

const htmlUnsafeTest = /[<>&\u2028\u2029]/;
const htmlUnsafe = /[<>&\u2028\u2029]/g;
const htmlEscapes: Record<string, string> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

function escapeHTML(json: string): string {
  return htmlUnsafeTest.test(json) ? json.replace(htmlUnsafe, (c) => htmlEscapes[c]!) : json;
}

/** Strings that need no escaping at all (nearly every name in a discovery document). */
const plainString = /^[A-Za-z0-9._/:+\- ]*$/;

/** A JSON string literal, escaped as Go's encoder does. */
function str(s: string): string {
  return plainString.test(s) ? `"${s}"` : escapeHTML(JSON.stringify(s));
}

// ---- the JSON.stringify fast path -------------------------------------------------------------
// A part is "canonical" when JSON.stringify writes exactly the bytes of the walk above (before the
// HTML escaping, which applies to both alike): its own keys are the Go fields in Go order and
// nothing else, every field the walk always writes is present with the right type, no omitempty
// field is present but empty (`"shortNames": []` is written by JSON.stringify, left out by Go),
// optional objects are not null, and group metadata is just a non-empty name (anything else in
// ObjectMeta needs the normalising walk: timestamps, sorted maps, …). A current apiserver's
// document parsed by JSON.parse is canonical throughout (older ones add `"creationTimestamp":null`
// to group metadata: then each version is), and so is what mergeResources builds from canonical
// parts.
// Anything else (a document from another encoder, a protobuf-decoded one with unusual metadata, a
// hand-built object) takes the walk for just the parts that are not canonical.

const groupFields = ['metadata', 'versions'];
const versionFields = ['version', 'resources', 'freshness'];
const resourceFields = ['resource', 'responseKind', 'scope', 'singularResource', 'verbs', 'shortNames', 'categories', 'subresources'];
const subresourceFields = ['subresource', 'responseKind', 'acceptedTypes', 'verbs'];

/** Own keys of o are a subsequence of `fields`, in that order. */
function keysInOrder(o: object, fields: readonly string[]): boolean {
  const keys = Object.keys(o);
  let f = 0;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    while (f < fields.length && fields[f] !== k) f++;
    if (f === fields.length) return false;
    f++;
  }
  return true;
}

function isPlainObject(o: unknown): o is Record<string, unknown> {
  return typeof o === 'object' && o !== null && !Array.isArray(o);
}

/** true when JSON.stringify(g) (HTML-escaped) is what encodeJSON writes for g. */
export function isCanonicalGroup(g: APIGroupDiscovery): boolean {
  if (!isPlainObject(g) || !keysInOrder(g, groupFields)) return false;
  const m = g.metadata as unknown;
  if (!isPlainObject(m)) return false;
  const mk = Object.keys(m);
  if (mk.length !== 1 || mk[0] !== 'name' || typeof m['name'] !== 'string' || m['name'] === '') return false;
  const versions = g.versions as unknown;
  if (versions === undefined) return true;
  if (!Array.isArray(versions) || versions.length === 0) return false;
  for (let i = 0; i < versions.length; i++) if (!isCanonicalVersion(versions[i])) return false;
  return true;
}

function isCanonicalVersion(v: APIVersionDiscovery): boolean {
  if (!isPlainObject(v) || !keysInOrder(v, versionFields) || typeof v.version !== 'string') return false;
  const f = v.freshness as unknown;
  if (f !== undefined && (typeof f !== 'string' || f === '')) return false;
  const resources = v.resources as unknown;
  if (resources === undefined) return true;
  if (!Array.isArray(resources) || resources.length === 0) return false;
  for (let i = 0; i < resources.length; i++) if (!isCanonicalResource(resources[i])) return false;
  return true;
}

function isCanonicalResource(r: APIResourceDiscovery): boolean {
  if (!isPlainObject(r) || !keysInOrder(r, resourceFields)) return false;
  if (typeof r.resource !== 'string' || typeof r.scope !== 'string' || typeof r.singularResource !== 'string') return false;
  if (r.responseKind !== undefined && !isCanonicalGVK(r.responseKind)) return false;
  if (r.verbs !== null && !isStringArray(r.verbs, false)) return false;
  if (r.shortNames !== undefined && !isStringArray(r.shortNames, true)) return false;
  if (r.categories !== undefined && !isStringArray(r.categories, true)) return false;
  const subs = r.subresources as unknown;
  if (subs === undefined) return true;
  if (!Array.isArray(subs) || subs.length === 0) return false;
  for (let i = 0; i < subs.length; i++) if (!isCanonicalSubresource(subs[i])) return false;
  return true;
}

function isCanonicalSubresource(s: APISubresourceDiscovery): boolean {
  if (!isPlainObject(s) || !keysInOrder(s, subresourceFields) || typeof s.subresource !== 'string') return false;
  if (s.responseKind !== undefined && !isCanonicalGVK(s.responseKind)) return false;
  const accepted = s.acceptedTypes as unknown;
  if (accepted !== undefined) {
    if (!Array.isArray(accepted) || accepted.length === 0) return false;
    for (let i = 0; i < accepted.length; i++) if (!isCanonicalGVK(accepted[i])) return false;
  }
  return s.verbs === null || isStringArray(s.verbs, false);
}

function isCanonicalGVK(k: unknown): boolean {
  if (!isPlainObject(k)) return false;
  const keys = Object.keys(k);
  return (
    keys.length === 3 && keys[0] === 'group' && keys[1] === 'version' && keys[2] === 'kind' &&
    typeof k['group'] === 'string' && typeof k['version'] === 'string' && typeof k['kind'] === 'string'
  );
}

function isStringArray(a: unknown, nonEmpty: boolean): boolean {
  if (!Array.isArray(a) || (nonEmpty && a.length === 0)) return false;
  for (let i = 0; i < a.length; i++) if (typeof a[i] !== 'string') return false;
  return true;
}

/**
 * Whether `raw`, JSON text that parses to `g`, is byte for byte what groupJSON(g) writes, so that
 * an encoder can copy it instead. Sufficient conditions, checked without encoding: g is canonical
 * (only plain objects, arrays, strings and null, in Go order), and raw is ASCII without a
 * backslash, `<`, `>` or `&` (so no string in it is escaped, and none needs escaping), and raw is
 * exactly as long as the compact encoding. Any other text that parses to g differs from the
 * compact encoding by whitespace or repeated keys (strings without escapes and null have one
 * spelling; key order is that of the first occurrences, which is Go order), and is longer. (An
 * escape or a non-ASCII character also makes raw longer than that count; the byte checks are
 * quick filters. `<`, `>` and `&` are the ones the length cannot catch: written raw by others,
 * escaped by Go and by us.)
 */
export function isRawGroupJSON(g: APIGroupDiscovery, raw: Buffer): boolean {
  if (!isAscii(raw)) return false;
  if (raw.indexOf(0x5c) >= 0 || raw.indexOf(0x3c) >= 0 || raw.indexOf(0x3e) >= 0 || raw.indexOf(0x26) >= 0) return false;
  return isCanonicalGroup(g) && plainJSONLength(g) === raw.length;
}

/** The length of JSON.stringify(x) for strings needing no escapes, null, arrays and plain objects; -1 for anything else. */
function plainJSONLength(x: unknown): number {
  if (typeof x === 'string') return x.length + 2;
  if (x === null) return 4;
  if (Array.isArray(x)) {
    let n = x.length > 0 ? x.length + 1 : 2; // brackets and commas
    for (let i = 0; i < x.length; i++) {
      const l = plainJSONLength(x[i]);
      if (l < 0) return -1;
      n += l;
    }
    return n;
  }
  if (typeof x === 'object') {
    const keys = Object.keys(x as object);
    let n = keys.length > 0 ? keys.length + 1 : 2; // braces and commas
    for (const k of keys) {
      const l = plainJSONLength((x as Record<string, unknown>)[k]);
      if (l < 0) return -1;
      n += k.length + 3 + l; // "key":
    }
    return n;
  }
  return -1;
}

// ---- splitting a list into its items -----------------------------------------------------------

/** Where a list's items are in its JSON bytes (splitListItems). */
export interface ListItemRanges {
  /** Index of the `[` of the items array, and one past its `]`. */
  readonly itemsOpen: number;
  readonly itemsClose: number;
  /** [start, end) of each element, flat: starts at even indexes, ends at odd ones. */
  readonly items: readonly number[];
}

/**
 * Finds, in the UTF-8 JSON of an object with an `"items"` array (an APIGroupDiscoveryList), the
 * bytes of each element of that array. Parsing the text outside the array with the array emptied
 * (`"items":[]`, the skeleton) and each element on its own, then putting the parsed elements into
 * the skeleton's `items`, gives what JSON.parse of the whole text gives: the elements are complete
 * JSON values at a value position, so if the skeleton and every element parse, so does the
 * whole, to the same value. Every boundary is an ASCII byte, which never occurs inside a UTF-8
 * multi-byte sequence, so decoding the parts apart gives the same characters as decoding the
 * whole. The scan only tracks strings and brackets (validation is left to those parses); it gives
 * up (undefined) on anything it is not sure about (no or a repeated `"items"`, an escaped
 * top-level key, items not an array, malformed structure, a byte-order mark), and the caller
 * then parses the whole text. Callers use it to parse only the elements they have not seen before.
 */
export function splitListItems(b: Uint8Array): ListItemRanges | undefined {
  const n = b.length;
  let i = skipWS(b, 0);
  if (b[i] !== 0x7b) return undefined; // {
  i = skipWS(b, i + 1);
  let itemsOpen = -1;
  let itemsClose = -1;
  const items: number[] = [];
  if (b[i] !== 0x7d) {
    for (;;) {
      if (b[i] !== 0x22) return undefined; // "
      const keyEnd = skipString(b, i);
      if (keyEnd < 0) return undefined;
      const isItems = keyEnd - i === 7 && b[i + 1] === 0x69 && b[i + 2] === 0x74 && b[i + 3] === 0x65 && b[i + 4] === 0x6d && b[i + 5] === 0x73; // "items"
      if (!isItems && b.subarray(i + 1, keyEnd - 1).includes(0x5c)) return undefined; // an escaped key might spell "items"
      i = skipWS(b, keyEnd);
      if (b[i] !== 0x3a) return undefined; // :
      i = skipWS(b, i + 1);
      if (isItems) {
        if (itemsOpen >= 0 || b[i] !== 0x5b) return undefined; // [
        itemsOpen = i;
        i = skipWS(b, i + 1);
        if (b[i] !== 0x5d) {
          for (;;) {
            const end = skipValue(b, i);
            if (end < 0) return undefined;
            items.push(i, end);
            i = skipWS(b, end);
            const c = b[i];
            if (c === 0x2c) {
              i = skipWS(b, i + 1);
              continue;
            }
            if (c === 0x5d) break;
            return undefined;
          }
        }
        i++;
        itemsClose = i;
      } else {
        i = skipValue(b, i);
        if (i < 0) return undefined;
      }
      i = skipWS(b, i);
      const c = b[i];
      if (c === 0x2c) {
        i = skipWS(b, i + 1);
        continue;
      }
      if (c === 0x7d) break;
      return undefined;
    }
  }
  if (itemsOpen < 0 || skipWS(b, i + 1) !== n) return undefined;
  return { itemsOpen, itemsClose, items };
}

function skipWS(b: Uint8Array, i: number): number {
  const n = b.length;
  while (i < n) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

/** b[i] is `"`: the index after the closing quote, or -1. */
function skipString(b: Uint8Array, i: number): number {
  const n = b.length;
  for (let j = i + 1; j < n; j++) {
    const c = b[j];
    if (c === 0x22) return j + 1;
    if (c === 0x5c) j++; // the escaped byte is never the closing quote
  }
  return -1;
}

/** The index after the JSON value starting at b[i] (brackets and strings matched only), or -1. */
function skipValue(b: Uint8Array, i: number): number {
  const n = b.length;
  const c = b[i];
  if (c === 0x22) return skipString(b, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let j = i; j < n; j++) {
      const d = b[j];
      if (d === 0x22) {
        // A string, inline (most bytes of a document are in strings).
        for (j++; j < n; j++) {
          const e = b[j];
          if (e === 0x22) break;
          if (e === 0x5c) j++;
        }
        if (j >= n) return -1;
      } else if (d === 0x7b || d === 0x5b) {
        depth++;
      } else if (d === 0x7d || d === 0x5d) {
        if (--depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < n) {
    const d = b[j]!;
    if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) break;
    j++;
  }
  return j === i ? -1 : j;
}
