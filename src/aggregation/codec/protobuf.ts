// application/vnd.kubernetes.protobuf for aggregated discovery (docs/kubernetes-mvp.md §7.2).
//
// A body is the magic "k8s\0" followed by a runtime.Unknown {typeMeta, raw, contentEncoding,
// contentType} whose raw holds the apidiscovery message. The field numbers are those of
// ../proto/*.proto. The encoder is written by hand on protobufjs's Writer because it must follow
// the gogo-generated Go marshallers byte for byte, which schema-driven encoders do not:
//
// - non-pointer proto2 `optional string`/`int64` fields are always written, even when empty/zero
//   (resource, scope, singularResource, version, freshness, every ObjectMeta string, generation);
// - pointer and optional-message fields (responseKind, deletionTimestamp,
//   deletionGracePeriodSeconds, controller, remainingItemCount, managedFields[].time/fieldsV1)
//   only when set; non-pointer messages (metadata, creationTimestamp) always;
// - repeated fields only when non-empty, repeated strings unpacked (one tag per element);
// - map entries in byte order of their keys, key and value always written;
// - fields in ascending number order.
//
// The decoder produces the JSON shape Go's encoding/json would give for the decoded struct
// (omitempty rules, `"verbs": null`), with keys in Go struct order, and skips unknown fields.

import { Reader, Writer, util } from 'protobufjs/minimal';
import type { Long } from 'protobufjs/minimal';
import {
  APIDISCOVERY_GROUP,
  APIGROUP_DISCOVERY_LIST_KIND,
  type APIGroupDiscovery,
  type APIGroupDiscoveryList,
  type APIResourceDiscovery,
  type APISubresourceDiscovery,
  type APIVersionDiscovery,
  type GroupVersionKind,
  type ObjectMeta,
} from '../types';
import { compareByteOrder } from '../../gocompat/strings';
import { formatTime, isZeroTimeSeconds, parseTime } from './time';

export type DiscoveryVersion = 'v2' | 'v2beta1';

/** "k8s\0": protobuf with a runtime.Unknown envelope (apimachinery serializer/protobuf). */
export const PROTOBUF_MAGIC: Readonly<Uint8Array> = Uint8Array.of(0x6b, 0x38, 0x73, 0x00);
/** The magic as one little-endian fixed32, so the Writer can emit it without a copy. */
const magicFixed32 = 0x0073386b;

export const APIGROUP_DISCOVERY_KIND = 'APIGroupDiscovery';

// Wire types used by these messages (64-bit and 32-bit fixed fields do not occur).
const VARINT = 0;
const LEN = 2;

const tagLen = (field: number): number => ((field << 3) | LEN) >>> 0;
const tagVarint = (field: number): number => ((field << 3) | VARINT) >>> 0;

// ---- encoding -------------------------------------------------------------------------------

/**
 * The full body for an APIGroupDiscoveryList: magic + runtime.Unknown. `item`, when given, returns
 * the encoded message of one group (what encodeAPIGroupDiscoveryMessage returns for it): a caller
 * that encodes the same immutable groups again and again passes its memo of them.
 */
export function encodeAPIGroupDiscoveryList(
  list: APIGroupDiscoveryList,
  version: DiscoveryVersion,
  item?: (g: APIGroupDiscovery) => Uint8Array,
): Buffer {
  return encodeEnvelope(version, APIGROUP_DISCOVERY_LIST_KIND, (w) => writeAPIGroupDiscoveryList(w, list, item));
}

/** One APIGroupDiscovery message, without envelope, tag or length (a list item's bytes). */
export function encodeAPIGroupDiscoveryMessage(g: APIGroupDiscovery): Uint8Array {
  return encodeAPIGroupDiscoveryMessages([g])[0]!;
}

/** A Writer kept between calls (its grown buffer reused); taken while in use, dropped on an error. */
let scratchWriter: Writer | undefined;
const SCRATCH_KEEP_BYTES = 16 << 20;

/** encodeAPIGroupDiscoveryMessage of each group, as views on one buffer (one allocation). */
export function encodeAPIGroupDiscoveryMessages(groups: readonly APIGroupDiscovery[]): Uint8Array[] {
  const w = scratchWriter ?? Writer.create();
  scratchWriter = undefined;
  w.reset();
  const ends: number[] = [];
  for (const g of groups) {
    writeAPIGroupDiscovery(w, g);
    ends.push(w.pos);
  }
  const buf = w.finish();
  if (w.buf.length <= SCRATCH_KEEP_BYTES) scratchWriter = w;
  let start = 0;
  return ends.map((end) => {
    const b = buf.subarray(start, end);
    start = end;
    return b;
  });
}

/** The full body for a single APIGroupDiscovery (the form of the upstream round-trip fixtures). */
export function encodeAPIGroupDiscovery(g: APIGroupDiscovery, version: DiscoveryVersion): Buffer {
  return encodeEnvelope(version, APIGROUP_DISCOVERY_KIND, (w) => writeAPIGroupDiscovery(w, g));
}

/**
 * The body encodeAPIGroupDiscoveryList writes for a list with empty ListMeta and the given items
 * (each encodeAPIGroupDiscoveryMessage of a group), assembled by copying: one allocation, no
 * encoding. `alloc` provides the buffer (default Buffer.allocUnsafe; every byte is written).
 */
export function assembleAPIGroupDiscoveryList(
  version: DiscoveryVersion,
  items: readonly Uint8Array[],
  alloc: (size: number) => Uint8Array = (n) => Buffer.allocUnsafe(n),
): Uint8Array {
  const frame = listFrame(version);
  let rawLen = frame.listMeta.length;
  for (let i = 0; i < items.length; i++) rawLen += 1 + varintSize(items[i]!.length) + items[i]!.length;
  const total = frame.head.length + 1 + varintSize(rawLen) + rawLen + frame.tail.length;
  const out = alloc(total);
  let at = 0;
  out.set(frame.head, at);
  at += frame.head.length;
  out[at++] = tagLen(2); // Unknown.raw
  at = putVarint(out, at, rawLen);
  out.set(frame.listMeta, at);
  at += frame.listMeta.length;
  for (let i = 0; i < items.length; i++) {
    const b = items[i]!;
    out[at++] = tagLen(2); // APIGroupDiscoveryList.items
    at = putVarint(out, at, b.length);
    out.set(b, at);
    at += b.length;
  }
  out.set(frame.tail, at);
  at += frame.tail.length;
  if (at !== total) throw new Error(`assembleAPIGroupDiscoveryList: wrote ${at} of ${total} bytes`);
  return out;
}

interface ListFrame {
  /** Magic and Unknown.typeMeta, up to Unknown.raw. */
  head: Uint8Array;
  /** APIGroupDiscoveryList.metadata, tag included (an empty ListMeta). */
  listMeta: Uint8Array;
  /** Unknown.contentEncoding and contentType (both empty). */
  tail: Uint8Array;
}

const listFrames = new Map<DiscoveryVersion, ListFrame>();

/** The constant parts of a list body, cut from the encoder's own output for an empty list. */
function listFrame(version: DiscoveryVersion): ListFrame {
  let f = listFrames.get(version);
  if (f === undefined) {
    const withoutRaw = encodeEnvelope(version, APIGROUP_DISCOVERY_LIST_KIND, () => undefined);
    const empty = encodeAPIGroupDiscoveryList({ kind: APIGROUP_DISCOVERY_LIST_KIND, apiVersion: '', metadata: {}, items: [] }, version);
    // withoutRaw = head + [raw tag, 0] + tail; empty = head + [raw tag, len] + listMeta + tail.
    const head = withoutRaw.subarray(0, withoutRaw.length - 6);
    const tail = withoutRaw.subarray(withoutRaw.length - 4);
    const listMeta = empty.subarray(head.length + 2, empty.length - 4);
    if (withoutRaw[head.length] !== tagLen(2) || withoutRaw[head.length + 1] !== 0 || empty[head.length + 1] !== listMeta.length) {
      throw new Error('protobuf list frame: unexpected envelope layout');
    }
    f = { head: Uint8Array.from(head), listMeta: Uint8Array.from(listMeta), tail: Uint8Array.from(tail) };
    listFrames.set(version, f);
  }
  return f;
}

function varintSize(n: number): number {
  let size = 1;
  while (n > 127) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

function putVarint(out: Uint8Array, at: number, n: number): number {
  while (n > 127) {
    out[at++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  return at;
}

function encodeEnvelope(version: DiscoveryVersion, kind: string, writeRaw: (w: Writer) => void): Buffer {
  if (version !== 'v2' && version !== 'v2beta1') throw new TypeError(`unsupported apidiscovery version ${String(version)}`);
  const w = Writer.create();
  w.fixed32(magicFixed32);
  // runtime.Unknown
  w.uint32(tagLen(1)).fork(); // typeMeta (runtime.TypeMeta: apiVersion=1, kind=2)
  writeString(w, 1, `${APIDISCOVERY_GROUP}/${version}`);
  writeString(w, 2, kind);
  w.ldelim();
  w.uint32(tagLen(2)).fork(); // raw
  writeRaw(w);
  w.ldelim();
  writeString(w, 3, ''); // contentEncoding
  writeString(w, 4, ''); // contentType
  const out = w.finish();
  return Buffer.isBuffer(out) ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

function writeAPIGroupDiscoveryList(w: Writer, list: APIGroupDiscoveryList, encoded?: (g: APIGroupDiscovery) => Uint8Array): void {
  w.uint32(tagLen(1)).fork();
  writeListMeta(w, list.metadata ?? {});
  w.ldelim();
  for (const item of list.items ?? []) {
    if (encoded !== undefined) {
      // Length-delimited bytes: the same varint length + body that fork()/ldelim() write.
      w.uint32(tagLen(2)).bytes(encoded(item));
      continue;
    }
    w.uint32(tagLen(2)).fork();
    writeAPIGroupDiscovery(w, item);
    w.ldelim();
  }
}

function writeAPIGroupDiscovery(w: Writer, g: APIGroupDiscovery): void {
  w.uint32(tagLen(1)).fork();
  writeObjectMeta(w, g.metadata ?? {});
  w.ldelim();
  for (const v of g.versions ?? []) {
    w.uint32(tagLen(2)).fork();
    writeAPIVersionDiscovery(w, v);
    w.ldelim();
  }
}

function writeAPIVersionDiscovery(w: Writer, v: APIVersionDiscovery): void {
  writeString(w, 1, v.version);
  for (const r of v.resources ?? []) {
    w.uint32(tagLen(2)).fork();
    writeAPIResourceDiscovery(w, r);
    w.ldelim();
  }
  writeString(w, 3, v.freshness);
}

function writeAPIResourceDiscovery(w: Writer, r: APIResourceDiscovery): void {
  writeString(w, 1, r.resource);
  if (r.responseKind != null) writeGVK(w, 2, r.responseKind);
  writeString(w, 3, r.scope);
  writeString(w, 4, r.singularResource);
  writeRepeatedString(w, 5, r.verbs);
  writeRepeatedString(w, 6, r.shortNames);
  writeRepeatedString(w, 7, r.categories);
  for (const s of r.subresources ?? []) {
    w.uint32(tagLen(8)).fork();
    writeAPISubresourceDiscovery(w, s);
    w.ldelim();
  }
}

function writeAPISubresourceDiscovery(w: Writer, s: APISubresourceDiscovery): void {
  writeString(w, 1, s.subresource);
  if (s.responseKind != null) writeGVK(w, 2, s.responseKind);
  for (const t of s.acceptedTypes ?? []) writeGVK(w, 3, t);
  writeRepeatedString(w, 4, s.verbs);
}

function writeGVK(w: Writer, field: number, gvk: GroupVersionKind): void {
  w.uint32(tagLen(field)).fork();
  writeString(w, 1, gvk.group);
  writeString(w, 2, gvk.version);
  writeString(w, 3, gvk.kind);
  w.ldelim();
}

function writeListMeta(w: Writer, m: Record<string, unknown>): void {
  writeString(w, 1, asString(m['selfLink']));
  writeString(w, 2, asString(m['resourceVersion']));
  writeString(w, 3, asString(m['continue']));
  const remaining = m['remainingItemCount'];
  if (remaining != null) w.uint32(tagVarint(4)).int64(asInt(remaining, 'remainingItemCount'));
}

function writeObjectMeta(w: Writer, m: ObjectMeta): void {
  writeString(w, 1, asString(m.name));
  writeString(w, 2, asString(m['generateName']));
  writeString(w, 3, asString(m['namespace']));
  writeString(w, 4, asString(m['selfLink']));
  writeString(w, 5, asString(m['uid']));
  writeString(w, 6, asString(m['resourceVersion']));
  w.uint32(tagVarint(7)).int64(asInt(m['generation'] ?? 0, 'generation'));
  writeTime(w, 8, m['creationTimestamp']); // non-pointer: always
  if (m['deletionTimestamp'] != null) writeTime(w, 9, m['deletionTimestamp']);
  if (m['deletionGracePeriodSeconds'] != null) {
    w.uint32(tagVarint(10)).int64(asInt(m['deletionGracePeriodSeconds'], 'deletionGracePeriodSeconds'));
  }
  writeStringMap(w, 11, m['labels']);
  writeStringMap(w, 12, m['annotations']);
  for (const ref of asArray(m['ownerReferences'])) {
    const o = asObject(ref);
    w.uint32(tagLen(13)).fork();
    writeString(w, 1, asString(o['kind']));
    writeString(w, 3, asString(o['name']));
    writeString(w, 4, asString(o['uid']));
    writeString(w, 5, asString(o['apiVersion']));
    if (o['controller'] != null) w.uint32(tagVarint(6)).bool(o['controller'] === true);
    if (o['blockOwnerDeletion'] != null) w.uint32(tagVarint(7)).bool(o['blockOwnerDeletion'] === true);
    w.ldelim();
  }
  writeRepeatedString(w, 14, asArray(m['finalizers']) as string[]);
  for (const entry of asArray(m['managedFields'])) {
    const e = asObject(entry);
    w.uint32(tagLen(17)).fork();
    writeString(w, 1, asString(e['manager']));
    writeString(w, 2, asString(e['operation']));
    writeString(w, 3, asString(e['apiVersion']));
    if (e['time'] != null) writeTime(w, 4, e['time']);
    writeString(w, 6, asString(e['fieldsType']));
    if (e['fieldsV1'] != null) {
      // FieldsV1{Raw=1}: the JSON text of the field set.
      w.uint32(tagLen(7)).fork();
      w.uint32(tagLen(1)).bytes(Buffer.from(JSON.stringify(e['fieldsV1']), 'utf8'));
      w.ldelim();
    }
    writeString(w, 8, asString(e['subresource']));
    w.ldelim();
  }
}

/** A metav1.Time message; the zero time is an empty message (Go's Time.Marshal). */
function writeTime(w: Writer, field: number, value: unknown): void {
  const t = parseTime(value);
  w.uint32(tagLen(field)).fork();
  if (t !== undefined) {
    w.uint32(tagVarint(1)).int64(t.seconds);
    w.uint32(tagVarint(2)).int32(t.nanos);
  }
  w.ldelim();
}

function writeStringMap(w: Writer, field: number, value: unknown): void {
  if (value == null) return;
  const m = asObject(value);
  const keys = Object.keys(m).sort(compareByteOrder);
  for (const k of keys) {
    const v = asString(m[k]);
    w.uint32(tagLen(field)).fork();
    writeString(w, 1, k);
    writeString(w, 2, v);
    w.ldelim();
  }
}

function writeString(w: Writer, field: number, s: string | null | undefined): void {
  w.uint32(tagLen(field)).string(s ?? '');
}

function writeRepeatedString(w: Writer, field: number, list: readonly string[] | null | undefined): void {
  if (list == null) return;
  const tag = tagLen(field);
  for (const s of list) w.uint32(tag).string(s);
}

function asString(v: unknown): string {
  if (v == null) return '';
  if (typeof v !== 'string') throw new TypeError(`expected a string, got ${typeof v}`);
  return v;
}

function asInt(v: unknown, name: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new TypeError(`${name}: expected an integer`);
  return v;
}

function asArray(v: unknown): readonly unknown[] {
  if (v == null) return [];
  if (!Array.isArray(v)) throw new TypeError('expected an array');
  return v;
}

function asObject(v: unknown): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new TypeError('expected an object');
  return v as Record<string, unknown>;
}

// ---- decoding -------------------------------------------------------------------------------

export interface DecodedDiscovery {
  apiVersion: string;
  kind: string;
  object: APIGroupDiscoveryList | APIGroupDiscovery;
}

/** The runtime.Unknown envelope of a protobuf body: its typeMeta, raw message and contentEncoding. */
export interface UnknownEnvelope {
  apiVersion: string;
  kind: string;
  contentEncoding: string;
  /** The encoded object (empty when absent). */
  raw: Uint8Array;
}

/**
 * Reads the "k8s\0" prefix and the runtime.Unknown after it, as apimachinery's protobuf serializer
 * does (unknown fields skipped). Throws on a missing prefix or malformed protobuf.
 */
export function decodeUnknownEnvelope(buf: Uint8Array): UnknownEnvelope {
  if (buf.length < 4 || buf[0] !== 0x6b || buf[1] !== 0x38 || buf[2] !== 0x73 || buf[3] !== 0x00) {
    throw new Error('protobuf discovery: missing "k8s\\0" prefix');
  }
  const r = Reader.create(buf.subarray(4));
  let apiVersion = '';
  let kind = '';
  let contentEncoding = '';
  let rawStart = -1;
  let rawEnd = -1;
  readFields(r, r.len, (field, wire) => {
    switch (field) {
      case 1: {
        expectWire(wire, LEN, 'Unknown.typeMeta');
        const end = r.uint32() + r.pos;
        readFields(r, end, (f, wt) => {
          if (f === 1) apiVersion = readString(r, wt);
          else if (f === 2) kind = readString(r, wt);
          else return false;
          return true;
        });
        return true;
      }
      case 2: {
        expectWire(wire, LEN, 'Unknown.raw');
        const len = r.uint32();
        rawStart = r.pos;
        rawEnd = rawStart + len;
        r.skip(len);
        return true;
      }
      case 3:
        contentEncoding = readString(r, wire);
        return true;
      default:
        return false; // contentType and anything unknown
    }
  });
  const raw = rawStart < 0 ? new Uint8Array(0) : buf.subarray(4 + rawStart, 4 + rawEnd);
  return { apiVersion, kind, contentEncoding, raw };
}

/**
 * Decodes an apidiscovery APIGroupDiscoveryList message (an envelope's raw), skipping unknown
 * fields as the gogo-generated Unmarshal does. kind and apiVersion are left empty (the envelope
 * carries them).
 */
export function decodeAPIGroupDiscoveryListMessage(raw: Uint8Array): APIGroupDiscoveryList {
  const r = Reader.create(raw);
  return readAPIGroupDiscoveryList(r, r.len, '', '');
}

/**
 * Decodes a protobuf discovery body (magic + runtime.Unknown) holding an APIGroupDiscoveryList
 * or an APIGroupDiscovery of apidiscovery.k8s.io/v2 or v2beta1. Throws on anything else.
 */
export function decodeDiscovery(buf: Uint8Array): DecodedDiscovery {
  const { apiVersion, kind, contentEncoding, raw } = decodeUnknownEnvelope(buf);
  if (contentEncoding !== '') throw new Error(`protobuf discovery: unsupported contentEncoding ${JSON.stringify(contentEncoding)}`);
  if (apiVersion !== `${APIDISCOVERY_GROUP}/v2` && apiVersion !== `${APIDISCOVERY_GROUP}/v2beta1`) {
    throw new Error(`protobuf discovery: unexpected apiVersion ${JSON.stringify(apiVersion)}`);
  }
  const rr = Reader.create(raw);
  if (kind === APIGROUP_DISCOVERY_LIST_KIND) {
    return { apiVersion, kind, object: readAPIGroupDiscoveryList(rr, rr.len, apiVersion, kind) };
  }
  if (kind === APIGROUP_DISCOVERY_KIND) {
    return { apiVersion, kind, object: readAPIGroupDiscovery(rr, rr.len) };
  }
  throw new Error(`protobuf discovery: unexpected kind ${JSON.stringify(kind)}`);
}

/**
 * Reads fields until `end`. `onField` consumes a field it knows and returns true, or returns
 * false to have it skipped (unknown fields are skipped whole, whatever their wire type).
 */
function readFields(r: Reader, end: number, onField: (field: number, wire: number) => boolean): void {
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 0) throw new Error('protobuf discovery: illegal field number 0');
    if (!onField(field, wire)) r.skipType(wire);
  }
  if (r.pos !== end) throw new Error('protobuf discovery: message overruns its length');
}

function expectWire(wire: number, want: number, what: string): void {
  if (wire !== want) throw new Error(`protobuf discovery: ${what}: wrong wire type ${wire}`);
}

function readString(r: Reader, wire: number): string {
  expectWire(wire, LEN, 'string');
  return r.string();
}

function readInt64(r: Reader, wire: number): number {
  expectWire(wire, VARINT, 'int64');
  const v: Long | number = r.int64();
  return typeof v === 'number' ? v : util.LongBits.from(v).toNumber(false);
}

function readBool(r: Reader, wire: number): boolean {
  expectWire(wire, VARINT, 'bool');
  return r.bool();
}

function subEnd(r: Reader, wire: number, what: string): number {
  expectWire(wire, LEN, what);
  return r.uint32() + r.pos;
}

function readAPIGroupDiscoveryList(r: Reader, end: number, apiVersion: string, kind: string): APIGroupDiscoveryList {
  let metadata: Record<string, unknown> = {};
  const items: APIGroupDiscovery[] = [];
  readFields(r, end, (field, wire) => {
    if (field === 1) metadata = readListMeta(r, subEnd(r, wire, 'metadata'));
    else if (field === 2) items.push(readAPIGroupDiscovery(r, subEnd(r, wire, 'items')));
    else return false;
    return true;
  });
  return { kind, apiVersion, metadata, items };
}

function readAPIGroupDiscovery(r: Reader, end: number): APIGroupDiscovery {
  let metadata: ObjectMeta = {};
  const versions: APIVersionDiscovery[] = [];
  readFields(r, end, (field, wire) => {
    if (field === 1) metadata = readObjectMeta(r, subEnd(r, wire, 'metadata'));
    else if (field === 2) versions.push(readAPIVersionDiscovery(r, subEnd(r, wire, 'versions')));
    else return false;
    return true;
  });
  const g: APIGroupDiscovery = { metadata };
  if (versions.length > 0) g.versions = versions;
  return g;
}

function readAPIVersionDiscovery(r: Reader, end: number): APIVersionDiscovery {
  let version = '';
  let freshness = '';
  const resources: APIResourceDiscovery[] = [];
  readFields(r, end, (field, wire) => {
    if (field === 1) version = readString(r, wire);
    else if (field === 2) resources.push(readAPIResourceDiscovery(r, subEnd(r, wire, 'resources')));
    else if (field === 3) freshness = readString(r, wire);
    else return false;
    return true;
  });
  const v: APIVersionDiscovery = { version };
  if (resources.length > 0) v.resources = resources;
  if (freshness !== '') v.freshness = freshness;
  return v;
}

function readAPIResourceDiscovery(r: Reader, end: number): APIResourceDiscovery {
  let resource = '';
  let responseKind: GroupVersionKind | undefined;
  let scope = '';
  let singularResource = '';
  const verbs: string[] = [];
  const shortNames: string[] = [];
  const categories: string[] = [];
  const subresources: APISubresourceDiscovery[] = [];
  readFields(r, end, (field, wire) => {
    switch (field) {
      case 1: resource = readString(r, wire); break;
      case 2: responseKind = readGVK(r, subEnd(r, wire, 'responseKind')); break;
      case 3: scope = readString(r, wire); break;
      case 4: singularResource = readString(r, wire); break;
      case 5: verbs.push(readString(r, wire)); break;
      case 6: shortNames.push(readString(r, wire)); break;
      case 7: categories.push(readString(r, wire)); break;
      case 8: subresources.push(readAPISubresourceDiscovery(r, subEnd(r, wire, 'subresources'))); break;
      default: return false;
    }
    return true;
  });
  // Go struct order: resource, responseKind, scope, singularResource, verbs, shortNames, categories, subresources.
  const out: APIResourceDiscovery = { resource } as APIResourceDiscovery;
  if (responseKind !== undefined) out.responseKind = responseKind;
  out.scope = scope;
  out.singularResource = singularResource;
  out.verbs = verbs.length > 0 ? verbs : null;
  if (shortNames.length > 0) out.shortNames = shortNames;
  if (categories.length > 0) out.categories = categories;
  if (subresources.length > 0) out.subresources = subresources;
  return out;
}

function readAPISubresourceDiscovery(r: Reader, end: number): APISubresourceDiscovery {
  let subresource = '';
  let responseKind: GroupVersionKind | undefined;
  const acceptedTypes: GroupVersionKind[] = [];
  const verbs: string[] = [];
  readFields(r, end, (field, wire) => {
    switch (field) {
      case 1: subresource = readString(r, wire); break;
      case 2: responseKind = readGVK(r, subEnd(r, wire, 'responseKind')); break;
      case 3: acceptedTypes.push(readGVK(r, subEnd(r, wire, 'acceptedTypes'))); break;
      case 4: verbs.push(readString(r, wire)); break;
      default: return false;
    }
    return true;
  });
  const out: APISubresourceDiscovery = { subresource } as APISubresourceDiscovery;
  if (responseKind !== undefined) out.responseKind = responseKind;
  if (acceptedTypes.length > 0) out.acceptedTypes = acceptedTypes;
  out.verbs = verbs.length > 0 ? verbs : null;
  return out;
}

function readGVK(r: Reader, end: number): GroupVersionKind {
  let group = '';
  let version = '';
  let kind = '';
  readFields(r, end, (field, wire) => {
    if (field === 1) group = readString(r, wire);
    else if (field === 2) version = readString(r, wire);
    else if (field === 3) kind = readString(r, wire);
    else return false;
    return true;
  });
  return { group, version, kind };
}

function readListMeta(r: Reader, end: number): Record<string, unknown> {
  let selfLink = '';
  let resourceVersion = '';
  let cont = '';
  let remainingItemCount: number | undefined;
  readFields(r, end, (field, wire) => {
    switch (field) {
      case 1: selfLink = readString(r, wire); break;
      case 2: resourceVersion = readString(r, wire); break;
      case 3: cont = readString(r, wire); break;
      case 4: remainingItemCount = readInt64(r, wire); break;
      default: return false; // e.g. shardInfo (5) at HEAD
    }
    return true;
  });
  const m: Record<string, unknown> = {};
  if (selfLink !== '') m['selfLink'] = selfLink;
  if (resourceVersion !== '') m['resourceVersion'] = resourceVersion;
  if (cont !== '') m['continue'] = cont;
  if (remainingItemCount !== undefined) m['remainingItemCount'] = remainingItemCount;
  return m;
}

/** A decoded metav1.Time as its JSON value: undefined for an empty (zero) message. */
function readTime(r: Reader, end: number): string | null | undefined {
  if (r.pos === end) {
    return undefined;
  }
  let seconds = 0;
  readFields(r, end, (field, wire) => {
    if (field === 1) seconds = readInt64(r, wire);
    else if (field === 2) {
      expectWire(wire, VARINT, 'nanos');
      r.int32(); // Go's Time.Unmarshal drops nanos
    } else return false;
    return true;
  });
  return isZeroTimeSeconds(seconds) ? null : formatTime(seconds);
}

function readStringMapEntry(r: Reader, end: number, into: Record<string, string>): void {
  let key = '';
  let value = '';
  readFields(r, end, (field, wire) => {
    if (field === 1) key = readString(r, wire);
    else if (field === 2) value = readString(r, wire);
    else return false;
    return true;
  });
  setOwn(into, key, value);
}

/** Sets an own enumerable property, safe for keys such as "__proto__" from untrusted peers. */
function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

function readObjectMeta(r: Reader, end: number): ObjectMeta {
  const s: Record<number, string> = {};
  let generation = 0;
  let creationTimestamp: string | null | undefined;
  let deletionTimestamp: string | null | undefined;
  let hasDeletionTimestamp = false;
  let deletionGracePeriodSeconds: number | undefined;
  let labels: Record<string, string> | undefined;
  let annotations: Record<string, string> | undefined;
  const ownerReferences: Record<string, unknown>[] = [];
  const finalizers: string[] = [];
  const managedFields: Record<string, unknown>[] = [];
  readFields(r, end, (field, wire) => {
    switch (field) {
      case 1: case 2: case 3: case 4: case 5: case 6:
        s[field] = readString(r, wire);
        break;
      case 7: generation = readInt64(r, wire); break;
      case 8: creationTimestamp = readTime(r, subEnd(r, wire, 'creationTimestamp')); break;
      case 9:
        hasDeletionTimestamp = true;
        deletionTimestamp = readTime(r, subEnd(r, wire, 'deletionTimestamp')) ?? null;
        break;
      case 10: deletionGracePeriodSeconds = readInt64(r, wire); break;
      case 11: readStringMapEntry(r, subEnd(r, wire, 'labels'), (labels ??= {})); break;
      case 12: readStringMapEntry(r, subEnd(r, wire, 'annotations'), (annotations ??= {})); break;
      case 13: ownerReferences.push(readOwnerReference(r, subEnd(r, wire, 'ownerReferences'))); break;
      case 14: finalizers.push(readString(r, wire)); break;
      case 17: managedFields.push(readManagedFieldsEntry(r, subEnd(r, wire, 'managedFields'))); break;
      default: return false;
    }
    return true;
  });
  // Go JSON (all omitempty), in struct order.
  const m: ObjectMeta = {};
  const names = ['', 'name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion'];
  for (let f = 1; f <= 6; f++) if (s[f] !== undefined && s[f] !== '') m[names[f]!] = s[f];
  if (generation !== 0) m['generation'] = generation;
  if (creationTimestamp != null) m['creationTimestamp'] = creationTimestamp;
  if (hasDeletionTimestamp) m['deletionTimestamp'] = deletionTimestamp;
  if (deletionGracePeriodSeconds !== undefined) m['deletionGracePeriodSeconds'] = deletionGracePeriodSeconds;
  if (labels !== undefined && Object.keys(labels).length > 0) m['labels'] = sortedRecord(labels);
  if (annotations !== undefined && Object.keys(annotations).length > 0) m['annotations'] = sortedRecord(annotations);
  if (ownerReferences.length > 0) m['ownerReferences'] = ownerReferences;
  if (finalizers.length > 0) m['finalizers'] = finalizers;
  if (managedFields.length > 0) m['managedFields'] = managedFields;
  return m;
}

function readOwnerReference(r: Reader, end: number): Record<string, unknown> {
  let apiVersion = '';
  let kind = '';
  let name = '';
  let uid = '';
  let controller: boolean | undefined;
  let blockOwnerDeletion: boolean | undefined;
  readFields(r, end, (field, wire) => {
    switch (field) {
      case 1: kind = readString(r, wire); break;
      case 3: name = readString(r, wire); break;
      case 4: uid = readString(r, wire); break;
      case 5: apiVersion = readString(r, wire); break;
      case 6: controller = readBool(r, wire); break;
      case 7: blockOwnerDeletion = readBool(r, wire); break;
      default: return false;
    }
    return true;
  });
  // Go: apiVersion, kind, name, uid have no omitempty; the two pointers do.
  const o: Record<string, unknown> = { apiVersion, kind, name, uid };
  if (controller !== undefined) o['controller'] = controller;
  if (blockOwnerDeletion !== undefined) o['blockOwnerDeletion'] = blockOwnerDeletion;
  return o;
}

function readManagedFieldsEntry(r: Reader, end: number): Record<string, unknown> {
  const s: Record<string, string> = {};
  let time: string | null | undefined;
  let hasTime = false;
  let fieldsV1: unknown;
  let hasFieldsV1 = false;
  readFields(r, end, (field, wire) => {
    switch (field) {
      case 1: s['manager'] = readString(r, wire); break;
      case 2: s['operation'] = readString(r, wire); break;
      case 3: s['apiVersion'] = readString(r, wire); break;
      case 4: hasTime = true; time = readTime(r, subEnd(r, wire, 'time')) ?? null; break;
      case 6: s['fieldsType'] = readString(r, wire); break;
      case 7: hasFieldsV1 = true; fieldsV1 = readFieldsV1(r, subEnd(r, wire, 'fieldsV1')); break;
      case 8: s['subresource'] = readString(r, wire); break;
      default: return false;
    }
    return true;
  });
  // Go JSON order, all omitempty.
  const e: Record<string, unknown> = {};
  for (const k of ['manager', 'operation', 'apiVersion']) if (s[k]) e[k] = s[k];
  if (hasTime) e['time'] = time;
  if (s['fieldsType']) e['fieldsType'] = s['fieldsType'];
  if (hasFieldsV1) e['fieldsV1'] = fieldsV1;
  if (s['subresource']) e['subresource'] = s['subresource'];
  return e;
}

/** FieldsV1{Raw=1} as its JSON value (Go writes Raw verbatim; nil Raw is null). */
function readFieldsV1(r: Reader, end: number): unknown {
  let raw: Uint8Array | undefined;
  readFields(r, end, (field, wire) => {
    if (field !== 1) return false;
    expectWire(wire, LEN, 'FieldsV1.Raw');
    raw = r.bytes();
    return true;
  });
  if (raw === undefined) return null;
  return JSON.parse(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8'));
}

function sortedRecord(m: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(m).sort(compareByteOrder)) setOwn(out, k, m[k]!);
  return out;
}
