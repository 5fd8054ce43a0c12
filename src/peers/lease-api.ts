// The few coordination.k8s.io/v1 Lease calls mvproxy makes, over mvproxy's own client to the local
// apiserver (the same keep-alive pool as discovery; with --local-apiserver-token-file it carries
// mvproxy's bearer token). A small hand-written client rather than @kubernetes/client-node: five
// verbs on one resource, and its 1.x informer API does not expose the resourceVersion/410
// handling this needs to be explicit about.

import type { OwnDispatcher } from '../api/own-requests';
import { ErrorCode } from '../api/errors';

export const LEASE_API_VERSION = 'coordination.k8s.io/v1';

export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [k: string]: unknown;
  };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
    [k: string]: unknown;
  };
}

export interface LeaseList {
  items: Lease[];
  resourceVersion: string;
}

export type WatchEvent = { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: Lease } | { type: 'BOOKMARK'; object: Lease } | { type: 'ERROR'; object: { code?: number; reason?: string; message?: string } };

/** An apiserver answer other than success: the HTTP status and the Status reason. */
export class APIStatusError extends Error {
  readonly code = ErrorCode.MVP_ERR_LEASE_API;
  constructor(readonly status: number, readonly reason: string, message: string) {
    super(message);
  }
}

/** The watch's resourceVersion is older than the apiserver keeps (410 Expired/Gone): relist. */
export class WatchExpiredError extends Error {
  readonly code = ErrorCode.MVP_ERR_WATCH_EXPIRED;
}

export const isStatus = (e: unknown, status: number): boolean => e instanceof APIStatusError && e.status === status;

/** kube MicroTime: RFC 3339 with microseconds, UTC. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface LeaseAPIOptions {
  namespace: string;
  /** Per-call bound (headers and body) for everything but watches. */
  timeoutMs: number;
  userAgent: string;
}

export class LeaseAPI {
  private readonly base: string;
  constructor(private readonly d: OwnDispatcher, private readonly o: LeaseAPIOptions) {
    this.base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(o.namespace)}/leases`;
  }

  get namespace(): string {
    return this.o.namespace;
  }

  get(name: string, signal?: AbortSignal): Promise<Lease> {
    return this.call('GET', `${this.base}/${encodeURIComponent(name)}`, undefined, signal) as Promise<Lease>;
  }

  create(lease: Lease, signal?: AbortSignal): Promise<Lease> {
    return this.call('POST', this.base, lease, signal) as Promise<Lease>;
  }

  /** PUT with metadata.resourceVersion as the optimistic-concurrency precondition (409 Conflict when stale). */
  update(lease: Lease, signal?: AbortSignal): Promise<Lease> {
    return this.call('PUT', `${this.base}/${encodeURIComponent(lease.metadata.name)}`, lease, signal) as Promise<Lease>;
  }

  /** DELETE, only if the lease is still at `resourceVersion` (409 Conflict otherwise) when given. */
  async delete(name: string, resourceVersion: string | undefined, signal?: AbortSignal): Promise<void> {
    const body = { kind: 'DeleteOptions', apiVersion: 'v1', ...(resourceVersion ? { preconditions: { resourceVersion } } : {}) };
    await this.call('DELETE', `${this.base}/${encodeURIComponent(name)}`, body, signal);
  }

  async list(labelSelector: string, signal?: AbortSignal): Promise<LeaseList> {
    const r = (await this.call('GET', `${this.base}?labelSelector=${encodeURIComponent(labelSelector)}`, undefined, signal)) as { items?: Lease[]; metadata?: { resourceVersion?: string } };
    return { items: r.items ?? [], resourceVersion: String(r.metadata?.resourceVersion ?? '') };
  }

  /**
   * Watches from `resourceVersion` until the server ends the stream (resolves) or it fails
   * (rejects: APIStatusError for an HTTP error, WatchExpiredError for 410, transport errors as they
   * come). Each event is handed to `onEvent` in order.
   */
  async watch(labelSelector: string, resourceVersion: string, timeoutSeconds: number, signal: AbortSignal, onEvent: (e: WatchEvent) => void): Promise<void> {
    const q = new URLSearchParams({ watch: 'true', labelSelector, resourceVersion, allowWatchBookmarks: 'true', timeoutSeconds: String(timeoutSeconds) });
    const res = await this.d.request({
      path: `${this.base}?${q}`,
      method: 'GET',
      headers: { accept: 'application/json', 'user-agent': this.o.userAgent },
      headersTimeout: this.o.timeoutMs,
      // The server ends the watch after timeoutSeconds; a silent connection past that is dead.
      bodyTimeout: (timeoutSeconds + 30) * 1000,
      signal,
    });
    if (res.statusCode !== 200) {
      const text = await res.body.text().catch(() => '');
      throw statusError(res.statusCode, text, 'watch');
    }
    let buf = '';
    for await (const chunk of res.body) {
      buf += (chunk as Buffer).toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const e = JSON.parse(line) as WatchEvent;
        if (e.type === 'ERROR') {
          res.body.destroy();
          if (e.object.code === 410) throw new WatchExpiredError(`watch of leases from resourceVersion ${resourceVersion}: ${e.object.message ?? 'expired'}`);
          throw new APIStatusError(e.object.code ?? 500, e.object.reason ?? 'InternalError', `watch of leases: ${e.object.message ?? 'error event'}`);
        }
        onEvent(e);
      }
    }
  }

  private async call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body: unknown, signal: AbortSignal | undefined): Promise<unknown> {
    const res = await this.d.request({
      path,
      method,
      headers: { accept: 'application/json', 'user-agent': this.o.userAgent, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      headersTimeout: this.o.timeoutMs,
      bodyTimeout: this.o.timeoutMs,
      ...(signal ? { signal } : {}),
    });
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode > 299) throw statusError(res.statusCode, text, `${method} ${path.split('?')[0]}`);
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new APIStatusError(res.statusCode, 'InternalError', `${method} ${path}: the answer is not JSON: ${(e as Error).message}`);
    }
  }
}

function statusError(status: number, text: string, what: string): Error {
  let reason = 'Unknown';
  let message = text.slice(0, 200);
  try {
    const s = JSON.parse(text) as { reason?: string; message?: string };
    reason = s.reason ?? reason;
    message = s.message ?? message;
  } catch {
    // not a Status
  }
  if (status === 410) return new WatchExpiredError(`${what}: ${message}`);
  return new APIStatusError(status, reason, `${what}: ${status} ${reason}: ${message}`);
}
