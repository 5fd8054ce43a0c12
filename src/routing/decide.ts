// decide(): the Mixed Version Proxy's routing decision for one request, a pure function over an
// immutable route table. The checks run in Kubernetes' order (peerproxy_handler.go WrapHandler,
// docs/kubernetes-mvp.md §2), pinned by the table test in test/unit/decide.test.ts:
//   1. RequestInfo error        → local (the apiserver answers the malformed URL itself)
//   2. non-resource request     → local (all discovery, /healthz, /version, ...)
//   3. x-kubernetes-peer-proxied: true → local (one hop at most)
//   4. route table not synced   → local
//   5-6. GVR served locally     → local
//   7. no peer serves the GVR   → notFound (local; usually a 404)
//   8. no serving peer resolves → unavailable (503)
//   9-10. otherwise             → peer (candidates)
// Deciding allocates nothing: every outcome is a shared frozen object (see decision.ts).

import type { RequestInfo, RequestInfoError } from '../request/requestinfo';
import type { RouteTable } from './routetable';
import {
  type Decision,
  DECISION_NON_RESOURCE,
  DECISION_NOT_FOUND,
  DECISION_NOT_SYNCED,
  DECISION_PEER_PROXIED,
  DECISION_REQUESTINFO_ERROR,
} from './decision';

/**
 * @param info the request's RequestInfo, or the error parsing it returned
 * @param peerProxied the first value of the x-kubernetes-peer-proxied header, if any
 *   (Kubernetes compares Header.Get(), the first value, with "true", case-sensitively)
 */
export function decide(info: RequestInfo | RequestInfoError, peerProxied: string | undefined, table: RouteTable): Decision {
  if (info instanceof Error) return DECISION_REQUESTINFO_ERROR;
  if (!info.isResourceRequest) return DECISION_NON_RESOURCE;
  if (peerProxied === 'true') return DECISION_PEER_PROXIED;
  if (!table.synced) return DECISION_NOT_SYNCED;
  const entry = table.lookup(info.apiGroup, info.apiVersion, info.resource);
  return entry === undefined ? DECISION_NOT_FOUND : entry.decision;
}
