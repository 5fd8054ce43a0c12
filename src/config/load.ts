// --config FILE: a versioned YAML object with the same settings as the flags, and the rules that
// merge the two (kubelet's, operators.md §2):
//
//   apiVersion: mvproxy.config.k8s.io/v1alpha1
//   kind: MvproxyConfiguration
//
// - A flag given on the command line overrides the file's value; a flag left at its default does
//   not. featureGates merge per gate (kubelet): a gate named in --feature-gates wins, the file's
//   other gates stay.
// - Relative paths in the file resolve against the file's directory.
// - Strict: unknown fields, duplicate keys, wrong types and bad values are errors that name the
//   field path and the file, e.g.
//     error loading config file "/etc/mvproxy/config.yaml": unknown field "serving.bindAdress"
//   All errors of a file are reported at once, joined with "; ".
// - A field set to null (or a path set to "") counts as not set.
//
// SETTINGS below is the one table of settings: DaemonConfig key, flag, file field, value kind.

import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { checkCipherSuites, checkTLSVersion } from './tls-policy';
import { isIP } from 'node:net';
import { dirname, isAbsolute, resolve } from 'node:path';
import { isAlias, isMap, isScalar, isSeq, parseAllDocuments, type Document, type Node } from 'yaml';
import { FEATURE_GATES, isLoopback, type DaemonConfig } from './types';
import { goDurationMs, isKnownGate, resolveFeatureGates } from '../cli/featuregate';
import { isHostPort } from '../routing/routetable';

export const CONFIG_API_VERSION = 'mvproxy.config.k8s.io/v1alpha1';
export const CONFIG_KIND = 'MvproxyConfiguration';

/** A config file that cannot be read, parsed or accepted. The message names the file and the field. */
export class ConfigFileError extends Error {
  readonly code = 'MVP_ERR_CONFIG_FILE';
}

/** Settings that are each valid but do not fit together (flags and file merged). */
export class InvalidConfigError extends Error {
  readonly code = 'MVP_ERR_CONFIG_INVALID';
}

/** A value that is of the right type but not acceptable; the message is the reason only. */
export class ValueError extends Error {}

// ---------------------------------------------------------------------------------------------
// Value checks shared by flags and file.

export function checkPort(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ValueError('must be an integer from 0 to 65535');
  return n;
}

export function checkInt(n: number, min: number, max: number): number {
  if (!Number.isInteger(n) || n < min || n > max) throw new ValueError(`must be an integer from ${min} to ${max}`);
  return n;
}

export function checkIP(v: string): string {
  if (v !== 'localhost' && isIP(v) === 0) throw new ValueError('must be an IP address (or localhost)');
  return v;
}

export function checkTLSMinVersion(v: string): string {
  const why = checkTLSVersion(v);
  if (why) throw new ValueError(why);
  return v;
}

export function checkHostPort(v: string): string {
  if (!isHostPort(v)) throw new ValueError('want <host>:<port> (IPv6 in brackets: [::1]:10290)');
  return v;
}

export function checkURL(v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new ValueError('not a URL: want https://<host>:<port>');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new ValueError('want an https:// (or http://) URL');
  return v;
}

/** Go time.ParseDuration, at least `minMs`. */
export function checkDuration(v: string, minMs = 0): number {
  const n = goDurationMs(v);
  if (n === undefined) throw new ValueError(`time: invalid duration "${v}"`);
  if (n < minMs) throw new ValueError(minMs === 0 ? 'must not be negative' : `must be at least ${minMs >= 1000 ? minMs / 1000 + 's' : minMs + 'ms'}`);
  return n;
}

export function checkChoice<T extends string>(v: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(v)) throw new ValueError(`must be one of ${choices.join(', ')}`);
  return v as T;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Server IDs are kube-apiserver identity lease names: RFC 1123 subdomains. */
export function checkServerID(v: string): string {
  if (v.length === 0 || v.length > 253 || !DNS1123_SUBDOMAIN.test(v)) {
    throw new ValueError("must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters), like an identity lease name");
  }
  return v;
}

/** A DNS name for TLS server name checks (SNI): RFC 1123 subdomain, case-insensitive. */
export function checkDNSName(v: string): string {
  if (v.length === 0 || v.length > 253 || !DNS1123_SUBDOMAIN.test(v.toLowerCase())) throw new ValueError('must be a DNS name, e.g. kubernetes.default.svc');
  return v;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Namespaces are RFC 1123 labels. */
export function checkNamespace(v: string): string {
  if (v.length === 0 || v.length > 63 || !DNS1123_LABEL.test(v)) throw new ValueError("must be a namespace name: a lowercase RFC 1123 label (a-z, 0-9, '-'; at most 63 characters)");
  return v;
}

/** An address other hosts can dial: an IP, not a wildcard. */
export function checkAdvertiseIP(v: string): string {
  if (isIP(v) === 0) throw new ValueError('must be an IP address');
  if (v === '0.0.0.0' || v === '::' || /^[0:]+$/.test(v)) throw new ValueError('must not be an unspecified (wildcard) address: peers dial it');
  return v;
}

export function checkStaticPeer(p: { id: string; address: string }): { id: string; address: string } {
  try {
    checkServerID(p.id);
  } catch (e) {
    throw new ValueError(`peer ID "${p.id}" ${(e as Error).message}`);
  }
  if (!isHostPort(p.address)) throw new ValueError(`peer "${p.id}": address "${p.address}" is not <host>:<port>`);
  return p;
}

// ---------------------------------------------------------------------------------------------
// The settings table.

type Kind =
  | { t: 'string'; check?: (v: string) => unknown }
  | { t: 'path' }
  | { t: 'int'; check: (v: number) => number }
  | { t: 'bool' }
  | { t: 'duration'; minMs?: number }
  | { t: 'strings' }
  | { t: 'peers' }
  | { t: 'gates' };

export interface Setting {
  key: keyof DaemonConfig;
  /** Flag name without the dashes. */
  flag: string;
  /** Dotted path in the config file. */
  field: string;
  kind: Kind;
}

const port: Kind = { t: 'int', check: checkPort };

export const SETTINGS: readonly Setting[] = [
  { key: 'serverID', flag: 'server-id', field: 'serverID', kind: { t: 'string', check: checkServerID } },
  { key: 'frontend', flag: 'frontend', field: 'frontend', kind: { t: 'string', check: (v) => checkChoice(v, ['auto', 'uws', 'node']) } },
  { key: 'featureGates', flag: 'feature-gates', field: 'featureGates', kind: { t: 'gates' } },
  { key: 'bindAddress', flag: 'bind-address', field: 'serving.bindAddress', kind: { t: 'string', check: checkIP } },
  { key: 'tlsMinVersion', flag: 'tls-min-version', field: 'tls.minVersion', kind: { t: 'string', check: checkTLSMinVersion } },
  { key: 'tlsCipherSuites', flag: 'tls-cipher-suites', field: 'tls.cipherSuites', kind: { t: 'strings' } },
  { key: 'securePort', flag: 'secure-port', field: 'serving.securePort', kind: port },
  { key: 'tlsCertFile', flag: 'tls-cert-file', field: 'serving.certFile', kind: { t: 'path' } },
  { key: 'tlsPrivateKeyFile', flag: 'tls-private-key-file', field: 'serving.keyFile', kind: { t: 'path' } },
  { key: 'peerBindAddress', flag: 'peer-bind-address', field: 'peerServing.bindAddress', kind: { t: 'string', check: checkIP } },
  { key: 'peerPort', flag: 'peer-port', field: 'peerServing.port', kind: port },
  { key: 'peerTLSCertFile', flag: 'peer-tls-cert-file', field: 'peerServing.certFile', kind: { t: 'path' } },
  { key: 'peerTLSPrivateKeyFile', flag: 'peer-tls-private-key-file', field: 'peerServing.keyFile', kind: { t: 'path' } },
  { key: 'localAPIServer', flag: 'local-apiserver', field: 'localAPIServer.url', kind: { t: 'string', check: checkURL } },
  { key: 'localAPIServerCAFile', flag: 'local-apiserver-ca-file', field: 'localAPIServer.caFile', kind: { t: 'path' } },
  { key: 'localAPIServerServerName', flag: 'local-apiserver-server-name', field: 'localAPIServer.serverName', kind: { t: 'string', check: checkDNSName } },
  { key: 'peerCAFile', flag: 'peer-ca-file', field: 'peers.caFile', kind: { t: 'path' } },
  { key: 'proxyClientCertFile', flag: 'proxy-client-cert-file', field: 'peers.proxyClientCertFile', kind: { t: 'path' } },
  { key: 'proxyClientKeyFile', flag: 'proxy-client-key-file', field: 'peers.proxyClientKeyFile', kind: { t: 'path' } },
  { key: 'requestheaderClientCAFile', flag: 'requestheader-client-ca-file', field: 'peers.requestheaderClientCAFile', kind: { t: 'path' } },
  { key: 'requestheaderAllowedNames', flag: 'requestheader-allowed-names', field: 'peers.requestheaderAllowedNames', kind: { t: 'strings' } },
  { key: 'clientCAFile', flag: 'client-ca-file', field: 'serving.clientCAFile', kind: { t: 'path' } },
  { key: 'requestheaderUsernameHeaders', flag: 'requestheader-username-headers', field: 'identity.usernameHeaders', kind: { t: 'strings' } },
  { key: 'requestheaderGroupHeaders', flag: 'requestheader-group-headers', field: 'identity.groupHeaders', kind: { t: 'strings' } },
  { key: 'requestheaderExtraHeadersPrefix', flag: 'requestheader-extra-headers-prefix', field: 'identity.extraHeadersPrefix', kind: { t: 'strings' } },
  { key: 'staticPeers', flag: 'static-peers', field: 'peers.static', kind: { t: 'peers' } },
  { key: 'peerDiscovery', flag: 'peer-discovery', field: 'peers.discovery', kind: { t: 'string', check: (v) => checkChoice(v, ['static', 'lease']) } },
  { key: 'peersFile', flag: 'peers-file', field: 'peers.file', kind: { t: 'path' } },
  { key: 'leaseNamespace', flag: 'lease-namespace', field: 'peers.lease.namespace', kind: { t: 'string', check: checkNamespace } },
  { key: 'identityLeaseDurationSeconds', flag: 'identity-lease-duration-seconds', field: 'peers.lease.durationSeconds', kind: { t: 'int', check: (v) => checkInt(v, 1, 86_400) } },
  { key: 'identityLeaseRenewIntervalSeconds', flag: 'identity-lease-renew-interval-seconds', field: 'peers.lease.renewIntervalSeconds', kind: { t: 'int', check: (v) => checkInt(v, 1, 86_400) } },
  { key: 'peerProbeIntervalMs', flag: 'peer-probe-interval', field: 'peers.probeInterval', kind: { t: 'duration', minMs: 100 } },
  { key: 'advertiseAddress', flag: 'advertise-address', field: 'advertiseAddress', kind: { t: 'string', check: checkAdvertiseIP } },
  { key: 'peerAdvertiseIP', flag: 'peer-advertise-ip', field: 'peerServing.advertiseIP', kind: { t: 'string', check: checkAdvertiseIP } },
  { key: 'peerAdvertisePort', flag: 'peer-advertise-port', field: 'peerServing.advertisePort', kind: { t: 'int', check: (v) => checkInt(v, 1, 65_535) } },
  { key: 'localAPIServerTokenFile', flag: 'local-apiserver-token-file', field: 'localAPIServer.tokenFile', kind: { t: 'path' } },
  { key: 'requestTimeoutMs', flag: 'request-timeout', field: 'requestTimeout', kind: { t: 'duration', minMs: 1 } },
  { key: 'connectTimeoutMs', flag: 'upstream-connect-timeout', field: 'upstreamConnectTimeout', kind: { t: 'duration', minMs: 1 } },
  { key: 'discoveryRefreshIntervalMs', flag: 'discovery-refresh-interval', field: 'discovery.refreshInterval', kind: { t: 'duration', minMs: 1000 } },
  { key: 'peerDiscoveryGraceMs', flag: 'peer-discovery-grace-period', field: 'discovery.peerGracePeriod', kind: { t: 'duration' } },
  { key: 'legacyDiscoveryFix', flag: 'legacy-discovery-fix', field: 'discovery.legacyDiscoveryFix', kind: { t: 'bool' } },
  { key: 'metricsBindAddress', flag: 'metrics-bind-address', field: 'metrics.bindAddress', kind: { t: 'string', check: checkHostPort } },
  { key: 'loggingFormat', flag: 'logging-format', field: 'logging.format', kind: { t: 'string', check: (v) => checkChoice(v, ['json', 'text']) } },
  { key: 'verbosity', flag: 'v', field: 'logging.verbosity', kind: { t: 'int', check: (v) => checkInt(v, 0, 10) } },
  { key: 'shutdownDelayMs', flag: 'shutdown-delay-duration', field: 'shutdown.delayDuration', kind: { t: 'duration' } },
  { key: 'shutdownDrainTimeoutMs', flag: 'shutdown-drain-timeout', field: 'shutdown.drainTimeout', kind: { t: 'duration' } },
];

export const SETTING_BY_KEY: ReadonlyMap<keyof DaemonConfig, Setting> = new Map(SETTINGS.map((s) => [s.key, s]));

/** "--tls-cert-file (serving.certFile)": how errors about merged settings name one. */
export function settingName(key: keyof DaemonConfig): string {
  const s = SETTING_BY_KEY.get(key);
  return s ? `--${s.flag} (${s.field})` : key;
}

// ---------------------------------------------------------------------------------------------
// The file.

/** What a config file sets: only the settings present in it. */
export interface FileConfig {
  /** Absolute path of the file. */
  file: string;
  config: Partial<DaemonConfig>;
  /** Gates the file names (featureGates), AllAlpha/AllBeta included. */
  featureGates: Map<string, boolean>;
}

/** Reads and checks a config file. Throws ConfigFileError. Paths in it need not exist. */
export function loadConfigFile(file: string): FileConfig {
  const abs = resolve(file);
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (e) {
    throw new ConfigFileError(`error loading config file "${abs}": ${fsReason(e)}`);
  }
  return parseConfigFile(text, abs);
}

/** Checks the text of a config file; `file` (absolute) names it in errors and anchors relative paths. */
export function parseConfigFile(text: string, file: string): FileConfig {
  const errors: string[] = [];
  const out = walkFile(text, file, errors);
  if (errors.length > 0) throw new ConfigFileError(`error loading config file "${file}": ${errors.join('; ')}`);
  return out;
}

function fsReason(e: unknown): string {
  const code = (e as { code?: string }).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory';
    default:
      return (e as Error).message;
  }
}

type Tree = { [k: string]: Tree | Setting };

/** SETTINGS as a tree of field names. */
const TREE: Tree = (() => {
  const root: Tree = {};
  for (const s of SETTINGS) {
    const parts = s.field.split('.');
    let t = root;
    for (const p of parts.slice(0, -1)) t = (t[p] ??= {}) as Tree;
    t[parts[parts.length - 1]] = s;
  }
  return root;
})();

const isSetting = (x: Tree | Setting): x is Setting => typeof (x as Setting).key === 'string' && typeof (x as Setting).flag === 'string';

function typeName(n: Node | null | undefined): string {
  if (n == null) return 'null';
  if (isMap(n)) return 'object';
  if (isSeq(n)) return 'list';
  if (isScalar(n)) {
    const v = n.value;
    if (v === null) return 'null';
    if (typeof v === 'number' || typeof v === 'bigint') return Number.isInteger(Number(v)) ? 'integer' : 'number';
    return typeof v;
  }
  return 'unknown';
}

function walkFile(text: string, file: string, errors: string[]): FileConfig {
  const result: FileConfig = { file, config: {}, featureGates: new Map() };
  const docs = parseAllDocuments(text, { uniqueKeys: false, prettyErrors: true, merge: false });
  const list = Array.isArray(docs) ? docs : [];
  if (list.length > 1) {
    errors.push(`want one YAML document, found ${list.length}`);
    return result;
  }
  const doc = list[0] as Document.Parsed | undefined;
  if (!doc || doc.contents == null || (isScalar(doc.contents) && doc.contents.value === null)) {
    if (doc && doc.errors.length) errors.push(yamlReason(doc.errors[0]));
    else errors.push(`the file is empty: want apiVersion: ${CONFIG_API_VERSION}, kind: ${CONFIG_KIND}`);
    return result;
  }
  if (doc.errors.length > 0) {
    for (const e of doc.errors) errors.push(yamlReason(e));
    return result;
  }
  const deref = (n: unknown): Node | null => {
    let x = n as Node | null;
    for (let i = 0; i < 100 && x && isAlias(x); i++) x = x.resolve(doc) as Node | null;
    return x ?? null;
  };
  const root = deref(doc.contents);
  if (!isMap(root)) {
    errors.push(`want a ${CONFIG_KIND} object, got ${typeName(root)}`);
    return result;
  }

  // apiVersion and kind first: a file of another version gets that error, not a list of unknown fields.
  const top = new Map<string, Node | null>();
  for (const pair of root.items) {
    const k = deref(pair.key);
    if (isScalar(k) && (k.value === 'apiVersion' || k.value === 'kind')) top.set(k.value, deref(pair.value));
  }
  const meta = (name: 'apiVersion' | 'kind', want: string): boolean => {
    const n = top.get(name);
    if (n === undefined) {
      errors.push(`missing field "${name}": want ${name}: ${want}`);
      return false;
    }
    const v = isScalar(n) ? n.value : undefined;
    if (v !== want) {
      errors.push(`unsupported ${name} ${JSON.stringify(isScalar(n) ? n.value : typeName(n))}: want ${JSON.stringify(want)}`);
      return false;
    }
    return true;
  };
  const okVersion = meta('apiVersion', CONFIG_API_VERSION);
  const okKind = meta('kind', CONFIG_KIND);
  if (!okVersion || !okKind) return result;

  const dir = dirname(file);
  const walkMap = (node: Node, tree: Tree, prefix: string) => {
    if (!isMap(node)) return;
    const seen = new Set<string>();
    for (const pair of node.items) {
      const kn = deref(pair.key);
      if (!isScalar(kn) || typeof kn.value !== 'string') {
        errors.push(`field names must be strings, got ${typeName(kn)}${prefix ? ` in "${prefix}"` : ''}`);
        continue;
      }
      const name = kn.value;
      const path = prefix ? `${prefix}.${name}` : name;
      if (seen.has(name)) {
        errors.push(`duplicate field "${path}"`);
        continue;
      }
      seen.add(name);
      if (!prefix && (name === 'apiVersion' || name === 'kind')) continue;
      const spec = Object.prototype.hasOwnProperty.call(tree, name) ? tree[name] : undefined;
      if (!spec) {
        errors.push(`unknown field "${path}"`);
        continue;
      }
      const value = deref(pair.value);
      if (value === null || (isScalar(value) && value.value === null)) continue; // null = not set
      if (isSetting(spec)) setting(spec, value, path);
      else if (!isMap(value)) errors.push(`wrong type for field "${path}": want object, got ${typeName(value)}`);
      else walkMap(value, spec, path);
    }
  };

  const scalarOf = (node: Node, path: string, want: 'string' | 'integer' | 'boolean' | 'duration'): unknown => {
    const got = typeName(node);
    const ok = want === 'integer' ? got === 'integer' : want === 'duration' ? got === 'string' : got === want;
    if (!ok || !isScalar(node)) {
      errors.push(`wrong type for field "${path}": want ${want === 'duration' ? 'a duration string such as "30s"' : want}, got ${got}`);
      return undefined;
    }
    return want === 'integer' ? Number(node.value) : node.value;
  };
  const invalid = (path: string, v: unknown, e: unknown) => {
    if (!(e instanceof ValueError)) throw e;
    errors.push(`invalid value ${JSON.stringify(v)} for field "${path}": ${e.message}`);
  };
  const stringList = (node: Node, path: string): string[] | undefined => {
    if (!isSeq(node)) {
      errors.push(`wrong type for field "${path}": want list, got ${typeName(node)}`);
      return undefined;
    }
    const out: string[] = [];
    node.items.forEach((item, i) => {
      const v = scalarOf(deref(item) ?? ({} as Node), `${path}[${i}]`, 'string');
      if (typeof v === 'string') out.push(v);
    });
    return out.length === node.items.length ? out : undefined;
  };

  const setting = (s: Setting, node: Node, path: string) => {
    const cfg = result.config as Record<string, unknown>;
    const k = s.kind;
    switch (k.t) {
      case 'string': {
        const v = scalarOf(node, path, 'string');
        if (typeof v !== 'string') return;
        try {
          k.check?.(v);
          cfg[s.key] = v;
        } catch (e) {
          invalid(path, v, e);
        }
        return;
      }
      case 'path': {
        const v = scalarOf(node, path, 'string');
        if (typeof v !== 'string' || v === '') return;
        cfg[s.key] = isAbsolute(v) ? v : resolve(dir, v);
        return;
      }
      case 'int': {
        const v = scalarOf(node, path, 'integer');
        if (typeof v !== 'number') return;
        try {
          cfg[s.key] = k.check(v);
        } catch (e) {
          invalid(path, v, e);
        }
        return;
      }
      case 'bool': {
        const v = scalarOf(node, path, 'boolean');
        if (typeof v === 'boolean') cfg[s.key] = v;
        return;
      }
      case 'duration': {
        const v = scalarOf(node, path, 'duration');
        if (typeof v !== 'string') return;
        try {
          cfg[s.key] = checkDuration(v, k.minMs);
        } catch (e) {
          invalid(path, v, e);
        }
        return;
      }
      case 'strings': {
        const v = stringList(node, path);
        if (v) cfg[s.key] = v.map((x) => x.trim()).filter(Boolean);
        return;
      }
      case 'peers': {
        if (!isSeq(node)) {
          errors.push(`wrong type for field "${path}": want list of {id, address}, got ${typeName(node)}`);
          return;
        }
        const peers: { id: string; address: string }[] = [];
        node.items.forEach((raw, i) => {
          const item = deref(raw);
          const ipath = `${path}[${i}]`;
          if (!isMap(item)) {
            errors.push(`wrong type for field "${ipath}": want object {id, address}, got ${typeName(item)}`);
            return;
          }
          const fields: Record<string, string> = {};
          const seen = new Set<string>();
          for (const pair of item.items) {
            const kn = deref(pair.key);
            const name = isScalar(kn) ? String(kn.value) : '?';
            const fpath = `${ipath}.${name}`;
            if (seen.has(name)) {
              errors.push(`duplicate field "${fpath}"`);
              continue;
            }
            seen.add(name);
            if (name !== 'id' && name !== 'address') {
              errors.push(`unknown field "${fpath}"`);
              continue;
            }
            const v = scalarOf(deref(pair.value) ?? ({} as Node), fpath, 'string');
            if (typeof v === 'string') fields[name] = v;
          }
          for (const need of ['id', 'address']) if (!seen.has(need)) errors.push(`missing field "${ipath}.${need}"`);
          if (fields.id === undefined || fields.address === undefined) return;
          try {
            checkServerID(fields.id);
          } catch (e) {
            invalid(`${ipath}.id`, fields.id, e);
            return;
          }
          try {
            checkHostPort(fields.address);
          } catch (e) {
            invalid(`${ipath}.address`, fields.address, e);
            return;
          }
          peers.push({ id: fields.id, address: fields.address });
        });
        if (peers.length === node.items.length) cfg[s.key] = peers;
        return;
      }
      case 'gates': {
        if (!isMap(node)) {
          errors.push(`wrong type for field "${path}": want a map of gate names to true|false, got ${typeName(node)}`);
          return;
        }
        const seen = new Set<string>();
        for (const pair of node.items) {
          const kn = deref(pair.key);
          const name = isScalar(kn) ? String(kn.value) : '?';
          const gpath = `${path}.${name}`;
          if (seen.has(name)) {
            errors.push(`duplicate field "${gpath}"`);
            continue;
          }
          seen.add(name);
          if (!isKnownGate(name)) {
            errors.push(`unknown field "${gpath}": unrecognized feature gate: ${name}`);
            continue;
          }
          const v = scalarOf(deref(pair.value) ?? ({} as Node), gpath, 'boolean');
          if (typeof v === 'boolean') result.featureGates.set(name, v);
        }
        cfg.featureGates = resolveFeatureGates(result.featureGates);
        return;
      }
    }
  };

  walkMap(root, TREE, '');
  return result;
}

function yamlReason(e: { message: string; code?: string }): string {
  const first = e.message.split('\n')[0].replace(/:$/, '');
  return `yaml: ${first}`;
}

// ---------------------------------------------------------------------------------------------
// Merge and cross-checks.

/**
 * The kubelet rule: each setting from the command line when it was given there (`fromCLI(key)`),
 * else from the file when the file sets it, else the flag's default (in `flags`).
 * featureGates merge per gate: `flagGates` (named in --feature-gates) over the file's gates.
 */
export function mergeConfig(
  flags: DaemonConfig,
  file: FileConfig | undefined,
  fromCLI: (key: keyof DaemonConfig) => boolean,
  flagGates: ReadonlyMap<string, boolean> = new Map(),
): DaemonConfig {
  if (!file) return flags;
  const out = { ...flags } as Record<string, unknown>;
  for (const s of SETTINGS) {
    if (s.key === 'featureGates') continue;
    if (!fromCLI(s.key) && s.key in file.config) out[s.key] = (file.config as Record<string, unknown>)[s.key];
  }
  out.featureGates = resolveFeatureGates(new Map([...file.featureGates, ...flagGates]));
  return out as unknown as DaemonConfig;
}

/** Cross-field checks on the merged settings (each value is already valid). Throws InvalidConfigError. */
export function validateConfig(c: DaemonConfig): void {
  const problems: string[] = [];
  const pair = (a: keyof DaemonConfig, b: keyof DaemonConfig) => {
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
const KEY_PAIRS: [keyof DaemonConfig, keyof DaemonConfig][] = [
  ['tlsCertFile', 'tlsPrivateKeyFile'],
  ['peerTLSCertFile', 'peerTLSPrivateKeyFile'],
  ['proxyClientCertFile', 'proxyClientKeyFile'],
];
const CA_FILES: (keyof DaemonConfig)[] = ['clientCAFile', 'peerCAFile', 'localAPIServerCAFile', 'requestheaderClientCAFile'];

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
  const code = (e as { code?: string } | null)?.code;
  return code === 'MVP_ERR_FLAG' || code === 'MVP_ERR_CONFIG_FILE' || code === 'MVP_ERR_CONFIG_INVALID' || code === 'MVP_ERR_CONFIG';
}
