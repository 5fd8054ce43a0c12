// --local-apiserver-token-file: the bearer token of mvproxy's OWN requests to the local apiserver
// (identity Leases, discovery, CRD and APIService lists). Clients' requests are forwarded with
// their own credentials and never get it: the daemon hands a token-carrying dispatcher only to the
// discovery pipeline and the lease controller, and the plain one to the request path.
//
// The file is re-read when it changes (projected service-account tokens rotate about hourly), with
// the same watcher as certificates; an empty or unreadable new file keeps the last good token.

import type { OwnDispatcher, OwnRequestOptions } from '../api/own-requests';
import { WatchedFiles } from './filewatch';
import { CERT_RESYNC_MS } from './certs';
import type { Logger } from '../telemetry/log';

export class BearerTokenFile {
  private token: string | undefined;
  private readonly watched: WatchedFiles;

  constructor(file: string, private readonly o: { log: Logger; resyncMs?: number }) {
    this.watched = new WatchedFiles([file], {
      resyncMs: o.resyncMs ?? CERT_RESYNC_MS,
      log: o.log,
      onChange: (c) => {
        const v = c.get(file);
        const t = v instanceof Buffer ? v.toString('utf8').trim() : '';
        if (!t) {
          this.o.log.error('not loading the changed token file; keeping the last good token', v instanceof Error ? v : new Error('the file is empty'), { file });
          return;
        }
        if (this.token !== undefined && t !== this.token) this.o.log.info(2, 'Loaded a new bearer token', { file });
        this.token = t;
      },
    });
  }

  /** Reads the file (the first token) and watches it. */
  start(): void {
    this.watched.start();
  }

  stop(): void {
    this.watched.stop();
  }

  get current(): string | undefined {
    return this.token;
  }
}

/** `upstream` with `Authorization: Bearer <token>` on every request that has none. */
export function withBearerToken(upstream: OwnDispatcher, token: () => string | undefined): OwnDispatcher {
  return {
    request(o: OwnRequestOptions) {
      const t = token();
      return upstream.request(t ? { ...o, headers: addAuthorization(o.headers, `Bearer ${t}`) } : o);
    },
    close: () => upstream.close(),
    destroy: () => upstream.destroy(),
  };
}

function addAuthorization(h: OwnRequestOptions['headers'], value: string): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {};
  let has = false;
  for (const [k, v] of Object.entries(h ?? {})) {
    if (v === undefined) continue;
    if (k.toLowerCase() === 'authorization') has = true;
    out[k] = v;
  }
  if (!has) out.authorization = value;
  return out;
}
