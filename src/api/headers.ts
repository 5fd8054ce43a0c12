// Well-known header names every stage reads or writes.

/**
 * The one-hop marker: a request carrying `x-kubernetes-peer-proxied: true` is served by the
 * apiserver it reached, never proxied again (Kubernetes PeerProxiedHeader,
 * staging/src/k8s.io/apiserver/pkg/util/peerproxy/peerproxy_handler.go).
 */
export const PeerProxiedHeader = 'x-kubernetes-peer-proxied';

/**
 * On mvproxy's own answers that prove the request reached no apiserver (api/errors.ts ErrorSpec
 * notSent): a source mvproxy that asked this peer after a local 404 may then ask the next peer, also
 * for a request that must never run twice (a create). Relayed apiserver answers never carry it (the
 * response head drops it).
 */
export const NotSentHeader = 'x-mvproxy-not-sent';

/**
 * On the peer hop, beside the identity mvproxy asserts: the byte length of each identity field's
 * value, in order ("9,14,74"). The uWS peer listener's parser drops bytes >= 0x80 at both ends of a
 * value (it skips bytes below 33 as signed chars: README "Limitations"), which would assert another
 * user ("adminé" as "admin") or group; it refuses a request whose identity arrived with other
 * lengths (listener/head-check.ts identityLengthsProblem). Never forwarded from a client.
 */
export const IdentityLengthsHeader = 'x-mvproxy-identity-lengths';

/**
 * Whether a comma-separated header list (RFC 9110 §5.6.1) holds `token` (lowercase ASCII), in any
 * case, optional whitespace around it. Scanned in place, no array and no strings (Connection is
 * read on every request).
 */
export function listHasToken(list: string, token: string): boolean {
  for (let start = 0, end = 0; start <= list.length; start = end + 1) {
    end = list.indexOf(',', start);
    if (end < 0) end = list.length;
    const a = owsStart(list, start, end);
    if (tokenIs(list, a, owsEnd(list, a, end), token)) return true;
  }
  return false;
}

/** The first index of list[a, b) past optional whitespace (SP, HTAB: RFC 9110 §5.6.3). */
export function owsStart(list: string, a: number, b: number): number {
  while (a < b && isOWS(list.charCodeAt(a))) a++;
  return a;
}

/** The end of list[a, b) without its trailing optional whitespace. */
export function owsEnd(list: string, a: number, b: number): number {
  while (b > a && isOWS(list.charCodeAt(b - 1))) b--;
  return b;
}

/**
 * Whether list[a, b) is `token` (lowercase ASCII) in any ASCII case. `| 0x20` lowercases a letter
 * (only A-Z and a-z map onto a-z); anything else is compared exactly, since CR (0x0d) | 0x20 is '-'.
 */
export function tokenIs(list: string, a: number, b: number, token: string): boolean {
  if (b - a !== token.length) return false;
  for (let i = 0; i < token.length; i++) {
    const c = list.charCodeAt(a + i);
    const want = token.charCodeAt(i);
    if (c !== want && (want < 0x61 || want > 0x7a || (c | 0x20) !== want)) return false;
  }
  return true;
}

function isOWS(c: number): boolean {
  return c === 0x20 || c === 0x09;
}

/** RFC 9113 §6.5.2 (and RFC 7541 §4.1): each field counts its name, its value and 32 bytes more. */
export const FIELD_OVERHEAD_BYTES = 32;

/**
 * A flat [name, value, ...] list's header list size (RFC 9113 §6.5.2), what
 * SETTINGS_MAX_HEADER_LIST_SIZE bounds: the one count of it, for the HTTP/2 listeners
 * (listener/node-http.ts) and mvproxy's own HTTP/2 client (upstream/h2/attempt.ts).
 */
export function headerListSize(fields: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < fields.length; i += 2) n += fields[i]!.length + (fields[i + 1]?.length ?? 0) + FIELD_OVERHEAD_BYTES;
  return n;
}
