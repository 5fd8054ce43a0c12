// Which front end serves the client listener (--frontend=auto|uws|node).
//
// uWebSockets.js is the faster one, but which build loads depends on the runtime: uwebsockets@3.0.6
// carries one binary per Node ABI, and the Node 22/24 ones (ABI 127/137/141) need glibc ≥ 2.38
// (Debian 13 and newer distributions; docs/dependencies.md §1, §4). Only those builds expose the
// verified client certificate (`HttpResponse.getX509Certificate`). So:
// - auto (default): uWS when its binary loads *and* can serve this configuration, else node:https;
//   the reason is logged once and carried by mvproxy_build_info;
// - uws: the same checks, but a configuration uWS cannot serve is an error (exit 2), never a silent
//   downgrade of a client-certificate user to anonymous;
// - node: always node:http/https (also the one that carries SPDY upgrades and HTTP/2).

export type FrontendSetting = 'auto' | 'uws' | 'node';
export type ServingFrontend = 'uws' | 'node';

type UWS = typeof import('uwebsockets');

/** What loading the native module gave (uws.ts loadUWS): the module, or why it cannot load. */
export type UWSLoad = { uws: UWS } | { error: Error };

/** What the client listener must be able to do for this configuration. */
export interface FrontendNeeds {
  /** --client-ca-file: verified client certificates forwarded as front-proxy identity. */
  clientCertificates: boolean;
  /** The TLS listener's --tls-min-version (node:tls name); undefined for plain HTTP. uSockets serves TLS 1.2 and newer, nothing else. */
  tlsMinVersion?: string;
}

export type FrontendChoice = { frontend: 'uws'; uws: UWS; reason: string } | { frontend: 'node'; reason: string } | { error: string };

/** The first Node ABI whose uWS binary in uwebsockets@3.0.6 has getX509Certificate (Node 22). */
const FIRST_ABI_WITH_CLIENT_CERTIFICATES = 127;

/** `abi`: the Node ABI of the loaded binary (this process's; a parameter for tests). */
export function chooseFrontend(setting: FrontendSetting, needs: FrontendNeeds, load: () => UWSLoad, abi = Number(process.versions.modules)): FrontendChoice {
  if (setting === 'node') return { frontend: 'node', reason: '--frontend=node' };
  const loaded = load();
  let why: string | undefined;
  if ('error' in loaded) why = `uWebSockets.js cannot load on this runtime (Node ${process.version}, ABI ${abi}): ${firstLine(loaded.error.message)}`;
  else if (needs.clientCertificates && !uwsReadsClientCertificates(abi)) {
    why = `--client-ca-file needs client certificates, which the uWebSockets.js build for Node ABI ${abi} cannot read (builds for Node 22+ on glibc >= 2.38 can)`;
  } else if (needs.tlsMinVersion !== undefined && needs.tlsMinVersion !== 'TLSv1.2') {
    // uSockets fixes its lowest version at TLS 1.2 and has no option to change it.
    why = `--tls-min-version other than VersionTLS12 cannot be applied by uWebSockets.js (it always accepts TLS 1.2 and 1.3)`;
  }
  if (why !== undefined) {
    if (setting === 'uws') return { error: `--frontend=uws cannot serve this configuration: ${why}; use --frontend=node or --frontend=auto` };
    return { frontend: 'node', reason: why };
  }
  const uws = (loaded as { uws: UWS }).uws;
  return { frontend: 'uws', uws, reason: `uWebSockets.js loaded (Node ${process.version}, ABI ${abi}${needs.clientCertificates ? ', client certificates readable' : ''})` };
}

/**
 * The peer listener's front end (--peer-frontend). `auto` is node:http2: it speaks HTTP/2 beside
 * HTTP/1.1, so a source mvproxy sends its peer-routed watches as streams of a few shared
 * connections (upstream/h2) — a node whose apiserver restarts sends all its clients' watches to a
 * peer (--local-failover) — and it costs less per peer LIST. uWS (`uws`, where the client listener
 * is uWS and the build reads client certificates) costs less per peer GET but speaks HTTP/1.1 only:
 * one connection per peer-routed watch. Same-run wrk (1 round, CPU µs per request, A + B):
 * uWS peer listener GET 78 (39 + 39), LIST 381 (283 + 99); node:http2 GET 111 (48 + 63), LIST 262
 * (120 + 143): uWS writes each 16 KiB TLS record with its own send, and A pays a wakeup for each.
 */
export function choosePeerFrontend(client: 'uws' | 'node', tlsMinVersion: string, abi = Number(process.versions.modules), setting: 'auto' | 'uws' | 'node' = 'auto'): { frontend: 'uws' | 'node'; reason: string } {
  if (setting !== 'uws') return { frontend: 'node', reason: setting === 'node' ? '--peer-frontend=node' : 'node:http2 speaks HTTP/2: peer-routed watches share connections (--peer-frontend=uws for uWS)' };
  if (client !== 'uws') return { frontend: 'node', reason: 'the client listener is node:http' };
  if (!uwsReadsClientCertificates(abi)) return { frontend: 'node', reason: `the uWebSockets.js build for Node ABI ${abi} cannot read the peers' client certificates` };
  if (tlsMinVersion !== 'TLSv1.2') return { frontend: 'node', reason: '--tls-min-version other than VersionTLS12 cannot be applied by uWebSockets.js' };
  return { frontend: 'uws', reason: 'uWebSockets.js reads client certificates on this build' };
}

export function uwsReadsClientCertificates(abi = Number(process.versions.modules)): boolean {
  return abi >= FIRST_ABI_WITH_CLIENT_CERTIFICATES;
}

/** uws.js wraps the dlopen error in a long paragraph; its last line names the missing symbol or file. */
function firstLine(message: string): string {
  const lines = message.split('\n').map((l) => l.trim()).filter(Boolean);
  const specific = lines.find((l) => /GLIBC|cannot open|No such file|not found/i.test(l));
  return specific ?? lines[0] ?? message;
}
