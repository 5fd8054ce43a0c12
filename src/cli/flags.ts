// Command-line flags, kube style (--flag=value, --flag value, booleans --flag/--flag=true/
// --flag=false, comma lists, repeatable --feature-gates, -v=N/--v=N), parsed with commander 15
// (stack.md §6), merged with --config FILE by the kubelet rule (config/load.ts).
// Defaults come from config/types.ts DEFAULTS: one place for each fact.

import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { Command, Option } from 'commander';
import { DEFAULTS, type DaemonConfig, type FrontendSetting, type PeerDiscoveryMode } from '../config/types';
import { FlagError, featureGateHelp, formatDuration, parseFeatureGateFlags, parseGoBool, resolveFeatureGates } from './featuregate';
import {
  CONFIG_API_VERSION,
  CONFIG_KIND,
  SETTINGS,
  SETTING_BY_KEY,
  ValueError,
  checkChoice,
  checkDNSName,
  checkAdvertiseIP,
  checkDuration,
  checkHostPort,
  checkIP,
  checkInt,
  checkNamespace,
  checkPort,
  checkServerID,
  checkStaticPeer,
  checkURL,
  loadConfigFile,
  mergeConfig,
  validateConfig,
  checkTLSMinVersion,
} from '../config/load';

const collect = (v: string, prev: string[]) => [...prev, v];
const split = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);
/** Defaults of the list flags: the first use replaces it, later uses append (pflag StringSlice). */
const NO_NAMES: string[] = [];
const NO_SUITES: string[] = [];
const NO_PEERS: string[] = [];
const DEFAULT_USER_HEADERS = [...DEFAULTS.requestheaderUsernameHeaders];
const DEFAULT_GROUP_HEADERS = [...DEFAULTS.requestheaderGroupHeaders];
const DEFAULT_EXTRA_PREFIX = [...DEFAULTS.requestheaderExtraHeadersPrefix];
const list = (empty: string[]) => (v: string, prev: string[]) => (prev === empty ? split(v) : [...prev, ...split(v)]);
const ms = formatDuration;

/** Kube boolean flags: `--flag`, `--flag=true`, `--flag=false` (never `--flag false`). */
export const KUBE_BOOL_FLAGS: readonly string[] = SETTINGS.filter((s) => s.kind.t === 'bool').map((s) => s.flag);

/** Minimum of each duration flag, from the settings table. */
const DURATION_MIN = new Map(SETTINGS.flatMap((st) => (st.kind.t === 'duration' ? [[st.flag, st.kind.minMs ?? 0] as const] : [])));

/** commander's attribute name of a flag: kebab-case → camelCase. */
export function attributeName(flag: string): string {
  return flag.split('-').reduce((acc, w) => acc + w[0].toUpperCase() + w.slice(1));
}

/** Kubernetes-style server ID derived from the host name (like kube-apiserver's identity lease name, spec §4.1). */
export function defaultServerID(host = hostname()): string {
  const enc = (s: string) => Buffer.concat([Buffer.from([(s.length >> 8) & 0xff, s.length & 0xff]), Buffer.from(s)]);
  const sum = createHash('sha256').update(Buffer.concat([enc(host), enc('mvproxy')])).digest().subarray(0, 16);
  return 'mvproxy-' + base32(sum).toLowerCase();
}

function base32(b: Buffer): string {
  const A = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of b) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += A[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += A[(value << (5 - bits)) & 31];
  return out;
}

export function daemonFlags(cmd: Command): Command {
  const bool = (flag: string, desc: string, def: boolean) => new Option(`--${flag} [bool]`, `${desc} (--${flag}, --${flag}=true or --${flag}=false)`).default(def);
  return cmd
    .option('--config <file>', `versioned config file (apiVersion: ${CONFIG_API_VERSION}, kind: ${CONFIG_KIND}) with the same settings as these flags; a flag given on the command line overrides the file, relative paths in the file resolve against its directory`)
    .addOption(new Option('--frontend <name>', 'client listener front end: auto (uWebSockets.js when it loads and can serve this configuration, else node), uws (uWebSockets.js; exits if it cannot serve the configuration) or node (node:http/https, HTTP/2; carries SPDY upgrades)').choices(['auto', 'uws', 'node']).default(DEFAULTS.frontend))
    .option('--bind-address <ip>', 'address of the client listener; plain HTTP is allowed only on loopback', DEFAULTS.bindAddress)
    .option('--secure-port <port>', 'port of the client listener (0 = any free port)', String(DEFAULTS.securePort))
    .option('--tls-cert-file <file>', 'serving certificate of the client listener (and of the peer listener unless --peer-tls-cert-file)')
    .option('--tls-private-key-file <file>', 'key for --tls-cert-file')
    .option('--tls-min-version <version>', 'lowest TLS version mvproxy speaks, on every listener and upstream connection: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13 (kube-apiserver\'s names)', DEFAULTS.tlsMinVersion)
    .option('--tls-cipher-suites <names>', 'comma-separated TLS 1.2 cipher suites, Go\'s names as kube-apiserver takes them (e.g. TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); empty = Go\'s defaults (ECDHE, AES-GCM, ChaCha20); TLS 1.3 suites are fixed; repeatable', list(NO_SUITES), NO_SUITES)
    .option('--peer-bind-address <ip>', 'address of the peer listener (mutual TLS)', DEFAULTS.peerBindAddress)
    .option('--peer-port <port>', 'port of the peer listener', String(DEFAULTS.peerPort))
    .option('--peer-tls-cert-file <file>', 'serving certificate of the peer listener; must be valid for kubernetes.default.svc')
    .option('--peer-tls-private-key-file <file>', 'key for --peer-tls-cert-file')
    .option('--local-apiserver <url>', "this node's kube-apiserver", DEFAULTS.localAPIServer)
    .option('--local-apiserver-ca-file <file>', "CA bundle that verifies the local kube-apiserver's serving certificate")
    .option('--local-apiserver-server-name <name>', "name the local kube-apiserver's serving certificate is checked against, when not the URL's host (kubeadm: kubernetes.default.svc, as apiserver.crt has no 127.0.0.1 SAN) (default: the URL's host)")
    .option('--peer-ca-file <file>', "CA bundle that verifies peers' serving certificates (as kubernetes.default.svc); required for the proxy")
    .option('--proxy-client-cert-file <file>', 'client certificate presented to peers')
    .option('--proxy-client-key-file <file>', 'key for --proxy-client-cert-file')
    .option('--requestheader-client-ca-file <file>', "CA bundle that verifies peers' proxy client certificates on the peer listener")
    .option('--requestheader-allowed-names <names>', 'comma-separated common names allowed on the peer listener; empty = any name signed by the CA; repeatable', list(NO_NAMES), NO_NAMES)
    .option('--client-ca-file <file>', 'CA bundle that verifies client certificates on the client listener (needs TLS, and a front end that reads client certificates: node, or uWS on Node 22+ with glibc >= 2.38); a verified certificate user (CN, groups from O) is forwarded to the apiservers as front-proxy identity headers with --proxy-client-cert-file')
    .option('--requestheader-username-headers <names>', 'header names for the forwarded user, as kube-apiserver\'s flag (the first is sent; all are stripped from clients)', list(DEFAULT_USER_HEADERS), DEFAULT_USER_HEADERS)
    .option('--requestheader-group-headers <names>', 'header names for the forwarded groups (the first is sent; all are stripped from clients)', list(DEFAULT_GROUP_HEADERS), DEFAULT_GROUP_HEADERS)
    .option('--requestheader-extra-headers-prefix <prefixes>', 'header prefixes for forwarded extra attributes (the first is used; all are stripped from clients)', list(DEFAULT_EXTRA_PREFIX), DEFAULT_EXTRA_PREFIX)
    .option('--static-peers <list>', 'comma-separated peers as <server-id>=<host:port> of their peer listeners; repeatable', list(NO_PEERS), NO_PEERS)
    .addOption(new Option('--peer-discovery <mode>', 'how peers are found: static (--static-peers and --peers-file) or lease (a coordination.k8s.io/v1 Lease per mvproxy in --lease-namespace, read and written through the local apiserver, which then needs credentials: --local-apiserver-token-file)').choices(['static', 'lease']).default(DEFAULTS.peerDiscovery))
    .option('--peers-file <file>', 'static peers as a YAML or JSON list of {id, address} (the same file can list every node: this node\'s own server ID is skipped); re-read when it changes, the last good list kept when it is invalid')
    .option('--lease-namespace <namespace>', 'namespace of the identity Leases (--peer-discovery=lease)', DEFAULTS.leaseNamespace)
    .option('--identity-lease-duration-seconds <seconds>', "duration of this node's identity Lease; a Lease not renewed within it counts as gone", String(DEFAULTS.identityLeaseDurationSeconds))
    .option('--identity-lease-renew-interval-seconds <seconds>', 'how often the identity Lease is renewed (default: a third of --identity-lease-duration-seconds)')
    .option('--peer-probe-interval <duration>', "how often each peer's peer listener is probed (GET /readyz); a peer that fails is skipped when choosing a peer until it answers again", ms(DEFAULTS.peerProbeIntervalMs))
    .option('--advertise-address <ip>', 'the IP address peers reach this node on (with the peer listener\'s port) when --peer-advertise-ip/--peer-advertise-port are not both set (default: --peer-bind-address unless it is a wildcard, else the first non-loopback IPv4 address of the host)')
    .option('--peer-advertise-ip <ip>', 'the IP address advertised to peers in the identity Lease; used only together with --peer-advertise-port (as kube-apiserver)')
    .option('--peer-advertise-port <port>', 'the port advertised to peers in the identity Lease; used only together with --peer-advertise-ip')
    .option('--local-apiserver-token-file <file>', "bearer token for mvproxy's own requests to the local apiserver (identity Leases, discovery, CRD and APIService lists; never clients' requests), re-read when the file changes")
    .option('--server-id <id>', "this node's server ID, an RFC 1123 subdomain (default: derived from the host name, mvproxy-<hash>)")
    .option('--feature-gates <gates>', `comma-separated key=value pairs that describe feature gates; repeatable. Options are:\n${featureGateHelp()}`, collect, [] as string[])
    .option('--request-timeout <duration>', 'upper bound for non-long-running requests to an upstream', ms(DEFAULTS.requestTimeoutMs))
    .option('--upstream-connect-timeout <duration>', 'connect timeout to the local apiserver and peers; a dead upstream gets a 503 within it', ms(DEFAULTS.connectTimeoutMs))
    .option('--discovery-refresh-interval <duration>', 'how often local and peer discovery are refetched (If-None-Match); at least 1s', ms(DEFAULTS.discoveryRefreshIntervalMs))
    .option('--peer-discovery-grace-period <duration>', 'how long a peer whose discovery fetch fails keeps its last good view in routing', ms(DEFAULTS.peerDiscoveryGraceMs))
    .addOption(bool('legacy-discovery-fix', 'answer legacy discovery (/apis, /apis/<group>[/<version>]) from the peer-aggregated view, so clients without aggregated discovery (kubectl <= 1.29, python) see groups only peers serve; false = legacy discovery passes through to the local apiserver, as upstream', DEFAULTS.legacyDiscoveryFix))
    .option('--shutdown-delay-duration <duration>', 'after SIGTERM, how long /readyz fails (check "shutdown") while everything keeps serving, so load balancers drain this node (as kube-apiserver; 0s = no delay)', ms(DEFAULTS.shutdownDelayMs))
    .option('--shutdown-drain-timeout <duration>', 'after the delay, how long in-flight requests (watches, exec, logs too) may take to finish before their connections are closed; delay + drain must fit the pod\'s terminationGracePeriodSeconds', ms(DEFAULTS.shutdownDrainTimeoutMs))
    .option('--metrics-bind-address <host:port>', 'address of /metrics, /healthz, /livez, /readyz', DEFAULTS.metricsBindAddress)
    .option('-v, --v <level>', 'log verbosity, 0 to 10 (klog levels: 2 = default, 4 = one line per request); -v=N, -v N and --v=N all work', String(DEFAULTS.verbosity))
    .addOption(new Option('--logging-format <format>', 'log format').choices(['json', 'text']).default(DEFAULTS.loggingFormat));
}

/**
 * Rewrites the user arguments (argv without node and the script) into what commander parses the
 * kube way: `-v=4` → `--v=4` (pflag takes both); a kube boolean given bare (`--legacy-discovery-fix`)
 * → `--legacy-discovery-fix=true`, so the next argument is never taken as its value (pflag). A
 * bare boolean followed by a true/false word is an error that shows the `=` form.
 * Stops at `--`.
 */
export function normalizeArgs(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--') {
      out.push(...args.slice(i));
      break;
    }
    if (a.startsWith('-v=')) {
      out.push('--v=' + a.slice(3));
      continue;
    }
    if (a.startsWith('--') && KUBE_BOOL_FLAGS.includes(a.slice(2))) {
      const next = args[i + 1];
      if (next !== undefined && parseGoBool(next) !== undefined) {
        throw new FlagError(`invalid argument "${next}" after "${a}": a boolean flag takes its value with "=": ${a}=${next}`);
      }
      out.push(a + '=true');
      continue;
    }
    out.push(a);
  }
  return out;
}

/** Wraps a ValueError as kube's flag error ("invalid argument "x" for "--flag" flag: why"). */
function flagValue<T>(flag: string, raw: unknown, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof ValueError) throw new FlagError(`invalid argument "${String(raw)}" for "--${flag}" flag: ${e.message}`);
    throw e;
  }
}

function intFlag(name: string, v: string, check: (n: number) => number): number {
  return flagValue(name, v, () => {
    if (!/^\d+$/.test(v)) return check(NaN);
    return check(Number(v));
  });
}

interface FlagValues {
  config: DaemonConfig;
  /** Gates named in --feature-gates (AllAlpha/AllBeta included). */
  gates: Map<string, boolean>;
}

function parseFlagValues(o: Record<string, unknown>): FlagValues {
  const s = (k: string) => o[k] as string | undefined;
  const staticPeers = ((o.staticPeers as string[] | undefined) ?? []).map((p) => {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new FlagError(`invalid argument "${p}" for "--static-peers" flag: want <server-id>=<host:port>`);
    return flagValue('static-peers', p, () => checkStaticPeer({ id: p.slice(0, eq), address: p.slice(eq + 1) }));
  });
  const str = <T>(flag: string, check: (v: string) => T): T => {
    const v = s(attributeName(flag))!;
    return flagValue(flag, v, () => check(v));
  };
  const dur = (flag: string) => str(flag, (v) => checkDuration(v, DURATION_MIN.get(flag) ?? 0));
  const bool = (flag: string): boolean => {
    const v = o[attributeName(flag)];
    if (typeof v === 'boolean') return v;
    const b = parseGoBool(String(v));
    if (b === undefined) throw new FlagError(`invalid argument "${String(v)}" for "--${flag}" flag: strconv.ParseBool: parsing "${String(v)}": invalid syntax`);
    return b;
  };
  const gates = parseFeatureGateFlags((o.featureGates as string[] | undefined) ?? []);
  const serverId = s('serverId');
  const config: DaemonConfig = {
    serverID: serverId === undefined ? defaultServerID() : flagValue('server-id', serverId, () => checkServerID(serverId)),
    frontend: str('frontend', (v) => checkChoice<FrontendSetting>(v, ['auto', 'uws', 'node'])),
    bindAddress: str('bind-address', checkIP),
    tlsMinVersion: str('tls-min-version', checkTLSMinVersion),
    tlsCipherSuites: [...((o.tlsCipherSuites as string[] | undefined) ?? [])],
    securePort: intFlag('secure-port', s('securePort')!, checkPort),
    tlsCertFile: s('tlsCertFile') || undefined,
    tlsPrivateKeyFile: s('tlsPrivateKeyFile') || undefined,
    peerBindAddress: str('peer-bind-address', checkIP),
    peerPort: intFlag('peer-port', s('peerPort')!, checkPort),
    peerTLSCertFile: s('peerTlsCertFile') || undefined,
    peerTLSPrivateKeyFile: s('peerTlsPrivateKeyFile') || undefined,
    localAPIServer: str('local-apiserver', checkURL),
    localAPIServerCAFile: s('localApiserverCaFile') || undefined,
    localAPIServerServerName: s('localApiserverServerName') === undefined ? undefined : str('local-apiserver-server-name', checkDNSName),
    proxyClientCertFile: s('proxyClientCertFile') || undefined,
    proxyClientKeyFile: s('proxyClientKeyFile') || undefined,
    peerCAFile: s('peerCaFile') || undefined,
    requestheaderClientCAFile: s('requestheaderClientCaFile') || undefined,
    requestheaderAllowedNames: [...((o.requestheaderAllowedNames as string[] | undefined) ?? [])],
    clientCAFile: s('clientCaFile') || undefined,
    requestheaderUsernameHeaders: [...((o.requestheaderUsernameHeaders as string[] | undefined) ?? DEFAULT_USER_HEADERS)],
    requestheaderGroupHeaders: [...((o.requestheaderGroupHeaders as string[] | undefined) ?? DEFAULT_GROUP_HEADERS)],
    requestheaderExtraHeadersPrefix: [...((o.requestheaderExtraHeadersPrefix as string[] | undefined) ?? DEFAULT_EXTRA_PREFIX)],
    staticPeers,
    peerDiscovery: str('peer-discovery', (v) => checkChoice<PeerDiscoveryMode>(v, ['static', 'lease'])),
    peersFile: s('peersFile') || undefined,
    leaseNamespace: str('lease-namespace', checkNamespace),
    identityLeaseDurationSeconds: intFlag('identity-lease-duration-seconds', s('identityLeaseDurationSeconds')!, (n) => checkInt(n, 1, 86_400)),
    identityLeaseRenewIntervalSeconds: s('identityLeaseRenewIntervalSeconds') === undefined ? undefined : intFlag('identity-lease-renew-interval-seconds', s('identityLeaseRenewIntervalSeconds')!, (n) => checkInt(n, 1, 86_400)),
    peerProbeIntervalMs: dur('peer-probe-interval'),
    advertiseAddress: s('advertiseAddress') === undefined ? undefined : str('advertise-address', checkAdvertiseIP),
    peerAdvertiseIP: s('peerAdvertiseIp') === undefined ? undefined : str('peer-advertise-ip', checkAdvertiseIP),
    peerAdvertisePort: s('peerAdvertisePort') === undefined ? undefined : intFlag('peer-advertise-port', s('peerAdvertisePort')!, (n) => checkInt(n, 1, 65_535)),
    localAPIServerTokenFile: s('localApiserverTokenFile') || undefined,
    featureGates: resolveFeatureGates(gates),
    requestTimeoutMs: dur('request-timeout'),
    connectTimeoutMs: dur('upstream-connect-timeout'),
    discoveryRefreshIntervalMs: dur('discovery-refresh-interval'),
    peerDiscoveryGraceMs: dur('peer-discovery-grace-period'),
    legacyDiscoveryFix: bool('legacy-discovery-fix'),
    shutdownDelayMs: dur('shutdown-delay-duration'),
    shutdownDrainTimeoutMs: dur('shutdown-drain-timeout'),
    metricsBindAddress: str('metrics-bind-address', checkHostPort),
    verbosity: intFlag('v', s('v')!, (n) => checkInt(n, 0, 10)),
    loggingFormat: str('logging-format', (v) => checkChoice(v, ['json', 'text'] as const)),
  };
  return { config, gates };
}

/** Turns commander's parsed options into a DaemonConfig, checking every value (flags only: no --config, no cross-checks). */
export function configFromFlags(o: Record<string, unknown>): DaemonConfig {
  return parseFlagValues(o).config;
}

/**
 * Flags and --config merged by the kubelet rule, then cross-checked. `source(attribute)` is
 * commander's getOptionValueSource: 'cli' marks a flag given on the command line.
 * Throws FlagError, ConfigFileError or InvalidConfigError (all: exit 2).
 */
export function resolveConfig(o: Record<string, unknown>, source: (attribute: string) => string | undefined): DaemonConfig {
  const { config: flags, gates } = parseFlagValues(o);
  const file = typeof o.config === 'string' && o.config !== '' ? loadConfigFile(o.config) : undefined;
  const fromCLI = (key: keyof DaemonConfig) => {
    const st = SETTING_BY_KEY.get(key);
    const src = st ? source(attributeName(st.flag)) : undefined;
    return src === 'cli' || src === 'env';
  };
  const merged = mergeConfig(flags, file, fromCLI, gates);
  validateConfig(merged);
  return merged;
}

/** resolveConfig for a parsed commander program. */
export function configFromCommand(cmd: Command): DaemonConfig {
  return resolveConfig(cmd.opts(), (a) => cmd.getOptionValueSource(a));
}
