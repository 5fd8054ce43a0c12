// Checks on the merged configuration (flags and --config), before anything starts: settings
// that are each valid but do not fit together, files that cannot be read, certificate/key pairs
// that do not match. Each problem names the setting as --flag (file.field); all problems are
// reported at once, joined with "; ". Configuration errors exit 2 (main.ts).

import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { createSecureContext } from 'node:tls';
import { ErrorCode, errorCode } from '../api/errors';
import { FEATURE_GATES } from './featuregate';
import { fsReason } from './load';
import { SETTINGS, settingName, type SettingKey } from './settings';
import { checkCipherSuites } from './tls-policy';
import type { DaemonConfig } from './types';
import { splitHostPort } from '../gocompat/net';
import { isLoopback } from './values';

/** Settings that are each valid but do not fit together (flags and file merged). */
export class InvalidConfigError extends Error {
  readonly code = ErrorCode.MVP_ERR_CONFIG_INVALID;
}

/**
 * Two of the daemon's listeners on one port. Every listener takes SO_REUSEPORT (--reuse-port, and
 * uWS always), so the second bind succeeds and the kernel splits connections between them: a TLS
 * client would reach the plain metrics listener on every other connection. Refused here instead.
 */
function sharedPorts(c: DaemonConfig, peerListens: boolean, problems: string[]): void {
  const metrics = splitHostPort(c.metricsBindAddress);
  const listeners: { key: SettingKey; host: string; port: number }[] = [
    { key: 'securePort', host: c.bindAddress, port: c.securePort },
    { key: 'metricsBindAddress', host: metrics.host, port: metrics.port },
  ];
  if (peerListens) listeners.push({ key: 'peerPort', host: c.peerBindAddress, port: c.peerPort });
  const overlap = (a: string, b: string) => {
    const [x, y] = [boundAddress(a), boundAddress(b)];
    return x === y || x === ANY || y === ANY;
  };
  for (let i = 0; i < listeners.length; i++) {
    for (let j = i + 1; j < listeners.length; j++) {
      const [a, b] = [listeners[i]!, listeners[j]!];
      if (a.port !== 0 && a.port === b.port && overlap(a.host, b.host)) {
        problems.push(`${settingName(a.key)} and ${settingName(b.key)} are both port ${a.port}: each listener needs its own port (they listen with SO_REUSEPORT, so the kernel would split connections between them)`);
      }
    }
  }
}

/** A listener's address that may be any (a wildcard, a host name, localhost): it overlaps every other. */
const ANY = '*';

/**
 * The address a listener binds, one spelling per address: IPv6 compressed (::0, 0:0:0:0:0:0:0:1 and
 * the like are :: and ::1), an IPv4-mapped one as its IPv4 address; ANY for a wildcard or a name
 * (localhost is 127.0.0.1 and ::1, a host name whatever it resolves to). Helper 8 had two listeners
 * on one port through `localhost` against 127.0.0.1 and through long IPv6 forms.
 */
function boundAddress(host: string): string {
  if (isIPv4(host)) return host === '0.0.0.0' ? ANY : host;
  if (!isIPv6(host)) return ANY;
  // A zone (fe80::1%eth0) is part of the bind but not of a URL host: set aside, put back after.
  const percent = host.indexOf('%');
  if (percent >= 0) return `${boundAddress(host.slice(0, percent))}%${host.slice(percent + 1)}`;
  const v6 = new URL(`http://[${host}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v6);
  if (mapped) {
    const [hi, lo] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
    return boundAddress(`${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`);
  }
  return v6 === '::' ? ANY : v6;
}

/** Cross-field checks on the merged settings (each value is already valid). Throws InvalidConfigError. */
export function validateConfig(c: DaemonConfig): void {
  const problems: string[] = [];
  const pair = (a: SettingKey, b: SettingKey) => {
    if (!!c[a] !== !!c[b]) problems.push(`${settingName(c[a] ? a : b)} is set but ${settingName(c[a] ? b : a)} is not: set both or neither`);
  };
  pair('tlsCertFile', 'tlsPrivateKeyFile');
  pair('peerTLSCertFile', 'peerTLSPrivateKeyFile');
  pair('proxyClientCertFile', 'proxyClientKeyFile');
  const suites = checkCipherSuites(c.tlsCipherSuites);
  if (suites) problems.push(`${settingName('tlsCipherSuites')}: ${suites}`);
  if (!c.tlsCertFile && !isLoopback(c.bindAddress)) {
    problems.push(`${settingName('bindAddress')} is ${c.bindAddress}, not a loopback address: plain HTTP is only served on loopback; set ${settingName('tlsCertFile')} and ${settingName('tlsPrivateKeyFile')}`);
  }
  const gateOn = c.featureGates.UnknownVersionInteroperabilityProxy ?? FEATURE_GATES.UnknownVersionInteroperabilityProxy?.default;
  if (gateOn && c.peerCAFile) {
    // The peer listener starts: it needs a serving certificate and the CA of peers' client certificates.
    if (!c.peerTLSCertFile && !c.tlsCertFile) {
      problems.push(`the peer listener needs a serving certificate: set ${settingName('peerTLSCertFile')} and ${settingName('peerTLSPrivateKeyFile')} (or ${settingName('tlsCertFile')} and ${settingName('tlsPrivateKeyFile')})`);
    }
    if (!c.requestheaderClientCAFile) problems.push(`the peer listener needs ${settingName('requestheaderClientCAFile')} to verify peers' proxy client certificates`);
  }
  sharedPorts(c, !!(gateOn && c.peerCAFile), problems);
  if (c.clientCAFile) {
    if (!c.tlsCertFile) problems.push(`${settingName('clientCAFile')} needs TLS on the client listener: set ${settingName('tlsCertFile')} and ${settingName('tlsPrivateKeyFile')}`);
    if (!c.proxyClientCertFile) problems.push(`${settingName('clientCAFile')} forwards certificate users as front-proxy headers, which the apiserver trusts only with a proxy client certificate: set ${settingName('proxyClientCertFile')} and ${settingName('proxyClientKeyFile')}`);
  }
  if (c.peerDiscovery === 'lease') {
    if (c.staticPeers.length > 0) problems.push(`${settingName('staticPeers')} is set but ${settingName('peerDiscovery')} is lease: static peers apply only with --peer-discovery=static`);
    if (c.peersFile) problems.push(`${settingName('peersFile')} is set but ${settingName('peerDiscovery')} is lease: a peers file applies only with --peer-discovery=static`);
  }
  if (c.identityLeaseRenewIntervalSeconds !== undefined && c.identityLeaseRenewIntervalSeconds >= c.identityLeaseDurationSeconds) {
    problems.push(`${settingName('identityLeaseRenewIntervalSeconds')} (${c.identityLeaseRenewIntervalSeconds}) must be less than ${settingName('identityLeaseDurationSeconds')} (${c.identityLeaseDurationSeconds}), or the lease expires between renewals`);
  }
  const ids = new Set<string>();
  for (const p of c.staticPeers) {
    if (ids.has(p.id)) problems.push(`${settingName('staticPeers')}: peer "${p.id}" is listed twice`);
    if (p.id === c.serverID) problems.push(`${settingName('staticPeers')}: peer "${p.id}" has this node's server ID (${settingName('serverID')})`);
    ids.add(p.id);
  }
  if (problems.length > 0) throw new InvalidConfigError(problems.join('; '));
}

/** Every file setting that is set must name a readable file (checked before anything starts). */
export function checkFilesReadable(c: DaemonConfig, read: (f: string) => unknown = (f) => readFileSync(f)): void {
  const problems: string[] = [];
  for (const s of SETTINGS) {
    if (s.kind.t !== 'path') continue;
    const f = c[s.key] as string | undefined;
    if (!f) continue;
    try {
      read(f);
    } catch (e) {
      problems.push(`${settingName(s.key)}: open ${f}: ${fsReason(e)}`);
    }
  }
  if (problems.length > 0) throw new InvalidConfigError(problems.join('; '));
}

/** The certificate/key pairs and CA bundles a configuration names. */
const KEY_PAIRS: [SettingKey, SettingKey][] = [
  ['tlsCertFile', 'tlsPrivateKeyFile'],
  ['peerTLSCertFile', 'peerTLSPrivateKeyFile'],
  ['proxyClientCertFile', 'proxyClientKeyFile'],
];
const CA_FILES: SettingKey[] = ['clientCAFile', 'peerCAFile', 'localAPIServerCAFile', 'requestheaderClientCAFile'];

/** OpenSSL's words, as an operator reads them. */
function tlsReason(e: unknown): string {
  const m = (e as Error).message ?? String(e);
  if (/key values mismatch/i.test(m)) return 'the private key does not belong to the certificate';
  if (/DECODER routines::unsupported|no start line|PEM|ASN1|bad base64/i.test(m)) return `not a PEM file of the expected kind (${m})`;
  return m;
}

/**
 * Every certificate/key pair loads and matches, every CA bundle parses (checked before anything
 * starts: a bad pair would otherwise surface as an OpenSSL error with a stack from a listener).
 */
export function checkTLSFiles(c: DaemonConfig, read: (f: string) => Buffer = (f) => readFileSync(f)): void {
  const problems: string[] = [];
  for (const [certKey, keyKey] of KEY_PAIRS) {
    const cert = c[certKey] as string | undefined;
    const key = c[keyKey] as string | undefined;
    if (!cert || !key) continue;
    try {
      createSecureContext({ cert: read(cert), key: read(key) });
    } catch (e) {
      problems.push(`${settingName(certKey)} and ${settingName(keyKey)}: ${tlsReason(e)}`);
    }
  }
  for (const k of CA_FILES) {
    const f = c[k] as string | undefined;
    if (!f) continue;
    try {
      createSecureContext({ ca: read(f) });
    } catch (e) {
      problems.push(`${settingName(k)}: ${tlsReason(e)}`);
    }
  }
  if (problems.length > 0) throw new InvalidConfigError(problems.join('; '));
}

/** Configuration errors: exit 2 with nothing started. */
export function isConfigError(e: unknown): e is Error {
  const code = errorCode(e);
  return code !== undefined && CONFIG_ERRORS.includes(code);
}

const CONFIG_ERRORS: readonly ErrorCode[] = [ErrorCode.MVP_ERR_FLAG, ErrorCode.MVP_ERR_CONFIG_FILE, ErrorCode.MVP_ERR_CONFIG_INVALID, ErrorCode.MVP_ERR_CONFIG];
