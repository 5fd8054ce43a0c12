// Command-line flags, kube style (--flag=value, --flag value, booleans --flag/--flag=false,
// comma lists, repeatable --feature-gates), parsed with commander 14 (stack.md §6).
// Defaults come from config/types.ts DEFAULTS: one place for each fact.

import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { Command, Option } from 'commander';
import { DEFAULTS, FEATURE_GATES, type DaemonConfig, type Frontend } from '../config/types';
import { FlagError, parseDuration, parseFeatureGates } from './featuregate';
import { isHostPort } from '../routing/routetable';

const collect = (v: string, prev: string[]) => [...prev, v];
const list = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);
const ms = (n: number) => (n % 60_000 === 0 ? `${n / 60_000}m0s` : `${n / 1000}s`);

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
  const gates = Object.entries(FEATURE_GATES).map(([k, v]) => `${k}=true|false (${v.preRelease} - default=${v.default})`).join('\n');
  return cmd
    .addOption(new Option('--frontend <name>', 'client listener front end: uws (uWebSockets.js) or node (node:http/https; carries exec/attach/port-forward upgrades)').choices(['uws', 'node']).default(DEFAULTS.frontend))
    .option('--bind-address <ip>', 'address of the client listener; plain HTTP is allowed only on loopback', DEFAULTS.bindAddress)
    .option('--secure-port <port>', 'port of the client listener (0 = any free port)', String(DEFAULTS.securePort))
    .option('--tls-cert-file <file>', 'serving certificate of the client listener (and of the peer listener unless --peer-tls-cert-file)')
    .option('--tls-private-key-file <file>', 'key for --tls-cert-file')
    .option('--peer-bind-address <ip>', 'address of the peer listener (mutual TLS)', DEFAULTS.peerBindAddress)
    .option('--peer-port <port>', 'port of the peer listener', String(DEFAULTS.peerPort))
    .option('--peer-tls-cert-file <file>', 'serving certificate of the peer listener; must be valid for kubernetes.default.svc')
    .option('--peer-tls-private-key-file <file>', 'key for --peer-tls-cert-file')
    .option('--local-apiserver <url>', "this node's kube-apiserver", DEFAULTS.localAPIServer)
    .option('--local-apiserver-ca-file <file>', "CA bundle that verifies the local kube-apiserver's serving certificate")
    .option('--peer-ca-file <file>', "CA bundle that verifies peers' serving certificates (as kubernetes.default.svc); required for the proxy")
    .option('--proxy-client-cert-file <file>', 'client certificate presented to peers')
    .option('--proxy-client-key-file <file>', 'key for --proxy-client-cert-file')
    .option('--requestheader-client-ca-file <file>', "CA bundle that verifies peers' proxy client certificates on the peer listener")
    .option('--requestheader-allowed-names <names>', 'comma-separated common names allowed on the peer listener; empty = any name signed by the CA', list, [] as string[])
    .option('--static-peers <list>', 'comma-separated peers as <server-id>=<host:port> of their peer listeners', list, [] as string[])
    .option('--server-id <id>', 'this node\'s server ID (default: derived from the host name)')
    .option('--feature-gates <gates>', `comma-separated key=value pairs that describe feature gates; repeatable. Options are:\n${gates}`, collect, [] as string[])
    .option('--request-timeout <duration>', 'upper bound for non-long-running requests to an upstream', ms(DEFAULTS.requestTimeoutMs))
    .option('--upstream-connect-timeout <duration>', 'connect timeout to the local apiserver and peers; a dead upstream gets a 503 within it', ms(DEFAULTS.connectTimeoutMs))
    .option('--discovery-refresh-interval <duration>', 'how often local and peer discovery are refetched (If-None-Match)', ms(DEFAULTS.discoveryRefreshIntervalMs))
    .option('--peer-discovery-grace-period <duration>', "how long a peer whose discovery fetch fails keeps its last good view in routing", ms(DEFAULTS.peerDiscoveryGraceMs))
    .option('--metrics-bind-address <host:port>', 'address of /metrics, /healthz, /livez, /readyz', DEFAULTS.metricsBindAddress)
    .option('-v, --v <level>', 'log verbosity (klog levels: 2 = default, 4 = one line per request)', String(DEFAULTS.verbosity))
    .addOption(new Option('--logging-format <format>', 'log format').choices(['json', 'text']).default(DEFAULTS.loggingFormat));
}

function intFlag(name: string, v: string, min: number, max: number): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < min || n > max) throw new FlagError(`invalid argument "${v}" for "--${name}" flag: must be an integer from ${min} to ${max}`);
  return n;
}

/** Turns commander's parsed options into a DaemonConfig, checking every value. */
export function configFromFlags(o: Record<string, unknown>): DaemonConfig {
  const s = (k: string) => o[k] as string | undefined;
  const staticPeers = (o.staticPeers as string[]).map((p) => {
    const eq = p.indexOf('=');
    const id = p.slice(0, eq);
    const address = p.slice(eq + 1);
    if (eq <= 0 || !isHostPort(address)) throw new FlagError(`invalid argument "${p}" for "--static-peers" flag: want <server-id>=<host:port>`);
    return { id, address };
  });
  const metrics = s('metricsBindAddress')!;
  if (!isHostPort(metrics)) throw new FlagError(`invalid argument "${metrics}" for "--metrics-bind-address" flag: want <host:port>`);
  try {
    new URL(s('localApiserver')!);
  } catch {
    throw new FlagError(`invalid argument "${s('localApiserver')}" for "--local-apiserver" flag: not a URL`);
  }
  return {
    serverID: s('serverId') ?? defaultServerID(),
    frontend: s('frontend') as Frontend,
    bindAddress: s('bindAddress')!,
    securePort: intFlag('secure-port', s('securePort')!, 0, 65535),
    tlsCertFile: s('tlsCertFile'),
    tlsPrivateKeyFile: s('tlsPrivateKeyFile'),
    peerBindAddress: s('peerBindAddress')!,
    peerPort: intFlag('peer-port', s('peerPort')!, 0, 65535),
    peerTLSCertFile: s('peerTlsCertFile'),
    peerTLSPrivateKeyFile: s('peerTlsPrivateKeyFile'),
    localAPIServer: s('localApiserver')!,
    localAPIServerCAFile: s('localApiserverCaFile'),
    proxyClientCertFile: s('proxyClientCertFile'),
    proxyClientKeyFile: s('proxyClientKeyFile'),
    peerCAFile: s('peerCaFile'),
    requestheaderClientCAFile: s('requestheaderClientCaFile'),
    requestheaderAllowedNames: o.requestheaderAllowedNames as string[],
    staticPeers,
    featureGates: parseFeatureGates(o.featureGates as string[]),
    requestTimeoutMs: parseDuration('request-timeout', s('requestTimeout')!),
    connectTimeoutMs: parseDuration('upstream-connect-timeout', s('upstreamConnectTimeout')!),
    discoveryRefreshIntervalMs: parseDuration('discovery-refresh-interval', s('discoveryRefreshInterval')!),
    peerDiscoveryGraceMs: parseDuration('peer-discovery-grace-period', s('peerDiscoveryGracePeriod')!),
    metricsBindAddress: metrics,
    verbosity: intFlag('v', s('v')!, 0, 10),
    loggingFormat: s('loggingFormat') as 'json' | 'text',
  };
}
