// Go's net.SplitHostPort acceptance (go/src/net/ipsock.go): Kubernetes checks a peer address with
// it (docs/kubernetes-mvp.md §2 step 8). Used for --static-peers, the peers file, Lease addresses,
// --metrics-bind-address and the route table.

/** host:port or [v6]:port, the port 0..65535 in decimal; a bare IPv6 address needs brackets. */
export function isHostPort(address: string): boolean {
  if (!address) return false;
  if (address.charCodeAt(0) === 0x5b /* [ */) {
    const close = address.indexOf(']');
    return close > 1 && address.charCodeAt(close + 1) === 0x3a /* : */ && isPort(address.slice(close + 2));
  }
  const colon = address.lastIndexOf(':');
  if (colon <= 0 || address.indexOf(':') !== colon) return false; // bare IPv6 needs brackets
  return isPort(address.slice(colon + 1));
}

/** Host and port of an address isHostPort accepts ([v6] loses its brackets), as Go's net.SplitHostPort. */
export function splitHostPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon);
  return { host: host.charCodeAt(0) === 0x5b /* [ */ ? host.slice(1, -1) : host, port: Number(address.slice(colon + 1)) };
}

function isPort(s: string): boolean {
  if (s.length === 0 || s.length > 5) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return Number(s) <= 65535;
}
