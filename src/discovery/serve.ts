// Discovery answers mvproxy gives itself, from the current snapshot (docs/kubernetes-mvp.md §5.1,
// §5.2, §9; issue 4).
//
// `/apis` (or `/apis/`), GET/HEAD, aggregated v2 Accept (JSON or protobuf):
//   - no profile, or any profile but `nopeer`: the peer-aggregated document (counts
//     aggregator_discovery_peer_aggregated_cache_hits_total: every reply comes from the snapshot;
//     misses are counted by whoever builds a snapshot);
//   - `profile=nopeer`: the local document (counts aggregator_discovery_nopeer_requests_total).
//   Headers exactly as `ServeHTTPWithETag`: Content-Type `<media type>;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`
//   (profile not echoed), ETag, `Vary: Accept`, `Cache-Control: public`; If-None-Match equal to
//   the ETag (exact string comparison, no list/weak/`*` handling) → 304 with no body.
//   Names are written as Go's net/http canonicalises them (`Etag`); HTTP header names are
//   case-insensitive.
// Everything else passes through to the local apiserver (returns false): `/api` and `/api/…`,
// v2beta1, YAML, 406, methods other than GET/HEAD, no snapshot yet.
//
// With legacyFix (beyond in-tree; upstream never peer-aggregates legacy discovery):
//   - `/apis` with a legacy JSON Accept → the merged APIGroupList;
//   - `/apis/<g>` and `/apis/<g>/<v>` for a group/version only peers serve → the derived APIGroup
//     / APIResourceList, as `application/json` with kube-apiserver's default
//     `Cache-Control: no-cache, private`. These endpoints negotiate with the default endpoint
//     restrictions (a clause with as/g/v never matches there); only JSON is answered here.

import { discoveryETag } from './etag';
import type { Exchange } from '../listener/exchange';
import type { Metrics } from '../telemetry/metrics';
import { negotiateDiscovery, type DiscoveryNegotiation } from '../request/accept';
import type { ServedDiscovery, EncodedDiscovery } from '../aggregation/served-discovery';

export interface ServeDiscoveryOptions {
  /** Answer legacy discovery from the merged data (off: legacy discovery always passes through). */
  legacyFix: boolean;
}

/** Merged documents served at least once (aggregator_discovery_peer_aggregated_cache_{hits,misses}_total). */
const servedMerged = new WeakSet<EncodedDiscovery>();

export type DiscoveryMetrics = Pick<Metrics, 'peerAggregatedCacheHits' | 'peerAggregatedCacheMisses' | 'nopeerRequests'>;

export const AGGREGATED_V2_JSON_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
export const AGGREGATED_V2_PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const LEGACY_CONTENT_TYPE = 'application/json';
const LEGACY_CACHE_CONTROL = 'no-cache, private';

/**
 * What mvproxy answers a discovery request with from the snapshot, decided without writing or
 * counting anything (the handler first asks the apiserver whether the client may read it:
 * proxy/discovery-access.ts); undefined when the request passes through to the local apiserver.
 */
export type DiscoveryAnswer =
  | { readonly kind: 'aggregated'; readonly doc: EncodedDiscovery; readonly encoding: 'json' | 'protobuf'; readonly nopeer: boolean }
  | { readonly kind: 'legacy'; readonly body: Buffer };

export function discoveryAnswer(ex: Pick<Exchange, 'method' | 'path'>, snapshot: ServedDiscovery | undefined, accept: string | undefined, opts: ServeDiscoveryOptions): DiscoveryAnswer | undefined {
  if (snapshot === undefined) return undefined;
  const method = ex.method;
  if (method !== 'GET' && method !== 'HEAD') return undefined;
  const path = ex.path;
  if (!path.startsWith('/apis')) return undefined;

  if (path === '/apis' || path === '/apis/') {
    const n = negotiateDiscovery(accept);
    if (n === null) return undefined; // 406: the apiserver writes it
    if (n.kind === 'aggregated' && n.version === 'v2beta1' && opts.legacyFix) {
      // kubectl 1.27–1.29 ask for v2beta1 with application/json as the fallback. apiservers from
      // 1.33 on answer that with the legacy APIGroupList (v2beta1 removed, docs/kubernetes-mvp.md §5.1); so does
      // mvproxy, with peer-only groups listed, then answers their /apis/<g>/<v> below.
      const legacy = negotiateLegacyEndpoint(accept);
      if (legacy === null || legacy.encoding !== 'json') return undefined;
      return { kind: 'legacy', body: snapshot.legacy.apis };
    }
    if (n.kind === 'aggregated') {
      if (n.version !== 'v2' || n.encoding === 'yaml') return undefined;
      const nopeer = n.profile === 'nopeer';
      return { kind: 'aggregated', doc: nopeer ? snapshot.local : snapshot.merged, encoding: n.encoding, nopeer };
    }
    if (!opts.legacyFix || n.encoding !== 'json') return undefined;
    return { kind: 'legacy', body: snapshot.legacy.apis };
  }

  if (!opts.legacyFix || path.charCodeAt(5) !== 0x2f /* '/' */) return undefined;
  const rest = path.slice(6);
  const slash = rest.indexOf('/');
  let body: Buffer | undefined;
  if (slash === -1) {
    if (rest === '') return undefined;
    body = snapshot.legacy.groups.get(rest);
  } else {
    if (slash === 0 || slash === rest.length - 1 || rest.indexOf('/', slash + 1) !== -1) return undefined;
    body = snapshot.legacy.resourceLists.get(rest);
  }
  if (body === undefined) return undefined;
  const n = negotiateLegacyEndpoint(accept);
  if (n === null || n.encoding !== 'json') return undefined;
  return { kind: 'legacy', body };
}

/** Writes an answer discoveryAnswer gave, and counts it. */
export function writeDiscoveryAnswer(ex: Exchange, a: DiscoveryAnswer, ifNoneMatch: string | undefined, metrics: DiscoveryMetrics): void {
  if (a.kind === 'legacy') return writeLegacy(ex, a.body, ifNoneMatch);
  if (a.nopeer) metrics.nopeerRequests.inc();
  else if (servedMerged.has(a.doc)) metrics.peerAggregatedCacheHits.inc();
  else {
    // As upstream's fetchFromCache: each request is a hit or a miss, the first request after a
    // rebuild the miss (upstream builds then, mvproxy built before; the count is the same).
    servedMerged.add(a.doc);
    metrics.peerAggregatedCacheMisses.inc();
  }
  writeAggregated(ex, a.doc, a.encoding, ifNoneMatch);
}

/**
 * Answers the request from the snapshot when mvproxy answers it itself, and returns true; returns
 * false (having written nothing) when the request must pass through to the local apiserver.
 */
export function serveDiscovery(
  ex: Exchange,
  snapshot: ServedDiscovery | undefined,
  accept: string | undefined,
  ifNoneMatch: string | undefined,
  metrics: DiscoveryMetrics,
  opts: ServeDiscoveryOptions,
): boolean {
  const a = discoveryAnswer(ex, snapshot, accept, opts);
  if (a === undefined) return false;
  writeDiscoveryAnswer(ex, a, ifNoneMatch, metrics);
  return true;
}

/**
 * Negotiation at `/apis/<g>` and `/apis/<g>/<v>` (DefaultEndpointRestrictions: a clause whose
 * params ask for a conversion — as, g or v — never matches). negotiateDiscovery decides for the
 * discovery root, where such clauses win; so they are removed first (goautoneg splits clauses on
 * ',' and params on ';', and keeps a param only with exactly one '='). Nothing left → null (406).
 */
export function negotiateLegacyEndpoint(accept: string | undefined): DiscoveryNegotiation | null {
  if (accept === undefined || accept.indexOf(';') === -1) return negotiateDiscovery(accept);
  const kept: string[] = [];
  for (const clause of accept.split(',')) {
    if (!asksConversion(clause)) kept.push(clause);
  }
  if (kept.length === 0) return null;
  if (kept.every((c) => c.trim() === '')) return null;
  const n = negotiateDiscovery(kept.join(','));
  return n !== null && n.kind === 'legacy' ? n : null;
}

function asksConversion(clause: string): boolean {
  const params = clause.split(';');
  for (let i = 1; i < params.length; i++) {
    const p = params[i]!;
    const eq = p.indexOf('=');
    if (eq === -1 || p.indexOf('=', eq + 1) !== -1) continue;
    const key = p.slice(0, eq).trim();
    if (key === 'as' || key === 'g' || key === 'v') return true;
  }
  return false;
}

function writeAggregated(ex: Exchange, doc: EncodedDiscovery, encoding: 'json' | 'protobuf', ifNoneMatch: string | undefined): void {
  const res = ex.res;
  if (ifNoneMatch !== undefined && ifNoneMatch === doc.etag) {
    res.writeHead(304, { headers: ['Etag', doc.etag, 'Vary', 'Accept', 'Cache-Control', 'public'], contentLength: -1, contentType: '' }, false);
    res.end();
    return;
  }
  const body = encoding === 'protobuf' ? doc.protobuf : doc.json;
  const contentType = encoding === 'protobuf' ? AGGREGATED_V2_PROTOBUF_CONTENT_TYPE : AGGREGATED_V2_JSON_CONTENT_TYPE;
  res.writeHead(
    200,
    {
      headers: ['Content-Type', contentType, 'Etag', doc.etag, 'Vary', 'Accept', 'Cache-Control', 'public'],
      contentLength: body.length,
      contentType,
    },
    false,
  );
  if (ex.method !== 'HEAD') writeBody(ex, body);
  else res.end();
}

/**
 * The part of a document written in one turn of the event loop. A peer's /api and /apis may each
 * be up to 16 MiB, so the merged document up to ~32 MiB: written at once, the node front end copied
 * all of it in one turn (ClientResponse.write keeps nothing past the call), 17 ms, and kept the copy
 * until a slow client read it.
 */
export const WRITE_SLICE_BYTES = 1024 * 1024;

/** Writes body and ends the response: a slice per turn, the next once the front end took the last (onDrain when it was full). */
function writeBody(ex: Exchange, body: Buffer): void {
  const res = ex.res;
  if (body.length <= WRITE_SLICE_BYTES) {
    res.write(body);
    res.end();
    return;
  }
  let at = 0;
  const next = (): void => {
    res.onDrain = null;
    if (ex.clientClosed) return;
    const end = Math.min(body.length, at + WRITE_SLICE_BYTES);
    const more = res.write(body.subarray(at, end));
    at = end;
    if (at === body.length) res.end();
    else if (more) setImmediate(next);
    else res.onDrain = next;
  };
  next();
}

/** ETags of the legacy bodies mvproxy answers, computed on first use (each body is built once per snapshot). */
const legacyETags = new WeakMap<Buffer, string>();

/**
 * A legacy document mvproxy answers (APIGroupList, APIGroup, APIResourceList), with an ETag and
 * 304 as the aggregated documents have (kube-apiserver sends none on these; clients that echo one
 * get a 304 instead of the body, which changes only with the snapshot).
 */
function writeLegacy(ex: Exchange, body: Buffer, ifNoneMatch: string | undefined): void {
  const res = ex.res;
  let etag = legacyETags.get(body);
  if (etag === undefined) {
    etag = discoveryETag(body);
    legacyETags.set(body, etag);
  }
  if (ifNoneMatch !== undefined && ifNoneMatch === etag) {
    res.writeHead(304, { headers: ['Etag', etag, 'Cache-Control', LEGACY_CACHE_CONTROL], contentLength: -1, contentType: '' }, false);
    res.end();
    return;
  }
  res.writeHead(
    200,
    { headers: ['Content-Type', LEGACY_CONTENT_TYPE, 'Cache-Control', LEGACY_CACHE_CONTROL, 'Etag', etag], contentLength: body.length, contentType: LEGACY_CONTENT_TYPE },
    false,
  );
  if (ex.method !== 'HEAD') writeBody(ex, body);
  else res.end();
}
