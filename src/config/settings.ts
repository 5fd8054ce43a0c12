// The one table of mvproxy's settings. Each entry gives, for one field of the resolved
// configuration (config/types.ts DaemonConfig, derived from this table): its flag, its field in the
// --config file, its default, its --help text and section, and its kind, which names the parser
// (cli/flags.ts for flag text, config/load.ts for the file) and carries the validation
// (config/values.ts). Adding a setting is one entry here; cross-field rules are in
// config/validate.ts.
//
// The order of the entries is behaviour: flags are checked in it (the first bad flag is the one
// reported) and errors listing several files follow it (config/validate.ts). --help groups the
// entries by section, as kube-apiserver does (staging/src/k8s.io/component-base/cli/flag/sectioned.go),
// sections in SECTIONS order, entries in table order within each.

import { featureGateHelp, resolveFeatureGates } from './featuregate';
import { defaultServerID } from './serverid';
import {
  type StaticPeer,
  checkAdvertiseIP,
  checkDNSName,
  checkHostPort,
  checkIP,
  checkInt,
  checkNamespace,
  checkPort,
  checkServerID,
  checkTLSMinVersion,
  checkURL,
} from './values';

/** --help sections, in the order they are printed (each as "<section> flags:"). */
export const SECTIONS = ['Generic', 'Secure serving', 'Authentication', 'Local apiserver', 'Peer proxy', 'Membership', 'Discovery', 'Metrics', 'Logs', 'Featuregate'] as const;
export type Section = (typeof SECTIONS)[number];

/** A setting's value kind: how flag text and file fields are parsed, and the check of the value. */
export type Kind =
  | { t: 'string'; check: (v: string) => string }
  | { t: 'choice'; choices: readonly string[] }
  /** A file name; relative names in the config file resolve against its directory; empty = not set. */
  | { t: 'path' }
  | { t: 'int'; check: (n: number) => number }
  /** Kube boolean: --flag, --flag=true, --flag=false (never --flag false). */
  | { t: 'bool' }
  /** Go duration ("30s", "1m30s"), in milliseconds, at least minMs. */
  | { t: 'duration'; minMs: number }
  /** Comma-separated and repeatable on the command line (pflag StringSlice), a list in the file. */
  | { t: 'strings' }
  /** <server-id>=<host:port> items on the command line, a list of {id, address} in the file. */
  | { t: 'peers' }
  /** --feature-gates A=true,B=false (repeatable); a map of gate names in the file. */
  | { t: 'gates' };

interface KindValues {
  string: string;
  choice: string;
  path: string;
  int: number;
  bool: boolean;
  duration: number;
  strings: string[];
  peers: StaticPeer[];
  gates: Record<string, boolean>;
}

/** The value type of a kind: a choice's union of names, else by kind. */
export type KindValue<K extends Kind> = K extends { t: 'choice'; choices: readonly (infer C)[] } ? C : KindValues[K['t']];

export interface Setting<K extends Kind = Kind> {
  /** Flag name without the dashes. */
  flag: string;
  /** One-letter alias (-v). */
  short?: string;
  /** Dotted path in the config file. */
  field: string;
  section: Section;
  /** The value's name in --help (--bind-address <ip>); by kind when unset: <file>, <duration>, [bool]. */
  arg?: string;
  help: string;
  kind: K;
  /** The value when neither a flag nor the file sets it. A setting with a default is never undefined. */
  default?: KindValue<K>;
  /** A default computed at start (the host name's server ID). */
  defaultFrom?: () => KindValue<K>;
  /** How --help names a default that is not a value. */
  defaultHelp?: string;
}

/** An entry of the table; its default is checked against its kind. */
function setting<S extends Setting>(s: S & { default?: KindValue<S['kind']>; defaultFrom?: () => KindValue<S['kind']> }): S {
  return s;
}

const str = (check: (v: string) => string) => ({ t: 'string', check }) as const;
const choice = <const C extends readonly string[]>(choices: C) => ({ t: 'choice', choices }) as const;
const int = (check: (n: number) => number) => ({ t: 'int', check }) as const;
const duration = (minMs = 0) => ({ t: 'duration', minMs }) as const;
const PATH = { t: 'path' } as const;
const BOOL = { t: 'bool' } as const;
const STRINGS = { t: 'strings' } as const;
const seconds = int((v) => checkInt(v, 1, 86_400));

export const SETTING_TABLE = {
  staticPeers: setting({
    flag: 'static-peers', field: 'peers.static', section: 'Membership', arg: '<list>', kind: { t: 'peers' }, default: [],
    help: 'comma-separated peers as <server-id>=<host:port> of their peer listeners; repeatable',
  }),
  featureGates: setting({
    flag: 'feature-gates', field: 'featureGates', section: 'Featuregate', arg: '<gates>', kind: { t: 'gates' }, default: resolveFeatureGates(new Map()),
    help: `comma-separated key=value pairs that describe feature gates; repeatable. Options are:\n${featureGateHelp()}`,
  }),
  serverID: setting({
    flag: 'server-id', field: 'serverID', section: 'Generic', arg: '<id>', kind: str(checkServerID), defaultFrom: () => defaultServerID(),
    // kube-apiserver's identity lease name; peers and Leases know this node by it.
    help: "this node's server ID, an RFC 1123 subdomain", defaultHelp: 'derived from the host name, mvproxy-<hash>',
  }),
  frontend: setting({
    flag: 'frontend', field: 'frontend', section: 'Generic', arg: '<name>', kind: choice(['auto', 'uws', 'node']), default: 'auto',
    // auto: listener/frontend.ts picks uWS when it loads and can serve the configuration.
    help: 'client listener front end: auto (uWebSockets.js when it loads and can serve this configuration, else node), uws (uWebSockets.js; exits if it cannot serve the configuration) or node (node:http/https, HTTP/2; carries SPDY upgrades)',
  }),
  bindAddress: setting({
    flag: 'bind-address', field: 'serving.bindAddress', section: 'Secure serving', arg: '<ip>', kind: str(checkIP), default: '127.0.0.1',
    help: 'address of the client listener; plain HTTP is allowed only on loopback',
  }),
  tlsMinVersion: setting({
    flag: 'tls-min-version', field: 'tls.minVersion', section: 'Secure serving', arg: '<version>', kind: str(checkTLSMinVersion), default: 'VersionTLS12', // kube-apiserver's default
    // Every TLS mvproxy speaks (config/tls-policy.ts).
    help: "lowest TLS version mvproxy speaks, on every listener and upstream connection: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13 (kube-apiserver's names)",
  }),
  tlsCipherSuites: setting({
    flag: 'tls-cipher-suites', field: 'tls.cipherSuites', section: 'Secure serving', arg: '<names>', kind: STRINGS, default: [], // empty = Go's default suites
    help: "comma-separated TLS 1.2 cipher suites, Go's names as kube-apiserver takes them (e.g. TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); empty = Go's defaults (ECDHE, AES-GCM, ChaCha20); TLS 1.3 suites are fixed; repeatable",
  }),
  securePort: setting({
    flag: 'secure-port', field: 'serving.securePort', section: 'Secure serving', arg: '<port>', kind: int(checkPort), default: 6444,
    help: 'port of the client listener (0 = any free port)',
  }),
  tlsCertFile: setting({
    flag: 'tls-cert-file', field: 'serving.certFile', section: 'Secure serving', kind: PATH,
    help: 'serving certificate of the client listener (and of the peer listener unless --peer-tls-cert-file)',
  }),
  tlsPrivateKeyFile: setting({ flag: 'tls-private-key-file', field: 'serving.keyFile', section: 'Secure serving', kind: PATH, help: 'key for --tls-cert-file' }),
  peerBindAddress: setting({
    flag: 'peer-bind-address', field: 'peerServing.bindAddress', section: 'Peer proxy', arg: '<ip>', kind: str(checkIP), default: '0.0.0.0',
    help: 'address of the peer listener (mutual TLS)',
  }),
  peerPort: setting({ flag: 'peer-port', field: 'peerServing.port', section: 'Peer proxy', arg: '<port>', kind: int(checkPort), default: 6445, help: 'port of the peer listener' }),
  peerTLSCertFile: setting({
    flag: 'peer-tls-cert-file', field: 'peerServing.certFile', section: 'Peer proxy', kind: PATH,
    help: 'serving certificate of the peer listener; must be valid for kubernetes.default.svc',
  }),
  peerTLSPrivateKeyFile: setting({ flag: 'peer-tls-private-key-file', field: 'peerServing.keyFile', section: 'Peer proxy', kind: PATH, help: 'key for --peer-tls-cert-file' }),
  localAPIServer: setting({
    flag: 'local-apiserver', field: 'localAPIServer.url', section: 'Local apiserver', arg: '<url>', kind: str(checkURL), default: 'https://127.0.0.1:6443',
    help: "this node's kube-apiserver",
  }),
  localAPIServerCAFile: setting({
    flag: 'local-apiserver-ca-file', field: 'localAPIServer.caFile', section: 'Local apiserver', kind: PATH,
    help: "CA bundle that verifies the local kube-apiserver's serving certificate",
  }),
  localAPIServerServerName: setting({
    flag: 'local-apiserver-server-name', field: 'localAPIServer.serverName', section: 'Local apiserver', arg: '<name>', kind: str(checkDNSName),
    // TLS SNI and host name check: kubeadm's apiserver.crt has no 127.0.0.1 SAN, so https://127.0.0.1:6443 needs kubernetes.default.svc.
    help: "name the local kube-apiserver's serving certificate is checked against, when not the URL's host (kubeadm: kubernetes.default.svc, as apiserver.crt has no 127.0.0.1 SAN)",
    defaultHelp: "the URL's host",
  }),
  peerCAFile: setting({
    flag: 'peer-ca-file', field: 'peers.caFile', section: 'Peer proxy', kind: PATH, // required for the proxy, as kube-apiserver 1.36
    help: "CA bundle that verifies peers' serving certificates (as kubernetes.default.svc); required for the proxy",
  }),
  proxyClientCertFile: setting({
    flag: 'proxy-client-cert-file', field: 'peers.proxyClientCertFile', section: 'Peer proxy', kind: PATH, // also to the local apiserver, for front-proxy identity
    help: 'client certificate presented to peers',
  }),
  proxyClientKeyFile: setting({ flag: 'proxy-client-key-file', field: 'peers.proxyClientKeyFile', section: 'Peer proxy', kind: PATH, help: 'key for --proxy-client-cert-file' }),
  requestheaderClientCAFile: setting({
    flag: 'requestheader-client-ca-file', field: 'peers.requestheaderClientCAFile', section: 'Authentication', kind: PATH,
    help: "CA bundle that verifies peers' proxy client certificates on the peer listener",
  }),
  requestheaderAllowedNames: setting({
    flag: 'requestheader-allowed-names', field: 'peers.requestheaderAllowedNames', section: 'Authentication', arg: '<names>', kind: STRINGS, default: [],
    help: 'comma-separated common names allowed on the peer listener; empty = any name signed by the CA; repeatable',
  }),
  clientCAFile: setting({
    flag: 'client-ca-file', field: 'serving.clientCAFile', section: 'Authentication', kind: PATH,
    help: 'CA bundle that verifies client certificates on the client listener (needs TLS, and a front end that reads client certificates: node, or uWS on Node 22+ with glibc >= 2.38); a verified certificate user (CN, groups from O) is forwarded to the apiservers as front-proxy identity headers with --proxy-client-cert-file',
  }),
  // The three identity header settings default to kubeadm's values for kube-apiserver (which itself has none).
  requestheaderUsernameHeaders: setting({
    flag: 'requestheader-username-headers', field: 'identity.usernameHeaders', section: 'Authentication', arg: '<names>', kind: STRINGS, default: ['X-Remote-User'],
    help: "header names for the forwarded user, as kube-apiserver's flag (the first is sent; all are stripped from clients)",
  }),
  requestheaderGroupHeaders: setting({
    flag: 'requestheader-group-headers', field: 'identity.groupHeaders', section: 'Authentication', arg: '<names>', kind: STRINGS, default: ['X-Remote-Group'],
    help: 'header names for the forwarded groups (the first is sent; all are stripped from clients)',
  }),
  requestheaderUidHeaders: setting({
    flag: 'requestheader-uid-headers', field: 'identity.uidHeaders', section: 'Authentication', arg: '<names>', kind: STRINGS, default: [],
    help: "header names for the forwarded user UID, as kube-apiserver's flag (default none, as there): set it to what the apiservers read (X-Remote-Uid) to forward a client certificate's UID (1.3.6.1.4.1.57683.2); without it such a certificate is refused with a 401, never forwarded without its UID (the first is sent; all are stripped from clients)",
  }),
  requestheaderExtraHeadersPrefix: setting({
    flag: 'requestheader-extra-headers-prefix', field: 'identity.extraHeadersPrefix', section: 'Authentication', arg: '<prefixes>', kind: STRINGS, default: ['X-Remote-Extra-'],
    help: 'header prefixes for forwarded extra attributes (the first is used; all are stripped from clients)',
  }),
  peerDiscovery: setting({
    flag: 'peer-discovery', field: 'peers.discovery', section: 'Membership', arg: '<mode>', kind: choice(['static', 'lease']),
    // Static by default: lease mode needs credentials that let mvproxy read and write Leases through
    // the local apiserver, which a default install does not have (src/peers/lease.ts).
    default: 'static',
    help: 'how peers are found: static (--static-peers and --peers-file) or lease (a coordination.k8s.io/v1 Lease per mvproxy in --lease-namespace, read and written through the local apiserver, which then needs credentials: --local-apiserver-token-file)',
  }),
  peersFile: setting({
    flag: 'peers-file', field: 'peers.file', section: 'Membership', kind: PATH,
    help: "static peers as a YAML or JSON list of {id, address} (the same file can list every node: this node's own server ID is skipped); re-read when it changes, the last good list kept when it is invalid",
  }),
  leaseNamespace: setting({
    flag: 'lease-namespace', field: 'peers.lease.namespace', section: 'Membership', arg: '<namespace>', kind: str(checkNamespace), default: 'kube-system', // where kube-apiserver keeps its own identity leases
    help: 'namespace of the identity Leases (--peer-discovery=lease)',
  }),
  identityLeaseDurationSeconds: setting({
    flag: 'identity-lease-duration-seconds', field: 'peers.lease.durationSeconds', section: 'Membership', arg: '<seconds>', kind: seconds,
    // kube-apiserver uses 3600 s (its leases only inform a 1 h garbage collector); mvproxy routes by
    // its leases, so a crashed node must leave within seconds: 30 s, renewed every 10 s.
    default: 30,
    help: "duration of this node's identity Lease; a Lease not renewed within it counts as gone",
  }),
  identityLeaseRenewIntervalSeconds: setting({
    flag: 'identity-lease-renew-interval-seconds', field: 'peers.lease.renewIntervalSeconds', section: 'Membership', arg: '<seconds>', kind: seconds,
    help: 'how often the identity Lease is renewed', defaultHelp: 'a third of --identity-lease-duration-seconds',
  }),
  peerProbeIntervalMs: setting({
    flag: 'peer-probe-interval', field: 'peers.probeInterval', section: 'Peer proxy', kind: duration(100), default: 5_000,
    help: "how often each peer's peer listener is probed (GET /readyz); a peer that fails is skipped when choosing a peer until it answers again",
  }),
  advertiseAddress: setting({
    flag: 'advertise-address', field: 'advertiseAddress', section: 'Membership', arg: '<ip>', kind: str(checkAdvertiseIP), // kube-apiserver --advertise-address
    help: "the IP address peers reach this node on (with the peer listener's port) when --peer-advertise-ip/--peer-advertise-port are not both set",
    defaultHelp: '--peer-bind-address unless it is a wildcard, else the first non-loopback IPv4 address of the host',
  }),
  peerAdvertiseIP: setting({
    flag: 'peer-advertise-ip', field: 'peerServing.advertiseIP', section: 'Membership', arg: '<ip>', kind: str(checkAdvertiseIP),
    help: 'the IP address advertised to peers in the identity Lease; used only together with --peer-advertise-port (as kube-apiserver)',
  }),
  peerAdvertisePort: setting({
    flag: 'peer-advertise-port', field: 'peerServing.advertisePort', section: 'Membership', arg: '<port>', kind: int((v) => checkInt(v, 1, 65_535)),
    help: 'the port advertised to peers in the identity Lease; used only together with --peer-advertise-ip',
  }),
  localAPIServerTokenFile: setting({
    flag: 'local-apiserver-token-file', field: 'localAPIServer.tokenFile', section: 'Local apiserver', kind: PATH,
    help: "bearer token for mvproxy's own requests to the local apiserver (identity Leases, discovery, CRD and APIService lists; never clients' requests), re-read when the file changes",
  }),
  requestTimeoutMs: setting({
    flag: 'request-timeout', field: 'requestTimeout', section: 'Generic', kind: duration(1), default: 60_000, // kube-apiserver --request-timeout default
    help: 'upper bound for non-long-running requests to an upstream',
  }),
  peerFrontend: setting({
    flag: 'peer-frontend', field: 'peerServing.frontend', section: 'Peer proxy', arg: '<auto|uws|node>', kind: choice(['auto', 'uws', 'node']), default: 'auto',
    help: 'the peer listener\'s front end: auto = node (HTTP/2 beside HTTP/1.1: peer-routed watches share connections; cheaper per peer LIST); uws = uWebSockets.js where the client listener is uWS and reads client certificates (HTTP/1.1 only: one connection per peer-routed watch; cheaper per peer GET)',
  }),
  localFailover: setting({
    flag: 'local-failover', field: 'localFailover', section: 'Peer proxy', kind: BOOL, default: true, // beyond in-tree: its proxy lives inside the apiserver that is down
    help: 'while the local apiserver is not serving (its /readyz fails, it answers "shutting down", it refuses connections), send the requests a peer can answer to a peer; a request goes only if it provably did not run locally; never one that already came from a peer; false = the local apiserver\'s answer (or a 503) as before',
  }),
  upstreamHTTP2: setting({
    flag: 'upstream-http2', field: 'upstreamHTTP2', section: 'Peer proxy', kind: BOOL, default: true, // client-go multiplexes its watches the same way
    help: 'long-running requests (watches, logs -f) to a TLS upstream that offers h2 (kube-apiserver; a node peer listener) share HTTP/2 connections, up to the upstream\'s streams per connection each, instead of one HTTP/1.1 connection per watch; false = one connection each',
  }),
  heldRequestBodyBytes: setting({
    flag: 'held-request-body-bytes', field: 'heldRequestBodyBytes', section: 'Peer proxy', arg: '<bytes>', kind: int((v) => checkInt(v, 0, 2 ** 40)), default: 64 * 1024 * 1024, // half the static pod's 128Mi memory request
    help: 'request bodies (each up to 1 MiB with a Content-Length) held in memory at once so that a request the local apiserver answers 404 can be sent again to a peer; past it a request streams its body and gets the local answer; a held body must arrive within --request-timeout (else 408)',
  }),
  connectTimeoutMs: setting({
    flag: 'upstream-connect-timeout', field: 'upstreamConnectTimeout', section: 'Generic', kind: duration(1), default: 5_000,
    help: 'connect timeout to the local apiserver and peers; a dead upstream gets a 503 within it',
  }),
  discoveryRefreshIntervalMs: setting({
    flag: 'discovery-refresh-interval', field: 'discovery.refreshInterval', section: 'Discovery', kind: duration(1000), default: 30_000, // in-tree: 30 min for the local view, peers only on lease events
    help: 'how often local and peer discovery are refetched (If-None-Match); at least 1s',
  }),
  peerDiscoveryGraceMs: setting({
    flag: 'peer-discovery-grace-period', field: 'discovery.peerGracePeriod', section: 'Discovery', kind: duration(), default: 60_000, // two refresh intervals: one missed fetch never drops a peer
    help: 'how long a peer whose discovery fetch fails keeps its last good view in routing',
  }),
  reusePort: setting({
    flag: 'reuse-port', field: 'serving.reusePort', section: 'Generic', kind: BOOL, default: true, // issue 39: a restart's gap is the new process's start (~0.3 s of refused connections)
    help: 'listen with SO_REUSEPORT (client, peer and metrics listeners): a new mvproxy can listen on the same ports while the old one drains (two units, a rolling static pod); the uWebSockets.js listeners always do',
  }),
  peerDiscoveryStartupTimeoutMs: setting({
    flag: 'peer-discovery-startup-timeout', field: 'discovery.peerStartupTimeout', section: 'Discovery', kind: duration(), default: 10_000, // issue 39: a namespace deletion in the first second leaked what only peers serve
    help: 'after start, /apis and legacy discovery answer 503 (and /readyz fails) until the first merge with every known peer is published, or this long for a peer that does not answer',
  }),
  discoveryAccessTTLMs: setting({
    flag: 'discovery-access-ttl', field: 'discovery.accessTTL', section: 'Discovery', kind: duration(), default: 10_000, // issue 38: /apis was answered to clients the apiserver refuses
    help: "before mvproxy answers /apis, legacy discovery or the /openapi/v3 index from its merged view, the apiserver is asked the client's own request and must let it past authentication and authorization; the same request (method, target, credentials) it let through is not asked again for this long (0 = ask every time). kube-apiserver's webhook caches keep an allow for 5m",
  }),
  legacyDiscoveryFix: setting({
    flag: 'legacy-discovery-fix', field: 'discovery.legacyDiscoveryFix', section: 'Discovery', kind: BOOL, default: true, // kubernetes#96486
    help: 'answer legacy discovery (/apis, /apis/<group>[/<version>]) from the peer-aggregated view, so clients without aggregated discovery (kubectl <= 1.29, python) see groups only peers serve; false = legacy discovery passes through to the local apiserver, as upstream',
  }),
  shutdownDelayMs: setting({
    flag: 'shutdown-delay-duration', field: 'shutdown.delayDuration', section: 'Generic', kind: duration(), default: 0, // kube-apiserver's default; set it (e.g. 5s) when a load balancer fronts mvproxy
    help: 'after SIGTERM, how long /readyz fails (check "shutdown") while everything keeps serving, so load balancers drain this node (as kube-apiserver; 0s = no delay)',
  }),
  shutdownDrainTimeoutMs: setting({
    flag: 'shutdown-drain-timeout', field: 'shutdown.drainTimeout', section: 'Generic', kind: duration(), default: 20_000, // delay + drain must fit terminationGracePeriodSeconds (30 s)
    help: "after the delay, how long in-flight requests (watches, exec, logs too) may take to finish before their connections are closed; delay + drain must fit the pod's terminationGracePeriodSeconds",
  }),
  metricsBindAddress: setting({
    flag: 'metrics-bind-address', field: 'metrics.bindAddress', section: 'Metrics', arg: '<host:port>', kind: str(checkHostPort), default: '127.0.0.1:10290',
    help: 'address of /metrics, /healthz, /livez, /readyz',
  }),
  verbosity: setting({
    flag: 'v', short: 'v', field: 'logging.verbosity', section: 'Logs', arg: '<level>', kind: int((v) => checkInt(v, 0, 10)), default: 2,
    help: 'log verbosity, 0 to 10 (klog levels: 2 = default, 4 = one line per request); -v=N, -v N and --v=N all work',
  }),
  loggingFormat: setting({ flag: 'logging-format', field: 'logging.format', section: 'Logs', arg: '<format>', kind: choice(['json', 'text']), default: 'json', help: 'log format' }),
};

export type SettingKey = keyof typeof SETTING_TABLE;

/** The table as a list, each entry with its key (DaemonConfig field name), in table order. */
export const SETTINGS: readonly (Setting & { key: SettingKey })[] = Object.entries(SETTING_TABLE).map(([key, s]) => ({ key: key as SettingKey, ...(s as Setting) }));

/** "--tls-cert-file (serving.certFile)": how errors about merged settings name one. */
export function settingName(key: SettingKey): string {
  const s: Setting = SETTING_TABLE[key];
  return `--${s.flag} (${s.field})`;
}
