// Fetching one server's aggregated discovery (`/api` and `/apis`), as Kubernetes' peer discovery
// does (peer_discovery.go fetchNewDiscoveryFor, spec §4.3–4.4): Accept asks for the local view
// (profile=nopeer) first, then v2, then legacy JSON; a reply that is not aggregated v2 is an
// error (Kubernetes' decoder knows only apidiscovery v2). If-None-Match makes an unchanged
// document cost a 304.

import type { Dispatcher } from 'undici';
import type { APIGroupDiscoveryList } from './types';
import { PeerProxiedHeader } from '../routing/decide';

/** client-go AcceptV2NoPeer + AcceptV2 + AcceptV1 (discovery_client.go), the string in-tree peers are asked with. */
export const DISCOVERY_ACCEPT_NOPEER =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

export interface FetchedDocument {
  readonly path: '/api' | '/apis';
  readonly etag: string;
  readonly list: APIGroupDiscoveryList;
  /** The body exactly as received (for serving the local view byte for byte). */
  readonly raw: Buffer;
}

export class DiscoveryFetchError extends Error {
  constructor(
    readonly code: 'MVP_ERR_DISCOVERY_STATUS' | 'MVP_ERR_DISCOVERY_NOT_AGGREGATED' | 'MVP_ERR_DISCOVERY_DECODE' | 'MVP_ERR_DISCOVERY_TRANSPORT',
    message: string,
    /** The HTTP status the server answered (absent: no answer). */
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface FetchOptions {
  /** Sent through a peer listener: mark the one hop so the peer serves it from its own apiserver. */
  peerHop: boolean;
  /** Identity headers of mvproxy's own peer requests (ownPeerIdentityHeaders); only with peerHop. */
  identityHeaders?: Record<string, string>;
  /** The previous result for this path, for If-None-Match. */
  previous?: FetchedDocument;
  timeoutMs: number;
}

export async function fetchDiscoveryDocument(upstream: Dispatcher, path: '/api' | '/apis', o: FetchOptions): Promise<FetchedDocument> {
  const headers: Record<string, string> = { accept: DISCOVERY_ACCEPT_NOPEER, 'user-agent': 'mvproxy-discovery' };
  if (o.peerHop) Object.assign(headers, o.identityHeaders, { [PeerProxiedHeader]: 'true' });
  if (o.previous?.etag) headers['if-none-match'] = o.previous.etag;
  let res: Dispatcher.ResponseData;
  try {
    res = await upstream.request({ path, method: 'GET', headers, headersTimeout: o.timeoutMs, bodyTimeout: o.timeoutMs });
  } catch (e) {
    const err = e as Error & { code?: string };
    throw new DiscoveryFetchError('MVP_ERR_DISCOVERY_TRANSPORT', `GET ${path}: ${err.code ? err.code + ': ' : ''}${err.message}`);
  }
  if (res.statusCode === 304 && o.previous) {
    await res.body.dump();
    return o.previous;
  }
  const raw = Buffer.from(await res.body.arrayBuffer());
  if (res.statusCode !== 200) throw new DiscoveryFetchError('MVP_ERR_DISCOVERY_STATUS', `GET ${path}: status ${res.statusCode}`, res.statusCode);
  const ct = String(res.headers['content-type'] ?? '');
  if (!ct.includes('as=APIGroupDiscoveryList') || !ct.includes('g=apidiscovery.k8s.io')) {
    throw new DiscoveryFetchError('MVP_ERR_DISCOVERY_NOT_AGGREGATED', `GET ${path}: the server did not answer with aggregated discovery (content-type ${JSON.stringify(ct)})`);
  }
  let list: APIGroupDiscoveryList;
  try {
    list = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw new DiscoveryFetchError('MVP_ERR_DISCOVERY_DECODE', `GET ${path}: ${(e as Error).message}`);
  }
  if (list?.kind !== 'APIGroupDiscoveryList' || !Array.isArray(list.items)) {
    throw new DiscoveryFetchError('MVP_ERR_DISCOVERY_DECODE', `GET ${path}: not an APIGroupDiscoveryList`);
  }
  return { path, etag: String(res.headers.etag ?? ''), list, raw };
}
