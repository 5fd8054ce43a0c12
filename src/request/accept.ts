// Accept negotiation for the discovery endpoints (/api, /apis), docs/kubernetes-mvp.md §5.1. A port of:
// - munnerz/goautoneg ParseAccept as vendored by kubernetes/kubernetes
//   (vendor/github.com/munnerz/goautoneg/autoneg.go: nextSplitElement parser, sort.Sort by q,
//   then concrete type before '*', then concrete subtype before '*');
// - apiserver pkg/endpoints/handlers/negotiation/negotiate.go NegotiateMediaTypeOptions and
//   acceptMediaTypeOptions (1.35+, with the `profile` parameter);
// - apiserver pkg/endpoints/discovery/aggregated negotiation.go DiscoveryEndpointRestrictions and
//   wrapper.go WrappedHandler.ServeHTTP, which picks aggregated or legacy discovery.
//
// Serializers (CodecFactory order): application/json (streams), application/yaml (no stream
// serializer), application/vnd.kubernetes.protobuf (streams). CBOR (master, gate off) is left out.
//
// v2beta1: from 1.35 IsAggregatedDiscoveryGVK accepts only v2 (AggregatedDiscoveryRemoveBetaType is
// locked on), so a request that asks only for v2beta1 gets the legacy handler. We still report it
// as kind 'aggregated', version 'v2beta1', and let the caller decide (pass it through to the
// apiserver, which answers for its own version). v2 takes precedence: when any clause would pass
// as v2 the answer is v2, as a 1.35+ server decides, even if a v2beta1 clause sorts first (a
// pre-1.33 server would have picked the v2beta1 clause). encoding/profile are that clause's.
//
// kind 'legacy': the legacy handler negotiates again with DefaultEndpointRestrictions (a clause
// passes only without as/g/v). When nothing passes it answers 406, which is `null` here. The
// profile of a legacy answer is always '' (the legacy handlers ignore it).
//
// Go's standard library parts are ports in src/gocompat/: sort.Sort (sort.ts) and
// strconv.ParseFloat(s, 32) (float32.ts).
//
// Not modelled: q=0 as "not acceptable". Released apiservers (1.35, 1.36) treat q=0 as the lowest
// preference; kubernetes/kubernetes PR #138582 (open) would add RFC 9110 rejection.

import { parseFloat32 } from '../gocompat/float32';
import { sort } from '../gocompat/sort';

export type DiscoveryEncoding = 'json' | 'yaml' | 'protobuf';

export interface DiscoveryNegotiation {
  /** aggregated = an apidiscovery.k8s.io APIGroupDiscoveryList was asked for */
  kind: 'aggregated' | 'legacy';
  /** 'v2' or 'v2beta1' for aggregated, '' for legacy */
  version: 'v2' | 'v2beta1' | '';
  /** the serializer the apiserver would pick */
  encoding: DiscoveryEncoding;
  /** the `profile` parameter of the chosen clause, e.g. 'nopeer'; any string, '' when absent */
  profile: string;
}

interface Serializer {
  readonly type: string;
  readonly subType: string;
  readonly encoding: DiscoveryEncoding;
  readonly streaming: boolean;
}

const SERIALIZERS: readonly Serializer[] = [
  { type: 'application', subType: 'json', encoding: 'json', streaming: true },
  { type: 'application', subType: 'yaml', encoding: 'yaml', streaming: false },
  { type: 'application', subType: 'vnd.kubernetes.protobuf', encoding: 'protobuf', streaming: true },
];

const LEGACY: Record<DiscoveryEncoding, DiscoveryNegotiation> = {
  json: Object.freeze({ kind: 'legacy', version: '', encoding: 'json', profile: '' }),
  yaml: Object.freeze({ kind: 'legacy', version: '', encoding: 'yaml', profile: '' }),
  protobuf: Object.freeze({ kind: 'legacy', version: '', encoding: 'protobuf', profile: '' }),
};

// Clients send a handful of distinct Accept strings (client-go, kubectl per version, python), so a
// small insertion-ordered cache answers almost every request; the oldest entry goes first.
const CACHE_MAX_ENTRIES = 64;
// Longer headers are negotiated every time, so the cache holds at most 64 KiB of keys.
const CACHE_MAX_KEY_LENGTH = 1024;
const cache = new Map<string, DiscoveryNegotiation | null>();

/**
 * What the kube-apiserver serves for this Accept header on /api or /apis, or null for 406 Not
 * Acceptable. Missing or empty Accept → legacy JSON. Never throws. Results are frozen and shared.
 */
export function negotiateDiscovery(accept: string | undefined): DiscoveryNegotiation | null {
  if (typeof accept !== 'string') return LEGACY.json;
  const hit = cache.get(accept);
  if (hit !== undefined) return hit; // a cached 406 is null, not undefined
  const result = negotiate(trimOWS(accept));
  if (accept.length <= CACHE_MAX_KEY_LENGTH) {
    if (cache.size >= CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value as string);
    cache.set(accept, result);
  }
  return result;
}

/** Go's server trims SP and HTAB around header values (net/textproto) before Header.Get sees them. */
function trimOWS(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 0x20 || s.charCodeAt(a) === 0x09)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 0x20 || s.charCodeAt(b - 1) === 0x09)) b--;
  return a === 0 && b === s.length ? s : s.substring(a, b);
}

function negotiate(header: string): DiscoveryNegotiation | null {
  // NegotiateMediaTypeOptions: an empty header is accepted[0] without options.
  if (header.length === 0) return LEGACY.json;
  const clauses = parseAccept(header);

  // WrappedHandler.ServeHTTP with DiscoveryEndpointRestrictions: the first (clause, serializer)
  // pair, in that loop order, whose Convert is the aggregated GVK.
  let beta: DiscoveryNegotiation | null = null;
  for (const clause of clauses) {
    for (const s of SERIALIZERS) {
      if (!clauseMatches(clause, s)) continue;
      const o = acceptMediaTypeOptions(clause.params, s);
      if (o === null || !o.convert || o.group !== 'apidiscovery.k8s.io' || o.kind !== 'APIGroupDiscoveryList') continue;
      if (o.version === 'v2') return Object.freeze({ kind: 'aggregated', version: 'v2', encoding: s.encoding, profile: o.profile });
      if (o.version === 'v2beta1' && beta === null) {
        beta = Object.freeze({ kind: 'aggregated', version: 'v2beta1', encoding: s.encoding, profile: o.profile });
      }
    }
  }
  if (beta !== null) return beta;

  // The legacy handler: WriteObjectNegotiated with DefaultEndpointRestrictions (Convert must be nil).
  for (const clause of clauses) {
    for (const s of SERIALIZERS) {
      if (!clauseMatches(clause, s)) continue;
      const o = acceptMediaTypeOptions(clause.params, s);
      if (o !== null && !o.convert) return LEGACY[s.encoding];
    }
  }
  return null;
}

function clauseMatches(c: AcceptClause, s: Serializer): boolean {
  return (c.type === s.type && (c.subType === s.subType || c.subType === '*')) || (c.type === '*' && c.subType === '*');
}

interface MediaTypeOptions {
  convert: boolean;
  group: string;
  version: string;
  kind: string;
  profile: string;
}

/**
 * acceptMediaTypeOptions before the endpoint's AllowsMediaTypeTransform check, or null when a
 * parameter rules the pair out: stream= needs a stream serializer and "watch"; sv= is never allowed
 * (both restriction types return false from AllowsServerVersion). as/g/v build Convert; export,
 * pretty and unknown keys are ignored. Go ranges over a map, but the outcome does not depend on
 * the order.
 */
function acceptMediaTypeOptions(params: Map<string, string> | null, s: Serializer): MediaTypeOptions | null {
  const o: MediaTypeOptions = { convert: false, group: '', version: '', kind: '', profile: '' };
  if (params === null) return o;
  for (const [k, v] of params) {
    switch (k) {
      case 'as':
        o.convert = true;
        o.kind = v;
        break;
      case 'g':
        o.convert = true;
        o.group = v;
        break;
      case 'v':
        o.convert = true;
        o.version = v;
        break;
      case 'stream':
        if (v.length > 0 && (!s.streaming || v !== 'watch')) return null;
        break;
      case 'sv':
        if (v.length > 0) return null;
        break;
      case 'profile':
        o.profile = v;
        break;
      default:
        break;
    }
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// goautoneg.ParseAccept (vendored version with nextSplitElement)

interface AcceptClause {
  type: string;
  subType: string;
  q: number;
  params: Map<string, string> | null;
}

/** strings.TrimFunc(s, r == ' '): spaces only, never tabs. */
function trimSpaces(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && s.charCodeAt(a) === 0x20) a++;
  while (b > a && s.charCodeAt(b - 1) === 0x20) b--;
  return a === 0 && b === s.length ? s : s.substring(a, b);
}

function parseAccept(header: string): AcceptClause[] {
  const out: AcceptClause[] = [];
  let pos = 0;
  const len = header.length;
  while (pos < len) {
    let comma = header.indexOf(',', pos);
    if (comma === -1) comma = len;
    const part = trimSpaces(header.substring(pos, comma));
    pos = comma + 1;

    // media range: "type/subtype", "*" alone means "*/*"; a second '/' with anything after it, or
    // a type without '/', drops the clause. "a/b/" keeps a/b; "a/" is a type without '/'.
    const semi = part.indexOf(';');
    const range = semi === -1 ? part : part.substring(0, semi);
    const slash = range.indexOf('/');
    const type = trimSpaces(slash === -1 ? range : range.substring(0, slash));
    let subType: string;
    if (slash === -1 || slash === range.length - 1) {
      if (type !== '*') continue;
      subType = '*';
    } else {
      const slash2 = range.indexOf('/', slash + 1);
      if (slash2 !== -1 && slash2 < range.length - 1) continue;
      subType = trimSpaces(range.substring(slash + 1, slash2 === -1 ? range.length : slash2));
    }

    const clause: AcceptClause = { type, subType, q: 1, params: null };
    // params: ';'-separated key=value, later keys overwrite earlier ones; key trimmed, value trimmed
    // except for q, which goes to strconv.ParseFloat(value, 32) as is (an error gives 0).
    if (semi !== -1 && semi < part.length - 1) {
      const params = new Map<string, string>();
      let p = semi + 1;
      // The next '=' at or after p (-1: none left), searched again only once p has passed it: every
      // byte is scanned once. Searching from p in each ';' segment was quadratic (a 64 KiB
      // ";;;…;=" header took 3.5 ms; issue 8 fuzzing).
      let nextEq = part.indexOf('=', p);
      while (p < part.length) {
        let e = part.indexOf(';', p);
        if (e === -1) e = part.length;
        if (nextEq !== -1 && nextEq < p) nextEq = part.indexOf('=', p);
        // nextSplitElement(sp, "=") twice: "k=v" and "k=v=" give v, "k", "k=" and "k=v=w" are dropped
        const eq = nextEq;
        if (eq !== -1 && eq < e - 1) {
          nextEq = part.indexOf('=', eq + 1);
          let vEnd = nextEq;
          if (vEnd === -1 || vEnd >= e) vEnd = e;
          if (vEnd >= e - 1) {
            const token = trimSpaces(part.substring(p, eq));
            const value = part.substring(eq + 1, vEnd);
            if (token === 'q') clause.q = parseFloat32(value);
            else params.set(token, trimSpaces(value));
          }
        }
        p = e + 1;
      }
      clause.params = params;
    }
    out.push(clause);
  }
  sort(out, clauseLess);
  return out;
}

/** goautoneg's accept_slice Less. Not a strict weak order (a lower q on a concrete type can be "less"
 *  than a higher q on '*'), so the order depends on the algorithm: gocompat/sort is Go's sort.Sort. */
function clauseLess(a: AcceptClause, b: AcceptClause): boolean {
  if (a.q > b.q) return true;
  if (a.type !== '*' && b.type === '*') return true;
  if (a.subType !== '*' && b.subType === '*') return true;
  return false;
}
