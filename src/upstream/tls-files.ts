// The TLS material of a connection mvproxy makes to an upstream: the local apiserver, a peer's peer
// listener (mutual TLS). One type for both clients (undici's pools and the relay's own, h1/origin.ts).

import type { TLSPolicy } from '../config/tls-policy';

export interface TLSFiles {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  servername?: string;
  /** --tls-min-version / --tls-cipher-suites, as node:tls options. */
  policy?: TLSPolicy;
}
