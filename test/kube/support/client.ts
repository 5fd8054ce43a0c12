// A small Kubernetes REST client for assertions (status codes, Status bodies, watch events) against
// an apiserver or an mvproxy of the real plane, as a certificate user, a bearer token or nobody.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { UserCert } from './pki';
import { httpsRequest, type Reply } from './processes';

export type Cred = { cert: UserCert } | { token: string } | { anonymous: true };

/** authentication.k8s.io/v1 UserInfo, as a SelfSubjectReview (kubectl auth whoami) reports it. */
export interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface WatchEvent {
  type: string;
  object: { kind?: string; metadata?: { name?: string; resourceVersion?: string }; code?: number };
}

export interface Watch {
  events: WatchEvent[];
  status: Promise<number>;
  /** Resolves when an event matching pred has arrived (at most timeoutMs). */
  until(pred: (e: WatchEvent) => boolean, timeoutMs?: number): Promise<WatchEvent>;
  close(): void;
}

export class KubeClient {
  private readonly ca: string;
  constructor(
    readonly base: string,
    caFile: string,
    private readonly cred: Cred,
  ) {
    this.ca = readFileSync(caFile, 'utf8');
  }

  private tls() {
    return 'cert' in this.cred ? { ca: this.ca, cert: this.cred.cert.cert, key: this.cred.cert.key } : { ca: this.ca };
  }

  private auth(h: Record<string, string>): Record<string, string> {
    return 'token' in this.cred ? { authorization: `Bearer ${this.cred.token}`, ...h } : h;
  }

  request(method: string, path: string, o: { body?: unknown; contentType?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
    const body = o.body === undefined ? undefined : typeof o.body === 'string' || Buffer.isBuffer(o.body) ? o.body : JSON.stringify(o.body);
    const headers = this.auth({ accept: 'application/json', ...(body !== undefined ? { 'content-type': o.contentType ?? 'application/json' } : {}), ...o.headers });
    return httpsRequest(this.base + path, this.tls(), { method, headers, body });
  }

  get(path: string, headers: Record<string, string> = {}) {
    return this.request('GET', path, { headers });
  }

  /** The parsed JSON of a 2xx answer; throws with the answer otherwise. */
  async json<T = Record<string, unknown>>(method: string, path: string, o: Parameters<KubeClient['request']>[2] = {}): Promise<T> {
    const r = await this.request(method, path, o);
    if (r.status < 200 || r.status > 299) throw new Error(`${method} ${this.base}${path}: ${r.status} ${r.body.slice(0, 500)}`);
    return JSON.parse(r.body) as T;
  }

  watch(path: string): Watch {
    const events: WatchEvent[] = [];
    const waiters: { pred: (e: WatchEvent) => boolean; resolve: (e: WatchEvent) => void }[] = [];
    let req!: ReturnType<typeof https.get>;
    const status = new Promise<number>((resolve) => {
      req = https.get(this.base + path, { ...this.tls(), headers: this.auth({ accept: 'application/json' }), agent: false }, (res) => {
        resolve(res.statusCode ?? 0);
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          buf += d;
          for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
            const line = buf.slice(0, i).trim();
            buf = buf.slice(i + 1);
            if (!line) continue;
            const e = JSON.parse(line) as WatchEvent;
            events.push(e);
            for (const w of [...waiters]) if (w.pred(e)) {
              waiters.splice(waiters.indexOf(w), 1);
              w.resolve(e);
            }
          }
        });
        res.on('error', () => {});
      });
      req.on('error', () => resolve(0));
    });
    return {
      events,
      status,
      until(pred, timeoutMs = 15_000) {
        const seen = events.find(pred);
        if (seen) return Promise.resolve(seen);
        return new Promise((resolve, reject) => {
          const t = setTimeout(() => reject(new Error(`no matching watch event in ${timeoutMs} ms on ${path}; got ${JSON.stringify(events.map((e) => [e.type, e.object.metadata?.name]))}`)), timeoutMs);
          waiters.push({ pred, resolve: (e) => (clearTimeout(t), resolve(e)) });
        });
      },
      close: () => req.destroy(),
    };
  }
}
