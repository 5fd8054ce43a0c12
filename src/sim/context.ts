// Per-request context and response writers shared by the sim's stages.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Catalog } from './catalog';
import type { DiscoveryDocuments } from './discovery';
import type { OpenApiDocuments } from './openapi';
import type { ApiError } from './status';
import type { ObjectStore } from './store';

/** What the sim received, echoed in X-Sim-Request-Identity. */
export interface RequestIdentity {
  authorization: string | null;
  remoteUser: string | null;
  remoteGroups: string[];
  /** Every value of x-kubernetes-peer-proxied, in order. */
  peerProxied: string[];
  forwardedFor: string | null;
}

export interface RecordedRequest {
  method: string;
  url: string;
  /** Lower-cased names; a repeated header gives an array of its values in order. */
  headers: Record<string, string | string[]>;
  remoteAddress: string | undefined;
  /** Date.now() when the request arrived. */
  time: number;
}

/** Something long-running (watch, log follow) that close() must end. */
export type StreamStopper = () => void;

export interface SimState {
  readonly name: string;
  readonly catalog: Catalog;
  readonly store: ObjectStore;
  readonly docs: DiscoveryDocuments;
  readonly openapi: OpenApiDocuments;
  readonly versionBody: Buffer;
  readonly serveV2beta1: boolean;
  readonly strictNamespaces: boolean;
  readonly streams: Set<StreamStopper>;
  closing: boolean;
  /** Gzip watch-list streams asked with Accept-Encoding: gzip, as kube-apiserver 1.37 does (WatchListCompression, sim/watch.ts). */
  readonly watchListCompression: boolean;
  /** The body bytes of each watch as written, by the request's Audit-Id (SimApiserverOptions.recordStreams), or null. */
  readonly streamBodies: Map<string, Buffer[]> | null;
}

export interface Ctx {
  readonly sim: SimState;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly method: string;
  /** Path without query and without trailing slashes ('/' stays '/'). */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly identity: RequestIdentity;
  readonly headers: Record<string, string | string[]>;
  /** X-Sim-Server, X-Sim-Request-Identity, Audit-Id (flat [name, value, …]). */
  readonly baseHeaders: string[];
  body: Buffer | undefined;
}

export function header(ctx: Ctx, name: string): string | undefined {
  const v = ctx.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const NO_CACHE = 'no-cache, private';

export function send(ctx: Ctx, status: number, contentType: string, body: Buffer | string, extra?: string[]): void {
  const res = ctx.res;
  if (res.headersSent || res.destroyed) return;
  const len = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  const h = ctx.baseHeaders.concat('Content-Type', contentType, 'Content-Length', String(len));
  if (extra) for (const x of extra) h.push(x);
  else h.push('Cache-Control', NO_CACHE);
  if (ctx.sim.closing) h.push('Connection', 'close');
  res.writeHead(status, h);
  res.end(body);
}

export function sendJson(ctx: Ctx, status: number, body: Buffer | string, contentType = 'application/json'): void {
  send(ctx, status, contentType, body);
}

export function sendError(ctx: Ctx, err: ApiError): void {
  send(ctx, err.code, 'application/json', err.body());
}

/** Starts a streamed (chunked) response; `extra`: more header lines (flat [name, value, …]). */
export function startStream(ctx: Ctx, contentType: string, extra: readonly string[] = []): void {
  const h = ctx.baseHeaders.concat('Content-Type', contentType, 'Cache-Control', NO_CACHE, ...extra);
  ctx.res.writeHead(200, h);
  ctx.res.flushHeaders();
}
