// The client's address as text, from the bytes uWebSockets.js gives (getRemoteAddress: 4 bytes for
// an IPv4 socket, 16 for IPv6): written upstream in X-Forwarded-For and into mvproxy's logs.
//
// Why not uWS's own getRemoteAddressAsText: it costs 1.1–2.1 µs a request (measured inside a uWS
// handler, Node 24 build), formats a second time what getRemoteAddress reads, and spells IPv6 in
// full ("0000:0000:0000:0000:0000:ffff:7f00:0001" for a v4 client of a dual-stack listener). Here:
// the text Go's net.IP.String gives (what kube-apiserver logs for a client it accepts itself:
// "127.0.0.1", "::1", RFC 5952 zero compression), computed once per address: one entry is kept,
// since a connection's requests and most of a node-local daemon's clients share one address.

/** Go's net.IP.String for 4 or 16 bytes: dotted for IPv4 and IPv4-mapped IPv6, else RFC 5952. */
export function ipText(b: Uint8Array): string {
  if (b.length === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  if (b.length !== 16) return '';
  if (isV4Mapped(b)) return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
  // The longest run of two or more zero groups becomes "::" (the first of equal runs), as Go.
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (group(b, i) !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && group(b, j) === 0) j++;
    if (j - i >= 2 && j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  let s = '';
  for (let i = 0; i < 8; i++) {
    if (i === best) {
      s += '::';
      i += bestLen - 1;
      continue;
    }
    if (s !== '' && !s.endsWith(':')) s += ':';
    s += group(b, i).toString(16);
  }
  return s;
}

function group(b: Uint8Array, i: number): number {
  return (b[2 * i]! << 8) | b[2 * i + 1]!;
}

function isV4Mapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

/** ipText of an ArrayBuffer from uWS, remembering the last address read (same bytes: same text, no formatting). */
export class RemoteAddressText {
  private last = new Uint8Array(0);
  private lastText = '';

  of(ab: ArrayBuffer): string {
    const b = new Uint8Array(ab);
    const last = this.last;
    if (b.length === last.length) {
      let same = true;
      for (let i = 0; i < b.length; i++) {
        if (b[i] !== last[i]) {
          same = false;
          break;
        }
      }
      if (same) return this.lastText;
    }
    this.last = b; // uWS hands a fresh ArrayBuffer per call: kept as is, never written
    this.lastText = ipText(b);
    return this.lastText;
  }
}

const lastRead = new RemoteAddressText();

/** The client's address of a uWS response (HttpResponse or WebSocket), as text. */
export function uwsRemoteAddress(res: { getRemoteAddress(): ArrayBuffer }): string {
  return lastRead.of(res.getRemoteAddress());
}

/**
 * The client's address of a node:net socket, as text: node spells a v4 client of a dual-stack
 * listener "::ffff:127.0.0.1" where Go (and uwsRemoteAddress) give "127.0.0.1"; the rest of node's
 * spelling (inet_ntop, RFC 5952) is Go's already, but for a zone, dropped.
 */
export function nodeRemoteAddress(address: string | undefined): string {
  if (address === undefined) return '';
  // A link-local client's zone ("fe80::1%eth0"): Go's IP text has none, and an interface name may
  // hold "," (another X-Forwarded-For entry).
  const zone = address.indexOf('%');
  const ip = zone === -1 ? address : address.slice(0, zone);
  return ip.startsWith('::ffff:') && ip.includes('.', 7) ? ip.slice(7) : ip;
}
