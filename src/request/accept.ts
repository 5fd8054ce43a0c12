// Accept negotiation for the discovery endpoints (/api, /apis), spec §5.1. A port of:
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
// Not modelled: q=0 as "not acceptable". Released apiservers (1.35, 1.36) treat q=0 as the lowest
// preference; kubernetes/kubernetes PR #138582 (open) would add RFC 9110 rejection.

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
            if (token === 'q') clause.q = goParseFloat32(value);
            else params.set(token, trimSpaces(value));
          }
        }
        p = e + 1;
      }
      clause.params = params;
    }
    out.push(clause);
  }
  goSort(out, clauseLess);
  return out;
}

function clauseLess(a: AcceptClause, b: AcceptClause): boolean {
  if (a.q > b.q) return true;
  if (a.type !== '*' && b.type === '*') return true;
  if (a.subType !== '*' && b.subType === '*') return true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// sort.Sort (golang/go src/sort/zsortinterface.go, pdqsort since Go 1.19). clauseLess is not a
// strict weak order (a lower q on a concrete type can be "less" than a higher q on '*'), so the
// result depends on the algorithm; this is a line-for-line port. Up to 12 clauses it is insertion
// sort.

type Less<T> = (a: T, b: T) => boolean;

function goSort<T>(data: T[], less: Less<T>): void {
  const n = data.length;
  if (n <= 1) return;
  pdqsort(data, less, 0, n, bitsLen(n));
}

function bitsLen(x: number): number {
  return 32 - Math.clz32(x);
}

function swap<T>(d: T[], i: number, j: number): void {
  const t = d[i];
  d[i] = d[j];
  d[j] = t;
}

function insertionSort<T>(d: T[], less: Less<T>, a: number, b: number): void {
  for (let i = a + 1; i < b; i++) {
    for (let j = i; j > a && less(d[j], d[j - 1]); j--) swap(d, j, j - 1);
  }
}

function siftDown<T>(d: T[], less: Less<T>, lo: number, hi: number, first: number): void {
  let root = lo;
  for (;;) {
    let child = 2 * root + 1;
    if (child >= hi) return;
    if (child + 1 < hi && less(d[first + child], d[first + child + 1])) child++;
    if (!less(d[first + root], d[first + child])) return;
    swap(d, first + root, first + child);
    root = child;
  }
}

function heapSort<T>(d: T[], less: Less<T>, a: number, b: number): void {
  const first = a;
  const hi = b - a;
  for (let i = Math.trunc((hi - 1) / 2); i >= 0; i--) siftDown(d, less, i, hi, first);
  for (let i = hi - 1; i >= 0; i--) {
    swap(d, first, first + i);
    siftDown(d, less, 0, i, first);
  }
}

const UNKNOWN_HINT = 0;
const INCREASING_HINT = 1;
const DECREASING_HINT = 2;

function pdqsort<T>(d: T[], less: Less<T>, a: number, b: number, limit: number): void {
  const maxInsertion = 12;
  let wasBalanced = true;
  let wasPartitioned = true;
  for (;;) {
    const length = b - a;
    if (length <= maxInsertion) {
      insertionSort(d, less, a, b);
      return;
    }
    if (limit === 0) {
      heapSort(d, less, a, b);
      return;
    }
    if (!wasBalanced) {
      breakPatterns(d, a, b);
      limit--;
    }
    let [pivot, hint] = choosePivot(d, less, a, b);
    if (hint === DECREASING_HINT) {
      reverseRange(d, a, b);
      pivot = b - 1 - (pivot - a);
      hint = INCREASING_HINT;
    }
    if (wasBalanced && wasPartitioned && hint === INCREASING_HINT) {
      if (partialInsertionSort(d, less, a, b)) return;
    }
    if (a > 0 && !less(d[a - 1], d[pivot])) {
      a = partitionEqual(d, less, a, b, pivot);
      continue;
    }
    const [mid, alreadyPartitioned] = partition(d, less, a, b, pivot);
    wasPartitioned = alreadyPartitioned;
    const leftLen = mid - a;
    const rightLen = b - mid;
    const balanceThreshold = Math.trunc(length / 8);
    if (leftLen < rightLen) {
      wasBalanced = leftLen >= balanceThreshold;
      pdqsort(d, less, a, mid, limit);
      a = mid + 1;
    } else {
      wasBalanced = rightLen >= balanceThreshold;
      pdqsort(d, less, mid + 1, b, limit);
      b = mid;
    }
  }
}

function partition<T>(d: T[], less: Less<T>, a: number, b: number, pivot: number): [number, boolean] {
  swap(d, a, pivot);
  let i = a + 1;
  let j = b - 1;
  while (i <= j && less(d[i], d[a])) i++;
  while (i <= j && !less(d[j], d[a])) j--;
  if (i > j) {
    swap(d, j, a);
    return [j, true];
  }
  swap(d, i, j);
  i++;
  j--;
  for (;;) {
    while (i <= j && less(d[i], d[a])) i++;
    while (i <= j && !less(d[j], d[a])) j--;
    if (i > j) break;
    swap(d, i, j);
    i++;
    j--;
  }
  swap(d, j, a);
  return [j, false];
}

function partitionEqual<T>(d: T[], less: Less<T>, a: number, b: number, pivot: number): number {
  swap(d, a, pivot);
  let i = a + 1;
  let j = b - 1;
  for (;;) {
    while (i <= j && !less(d[a], d[i])) i++;
    while (i <= j && less(d[a], d[j])) j--;
    if (i > j) break;
    swap(d, i, j);
    i++;
    j--;
  }
  return i;
}

function partialInsertionSort<T>(d: T[], less: Less<T>, a: number, b: number): boolean {
  const maxSteps = 5;
  const shortestShifting = 50;
  let i = a + 1;
  for (let step = 0; step < maxSteps; step++) {
    while (i < b && !less(d[i], d[i - 1])) i++;
    if (i === b) return true;
    if (b - a < shortestShifting) return false;
    swap(d, i, i - 1);
    if (i - a >= 2) {
      for (let j = i - 1; j >= 1; j--) {
        if (!less(d[j], d[j - 1])) break;
        swap(d, j, j - 1);
      }
    }
    if (b - i >= 2) {
      for (let j = i + 1; j < b; j++) {
        if (!less(d[j], d[j - 1])) break;
        swap(d, j, j - 1);
      }
    }
  }
  return false;
}

const MASK64 = (1n << 64n) - 1n;

function breakPatterns<T>(d: T[], a: number, b: number): void {
  const length = b - a;
  if (length < 8) return;
  // sort.go xorshift (<<13, >>7, <<17) seeded with the length; nextPowerOfTwo = 1 << bits.Len(length)
  let r = BigInt(length);
  const modulus = BigInt(2 ** bitsLen(length));
  const start = a + Math.trunc(length / 4) * 2 - 1;
  for (let idx = start; idx <= start + 2; idx++) {
    r ^= (r << 13n) & MASK64;
    r ^= r >> 7n;
    r ^= (r << 17n) & MASK64;
    let other = Number(r & (modulus - 1n));
    if (other >= length) other -= length;
    swap(d, idx, a + other);
  }
}

function choosePivot<T>(d: T[], less: Less<T>, a: number, b: number): [number, number] {
  const shortestNinther = 50;
  const maxSwaps = 4 * 3;
  const l = b - a;
  const swaps = { n: 0 };
  const q = Math.trunc(l / 4);
  let i = a + q;
  let j = a + q * 2;
  let k = a + q * 3;
  if (l >= 8) {
    if (l >= shortestNinther) {
      i = median(d, less, i - 1, i, i + 1, swaps);
      j = median(d, less, j - 1, j, j + 1, swaps);
      k = median(d, less, k - 1, k, k + 1, swaps);
    }
    j = median(d, less, i, j, k, swaps);
  }
  if (swaps.n === 0) return [j, INCREASING_HINT];
  if (swaps.n === maxSwaps) return [j, DECREASING_HINT];
  return [j, UNKNOWN_HINT];
}

function median<T>(d: T[], less: Less<T>, a: number, b: number, c: number, swaps: { n: number }): number {
  // order2 three times, as sort.go median
  if (less(d[b], d[a])) {
    swaps.n++;
    [a, b] = [b, a];
  }
  if (less(d[c], d[b])) {
    swaps.n++;
    [b, c] = [c, b];
  }
  if (less(d[b], d[a])) {
    swaps.n++;
    [a, b] = [b, a];
  }
  return b;
}

function reverseRange<T>(d: T[], a: number, b: number): void {
  for (let i = a, j = b - 1; i < j; i++, j--) swap(d, i, j);
}

// ---------------------------------------------------------------------------------------------
// strconv.ParseFloat(s, 32) (golang/go src/strconv/atof.go): the result is the float32 nearest to
// the decimal or hex value, ties to even; 0 on a syntax error; ±Inf when out of range.

/** special(): "inf"/"infinity" with optional sign, "nan" without; [value, bytes consumed] or null. */
function goSpecial(s: string): [number, number] | null {
  if (s.length === 0) return null;
  let sign = 1;
  let nsign = 0;
  let rest = s;
  const c = s[0];
  if (c === '+' || c === '-') {
    if (c === '-') sign = -1;
    nsign = 1;
    rest = s.substring(1);
  } else if (c === 'n' || c === 'N') {
    return commonPrefixLenIgnoreCase(s, 'nan') === 3 ? [NaN, 3] : null;
  } else if (c !== 'i' && c !== 'I') {
    return null;
  }
  let n = commonPrefixLenIgnoreCase(rest, 'infinity');
  if (3 < n && n < 8) n = 3;
  if (n === 3 || n === 8) return [sign * Infinity, nsign + n];
  return null;
}

function commonPrefixLenIgnoreCase(s: string, prefix: string): number {
  const n = Math.min(prefix.length, s.length);
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    if (c !== prefix.charCodeAt(i)) return i;
  }
  return n;
}

function lowerByte(c: number): number {
  return c | 0x20;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** strconv underscoreOK: '_' only between digits, or between a base prefix and a digit. */
function underscoreOK(s: string): boolean {
  let saw = '^';
  let i = 0;
  if (s.length >= 1 && (s[0] === '-' || s[0] === '+')) s = s.substring(1);
  let hex = false;
  if (s.length >= 2 && s[0] === '0') {
    const l = lowerByte(s.charCodeAt(1));
    if (l === 0x62 || l === 0x6f || l === 0x78) {
      i = 2;
      saw = '0';
      hex = l === 0x78;
    }
  }
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (isDigit(c) || (hex && lowerByte(c) >= 0x61 && lowerByte(c) <= 0x66)) {
      saw = '0';
      continue;
    }
    if (c === 0x5f) {
      if (saw !== '0') return false;
      saw = '_';
      continue;
    }
    if (saw === '_') return false;
    saw = '!';
  }
  return saw !== '_';
}

interface ReadFloat {
  neg: boolean;
  hex: boolean;
  /** significant digits, leading zeros dropped (hex digits when hex) */
  digits: string;
  /** value = 0.digits × 10^dp, or for hex 0.digits(16) × 2^dp */
  dp: number;
  /** characters consumed */
  n: number;
}

/** readFloat: sign, mantissa (decimal or 0x hex), exponent (e, or p which hex requires). */
function readFloat(s: string): ReadFloat | null {
  const len = s.length;
  let i = 0;
  let neg = false;
  let underscores = false;
  if (i >= len) return null;
  if (s[0] === '+') i++;
  else if (s[0] === '-') {
    i++;
    neg = true;
  }
  let hex = false;
  let expChar = 0x65; // 'e'
  if (i + 2 < len && s[i] === '0' && lowerByte(s.charCodeAt(i + 1)) === 0x78) {
    hex = true;
    i += 2;
    expChar = 0x70; // 'p'
  }
  let sawdot = false;
  let sawdigits = false;
  let nd = 0;
  let dp = 0;
  let digits = '';
  for (; i < len; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x5f) {
      underscores = true;
      continue;
    }
    if (c === 0x2e) {
      if (sawdot) break;
      sawdot = true;
      dp = nd;
      continue;
    }
    if (isDigit(c)) {
      sawdigits = true;
      if (c === 0x30 && nd === 0) {
        dp--;
        continue;
      }
      nd++;
      digits += s[i];
      continue;
    }
    if (hex && lowerByte(c) >= 0x61 && lowerByte(c) <= 0x66) {
      sawdigits = true;
      nd++;
      digits += s[i];
      continue;
    }
    break;
  }
  if (!sawdigits) return null;
  if (!sawdot) dp = nd;
  if (hex) dp *= 4;
  if (i < len && lowerByte(s.charCodeAt(i)) === expChar) {
    i++;
    if (i >= len) return null;
    let esign = 1;
    if (s[i] === '+') i++;
    else if (s[i] === '-') {
      i++;
      esign = -1;
    }
    if (i >= len || !isDigit(s.charCodeAt(i))) return null;
    let e = 0;
    for (; i < len && (isDigit(s.charCodeAt(i)) || s.charCodeAt(i) === 0x5f); i++) {
      if (s.charCodeAt(i) === 0x5f) {
        underscores = true;
        continue;
      }
      // Go stops accumulating at 10000; the value is then out of range anyway (or, with many
      // leading zeros, Go's own answer, which we reproduce).
      if (e < 10000) e = e * 10 + (s.charCodeAt(i) - 0x30);
    }
    dp += e * esign;
  } else if (hex) {
    return null;
  }
  if (underscores && !underscoreOK(s.substring(0, i))) return null;
  return { neg, hex, digits, dp, n: i };
}

function goParseFloat32(s: string): number {
  const sp = goSpecial(s);
  if (sp !== null) return sp[1] === s.length ? sp[0] : 0;
  const r = readFloat(s);
  if (r === null || r.n !== s.length) return 0;
  if (r.digits.length === 0) return r.neg ? -0 : 0;
  let v: number;
  if (!r.hex && r.digits.length <= 20 && r.dp > -60 && r.dp < 60) {
    // Fast path: the correctly rounded double, then float32. Double rounding can only go wrong when
    // the double lands exactly on a float32 midpoint; then decide exactly.
    const d = Number(`0.${r.digits}e${r.dp}`);
    v = Math.fround(d);
    if (v !== d && isFloat32Midpoint(d, v)) v = exactFloat32(r);
  } else {
    v = exactFloat32(r);
  }
  return r.neg ? -v : v;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

const F32_MAX = 3.4028234663852886e38;

/** The float32 next to |f| (a float32 or Infinity), away from zero or towards it. */
function float32Neighbour(af: number, up: boolean): number {
  if (af === Infinity) return up ? Infinity : F32_MAX;
  f32[0] = af;
  u32[0] = up ? u32[0] + 1 : u32[0] - 1;
  return f32[0];
}

/** Whether the double d lies exactly halfway between f = fround(d) and the float32 on its far side. */
function isFloat32Midpoint(d: number, f: number): boolean {
  if (!Number.isFinite(d)) return false;
  const ad = Math.abs(d);
  const af = Math.abs(f);
  const g = float32Neighbour(af, ad > af);
  const lo = Math.min(af, g);
  const hi = Math.max(af, g);
  // Adjacent float32 values (and 2^128 for the overflow boundary) sum exactly in a double.
  return ad === (lo + (hi === Infinity ? 2 ** 128 : hi)) / 2;
}

/** |value| rounded to float32, ties to even, with BigInt arithmetic. */
function exactFloat32(r: ReadFloat): number {
  const nd = r.digits.length;
  let num = BigInt((r.hex ? '0x' : '') + r.digits);
  let den = 1n;
  if (r.hex) {
    const e2 = r.dp - 4 * nd;
    if (e2 >= 0) num <<= BigInt(e2);
    else den <<= BigInt(-e2);
  } else {
    // value = digits × 10^(dp - nd); beyond these bounds it is certainly ±Inf or 0 for float32
    if (r.dp > 40) return Infinity;
    if (r.dp < -46) return 0;
    const e10 = r.dp - nd;
    if (e10 >= 0) num *= 10n ** BigInt(e10);
    else den *= 10n ** BigInt(-e10);
  }
  // e: 2^e <= num/den < 2^(e+1)
  let e = bigBitLen(num) - bigBitLen(den);
  if (!geScaled(num, den, e)) e--;
  if (e > 128) return Infinity;
  if (e < -151) return 0;
  const q = Math.max(e - 23, -149); // quantum: 24 significant bits, or the subnormal step
  let n: bigint;
  let d: bigint;
  if (q >= 0) {
    n = num;
    d = den << BigInt(q);
  } else {
    n = num << BigInt(-q);
    d = den;
  }
  let m = n / d;
  const rem2 = (n - m * d) * 2n;
  if (rem2 > d || (rem2 === d && (m & 1n) === 1n)) m += 1n;
  const v = Number(m) * 2 ** q;
  return v >= 2 ** 128 ? Infinity : v;
}

function bigBitLen(x: bigint): number {
  return x === 0n ? 0 : x.toString(2).length;
}

/** num/den >= 2^e */
function geScaled(num: bigint, den: bigint, e: number): boolean {
  return e >= 0 ? num >= den << BigInt(e) : num << BigInt(-e) >= den;
}
