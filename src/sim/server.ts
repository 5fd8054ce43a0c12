// The HTTP(S) server of a simulated kube-apiserver: request intake (identity echo, recording,
// body reading), routing of non-resource paths (discovery, health, version) and resource paths.
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { buildCatalog, servedKeys, versionDoc, type SimKubernetesVersion } from './catalog';
import { header, send, sendError, type Ctx, type RecordedRequest, type RequestIdentity, type SimState } from './context';
import { buildDiscovery, legacyApiBody, type AggregatedBody } from './discovery';
import { handleResource, replyError, resolveResource } from './handlers';
import { acceptsPlainJson, negotiateDiscovery } from './negotiate';
import { buildOpenApi } from './openapi';
import { errors, NOT_FOUND_BODY, statusBody } from './status';
import { ObjectStore } from './store';
import { handleExecUpgrade } from './exec';

export interface SimApiserverOptions {
  /** Server name, sent as response header X-Sim-Server. */
  name: string;
  /** Picks the fixture: v1.33-0b1dcaba or v1.37.0-dev-6732d913 aggregated_v2.json. */
  kubernetesVersion: SimKubernetesVersion;
  /** kube-apiserver --runtime-config entries, e.g. 'batch/v1=false', 'api/alpha=false', 'apps/v1/deployments=false'. */
  runtimeConfig?: string[];
  /** Shared store: several sims share one, as real apiservers share etcd. */
  store?: ObjectStore;
  host?: string;
  port?: number;
  tls?: { cert: string | Buffer; key: string | Buffer };
  /**
   * Answer aggregated discovery asked as apidiscovery.k8s.io/v2beta1 (AggregatedDiscoveryRemoveBetaType
   * off). Default false: that gate is on by default from 1.33 (locked on from 1.35), so a default
   * 1.33 or 1.37 server gives v2beta1-only clients the legacy documents. Ignored for v1.37.
   */
  serveV2beta1?: boolean;
  /** Reject namespaced creates in namespaces that do not exist (404), like NamespaceLifecycle. Default false. */
  strictNamespaces?: boolean;
  /** Cap of `requests` (default 10,000; the oldest are dropped). 0 disables recording. */
  recordLimit?: number;
  /**
   * Gzip a watch-list (sendInitialEvents=true&allowWatchBookmarks=true) whose request sends
   * Accept-Encoding: gzip, as kube-apiserver does with WatchListCompression (beta, on by default
   * from 1.37; Go clients send that header by default). Default: on for v1.37, off for v1.33.
   */
  watchListCompression?: boolean;
  /** Keep the body bytes of each watch as written (`streamBodies`, by Audit-Id; the last 64). Default false. */
  recordStreams?: boolean;
}

export interface SimApiserver {
  /** http(s)://127.0.0.1:<port> */
  readonly url: string;
  readonly port: number;
  readonly name: string;
  readonly kubernetesVersion: SimKubernetesVersion;
  readonly store: ObjectStore;
  /** Requests as received (bounded; oldest dropped). Clear with `requests.length = 0`. */
  readonly requests: RecordedRequest[];
  /** With recordStreams: the body bytes each watch wrote, as written, by the request's Audit-Id. */
  readonly streamBodies: ReadonlyMap<string, readonly Buffer[]>;
  /** Quoted ETags of the aggregated /api and /apis documents. */
  readonly etags: { readonly api: string; readonly apis: string };
  /** 'group/version/resource' keys of every served resource; core as '/v1/<resource>'. */
  served(): Set<string>;
  /** TCP connections open to this server now (upgraded ones included). */
  openConnections(): number;
  /** Watches and followed logs being served now. */
  openStreams(): number;
  close(): Promise<void>;
}

interface Intake {
  url: string;
  headers: Record<string, string | string[]>;
  identity: RequestIdentity;
  baseHeaders: string[];
}

const EMPTY_IDENTITY = '{"authorization":null,"remoteUser":null,"remoteGroups":[],"peerProxied":[],"forwardedFor":null}';
const EMPTY_QUERY = new URLSearchParams();
const MAX_BODY = 3 * 1024 * 1024;

function headerSafe(json: string): string {
  // Header values must be latin1 without control characters: escape everything outside printable ASCII.
  return /[^\x20-\x7e]/.test(json) ? json.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : json;
}

function normalisePath(p: string): string {
  let end = p.length;
  while (end > 1 && p.charCodeAt(end - 1) === 47 /* / */) end--;
  return end === p.length ? p : p.slice(0, end);
}

export async function startSimApiserver(o: SimApiserverOptions): Promise<SimApiserver> {
  if (!o || !o.name) throw new Error('sim: name is required');
  const catalog = buildCatalog(o.kubernetesVersion, o.runtimeConfig);
  const store = o.store ?? new ObjectStore();
  const recordLimit = Math.max(0, o.recordLimit ?? 10_000);
  const requests: RecordedRequest[] = [];
  const sim: SimState = {
    name: o.name,
    catalog,
    store,
    docs: buildDiscovery(catalog, '127.0.0.1:0'),
    openapi: buildOpenApi(catalog),
    versionBody: Buffer.from(JSON.stringify(versionDoc(o.kubernetesVersion), null, 2)),
    serveV2beta1: o.kubernetesVersion === 'v1.33' && o.serveV2beta1 === true,
    strictNamespaces: o.strictNamespaces === true,
    streams: new Set(),
    closing: false,
    watchListCompression: o.watchListCompression ?? o.kubernetesVersion === 'v1.37',
    streamBodies: o.recordStreams === true ? new Map() : null,
  };
  const nameHeader = headerSafe(o.name);

  const intake = (req: IncomingMessage): Intake => {
    const raw = req.rawHeaders;
    const headers: Record<string, string | string[]> = {};
    let authorization: string | null = null;
    let remoteUser: string | null = null;
    let remoteGroups: string[] | undefined;
    let peerProxied: string[] | undefined;
    let forwardedFor: string[] | undefined;
    let auditId: string | undefined;
    for (let i = 0; i < raw.length; i += 2) {
      const k = raw[i]!.toLowerCase();
      const v = raw[i + 1]!;
      const prev = headers[k];
      if (prev === undefined) headers[k] = v;
      else if (Array.isArray(prev)) prev.push(v);
      else headers[k] = [prev, v];
      switch (k) {
        case 'authorization': authorization ??= v; break;
        case 'x-remote-user': remoteUser ??= v; break;
        case 'x-remote-group': (remoteGroups ??= []).push(v); break;
        case 'x-kubernetes-peer-proxied': (peerProxied ??= []).push(v); break;
        case 'x-forwarded-for': (forwardedFor ??= []).push(v); break;
        case 'audit-id': auditId ??= v; break;
      }
    }
    const identity: RequestIdentity = {
      authorization,
      remoteUser,
      remoteGroups: remoteGroups ?? [],
      peerProxied: peerProxied ?? [],
      forwardedFor: forwardedFor ? forwardedFor.join(', ') : null,
    };
    const identityJson =
      authorization === null && remoteUser === null && !remoteGroups && !peerProxied && !forwardedFor
        ? EMPTY_IDENTITY
        : headerSafe(JSON.stringify(identity));
    const url = req.url ?? '/';
    if (recordLimit > 0) {
      if (requests.length >= recordLimit) requests.splice(0, Math.max(1, recordLimit >> 4));
      requests.push({ method: req.method ?? 'GET', url, headers, remoteAddress: req.socket.remoteAddress, time: Date.now() });
    }
    const baseHeaders = ['X-Sim-Server', nameHeader, 'X-Sim-Request-Identity', identityJson, 'Audit-Id', headerSafe(auditId ?? randomUUID())];
    return { url, headers, identity, baseHeaders };
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const { url, headers, identity, baseHeaders } = intake(req);
    const q = url.indexOf('?');
    const ctx: Ctx = {
      sim,
      req,
      res,
      method: req.method ?? 'GET',
      path: normalisePath(q < 0 ? url : url.slice(0, q)),
      query: q < 0 || q === url.length - 1 ? EMPTY_QUERY : new URLSearchParams(url.slice(q + 1)),
      identity,
      headers,
      baseHeaders,
      body: undefined,
    };
    const hasBody = headers['content-length'] !== undefined ? headers['content-length'] !== '0' : headers['transfer-encoding'] !== undefined;
    if (!hasBody) {
      dispatch(ctx);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      if (tooLarge) return;
      size += c.length;
      if (size > MAX_BODY) {
        tooLarge = true;
        chunks.length = 0;
        res.shouldKeepAlive = false;
        sendError(ctx, errors.tooLarge());
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (tooLarge) return;
      ctx.body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      dispatch(ctx);
    });
    req.on('error', () => res.destroy());
  };

  const server = o.tls ? https.createServer({ cert: o.tls.cert, key: o.tls.key, keepAlive: true, noDelay: true }, onRequest) : http.createServer({ keepAlive: true, noDelay: true }, onRequest);
  // exec and attach over WebSocket are simulated (sim/exec.ts); other upgrades (SPDY, port-forward,
  // proxy) get a well-formed Status instead of a dropped connection.
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, upgradeHead: Buffer) => {
    if (handleExecUpgrade(req, socket, upgradeHead)) return;
    const { baseHeaders } = intake(req);
    const body = statusBody(400, 'BadRequest', `the simulated apiserver ${o.name} does not support connection upgrades (exec, attach, port-forward, proxy)`);
    let head = 'HTTP/1.1 400 Bad Request\r\n';
    for (let i = 0; i < baseHeaders.length; i += 2) head += `${baseHeaders[i]}: ${baseHeaders[i + 1]}\r\n`;
    head += `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
    socket.on('error', () => socket.destroy());
    socket.end(head + body);
  });
  let connections = 0;
  server.on('connection', (socket: Duplex) => {
    connections++;
    socket.once('close', () => connections--);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0;
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });

  const host = o.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = host.includes(':') ? `[${host}]` : host;
  // Only the legacy /api document depends on the address; nothing is served before this line runs
  // (the listen callback's continuation runs before any connection is handled).
  sim.docs.legacyApi = legacyApiBody(`${hostForUrl}:${port}`);

  let closed: Promise<void> | undefined;
  return {
    url: `${o.tls ? 'https' : 'http'}://${hostForUrl}:${port}`,
    port,
    name: o.name,
    kubernetesVersion: o.kubernetesVersion,
    store,
    requests,
    streamBodies: sim.streamBodies ?? new Map(),
    etags: { api: sim.docs.apiV2.etag, apis: sim.docs.apisV2.etag },
    served: () => servedKeys(catalog),
    openConnections: () => connections,
    openStreams: () => sim.streams.size,
    close(): Promise<void> {
      closed ??= new Promise<void>((resolve) => {
        sim.closing = true;
        server.close(() => resolve());
        for (const stop of [...sim.streams]) stop();
        server.closeIdleConnections();
        const idle = setInterval(() => server.closeIdleConnections(), 50);
        idle.unref();
        const hard = setTimeout(() => server.closeAllConnections(), 2000);
        hard.unref();
        server.once('close', () => {
          clearInterval(idle);
          clearTimeout(hard);
        });
      });
      return closed;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// routing

function notFound(ctx: Ctx): void {
  send(ctx, 404, 'application/json', NOT_FOUND_BODY);
}

function getOnly(ctx: Ctx): boolean {
  if (ctx.method === 'GET' || ctx.method === 'HEAD') return true;
  sendError(ctx, errors.methodNotAllowed());
  return false;
}

function plainJson(ctx: Ctx, body: Buffer): void {
  if (!getOnly(ctx)) return;
  if (!acceptsPlainJson(header(ctx, 'accept'))) return sendError(ctx, errors.notAcceptable());
  send(ctx, 200, 'application/json', body);
}

function aggregatedReply(ctx: Ctx, doc: AggregatedBody): void {
  const extra = ['ETag', doc.etag, 'Vary', 'Accept', 'Cache-Control', 'public'];
  if (header(ctx, 'if-none-match') === doc.etag) {
    const h = ctx.baseHeaders.concat(extra);
    if (ctx.sim.closing) h.push('Connection', 'close');
    ctx.res.writeHead(304, h);
    ctx.res.end();
    return;
  }
  send(ctx, 200, doc.contentType, doc.body, extra);
}

function discoveryRoot(ctx: Ctx, which: 'api' | 'apis'): void {
  if (!getOnly(ctx)) return;
  // Like Go's Header.Get, only the first Accept header counts.
  const choice = negotiateDiscovery(header(ctx, 'accept'), ctx.sim.serveV2beta1);
  const d = ctx.sim.docs;
  switch (choice) {
    case 'v2': return aggregatedReply(ctx, which === 'api' ? d.apiV2 : d.apisV2);
    case 'v2beta1': return aggregatedReply(ctx, which === 'api' ? d.apiV2beta1 : d.apisV2beta1);
    case 'legacy': return send(ctx, 200, 'application/json', which === 'api' ? d.legacyApi : d.legacyApis);
    default: return sendError(ctx, errors.notAcceptable());
  }
}

const HEALTH = new Set(['/healthz', '/livez', '/readyz']);

function health(ctx: Ctx, path: string): void {
  if (!getOnly(ctx)) return;
  const base = path.slice(0, path.indexOf('/', 1) > 0 ? path.indexOf('/', 1) : path.length);
  if (ctx.query.has('verbose')) {
    const checks = ['ping', 'log', 'etcd', 'poststarthook/start-apiserver-admission-initializer'];
    const body = checks.map((c) => `[+]${c} ok`).join('\n') + `\n${base.slice(1)} check passed\n`;
    return send(ctx, 200, 'text/plain; charset=utf-8', body);
  }
  send(ctx, 200, 'text/plain; charset=utf-8', 'ok');
}

function openapi(ctx: Ctx, path: string): void {
  if (path === '/openapi/v3') return plainJson(ctx, ctx.sim.openapi.root);
  if (path.startsWith('/openapi/v3/')) {
    const doc = ctx.sim.openapi.groupVersions.get(path.slice('/openapi/v3/'.length));
    if (doc) {
      if (!getOnly(ctx)) return;
      const cache = ctx.query.has('hash') ? 'public, immutable' : 'no-cache, private';
      if (header(ctx, 'if-none-match') === doc.etag) {
        ctx.res.writeHead(304, ctx.baseHeaders.concat('ETag', doc.etag, 'Cache-Control', cache));
        ctx.res.end();
        return;
      }
      return send(ctx, 200, 'application/json', doc.body, ['ETag', doc.etag, 'Cache-Control', cache]);
    }
  }
  // /openapi/v2 (protobuf and JSON) is not simulated.
  notFound(ctx);
}

function dispatch(ctx: Ctx): void {
  try {
    route(ctx);
  } catch (e) {
    replyError(ctx, e);
  }
}

function route(ctx: Ctx): void {
  const path = ctx.path;
  const sim = ctx.sim;
  switch (path) {
    case '/apis': return discoveryRoot(ctx, 'apis');
    case '/api': return discoveryRoot(ctx, 'api');
    case '/version': return plainJson(ctx, sim.versionBody);
    case '/': return plainJson(ctx, sim.docs.rootPaths);
    case '/healthz':
    case '/livez':
    case '/readyz':
      return health(ctx, path);
  }
  const parts = path.slice(1).split('/');
  if (HEALTH.has(`/${parts[0]}`)) return health(ctx, path);
  if (parts[0] === 'openapi') return openapi(ctx, path);
  if (parts.some((p) => p.includes('%'))) {
    for (let i = 0; i < parts.length; i++) {
      try {
        parts[i] = decodeURIComponent(parts[i]!);
      } catch {
        return notFound(ctx);
      }
    }
  }
  if (parts[0] === 'api') {
    if (parts.length === 2) {
      const doc = sim.docs.resourceLists.get(parts[1]!);
      return doc && parts[1] === 'v1' ? plainJson(ctx, doc) : notFound(ctx);
    }
    if (parts.length >= 3) {
      const rr = resolveResource(ctx, '', parts[1]!, parts.slice(2));
      return rr ? handleResource(ctx, rr) : notFound(ctx);
    }
  } else if (parts[0] === 'apis' && parts.length >= 2) {
    const group = parts[1]!;
    if (parts.length === 2) {
      const doc = sim.docs.groups.get(group);
      return doc ? plainJson(ctx, doc) : notFound(ctx);
    }
    if (parts.length === 3) {
      const doc = group ? sim.docs.resourceLists.get(`${group}/${parts[2]!}`) : undefined;
      return doc ? plainJson(ctx, doc) : notFound(ctx);
    }
    if (!group) return notFound(ctx);
    const rr = resolveResource(ctx, group, parts[2]!, parts.slice(3));
    return rr ? handleResource(ctx, rr) : notFound(ctx);
  }
  notFound(ctx);
}
