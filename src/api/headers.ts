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

/**
 * On the peer hop, beside the identity mvproxy asserts: the byte length of each identity field's
 * value, in order ("9,14,74"). The uWS peer listener's parser drops bytes >= 0x80 at both ends of a
 * value (it skips bytes below 33 as signed chars: README "Limitations"), which would assert another
 * user ("adminé" as "admin") or group; it refuses a request whose identity arrived with other
 * lengths (listener/head-check.ts identityLengthsProblem). Never forwarded from a client.
 */
export const IdentityLengthsHeader = 'x-mvproxy-identity-lengths';
