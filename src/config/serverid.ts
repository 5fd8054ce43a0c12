// The default --server-id: derived from the host name, like kube-apiserver's identity Lease name
// ("apiserver-" and a hash of the host name), so a node keeps its ID across restarts.

import { createHash } from 'node:crypto';
import { hostname } from 'node:os';

/** Kubernetes-style server ID derived from the host name: mvproxy-<base32 of a SHA-256 prefix>. */
export function defaultServerID(host = hostname()): string {
  const enc = (s: string) => Buffer.concat([Buffer.from([(s.length >> 8) & 0xff, s.length & 0xff]), Buffer.from(s)]);
  const sum = createHash('sha256').update(Buffer.concat([enc(host), enc('mvproxy')])).digest().subarray(0, 16);
  return 'mvproxy-' + base32(sum).toLowerCase();
}

function base32(b: Buffer): string {
  const A = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of b) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += A[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += A[(value << (5 - bits)) & 31];
  return out;
}
