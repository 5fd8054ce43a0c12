// Who may read the documents mvproxy answers from its snapshot (/apis, legacy /apis/<g>[/<v>] of
// peer-only groups, the /openapi/v3 index). kube-apiserver serves them behind its authentication
// and authorization filters: an anonymous client gets 403 (RBAC's system:discovery is bound to
// system:authenticated only), a bad token 401. mvproxy answered them to anyone: the cluster's API
// surface, CRDs included, to a client the apiserver would refuse (issue 38's adversarial probe).
//
// The apiserver decides, not mvproxy: the client's own request goes to it first (handler.ts
// withAccess; ProxiedRequest.authorizeThen), and only an answer past its filters (accessGranted)
// lets mvproxy serve its document; any other answer (401, 403, APF's 429, a 5xx) is the client's.
// A request granted (its method, target and credentials) is remembered for --discovery-access-ttl (10 s), so a client polling
// discovery costs the apiserver one request per TTL, not one per poll; a revoked binding is seen
// within it (kube-apiserver's own webhook caches keep an allow for 5 minutes,
// --authorization-webhook-cache-authorized-ttl, and a token for 2).

import { createHash } from 'node:crypto';
import type { Exchange } from '../listener/exchange';

/** Credentials remembered at once (32-byte digests): past it the oldest is forgotten, and asked again. */
export const ACCESS_ENTRIES_MAX = 4096;

/**
 * The apiserver's answer came from past its authentication and authorization filters: the document
 * (2xx, a 304), or a path it does not serve (404: a group only peers serve), or a media type it
 * will not write (406). 401 and 403 are the filters'; 429 is priority and fairness, which runs
 * before authorization.
 */
export function accessGranted(status: number): boolean {
  return (status >= 200 && status < 400) || status === 404 || status === 406;
}

export class DiscoveryAccess {
  /** digest → when it was granted (performance.now() ms); insertion order is age. */
  private readonly granted = new Map<string, number>();

  /** @param ttlMs --discovery-access-ttl; 0: nothing is remembered. */
  constructor(
    private readonly ttlMs: number,
    private readonly max = ACCESS_ENTRIES_MAX,
  ) {}

  /**
   * The request as the apiserver authorizes it: its method and target (each non-resource URL is
   * authorized on its own, and HEAD as the verb "head", which RBAC's system:discovery does not
   * grant: a grant for GET /openapi/v3 let a HEAD, or /apis, through; helper-5's attack), and what
   * makes its user there: the certificate user mvproxy verified (sent as front-proxy headers) and
   * every header kube-apiserver authenticates or impersonates from (Authorization, a WebSocket's
   * bearer sub-protocol, Impersonate-*). Digested: no token is kept.
   */
  key(ex: Pick<Exchange, 'method' | 'target' | 'headers' | 'identity'>): string {
    const h = createHash('sha256');
    h.update(`${ex.method} ${ex.target}\0`, 'latin1');
    if (ex.identity !== undefined) h.update(JSON.stringify(ex.identity));
    h.update('\0');
    const headers = ex.headers;
    for (let i = 0; i < headers.length; i += 2) {
      const n = headers[i]!;
      if (n === 'authorization' || n === 'sec-websocket-protocol' || n.startsWith('impersonate-')) h.update(`${n}\0${headers[i + 1]!}\0`, 'latin1');
    }
    return h.digest('base64');
  }

  /** Granted within the TTL. */
  allows(key: string, now: number): boolean {
    const at = this.granted.get(key);
    if (at === undefined) return false;
    if (now - at < this.ttlMs) return true;
    this.granted.delete(key);
    return false;
  }

  remember(key: string, now: number): void {
    if (this.ttlMs <= 0) return;
    this.granted.delete(key);
    if (this.granted.size >= this.max) this.granted.delete(this.granted.keys().next().value!);
    this.granted.set(key, now);
  }

  get size(): number {
    return this.granted.size;
  }
}
