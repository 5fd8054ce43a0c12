// Well-known header names every stage reads or writes.

/**
 * The one-hop marker: a request carrying `x-kubernetes-peer-proxied: true` is served by the
 * apiserver it reached, never proxied again (Kubernetes PeerProxiedHeader,
 * staging/src/k8s.io/apiserver/pkg/util/peerproxy/peerproxy_handler.go).
 */
export const PeerProxiedHeader = 'x-kubernetes-peer-proxied';

/**
 * On mvproxy's own answers that prove the request reached no apiserver (api/errors.ts ErrorSpec
 * notSent): a source mvproxy that asked this peer after a local 404 may then ask the next peer, also
 * for a request that must never run twice (a create). Relayed apiserver answers never carry it (the
 * response head drops it).
 */
export const NotSentHeader = 'x-mvproxy-not-sent';
