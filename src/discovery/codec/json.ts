// application/json for aggregated discovery (spec §7.1): compact, as Go's encoding/json writes
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

import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  GroupVersionKind,
  ObjectMeta,
} from '../types';
import { compareByteOrder } from '../order';
import { formatTime, parseTime } from './time';

/** The compact JSON body of an APIGroupDiscoveryList. */
export function encodeJSON(list: APIGroupDiscoveryList): Buffer {
  return Buffer.from(stringifyAPIGroupDiscoveryList(list), 'utf8');
}

/** The same as encodeJSON, as a string. */
export function stringifyAPIGroupDiscoveryList(list: APIGroupDiscoveryList): string {
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
    out += group(items[i]!);
  }
  return `${out}]}`;
}

function group(g: APIGroupDiscovery): string {
  let out = `{"metadata":${objectMeta(g.metadata ?? {})}`;
  const versions = g.versions;
  if (versions != null && versions.length > 0) {
    out += ',"versions":[';
    for (let i = 0; i < versions.length; i++) {
      if (i > 0) out += ',';
      out += version(versions[i]!);
    }
    out += ']';
  }
  return `${out}}`;
}

function version(v: APIVersionDiscovery): string {
  let out = `{"version":${str(v.version ?? '')}`;
  const resources = v.resources;
  if (resources != null && resources.length > 0) {
    out += ',"resources":[';
    for (let i = 0; i < resources.length; i++) {
      if (i > 0) out += ',';
      out += resource(resources[i]!);
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
