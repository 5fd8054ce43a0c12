// Well-known header names every stage reads or writes.

/**
 * The one-hop marker: a request carrying `x-kubernetes-peer-proxied: true` is served by the
 * apiserver it reached, never proxied again (Kubernetes PeerProxiedHeader,
 * staging/src/k8s.io/apiserver/pkg/util/peerproxy/peerproxy_handler.go).
 */
export const PeerProxiedHeader = 'x-kubernetes-peer-proxied';
