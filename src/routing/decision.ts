// The outcomes of the routing decision (docs/kubernetes-mvp.md §2's summary table). Local outcomes are shared
// frozen constants so that deciding allocates nothing; the reason is kept for logs and tests.

export type LocalReason =
  | 'requestInfoError' // the local apiserver parses the URL itself and answers as Kubernetes does
  | 'nonResource' // docs/kubernetes-mvp.md §2 step 2: discovery, /healthz, /version, ...
  | 'peerProxied' // step 3: x-kubernetes-peer-proxied: true, one hop only
  | 'notSynced' // step 4: no discovery yet, fail open
  | 'servedLocally' // step 6
  | 'proxyDisabled'; // feature gate UnknownVersionInteroperabilityProxy off, or no --peer-ca-file

export type Decision =
  /** Forward to this node's apiserver. */
  | { readonly kind: 'local'; readonly reason: LocalReason }
  /** Nobody in the cluster serves the GVR (step 7): the local apiserver answers, usually 404 (fail open: a CRD newer than the snapshot still works). */
  | { readonly kind: 'notFound' }
  /** Proxy to one of these peers (server IDs, sorted; the upstream picks one at random and fails over). */
  | { readonly kind: 'peer'; readonly peers: readonly string[] }
  /** Peers serve it but none has a usable address (step 8): 503 Status, never a 404. */
  | { readonly kind: 'unavailable' };

const local = (reason: LocalReason): Decision => Object.freeze({ kind: 'local', reason });

export const DECISION_REQUESTINFO_ERROR = local('requestInfoError');
export const DECISION_NON_RESOURCE = local('nonResource');
export const DECISION_PEER_PROXIED = local('peerProxied');
export const DECISION_NOT_SYNCED = local('notSynced');
export const DECISION_SERVED_LOCALLY = local('servedLocally');
export const DECISION_PROXY_DISABLED = local('proxyDisabled');
export const DECISION_NOT_FOUND: Decision = Object.freeze({ kind: 'notFound' });
export const DECISION_UNAVAILABLE: Decision = Object.freeze({ kind: 'unavailable' });

export function peerDecision(peers: readonly string[]): Decision {
  return Object.freeze({ kind: 'peer', peers });
}
