// Health endpoints in Kubernetes' format (kubernetes/apiserver pkg/server/healthz/healthz.go;
// docs/operating.md §2): /livez, /readyz and the deprecated /healthz, each a list of named checks.
//
//   GET /readyz                     200 "ok"                          (text/plain; charset=utf-8, nosniff)
//   GET /readyz?verbose             200 "[+]ping ok\n…readyz check passed\n"
//   failing                         500 "[+]ping ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n"
//                                   (always verbose; the reasons go to the log at V(2), never the response)
//   GET /readyz?exclude=a&exclude=b "[+]a excluded: ok" in place of a's line; an exclude naming no check adds
//                                   `warn: some health checks cannot be excluded: no matches for "x"`
//   GET /readyz/<name>              200 "ok" or 500 "internal server error: <err>\n"; unknown name → 404
//
// Which checks each endpoint runs:
//   /livez   checks added as 'livez' or 'both'
//   /readyz  checks added as 'readyz' or 'both'
//   /healthz the /livez checks (kube-apiserver's healthz set is a subset of livez: it never holds
//            readiness-only checks such as `shutdown`, so /healthz passes during a shutdown delay)
// Checks run in the order they were added.
//
// Informational checks (mvproxy's addition, e.g. per-peer reachability) are listed but never fail
// their endpoint: one dead peer must not pull this node out of its load balancer (docs/operating.md §2).
// In the verbose and failure listings they read
//   [+]peer-node-b ok
//   [+]peer-node-b failed (informational, does not fail readyz): reason withheld
// Their line starts with "[+]" because the check counts as passed for the endpoint: scripts that
// look for "[-]" keep finding only real failures. /readyz/peer-node-b reports the check itself:
// 200 "ok" or 500 "internal server error: <err>".

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../telemetry/log';

export type HealthKind = 'livez' | 'readyz' | 'both';
/** The endpoints, one list for the type, the cheap test and the path pattern. */
const ENDPOINTS = ['livez', 'readyz', 'healthz'] as const;
export type HealthEndpoint = (typeof ENDPOINTS)[number];
/** /<endpoint> or /<endpoint>/<name>. */
const ENDPOINT_PATH = new RegExp(`^/(${ENDPOINTS.join('|')})(?:/([^/]+))?$`);
/** null/undefined = healthy; an Error = failing (its message is logged, and shown only on /<endpoint>/<name>). */
export type HealthCheck = () => Error | null | undefined;

interface Entry {
  name: string;
  check: HealthCheck;
  informational: boolean;
}

export interface HealthResponse {
  status: 200 | 404 | 500;
  headers: Record<string, string>;
  body: string;
}

const HEADERS = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' };
/** Whether the path starts with /<endpoint> (no allocation: this runs for every GET). */
function namesAnEndpoint(path: string): boolean {
  if (path.charCodeAt(0) !== 0x2f) return false;
  for (let i = 0; i < ENDPOINTS.length; i++) if (path.startsWith(ENDPOINTS[i]!, 1)) return true; // indexed: for-of allocated an iterator here
  return false;
}

const NAME = /^[A-Za-z0-9][-A-Za-z0-9_.]*$/;

export class HealthChecks {
  private readonly livez: Entry[] = [];
  private readonly readyz: Entry[] = [];

  constructor(private readonly opts: { log?: Logger } = {}) {}

  /**
   * Adds a check to /livez, /readyz or both ('both' = a /healthz check in kube's terms). Names are
   * unique per endpoint (an Error otherwise) and must be URL-path safe: [A-Za-z0-9][-A-Za-z0-9_.]*.
   */
  add(kind: HealthKind, name: string, check: HealthCheck): this {
    return this.insert(kind, name, check, false);
  }

  /** Adds a check that is listed but never fails its endpoint (see the top of this file). */
  addInformational(kind: HealthKind, name: string, check: HealthCheck): this {
    return this.insert(kind, name, check, true);
  }

  /** Removes a check (e.g. the check of a peer that left); true when it was there. */
  remove(kind: HealthKind, name: string): boolean {
    let removed = false;
    for (const list of this.lists(kind)) {
      const i = list.findIndex((e) => e.name === name);
      if (i >= 0) {
        list.splice(i, 1);
        removed = true;
      }
    }
    return removed;
  }

  has(kind: Exclude<HealthKind, 'both'>, name: string): boolean {
    return this.lists(kind)[0].some((e) => e.name === name);
  }

  /** Names of the checks an endpoint runs, in order. */
  names(endpoint: HealthEndpoint): string[] {
    return this.entries(endpoint).map((e) => e.name);
  }

  /**
   * The response for a request path (no query) and its query string, or undefined when the path
   * is none of /livez, /readyz, /healthz and their /<name> children.
   */
  evaluate(path: string, query: string | URLSearchParams = ''): HealthResponse | undefined {
    // Every GET asks (handler.ts): the usual path leaves before the regular expression runs.
    if (!namesAnEndpoint(path)) return undefined;
    const m = ENDPOINT_PATH.exec(path);
    if (!m) return undefined;
    const endpoint = m[1] as HealthEndpoint;
    const entries = this.entries(endpoint);
    if (m[2] !== undefined) {
      let name: string;
      try {
        name = decodeURIComponent(m[2]);
      } catch {
        name = m[2];
      }
      const e = entries.find((x) => x.name === name);
      if (!e) return { status: 404, headers: { ...HEADERS }, body: '404 page not found\n' };
      const err = run(e);
      return err ? { status: 500, headers: { ...HEADERS }, body: `internal server error: ${err.message}\n` } : { status: 200, headers: { ...HEADERS }, body: 'ok' };
    }
    const q = typeof query === 'string' ? new URLSearchParams(query.startsWith('?') ? query.slice(1) : query) : query;
    const excluded = new Set(q.getAll('exclude').map((s) => s.trim()));
    let out = '';
    const failed: string[] = [];
    const reasons: Record<string, string> = {};
    for (const e of entries) {
      if (excluded.delete(e.name)) {
        out += `[+]${e.name} excluded: ok\n`;
        continue;
      }
      const err = run(e);
      if (!err) out += `[+]${e.name} ok\n`;
      else if (e.informational) out += `[+]${e.name} failed (informational, does not fail ${endpoint}): reason withheld\n`;
      else {
        out += `[-]${e.name} failed: reason withheld\n`;
        failed.push(e.name);
        reasons[e.name] = err.message;
      }
    }
    if (excluded.size > 0) {
      const names = [...excluded].sort().map((n) => JSON.stringify(n)).join(',');
      out += `warn: some health checks cannot be excluded: no matches for ${names}\n`;
    }
    if (failed.length > 0) {
      this.opts.log?.info(2, `${endpoint} check failed`, { checks: failed.join(','), reasons });
      return { status: 500, headers: { ...HEADERS }, body: `${out}${endpoint} check failed\n` };
    }
    if (!q.has('verbose')) return { status: 200, headers: { ...HEADERS }, body: 'ok' };
    return { status: 200, headers: { ...HEADERS }, body: `${out}${endpoint} check passed\n` };
  }

  /** A node:http handler: answers the health paths and returns true, or returns false for any other path. */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const r = this.evaluate(q === -1 ? url : url.slice(0, q), q === -1 ? '' : url.slice(q + 1));
    if (!r) return false;
    res.writeHead(r.status, { ...r.headers, 'content-length': String(Buffer.byteLength(r.body)) });
    res.end(req.method === 'HEAD' ? undefined : r.body);
    return true;
  }

  private insert(kind: HealthKind, name: string, check: HealthCheck, informational: boolean): this {
    if (!NAME.test(name)) throw new Error(`health check name ${JSON.stringify(name)} is not URL-path safe`);
    const lists = this.lists(kind);
    for (const list of lists) if (list.some((e) => e.name === name)) throw new Error(`health check "${name}" is already registered for ${list === this.livez ? 'livez' : 'readyz'}`);
    for (const list of lists) list.push({ name, check, informational });
    return this;
  }

  private lists(kind: HealthKind): Entry[][] {
    return kind === 'livez' ? [this.livez] : kind === 'readyz' ? [this.readyz] : [this.livez, this.readyz];
  }

  private entries(endpoint: HealthEndpoint): Entry[] {
    return endpoint === 'readyz' ? this.readyz : this.livez;
  }
}

/** Runs a check; a throwing check fails with what it threw. */
function run(e: Entry): Error | undefined {
  try {
    return e.check() ?? undefined;
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** The ping check every endpoint has in kube-apiserver (always healthy). */
export const ping: HealthCheck = () => null;
