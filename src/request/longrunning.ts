// Long-running requests: no upstream timeout, headers flushed at once, kept out of latency
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
