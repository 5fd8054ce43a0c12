// The daemon's settings, after flags and (later) the config file are merged. One place for each
// default: DEFAULTS below; the flag help and the config loader both read it.

export type Frontend = 'uws' | 'node';

export interface DaemonConfig {
  /** Server ID of this node (Kubernetes: its identity lease name). */
  serverID: string;
  frontend: Frontend;
  /** Client listener. Plain HTTP only when bindAddress is a loopback address and no TLS files are given. */
  bindAddress: string;
  securePort: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** Peer listener (node:https, mutual TLS). */
  peerBindAddress: string;
  peerPort: number;
  /** Serving certificate of the peer listener; must be valid for kubernetes.default.svc. Defaults to the client listener's. */
  peerTLSCertFile?: string;
  peerTLSPrivateKeyFile?: string;
  /** This node's kube-apiserver. */
  localAPIServer: string;
  localAPIServerCAFile?: string;
  /**
   * Name the local kube-apiserver's serving certificate is verified against (TLS SNI and host name
   * check), when it differs from the URL's host: kubeadm's apiserver.crt has no 127.0.0.1 SAN, so
   * https://127.0.0.1:6443 needs "kubernetes.default.svc". Unset = the URL's host.
   */
  localAPIServerServerName?: string;
  /** Client certificate presented to peers (and, for front-proxy identity, to the local apiserver). */
  proxyClientCertFile?: string;
  proxyClientKeyFile?: string;
  /** CA that peers' serving certificates chain to; required for the proxy (as kube-apiserver 1.36). */
  peerCAFile?: string;
  /** CA that peers' proxy client certificates must chain to. */
  requestheaderClientCAFile?: string;
  requestheaderAllowedNames: string[];
  /** Static peers: server ID → host:port of their peer listener. */
  staticPeers: { id: string; address: string }[];
  featureGates: Record<string, boolean>;
  requestTimeoutMs: number;
  connectTimeoutMs: number;
  discoveryRefreshIntervalMs: number;
  peerDiscoveryGraceMs: number;
  metricsBindAddress: string;
  verbosity: number;
  loggingFormat: 'json' | 'text';
  /**
   * Answer legacy discovery (/apis, /apis/<g>, /apis/<g>/<v>) from the merged view, so clients
   * without aggregated discovery (kubectl <= 1.29, python typed clients) see groups only peers
   * serve (kubernetes#96486); false = it passes through to the local apiserver, as upstream.
   * --legacy-discovery-fix, discovery.legacyDiscoveryFix.
   */
  legacyDiscoveryFix: boolean;
  /**
   * After SIGTERM: how long /readyz fails (check `shutdown`) while every listener keeps serving,
   * so load balancers stop sending new requests (kube-apiserver --shutdown-delay-duration, default 0s).
   */
  shutdownDelayMs: number;
  /** After the delay: upper bound for in-flight requests (watches, exec...) to finish before connections are closed. */
  shutdownDrainTimeoutMs: number;
}

export const DEFAULTS = {
  frontend: 'uws' as Frontend,
  bindAddress: '127.0.0.1',
  securePort: 6444,
  peerBindAddress: '0.0.0.0',
  peerPort: 6445,
  localAPIServer: 'https://127.0.0.1:6443',
  requestTimeoutMs: 60_000, // kube-apiserver --request-timeout default
  connectTimeoutMs: 5_000,
  discoveryRefreshIntervalMs: 30_000, // in-tree: 30 min for the local view, peers only on lease events
  peerDiscoveryGraceMs: 60_000, // two refresh intervals: one missed fetch never drops a peer
  metricsBindAddress: '127.0.0.1:10290',
  verbosity: 2,
  loggingFormat: 'json' as const,
  legacyDiscoveryFix: true,
  shutdownDelayMs: 0, // kube-apiserver's default; set it (e.g. 5s) when a load balancer fronts mvproxy
  shutdownDrainTimeoutMs: 20_000, // delay + drain must fit terminationGracePeriodSeconds (30 s)
};

/** Known feature gates (Kubernetes semantics: unknown names are errors). */
export const FEATURE_GATES: Record<string, { default: boolean; preRelease: 'ALPHA' | 'BETA' | 'GA' }> = {
  // Beta and on by default from Kubernetes 1.36 (PR #137172); the daemon follows.
  UnknownVersionInteroperabilityProxy: { default: true, preRelease: 'BETA' },
};

export function isLoopback(address: string): boolean {
  return address === 'localhost' || address === '::1' || address.startsWith('127.');
}
