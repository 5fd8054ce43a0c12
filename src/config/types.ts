// The daemon's settings, after flags and (later) the config file are merged. One place for each
// default: DEFAULTS below; the flag help and the config loader both read it.

/** The front end that serves the client listener. */
export type Frontend = 'uws' | 'node';
/** --frontend: auto picks uWS when it loads and can serve the configuration (listener/frontend.ts). */
export type FrontendSetting = 'auto' | Frontend;

/** How peers are found: a list given by the operator, or Kubernetes Leases through the local apiserver. */
export type PeerDiscoveryMode = 'static' | 'lease';

export interface DaemonConfig {
  /** Server ID of this node (Kubernetes: its identity lease name). */
  serverID: string;
  frontend: FrontendSetting;
  /** Client listener. Plain HTTP only when bindAddress is a loopback address and no TLS files are given. */
  bindAddress: string;
  securePort: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** --tls-min-version (Go's names: VersionTLS12 …) and --tls-cipher-suites (Go's names): every TLS mvproxy speaks (config/tls-policy.ts). */
  tlsMinVersion: string;
  tlsCipherSuites: string[];
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
  /**
   * CA bundle that verifies client certificates on the client listener (node front end only). A
   * verified certificate's user (CN) and groups (O) are forwarded as front-proxy identity headers.
   */
  clientCAFile?: string;
  /** Header names the apiservers read the user from (kube-apiserver --requestheader-username-headers). The first is sent. */
  requestheaderUsernameHeaders: string[];
  /** --requestheader-group-headers; the first is sent, one header per group. */
  requestheaderGroupHeaders: string[];
  /** --requestheader-extra-headers-prefix; the first is used. */
  requestheaderExtraHeadersPrefix: string[];
  /** Static peers: server ID → host:port of their peer listener. */
  staticPeers: { id: string; address: string }[];
  /**
   * static: --static-peers plus --peers-file (re-read when it changes). lease: every mvproxy keeps
   * a coordination.k8s.io/v1 Lease in --lease-namespace and watches the others' (src/peers/lease.ts).
   */
  peerDiscovery: PeerDiscoveryMode;
  /** YAML or JSON list of {id, address} (static mode), re-read when it changes; this node's own ID is skipped. */
  peersFile?: string;
  /** Namespace of the identity Leases (lease mode). */
  leaseNamespace: string;
  /** spec.leaseDurationSeconds of this node's identity Lease; a lease not renewed within it counts as gone. */
  identityLeaseDurationSeconds: number;
  /** How often the identity Lease is renewed; unset = a third of the lease duration. */
  identityLeaseRenewIntervalSeconds?: number;
  /** Peer address advertised in the Lease: used only when both are set (as kube-apiserver). */
  peerAdvertiseIP?: string;
  peerAdvertisePort?: number;
  /** This node's address as peers reach it (kube-apiserver --advertise-address); the peer port is added. */
  advertiseAddress?: string;
  /**
   * Bearer token for mvproxy's own requests to the local apiserver (identity Leases, discovery,
   * CRD and APIService lists), re-read when the file changes. Clients' requests never carry it.
   */
  localAPIServerTokenFile?: string;
  /** How often each peer's peer listener is probed (GET /readyz, one hop); a failing peer is skipped until it answers. */
  peerProbeIntervalMs: number;
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
  frontend: 'auto' as FrontendSetting,
  bindAddress: '127.0.0.1',
  securePort: 6444,
  tlsMinVersion: 'VersionTLS12', // kube-apiserver's default
  tlsCipherSuites: [] as string[], // empty = Go's default suites
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
  // kubeadm's values for kube-apiserver (which itself has no defaults, spec §2.5).
  requestheaderUsernameHeaders: ['X-Remote-User'],
  requestheaderGroupHeaders: ['X-Remote-Group'],
  requestheaderExtraHeadersPrefix: ['X-Remote-Extra-'],
  shutdownDelayMs: 0, // kube-apiserver's default; set it (e.g. 5s) when a load balancer fronts mvproxy
  shutdownDrainTimeoutMs: 20_000, // delay + drain must fit terminationGracePeriodSeconds (30 s)
  // Static by default: lease mode needs credentials that let mvproxy read and write Leases through
  // the local apiserver (--local-apiserver-token-file), which a default install does not have.
  peerDiscovery: 'static' as PeerDiscoveryMode,
  leaseNamespace: 'kube-system', // where kube-apiserver keeps its own identity leases
  // kube-apiserver uses 3600 s (its leases only inform a 1 h garbage collector); mvproxy routes by
  // its leases, so a crashed node must leave within seconds: 30 s, renewed every 10 s.
  identityLeaseDurationSeconds: 30,
  peerProbeIntervalMs: 5_000,
};

/** Known feature gates (Kubernetes semantics: unknown names are errors). */
export const FEATURE_GATES: Record<string, { default: boolean; preRelease: 'ALPHA' | 'BETA' | 'GA' }> = {
  // Beta and on by default from Kubernetes 1.36 (PR #137172); the daemon follows.
  UnknownVersionInteroperabilityProxy: { default: true, preRelease: 'BETA' },
};

export function isLoopback(address: string): boolean {
  return address === 'localhost' || address === '::1' || address.startsWith('127.');
}
