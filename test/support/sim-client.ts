// Small undici helpers for talking to simulated apiservers in tests (plain requests and watch streams).
import { Agent, request } from 'undici';

export const simAgent = new Agent({ keepAliveTimeout: 10_000, connections: 32 });

export interface SimResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): any;
}

export const ACCEPT_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
export const ACCEPT_V2_NOPEER = `${ACCEPT_V2};profile=nopeer`;
export const ACCEPT_V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';
/** kubectl 1.30–1.33 discovery Accept. */
export const ACCEPT_KUBECTL_133 = `${ACCEPT_V2},${ACCEPT_V2BETA1},application/json`;
/** kubectl 1.27–1.29 discovery Accept. */
export const ACCEPT_KUBECTL_127 = `${ACCEPT_V2BETA1},application/json`;
/** kubectl get. */
export const ACCEPT_TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

export async function simRequest(
  method: string,
  url: string,
  opts: { headers?: Record<string, string | string[]>; body?: unknown; contentType?: string } = {},
): Promise<SimResponse> {
  const headers: Record<string, string | string[]> = { ...(opts.headers ?? {}) };
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= opts.contentType ?? 'application/json';
  }
  const r = await request(url, {
    method: method as 'GET',
    headers,
    ...(body !== undefined ? { body } : {}),
    dispatcher: simAgent,
  });
  const text = await r.body.text();
  return {
    status: r.statusCode,
    headers: r.headers as Record<string, string | string[] | undefined>,
    text,
    json: () => JSON.parse(text),
  };
}

export const simGet = (url: string, headers?: Record<string, string | string[]>): Promise<SimResponse> =>
  simRequest('GET', url, headers ? { headers } : {});

export interface WatchEventLine {
  type: string;
  object: any;
}

export interface OpenWatch {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  events: WatchEventLine[];
  /** Resolves when at least n events arrived (rejects after timeoutMs). */
  waitFor(n: number, timeoutMs?: number): Promise<WatchEventLine[]>;
  /** Resolves when the server ends the stream cleanly; rejects on a stream error. */
  ended: Promise<void>;
  abort(): void;
}

export async function openWatch(url: string, headers: Record<string, string> = {}): Promise<OpenWatch> {
  const ac = new AbortController();
  const r = await request(url, { headers, signal: ac.signal, dispatcher: simAgent });
  const events: WatchEventLine[] = [];
  let buf = '';
  let waiters: (() => void)[] = [];
  let finished = false;
  const notify = (): void => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };
  const ended = new Promise<void>((resolve, reject) => {
    r.body.setEncoding('utf8');
    r.body.on('data', (chunk: string) => {
      buf += chunk;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) events.push(JSON.parse(line) as WatchEventLine);
      }
      notify();
    });
    r.body.on('end', () => {
      finished = true;
      notify();
      resolve();
    });
    r.body.on('error', (e: Error) => {
      finished = true;
      notify();
      reject(e);
    });
  });
  ended.catch(() => undefined);
  return {
    status: r.statusCode,
    headers: r.headers as Record<string, string | string[] | undefined>,
    events,
    ended,
    abort: () => ac.abort(),
    waitFor(n: number, timeoutMs = 5000): Promise<WatchEventLine[]> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`watch: wanted ${n} events, got ${events.length}: ${JSON.stringify(events.map((e) => e.type))}`)), timeoutMs);
        const check = (): void => {
          if (events.length >= n) {
            clearTimeout(timer);
            resolve(events.slice());
          } else if (finished) {
            clearTimeout(timer);
            reject(new Error(`watch ended after ${events.length} events, wanted ${n}`));
          } else {
            waiters.push(check);
          }
        };
        check();
      });
    },
  };
}
