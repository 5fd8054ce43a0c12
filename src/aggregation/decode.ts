// Decoding a discovery body (`/api` or `/apis`, of a peer or of the local apiserver) as
// kube-apiserver decodes a peer's: peer_discovery.go aggregateDiscovery (k8s.io/apiserver
// v0.37.2, lines 208-211) calls runtime.DecodeInto(CodecFactory(scheme).UniversalDecoder(),
// body, &apidiscoveryv2.APIGroupDiscoveryList{}) with a scheme that holds apidiscovery.k8s.io/v2
// only (peerproxy.go:155-157). What that decoder accepts, read in k8s.io/apimachinery v0.37.2:
//
// - The body is sniffed, not typed by Content-Type (serializer/recognizer): first non-space byte
//   `{` → JSON (utilyaml.IsJSONBuffer); "k8s\0" prefix → protobuf; anything else → YAML. mvproxy
//   asks for JSON only (snapshot/fetch.ts DISCOVERY_ACCEPT_NOPEER), so it decodes JSON and
//   protobuf as Go does and refuses the YAML fallback (an empty body or `null` would be an empty
//   list there).
// - JSON (serializer/json/json.go:139-217): apiVersion and kind are read case-insensitively with
//   encoding/json (json/meta.go:48-63, must be strings, apiVersion a valid group/version), then
//   defaulted from the target type when empty (gvkWithDefaults, json.go:117-129): a missing kind
//   is APIGroupDiscoveryList, a missing apiVersion apidiscovery.k8s.io/v2. Anything that is not
//   then apidiscovery.k8s.io/v2 APIGroupDiscoveryList fails (no such kind in the scheme, or no
//   conversion into the list). The body is decoded into the Go structs with sigs.k8s.io/json
//   (case-sensitive keys, not strict): unknown fields are ignored, a field of the wrong JSON type
//   fails, `null` leaves the zero value; nesting deeper than 10000 fails (scanner.go
//   maxNestingDepth). Invalid UTF-8 inside strings is replaced with U+FFFD, not refused.
// - Protobuf (serializer/protobuf/protobuf.go:115-180, 429-449): a runtime.Unknown whose typeMeta
//   is defaulted the same way (copyKindDefaults) and whose raw bytes the gogo-generated Unmarshal
//   decodes, skipping unknown fields; contentEncoding is ignored.
//
// Added by mvproxy: a size cap (MAX_DISCOVERY_BODY_BYTES; Go reads any size). The result is the
// typed list (known fields only, Go's zero values for nulls, items [] for a null list), and `raw`:
// the body itself when it is already in that form up to unknown fields, else the list re-encoded
// as JSON (protobuf bodies, nulls, defaulted apiVersion/kind), so that every later reader of `raw`
// (the merge worker, the local view served byte for byte) sees a well-formed document.
//
// Every refusal is a DiscoveryFetchError: MVP_ERR_DISCOVERY_TOO_LARGE over the cap,
// MVP_ERR_DISCOVERY_DECODE for anything else, with what was wrong and where (`items[3].versions[0].
// resources: expected an array, got an object`). Nothing else escapes.

import type {
  APIGroupDiscovery,
  APIGroupDiscoveryList,
  APIResourceDiscovery,
  APISubresourceDiscovery,
  APIVersionDiscovery,
  GroupVersionKind,
  ObjectMeta,
} from './types';
import { APIDISCOVERY_GROUP, APIGROUP_DISCOVERY_LIST_KIND } from './types';
import { ErrorCode } from '../api/errors';
import { DiscoveryFetchError } from './errors';
import { encodeJSON } from './codec/json';
import { PROTOBUF_MAGIC, decodeAPIGroupDiscoveryListMessage, decodeUnknownEnvelope } from './codec/protobuf';

/**
 * The largest discovery body accepted: 16 MiB. Real documents are 60-300 KB (the fixtures: 61 and
 * 73 KB for every built-in group; each CRD version adds ~0.5 KB, so even clusters with thousands
 * of CRDs stay in single-digit MiB), so this leaves a wide margin while bounding the memory of one
 * fetch and the main-thread time of decoding it: ~0.3 s for 16 MiB of real groups, up to ~2-3 s
 * for 16 MiB of tiny nested arrays (JSON.parse allocates each one; measured on a loaded 2-core
 * machine). Kubernetes has no cap here.
 */
export const MAX_DISCOVERY_BODY_BYTES = 16 * 1024 * 1024;

/** Go's encoding/json and sigs.k8s.io/json refuse JSON nested deeper than this (scanner.go maxNestingDepth). */
export const MAX_JSON_NESTING_DEPTH = 10_000;

export const DISCOVERY_V2_API_VERSION = `${APIDISCOVERY_GROUP}/v2`;

/**
 * What one peer's document may list: past any of these the whole document is refused
 * (MVP_ERR_DISCOVERY_OVER_LIMIT, counted in mvproxy_peer_discovery_refused_total{limit} and logged),
 * as a body over the byte cap is, and the peer keeps its last good view for --peer-discovery-grace.
 * Counted where the body is decoded, in the merge worker, so a refused document never reaches the
 * main thread, and an accepted one brings it at most this much to route (issue 27: 400,000 tiny
 * groups in 15.9 MiB took RSS from 133 to 756 MiB and stalled /apis answers for up to 991 ms).
 *
 * Sized for real clusters with a wide margin. Kubernetes v1.37 serves 24 groups, 31 group/versions
 * and ~110 resources (the fixtures); every CRD adds one resource per version it serves, and CRDs
 * share groups (Crossplane's AWS provider: ~950 CRDs in ~150 groups, up to ~100 kinds in one
 * group/version). The largest CRD-heavy clusters have ~2,000-3,000 CRDs: at most ~3,000 groups if
 * each had one of its own, and ~6,000-9,000 resources if each served 2-3 versions. The limits:
 * - groups 4,000: every one of 3,000 CRDs in a group of its own, plus the built-in ones;
 * - versions per group 50: real groups list 1-6 (v1, v1beta1, v1alpha1 ...);
 * - versions 10,000: two for each of 4,000 groups, and then some;
 * - resources per version 2,000: twenty times the largest group/version seen;
 * - resources 20,000: 3,000 CRDs serving every version of up to five, beside the built-in ones.
 * A document with a group per resource at these limits (4,000 groups, 10,000 versions, 20,000
 * resources) is what test/security/discovery-document-stall.test.ts publishes while it measures
 * the event loop.
 */
export interface DiscoveryLimits {
  readonly groups: number;
  readonly versionsPerGroup: number;
  readonly versions: number;
  readonly resourcesPerVersion: number;
  readonly resources: number;
}

export type DiscoveryLimit = keyof DiscoveryLimits;

export const PEER_DISCOVERY_LIMITS: DiscoveryLimits = Object.freeze({ groups: 4_000, versionsPerGroup: 50, versions: 10_000, resourcesPerVersion: 2_000, resources: 20_000 });


export interface DecodedDiscoveryBody {
  readonly list: APIGroupDiscoveryList;
  /** JSON of the document: the body itself, or the list re-encoded (see the file comment). */
  readonly raw: Buffer;
  readonly format: 'json' | 'protobuf';
}

// Go replaces invalid UTF-8 in strings (and fails on it elsewhere, as JSON.parse does on U+FFFD);
// a BOM is kept so that JSON.parse refuses it, as Go does (a BOM is not JSON's whitespace).
const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/**
 * Decodes one discovery body. `what` prefixes every error message (e.g. "GET /apis"). Throws
 * DiscoveryFetchError (TOO_LARGE or DECODE) and nothing else.
 */
export function decodeDiscoveryBody(body: Uint8Array, what = 'discovery body', maxBytes = MAX_DISCOVERY_BODY_BYTES, limits?: DiscoveryLimits): DecodedDiscoveryBody {
  if (body.length > maxBytes) {
    throw new DiscoveryFetchError(ErrorCode.MVP_ERR_DISCOVERY_TOO_LARGE, `${what}: ${body.length} bytes, more than the ${maxBytes}-byte limit`);
  }
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  try {
    return isProtobuf(buf) ? decodeProtobuf(buf, limits) : decodeJSON(buf, limits);
  } catch (e) {
    if (e instanceof DiscoveryFetchError) {
      e.message = `${what}: ${e.message}`;
      throw e;
    }
    // A bug of ours or an engine limit (e.g. a stack overflow): still this document's failure.
    throw new DiscoveryFetchError(ErrorCode.MVP_ERR_DISCOVERY_DECODE, `${what}: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
  }
}

/** A peer-controlled string in a message: JSON-quoted, at most 80 characters of it. */
function quote(s: string): string {
  return s.length > 80 ? `${JSON.stringify(s.slice(0, 80))}…` : JSON.stringify(s);
}

function decodeError(message: string): DiscoveryFetchError {
  return new DiscoveryFetchError(ErrorCode.MVP_ERR_DISCOVERY_DECODE, message);
}

function isProtobuf(b: Uint8Array): boolean {
  return b.length >= 4 && b[0] === PROTOBUF_MAGIC[0] && b[1] === PROTOBUF_MAGIC[1] && b[2] === PROTOBUF_MAGIC[2] && b[3] === PROTOBUF_MAGIC[3];
}

// ---- protobuf -------------------------------------------------------------------------------

function decodeProtobuf(buf: Buffer, limits: DiscoveryLimits | undefined): DecodedDiscoveryBody {
  if (buf.length === 4) throw decodeError('protobuf: empty body'); // protobuf.go:123
  let envelope: ReturnType<typeof decodeUnknownEnvelope>;
  try {
    envelope = decodeUnknownEnvelope(buf);
  } catch (e) {
    throw decodeError(`protobuf: ${(e as Error).message}`);
  }
  // schema.FromAPIVersionAndKind (an unparsable apiVersion counts as empty), then copyKindDefaults.
  let gv = parseGroupVersion(envelope.apiVersion) ?? { group: '', version: '' };
  const kind = envelope.kind === '' ? APIGROUP_DISCOVERY_LIST_KIND : envelope.kind;
  if (gv.version === '') gv = { group: APIDISCOVERY_GROUP, version: 'v2' };
  checkGVK(gv, kind, envelope.apiVersion, envelope.kind);
  let list: APIGroupDiscoveryList;
  try {
    list = decodeAPIGroupDiscoveryListMessage(envelope.raw);
  } catch (e) {
    throw decodeError(`protobuf: ${(e as Error).message}`);
  }
  list = { kind: APIGROUP_DISCOVERY_LIST_KIND, apiVersion: DISCOVERY_V2_API_VERSION, metadata: list.metadata, items: list.items ?? [] };
  if (limits !== undefined) checkLimits(list.items, limits);
  return { list, raw: encodeJSON(list), format: 'protobuf' };
}

// ---- JSON -----------------------------------------------------------------------------------

function decodeJSON(buf: Buffer, limits: DiscoveryLimits | undefined): DecodedDiscoveryBody {
  const deep = nestingDepthExceeded(buf, MAX_JSON_NESTING_DEPTH);
  if (deep >= 0) throw decodeError(`JSON nested deeper than ${MAX_JSON_NESTING_DEPTH} at byte ${deep} (Go's decoder: "exceeded max depth")`);
  let doc: unknown;
  try {
    doc = JSON.parse(utf8.decode(buf));
  } catch (e) {
    throw decodeError(`${notObjectHint(buf)}${(e as Error).message}`);
  }
  if (!isObject(doc)) {
    throw decodeError(`${notObjectHint(buf)}the body is ${typeName(doc)}, not a JSON object`);
  }
  const c: Ctx = { normalized: false };
  const { kind, apiVersion } = interpretKind(doc);
  // gvkWithDefaults against the target type, apidiscovery.k8s.io/v2 APIGroupDiscoveryList.
  const parsed = parseGroupVersion(apiVersion);
  if (parsed === undefined) throw decodeError(`apiVersion: unexpected GroupVersion string ${quote(apiVersion)}`);
  let gv = parsed;
  if (gv.version === '' && gv.group === '') gv = { group: APIDISCOVERY_GROUP, version: 'v2' };
  if (gv.version === '' && gv.group === APIDISCOVERY_GROUP) gv = { group: APIDISCOVERY_GROUP, version: 'v2' };
  checkGVK(gv, kind === '' ? APIGROUP_DISCOVERY_LIST_KIND : kind, apiVersion, kind);
  // Counted on the parsed JSON, before the typed walk copies it.
  if (limits !== undefined) checkLimits(field(doc, 'items'), limits);
  const list = readList(doc, c);
  return { list, raw: c.normalized ? encodeJSON(list) : buf, format: 'json' };
}

/** A hint for a body Go would not even have decoded as JSON (it would try YAML, which mvproxy does not). */
function notObjectHint(buf: Uint8Array): string {
  let i = 0;
  while (i < buf.length && (buf[i] === 0x20 || buf[i] === 0x09 || buf[i] === 0x0a || buf[i] === 0x0d)) i++;
  if (i < buf.length && buf[i] === 0x7b) return '';
  if (i === buf.length) return 'empty body (not JSON or protobuf): ';
  return 'not a JSON object or protobuf body (Kubernetes would try YAML; mvproxy asks for JSON only): ';
}

/**
 * The offset of the first `{` or `[` past `limit` levels of nesting, or -1. Strings are skipped
 * (with their escapes); a body that is not JSON at all is left to JSON.parse. One linear pass.
 */
export function nestingDepthExceeded(b: Uint8Array, limit: number): number {
  let depth = 0;
  const n = b.length;
  for (let i = 0; i < n; i++) {
    const c = b[i]!;
    if (c === 0x22) {
      // Inside a string: to the closing quote, stepping over escapes.
      for (i++; i < n; i++) {
        const s = b[i]!;
        if (s === 0x5c) i++;
        else if (s === 0x22) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return i;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return -1;
}

/**
 * apiVersion and kind as json/meta.go Interpret reads them: encoding/json, so keys match
 * case-insensitively (Unicode simple folding: "KIND", "Kind" with a Kelvin sign), the last
 * matching key wins, null leaves the value unchanged, any other non-string fails.
 */
function interpretKind(doc: Record<string, unknown>): { kind: string; apiVersion: string } {
  let kind = '';
  let apiVersion = '';
  for (const key of Object.keys(doc)) {
    if (key.length !== 4 && key.length !== 10) continue;
    const folded = foldKey(key);
    if (folded !== 'kind' && folded !== 'apiversion') continue;
    const v = doc[key];
    if (v === null) continue;
    if (typeof v !== 'string') {
      throw decodeError(`couldn't get version/kind: ${quote(key)} is ${typeName(v)}, not a string`);
    }
    if (folded === 'kind') kind = v;
    else apiVersion = v;
  }
  return { kind, apiVersion };
}

function foldKey(key: string): string {
  let out = '';
  for (const ch of key) {
    const f = ch.toUpperCase().toLowerCase();
    out += f.length === ch.length ? f : ch;
  }
  return out;
}

/** schema.ParseGroupVersion; undefined for more than one "/". */
function parseGroupVersion(gv: string): { group: string; version: string } | undefined {
  if (gv === '' || gv === '/') return { group: '', version: '' };
  const i = gv.indexOf('/');
  if (i < 0) return { group: '', version: gv };
  if (gv.indexOf('/', i + 1) >= 0) return undefined;
  return { group: gv.slice(0, i), version: gv.slice(i + 1) };
}

function checkGVK(gv: { group: string; version: string }, kind: string, sentAPIVersion: string, sentKind: string): void {
  if (gv.group === APIDISCOVERY_GROUP && gv.version === 'v2' && kind === APIGROUP_DISCOVERY_LIST_KIND) return;
  const got = `${gv.group === '' ? '' : `${gv.group}/`}${gv.version}, Kind=${kind}`;
  throw decodeError(
    `not an ${DISCOVERY_V2_API_VERSION} ${APIGROUP_DISCOVERY_LIST_KIND}: apiVersion ${quote(sentAPIVersion)}, kind ${quote(sentKind)} (read as ${quote(got)}; Kubernetes' peer discovery decoder knows only apidiscovery.k8s.io/v2)`,
  );
}

// ---- limits and the routing view ------------------------------------------------------------

/** A document over one of `limits`. */
export class DiscoveryLimitError extends DiscoveryFetchError {
  constructor(
    readonly limit: DiscoveryLimit,
    message: string,
  ) {
    super(ErrorCode.MVP_ERR_DISCOVERY_OVER_LIMIT, message);
  }
}

/**
 * Throws DiscoveryLimitError when `items` (a list's items, as parsed: of any shape, the typed walk
 * checks types afterwards) lists more than `limits` allow. Elements that are not what the type says
 * count as nothing here.
 */
function checkLimits(items: unknown, limits: DiscoveryLimits): void {
  const over = (limit: DiscoveryLimit, where: string) =>
    new DiscoveryLimitError(limit, `${where}, more than the ${limits[limit]} ${LIMIT_NOUN[limit]} a peer's document may list (docs/operating.md §5)`);
  if (!Array.isArray(items)) return;
  if (items.length > limits.groups) throw over('groups', `${items.length} groups`);
  let versions = 0;
  let resources = 0;
  for (let g = 0; g < items.length; g++) {
    const vs = arrayField(items[g], 'versions');
    if (vs === undefined) continue;
    if (vs.length > limits.versionsPerGroup) throw over('versionsPerGroup', `items[${g}] has ${vs.length} versions`);
    if ((versions += vs.length) > limits.versions) throw over('versions', `items[0..${g}] have ${versions} versions`);
    for (let v = 0; v < vs.length; v++) {
      const rs = arrayField(vs[v], 'resources');
      if (rs === undefined) continue;
      if (rs.length > limits.resourcesPerVersion) throw over('resourcesPerVersion', `items[${g}].versions[${v}] has ${rs.length} resources`);
      if ((resources += rs.length) > limits.resources) throw over('resources', `items[0..${g}] have ${resources} resources`);
    }
  }
}

const LIMIT_NOUN: Record<DiscoveryLimit, string> = {
  groups: 'groups',
  versionsPerGroup: 'versions in one group',
  versions: 'versions in all',
  resourcesPerVersion: 'resources in one group/version',
  resources: 'resources in all',
};

function arrayField(o: unknown, key: string): unknown[] | undefined {
  if (!isObject(o)) return undefined;
  const v = field(o, key);
  return Array.isArray(v) ? v : undefined;
}

/**
 * What routing reads of a document (routing/routetable.ts), flat: for each group its name and its
 * number of versions, then for each version its name, 1 when it is Stale (else 0), its number of
 * resources and their names. [ "apps", 1, "v1", 0, 2, "deployments", "statefulsets", ... ]
 *
 * The merge worker sends this, not the decoded list, to the main thread (merger.ts decode): the
 * documents themselves are merged and encoded in the worker from their bytes, so only the names
 * cross. Flat, because the structured clone is received on the event loop: for 4,000 groups,
 * 10,000 versions and 20,000 resources (PEER_DISCOVERY_LIMITS) the same names as nested objects
 * took 18.7 ms to receive, flat 3.5 ms, and left far fewer objects for the GC.
 */
export type RoutingView = readonly (string | number)[];

export function routingView(list: APIGroupDiscoveryList): RoutingView {
  const out: (string | number)[] = [];
  for (const group of list.items) {
    const versions = group.versions ?? [];
    out.push(group.metadata?.name ?? '', versions.length);
    for (const v of versions) {
      const resources = v.resources ?? [];
      out.push(v.version, v.freshness === 'Stale' ? 1 : 0, resources.length);
      for (const r of resources) out.push(r.resource);
    }
  }
  return out;
}

// ---- the typed walk (the Go structs of k8s.io/api apidiscovery/v2 and metav1) ----------------
//
// Each reader checks JSON types as encoding/json does when decoding into the struct, reads only
// the fields the struct has (case-sensitive, as sigs.k8s.io/json), and returns a fresh object in
// Go field order. `null` gives Go's zero value. Where a reader of the raw JSON (the merge worker,
// the encoders) would not cope with what the body has, the document is marked normalized and
// re-encoded: a null or missing metadata, a null array element, a null or missing non-omitempty
// string (resource, version, ...), a null in a string slice or map, a null or missing items. A
// null optional field (`"creationTimestamp": null`, as older apiservers write; responseKind,
// shortNames, ...) reads as absent everywhere and leaves the body as it is.

interface Ctx {
  normalized: boolean;
}

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

function wrongType(path: string, want: string, v: unknown): DiscoveryFetchError {
  return decodeError(`${path}: expected ${want}, got ${typeName(v)}`);
}

/** `items[3].versions` from `items[3]` and `versions`. */
function at(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function field(o: Obj, key: string): unknown {
  return Object.hasOwn(o, key) ? o[key] : undefined;
}

/** A field Go leaves at its zero value (nil) when it is absent or null: undefined then, else its value. */
function present(o: Obj, key: string): unknown {
  const v = field(o, key);
  return v === null ? undefined : v;
}

/** A Go struct value (not a pointer: Go always writes it): an object, or null/absent (the zero struct). */
function struct(v: unknown, path: string, c: Ctx): Obj {
  if (v === undefined || v === null) {
    c.normalized = true;
    return {};
  }
  if (!isObject(v)) throw wrongType(path, 'an object', v);
  return v;
}

/** A Go string field: the value, '' for null/absent (marked normalized when `always` is set, i.e. no omitempty). */
function str(o: Obj, key: string, path: string, c: Ctx, always: boolean): string | undefined {
  const v = field(o, key);
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) {
    if (always) c.normalized = true;
    return always ? '' : undefined;
  }
  throw wrongType(at(path, key), 'a string', v);
}

function int64(o: Obj, key: string, path: string): number | undefined {
  const v = present(o, key);
  if (v === undefined) return undefined;
  // Go refuses 1.0 and 1e3 too (strconv.ParseInt on the literal); JSON.parse no longer knows how it was written.
  if (typeof v !== 'number' || !Number.isInteger(v) || v < -(2 ** 63) || v >= 2 ** 63) throw wrongType(at(path, key), 'an int64', v);
  return v;
}

function bool(o: Obj, key: string, path: string): boolean | undefined {
  const v = present(o, key);
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw wrongType(at(path, key), 'a boolean', v);
  return v;
}

/** A Go slice: the array, or undefined for null/absent (nil). */
function array(o: Obj, key: string, path: string): unknown[] | undefined {
  const v = present(o, key);
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw wrongType(at(path, key), 'an array', v);
  return v;
}

/** []string: elements must be strings (null is ""). */
function strings(o: Obj, key: string, path: string, c: Ctx): string[] | undefined {
  const a = array(o, key, path);
  if (a === undefined) return undefined;
  const out: string[] = new Array(a.length);
  for (let i = 0; i < a.length; i++) {
    const v = a[i];
    if (typeof v === 'string') out[i] = v;
    else if (v === null) {
      c.normalized = true;
      out[i] = '';
    } else throw wrongType(`${at(path, key)}[${i}]`, 'a string', v);
  }
  return out;
}

/** A slice of structs. */
function structs<T>(o: Obj, key: string, path: string, c: Ctx, read: (v: Obj, path: string, c: Ctx) => T): T[] | undefined {
  const a = array(o, key, path);
  if (a === undefined) return undefined;
  const out: T[] = new Array(a.length);
  for (let i = 0; i < a.length; i++) {
    const p = `${at(path, key)}[${i}]`;
    out[i] = read(struct(a[i], p, c), p, c);
  }
  return out;
}

/** A pointer to a struct: undefined for null/absent. */
function pointer<T>(o: Obj, key: string, path: string, c: Ctx, read: (v: Obj, path: string, c: Ctx) => T): T | undefined {
  const v = present(o, key);
  if (v === undefined) return undefined;
  return read(struct(v, at(path, key), c), at(path, key), c);
}

/** map[string]string. */
function stringMap(o: Obj, key: string, path: string, c: Ctx): Record<string, string> | undefined {
  const v = present(o, key);
  if (v === undefined) return undefined;
  if (!isObject(v)) throw wrongType(at(path, key), 'an object', v);
  const out: Record<string, string> = {};
  for (const k of Object.keys(v)) {
    let s = v[k];
    if (s === null) {
      c.normalized = true;
      s = '';
    } else if (typeof s !== 'string') throw wrongType(`${at(path, key)}[${quote(k)}]`, 'a string', s);
    // defineProperty: a "__proto__" key from a peer stays a plain key.
    Object.defineProperty(out, k, { value: s, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** metav1.Time (time.go UnmarshalJSON): null or an RFC 3339 string time.Parse accepts. */
function time(o: Obj, key: string, path: string): string | undefined {
  const v = present(o, key);
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw wrongType(at(path, key), 'an RFC 3339 time string', v);
  if (!isRFC3339(v)) throw decodeError(`${at(path, key)}: not an RFC 3339 time: ${quote(v)}`);
  return v;
}

const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|[+-](\d{2}):(\d{2}))$/;

function isRFC3339(s: string): boolean {
  const m = rfc3339.exec(s);
  if (m === null) return false;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return false;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (year < 100) {
    // Date.UTC maps years 0-99 to 1900-1999; only February's length can differ.
    const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
    if (day > (month === 2 ? (leap ? 29 : 28) : daysInMonth)) return false;
  } else if (day > daysInMonth) return false;
  if (m[7] !== undefined && (Number(m[7]) > 23 || Number(m[8]) > 59)) return false;
  return true;
}

function readList(doc: Obj, c: Ctx): APIGroupDiscoveryList {
  // TypeMeta (inline), read case-sensitively this time: a body whose own kind and apiVersion are
  // not exactly these (defaulted, or spelt "KIND") is re-encoded with them.
  const kind = str(doc, 'kind', '', c, false);
  const apiVersion = str(doc, 'apiVersion', '', c, false);
  if (kind !== APIGROUP_DISCOVERY_LIST_KIND || apiVersion !== DISCOVERY_V2_API_VERSION) c.normalized = true;
  const metadata = readListMeta(struct(field(doc, 'metadata'), 'metadata', c), 'metadata', c);
  const itemsValue = field(doc, 'items');
  if (!Array.isArray(itemsValue)) c.normalized = true; // null or absent: Go's nil slice; [] here
  const items = structs(doc, 'items', '', c, readGroup) ?? [];
  return { kind: APIGROUP_DISCOVERY_LIST_KIND, apiVersion: DISCOVERY_V2_API_VERSION, metadata, items };
}

function readListMeta(o: Obj, path: string, c: Ctx): Record<string, unknown> {
  const m: Record<string, unknown> = {};
  for (const k of ['selfLink', 'resourceVersion', 'continue']) {
    const v = str(o, k, path, c, false);
    if (v !== undefined) m[k] = v;
  }
  const remaining = int64(o, 'remainingItemCount', path);
  if (remaining !== undefined) m['remainingItemCount'] = remaining;
  const shard = pointer(o, 'shardInfo', path, c, (s, p) => ({ selector: str(s, 'selector', p, c, true)! }));
  if (shard !== undefined) m['shardInfo'] = shard;
  return m;
}

function readGroup(o: Obj, path: string, c: Ctx): APIGroupDiscovery {
  str(o, 'kind', path, c, false);
  str(o, 'apiVersion', path, c, false);
  const g: APIGroupDiscovery = { metadata: readObjectMeta(struct(field(o, 'metadata'), at(path, 'metadata'), c), at(path, 'metadata'), c) };
  const versions = structs(o, 'versions', path, c, readVersion);
  if (versions !== undefined) g.versions = versions;
  return g;
}

function readObjectMeta(o: Obj, path: string, c: Ctx): ObjectMeta {
  const m: ObjectMeta = {};
  for (const k of ['name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion']) {
    const v = str(o, k, path, c, false);
    if (v !== undefined) m[k] = v;
  }
  const generation = int64(o, 'generation', path);
  if (generation !== undefined) m['generation'] = generation;
  const created = time(o, 'creationTimestamp', path);
  if (created !== undefined) m['creationTimestamp'] = created;
  const deleted = time(o, 'deletionTimestamp', path);
  if (deleted !== undefined) m['deletionTimestamp'] = deleted;
  const grace = int64(o, 'deletionGracePeriodSeconds', path);
  if (grace !== undefined) m['deletionGracePeriodSeconds'] = grace;
  for (const k of ['labels', 'annotations']) {
    const v = stringMap(o, k, path, c);
    if (v !== undefined) m[k] = v;
  }
  const owners = structs(o, 'ownerReferences', path, c, readOwnerReference);
  if (owners !== undefined) m['ownerReferences'] = owners;
  const finalizers = strings(o, 'finalizers', path, c);
  if (finalizers !== undefined) m['finalizers'] = finalizers;
  const managed = structs(o, 'managedFields', path, c, readManagedFieldsEntry);
  if (managed !== undefined) m['managedFields'] = managed;
  return m;
}

function readOwnerReference(o: Obj, path: string, c: Ctx): Obj {
  const r: Obj = {
    apiVersion: str(o, 'apiVersion', path, c, true),
    kind: str(o, 'kind', path, c, true),
    name: str(o, 'name', path, c, true),
    uid: str(o, 'uid', path, c, true),
  };
  const controller = bool(o, 'controller', path);
  if (controller !== undefined) r['controller'] = controller;
  const block = bool(o, 'blockOwnerDeletion', path);
  if (block !== undefined) r['blockOwnerDeletion'] = block;
  return r;
}

function readManagedFieldsEntry(o: Obj, path: string, c: Ctx): Obj {
  const e: Obj = {};
  for (const k of ['manager', 'operation', 'apiVersion']) {
    const v = str(o, k, path, c, false);
    if (v !== undefined) e[k] = v;
  }
  const t = time(o, 'time', path);
  if (t !== undefined) e['time'] = t;
  const fieldsType = str(o, 'fieldsType', path, c, false);
  if (fieldsType !== undefined) e['fieldsType'] = fieldsType;
  // FieldsV1 keeps any JSON value verbatim (helpers.go UnmarshalJSON).
  const fieldsV1 = field(o, 'fieldsV1');
  if (fieldsV1 !== undefined && fieldsV1 !== null) e['fieldsV1'] = fieldsV1;
  const sub = str(o, 'subresource', path, c, false);
  if (sub !== undefined) e['subresource'] = sub;
  return e;
}

function readVersion(o: Obj, path: string, c: Ctx): APIVersionDiscovery {
  const v: APIVersionDiscovery = { version: str(o, 'version', path, c, true)! };
  const resources = structs(o, 'resources', path, c, readResource);
  if (resources !== undefined) v.resources = resources;
  const freshness = str(o, 'freshness', path, c, false);
  if (freshness !== undefined) v.freshness = freshness;
  return v;
}

function readGVK(o: Obj, path: string, c: Ctx): GroupVersionKind {
  return { group: str(o, 'group', path, c, true)!, version: str(o, 'version', path, c, true)!, kind: str(o, 'kind', path, c, true)! };
}

function readResource(o: Obj, path: string, c: Ctx): APIResourceDiscovery {
  const r = { resource: str(o, 'resource', path, c, true)! } as APIResourceDiscovery;
  const responseKind = pointer(o, 'responseKind', path, c, readGVK);
  if (responseKind !== undefined) r.responseKind = responseKind;
  r.scope = str(o, 'scope', path, c, true)!;
  r.singularResource = str(o, 'singularResource', path, c, true)!;
  r.verbs = verbs(o, path, c);
  const shortNames = strings(o, 'shortNames', path, c);
  if (shortNames !== undefined) r.shortNames = shortNames;
  const categories = strings(o, 'categories', path, c);
  if (categories !== undefined) r.categories = categories;
  const subresources = structs(o, 'subresources', path, c, readSubresource);
  if (subresources !== undefined) r.subresources = subresources;
  return r;
}

function readSubresource(o: Obj, path: string, c: Ctx): APISubresourceDiscovery {
  const s = { subresource: str(o, 'subresource', path, c, true)! } as APISubresourceDiscovery;
  const responseKind = pointer(o, 'responseKind', path, c, readGVK);
  if (responseKind !== undefined) s.responseKind = responseKind;
  const accepted = structs(o, 'acceptedTypes', path, c, readGVK);
  if (accepted !== undefined) s.acceptedTypes = accepted;
  s.verbs = verbs(o, path, c);
  return s;
}

/** `verbs` has no omitempty: null is how Go writes none, so null (not absent) is the usual form. */
function verbs(o: Obj, path: string, c: Ctx): string[] | null {
  const v = field(o, 'verbs');
  if (v === null) return null;
  if (v === undefined) return null;
  return strings(o, 'verbs', path, c)!;
}
