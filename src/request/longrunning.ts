// Long-running requests: no timeout on their body, headers flushed at once, kept out of latency
// histograms. Kubernetes' own check (kube-apiserver server.go BuildGenericConfig):
// LongRunningRequestCheck(verbs {watch, proxy}, subresources {attach, exec, proxy, log, portforward}).

import type { RequestInfo } from './requestinfo';

export function isLongRunning(info: RequestInfo): boolean {
  if (!info.isResourceRequest) return false;
  const v = info.verb;
  if (v === 'watch' || v === 'proxy') return true;
  const s = info.subresource;
  return s === 'log' || s === 'exec' || s === 'attach' || s === 'portforward' || s === 'proxy';
}

/**
 * How long a long-running request waits for its response head: --request-timeout, or the
 * request's own timeoutSeconds when that is shorter (an apiserver sends a watch's head at once;
 * one that has not after that long is not going to, and the client would otherwise hear nothing
 * until its own deadline, or never). Only the first `timeoutSeconds` counts, as Go's
 * url.Values.Get; a value that is not a positive integer is ignored (the apiserver refuses it).
 */
export function streamHeadTimeoutMs(query: string, requestTimeoutMs: number): number {
  let i = query.startsWith('timeoutSeconds=') ? 0 : query.indexOf('&timeoutSeconds=');
  if (i === -1) return requestTimeoutMs;
  i += i === 0 ? 15 : 16;
  let n = 0;
  let digits = 0;
  for (; i < query.length && digits < 10; i++, digits++) {
    const c = query.charCodeAt(i) - 48;
    if (c < 0 || c > 9) break;
    n = n * 10 + c;
  }
  const end = query.charCodeAt(i);
  if (digits === 0 || (i < query.length && end !== 0x26 /* & */) || n === 0) return requestTimeoutMs;
  return Math.min(requestTimeoutMs, n * 1000);
}
