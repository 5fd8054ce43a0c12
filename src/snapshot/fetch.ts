// Fetching one server's aggregated discovery (`/api` and `/apis`), as Kubernetes' peer discovery
// does (peer_discovery.go fetchNewDiscoveryFor, docs/kubernetes-mvp.md §4.3–4.4): Accept asks for the local view
// (profile=nopeer) first, then v2, then legacy JSON; a reply that is not aggregated v2 is an
// error (Kubernetes' decoder knows only apidiscovery v2). If-None-Match makes an unchanged
// document cost a 304. The body is read up to MAX_DISCOVERY_BODY_BYTES (the request is aborted as
// soon as it passes the cap) and decoded by aggregation/decode.ts as Kubernetes' decoder would.
// Fetching is the snapshot publisher's job, not the discovery serving stage's.

import type { OwnDispatcher, OwnResponse } from '../api/own-requests';
import { ErrorCode } from '../api/errors';
import { PeerProxiedHeader } from '../api/headers';
import { decodeDiscoveryBody, MAX_DISCOVERY_BODY_BYTES, routingView, type RoutingView } from '../aggregation/decode';
import { DiscoveryFetchError } from '../aggregation/errors';
import { copyToArrayBufferSliced } from '../aggregation/merger';

/** client-go AcceptV2NoPeer + AcceptV2 + AcceptV1 (discovery_client.go), the string in-tree peers are asked with. */
export const DISCOVERY_ACCEPT_NOPEER =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

export interface FetchedDocument {
  readonly path: '/api' | '/apis';
  readonly etag: string;
  /**
   * What routing reads of the document (aggregation/decode.ts routingView): only that stays on the
   * main thread; the documents are merged and encoded from `raw` in the merge worker.
   */
  readonly routes: RoutingView;
  /**
   * The body exactly as received (for serving the local view byte for byte); re-encoded JSON when
   * decoding had to normalise it (protobuf, nulls, a defaulted apiVersion/kind: aggregation/decode.ts).
   */
  readonly raw: Buffer;
  /** SHA-256 of `raw` (base64) when the decoder gave it (aggregation/merger.ts discoveryMergeInput). */
  readonly digest?: string;
}

export interface FetchOptions {
  /** Sent through a peer listener: mark the one hop so the peer serves it from its own apiserver. */
  peerHop: boolean;
  /** Identity headers of mvproxy's own peer requests (ownPeerIdentityHeaders); only with peerHop. */
  identityHeaders?: Record<string, string>;
  /** The previous result for this path, for If-None-Match. */
  previous?: FetchedDocument;
  timeoutMs: number;
  /** Body size limit (default MAX_DISCOVERY_BODY_BYTES). */
  maxBytes?: number;
  /**
   * Decodes the body off the main thread (the publisher: the merge worker, aggregation/merger.ts
   * decode), which may keep `body` (it is not read again here); default: aggregation/decode.ts here.
   */
  decode?: (body: Buffer, what: string) => Promise<{ routes: RoutingView; raw: Buffer; digest?: string }>;
}

export async function fetchDiscoveryDocument(upstream: OwnDispatcher, path: '/api' | '/apis', o: FetchOptions): Promise<FetchedDocument> {
  const headers: Record<string, string> = { accept: DISCOVERY_ACCEPT_NOPEER, 'user-agent': 'mvproxy-discovery' };
  if (o.peerHop) Object.assign(headers, o.identityHeaders, { [PeerProxiedHeader]: 'true' });
  if (o.previous?.etag) headers['if-none-match'] = o.previous.etag;
  // One deadline for the head and the whole body: the body timeout alone is reset by every byte, and
  // a server trickling one byte per timeoutMs held the fetch, and with it the refresh of every view
  // (the publisher awaits all fetches together), for as long as it liked (helper 12).
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(Object.assign(new Error(`no whole answer within ${o.timeoutMs} ms`), { code: 'ETIMEDOUT' })), o.timeoutMs);
  try {
    return await fetchWithin(upstream, path, headers, deadline.signal, o);
  } finally {
    clearTimeout(timer);
  }
}

async function fetchWithin(upstream: OwnDispatcher, path: '/api' | '/apis', headers: Record<string, string>, signal: AbortSignal, o: FetchOptions): Promise<FetchedDocument> {
  let res: OwnResponse;
  try {
    res = await upstream.request({ path, method: 'GET', headers, headersTimeout: o.timeoutMs, bodyTimeout: o.timeoutMs, signal });
  } catch (e) {
    const err = e as Error & { code?: string };
    throw new DiscoveryFetchError(ErrorCode.MVP_ERR_DISCOVERY_TRANSPORT, `GET ${path}: ${err.code ? err.code + ': ' : ''}${err.message}`);
  }
  if (res.statusCode === 304 && o.previous) {
    await res.body.dump();
    return o.previous;
  }
  if (res.statusCode !== 200) {
    await res.body.dump().catch(() => undefined); // at most own-client.ts's DUMP_LIMIT_BYTES (128 KiB), then the connection is closed
    throw new DiscoveryFetchError(ErrorCode.MVP_ERR_DISCOVERY_STATUS, `GET ${path}: status ${res.statusCode}`, res.statusCode);
  }
  const ct = String(res.headers['content-type'] ?? '');
  if (!ct.includes('as=APIGroupDiscoveryList') || !ct.includes('g=apidiscovery.k8s.io')) {
    await res.body.dump().catch(() => undefined);
    throw new DiscoveryFetchError(ErrorCode.MVP_ERR_DISCOVERY_NOT_AGGREGATED, `GET ${path}: the server did not answer with aggregated discovery (content-type ${JSON.stringify(ct)})`);
  }
  const body = await readCapped(res, path, o.maxBytes ?? MAX_DISCOVERY_BODY_BYTES);
  const { routes, raw, digest } = o.decode ? await o.decode(body, `GET ${path}`) : inlineDecode(body, `GET ${path}`, o.maxBytes ?? MAX_DISCOVERY_BODY_BYTES);
  return { path, etag: String(res.headers.etag ?? ''), routes, raw, ...(digest === undefined ? {} : { digest }) };
}

function inlineDecode(body: Buffer, what: string, maxBytes: number): { routes: RoutingView; raw: Buffer; digest?: string } {
  const d = decodeDiscoveryBody(body, what, maxBytes);
  return { routes: routingView(d.list), raw: d.raw };
}

/**
 * The response body, read with a running count: past `max` bytes (or a Content-Length over it)
 * the body is destroyed at once, which aborts the request and closes its connection, and the fetch
 * fails with MVP_ERR_DISCOVERY_TOO_LARGE. An error while reading is a TRANSPORT failure. The
 * chunks are put together a slice per turn of the event loop (Buffer.concat of 16 MiB held it
 * ~9 ms); the result is a Buffer over an ArrayBuffer of its own, which the decoder may take over.
 */
async function readCapped(res: OwnResponse, path: string, max: number): Promise<Buffer> {
  const tooLarge = (n: string) => new DiscoveryFetchError(ErrorCode.MVP_ERR_DISCOVERY_TOO_LARGE, `GET ${path}: body of ${n} bytes, more than the ${max}-byte limit`);
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) {
    res.body.destroy();
    throw tooLarge(String(declared));
  }
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      n += chunk.length;
      if (n > max) {
        res.body.destroy();
        throw tooLarge(`at least ${n}`);
      }
      chunks.push(chunk);
    }
  } catch (e) {
    if (e instanceof DiscoveryFetchError) throw e;
    const err = e as Error & { code?: string };
    throw new DiscoveryFetchError(ErrorCode.MVP_ERR_DISCOVERY_TRANSPORT, `GET ${path}: reading the body: ${err.code ? err.code + ': ' : ''}${err.message}`);
  }
  return Buffer.from(await copyToArrayBufferSliced(chunks));
}
