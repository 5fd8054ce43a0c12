// mvproxy's own shortage of file descriptors (issue 33 §3). Every HTTP/1.1 watch holds a client
// socket and, to an HTTP/1.1 upstream, an upstream socket: at 10,000 watches under a 20,000 limit
// the process ran out, and each part that opens a connection read EMFILE its own way (the request
// got the generic 503, the local apiserver was marked down, a peer failed its probe). One place says
// what that failure looks like and what limit it met, for the request path and the probes alike:
// it is mvproxy's shortage, not the upstream's, so no probe gives a verdict on it.
//
// The limit: Node.js raises the soft RLIMIT_NOFILE to the hard one at start (node.cc, as Go's
// runtime does since 1.19 for kube-apiserver), so what a process gets is its hard limit; it is read
// from /proc/self/limits once at start (daemon/index.ts logs it) and again at each scrape (metrics.ts):
// at EMFILE nothing can be opened, so the message uses the value read before.

import { readFileSync } from 'node:fs';

export interface OpenFilesLimit {
  /** RLIMIT_NOFILE's soft (enforced) and hard values; Infinity for "unlimited". */
  readonly soft: number;
  readonly hard: number;
}

/** The "Max open files" line of a /proc/<pid>/limits text; undefined when it is not there. */
export function parseOpenFilesLimit(limits: string): OpenFilesLimit | undefined {
  const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)\s/m.exec(limits);
  if (m === null) return undefined;
  const n = (s: string) => (s === 'unlimited' ? Infinity : Number(s));
  return { soft: n(m[1]!), hard: n(m[2]!) };
}

let last: OpenFilesLimit | undefined;

/** This process's limit read now (and remembered); the last one read when it cannot be read (no fd left, no /proc). */
export function readOpenFilesLimit(): OpenFilesLimit | undefined {
  try {
    last = parseOpenFilesLimit(readFileSync('/proc/self/limits', 'latin1')) ?? last;
  } catch {
    // EMFILE itself, or no /proc: the value read before.
  }
  return last;
}

/** A failure for want of a file descriptor: this process's (EMFILE) or the system's (ENFILE), also as an undici error's cause. */
export function isOutOfFileDescriptors(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e !== undefined && e !== null && depth < 4; e = e.cause as typeof e, depth++) {
    if (e.code === 'EMFILE' || e.code === 'ENFILE') return true;
  }
  return false;
}

/** The Status message of MVP_ERR_FD_LIMIT (api/errors.ts), naming the limit as last read. */
export function fdLimitMessage(err: unknown): string {
  const l = last;
  const which = l === undefined ? '' : `: soft ${l.soft}, hard ${l.hard}`;
  const sys = (err as { code?: unknown } | undefined)?.code === 'ENFILE' ? "the system's open files limit (fs.file-max) is reached" : `mvproxy's open files limit (RLIMIT_NOFILE${which}) is reached`;
  return `no connection to the apiserver could be opened: ${sys}; requests already open are not affected`;
}

/** Each part reports at most this often (a burst of requests at the limit would log one line each). */
const REPORT_EVERY_MS = 10_000;
const lastReport = new Map<string, number>();

/** Whether `part`'s shortage (the request path, a probe) should be logged now: once per REPORT_EVERY_MS each. */
export function reportFdShortage(part: 'request' | 'peer-probe' | 'local-probe', now = Date.now()): boolean {
  if (now - (lastReport.get(part) ?? -Infinity) < REPORT_EVERY_MS) return false;
  lastReport.set(part, now);
  return true;
}
