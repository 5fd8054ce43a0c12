// --config FILE: a versioned YAML object with the same settings as the flags, and the rules that
// merge the two (the kubelet's rule, docs/operating.md §1):
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
// The file's fields and their kinds come from the settings table (config/settings.ts): this module
// reads each kind of YAML value, the table says which field has which kind.

import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { Document, Node } from 'yaml';
import { yaml } from './yaml';
import { ErrorCode } from '../api/errors';
import { isKnownGate, resolveFeatureGates } from './featuregate';
import { SETTINGS, type Setting, type SettingKey } from './settings';
import type { DaemonConfig } from './types';
import { ValueError, checkChoice, checkDuration, peerProblem, type StaticPeer } from './values';

export const CONFIG_API_VERSION = 'mvproxy.config.k8s.io/v1alpha1';
export const CONFIG_KIND = 'MvproxyConfiguration';

/** A config file that cannot be read, parsed or accepted. The message names the file and the field. */
export class ConfigFileError extends Error {
  readonly code = ErrorCode.MVP_ERR_CONFIG_FILE;
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

/** An OS error as an operator reads it: the config file, and the files settings name (config/validate.ts). */
export function fsReason(e: unknown): string {
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

type Entry = Setting & { key: SettingKey };
type Tree = { [k: string]: Tree | Entry };

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

const isSetting = (x: Tree | Entry): x is Entry => typeof (x as Entry).key === 'string' && typeof (x as Entry).flag === 'string';

function typeName(n: Node | null | undefined): string {
  if (n == null) return 'null';
  if (yaml().isMap(n)) return 'object';
  if (yaml().isSeq(n)) return 'list';
  if (yaml().isScalar(n)) {
    const v = n.value;
    if (v === null) return 'null';
    if (typeof v === 'number' || typeof v === 'bigint') return Number.isInteger(Number(v)) ? 'integer' : 'number';
    return typeof v;
  }
  return 'unknown';
}

function walkFile(text: string, file: string, errors: string[]): FileConfig {
  const result: FileConfig = { file, config: {}, featureGates: new Map() };
  const docs = yaml().parseAllDocuments(text, { uniqueKeys: false, prettyErrors: true, merge: false });
  const list = Array.isArray(docs) ? docs : [];
  if (list.length > 1) {
    errors.push(`want one YAML document, found ${list.length}`);
    return result;
  }
  const doc = list[0] as Document.Parsed | undefined;
  if (!doc || doc.contents == null || (yaml().isScalar(doc.contents) && doc.contents.value === null)) {
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
    for (let i = 0; i < 100 && x && yaml().isAlias(x); i++) x = x.resolve(doc) as Node | null;
    return x ?? null;
  };
  const root = deref(doc.contents);
  if (!yaml().isMap(root)) {
    errors.push(`want a ${CONFIG_KIND} object, got ${typeName(root)}`);
    return result;
  }

  // apiVersion and kind first: a file of another version gets that error, not a list of unknown fields.
  const top = new Map<string, Node | null>();
  for (const pair of root.items) {
    const k = deref(pair.key);
    if (yaml().isScalar(k) && (k.value === 'apiVersion' || k.value === 'kind')) top.set(k.value, deref(pair.value));
  }
  const meta = (name: 'apiVersion' | 'kind', want: string): boolean => {
    const n = top.get(name);
    if (n === undefined) {
      errors.push(`missing field "${name}": want ${name}: ${want}`);
      return false;
    }
    const v = yaml().isScalar(n) ? n.value : undefined;
    if (v !== want) {
      errors.push(`unsupported ${name} ${JSON.stringify(yaml().isScalar(n) ? n.value : typeName(n))}: want ${JSON.stringify(want)}`);
      return false;
    }
    return true;
  };
  const okVersion = meta('apiVersion', CONFIG_API_VERSION);
  const okKind = meta('kind', CONFIG_KIND);
  if (!okVersion || !okKind) return result;

  const dir = dirname(file);
  const walkMap = (node: Node, tree: Tree, prefix: string) => {
    if (!yaml().isMap(node)) return;
    const seen = new Set<string>();
    for (const pair of node.items) {
      const kn = deref(pair.key);
      if (!yaml().isScalar(kn) || typeof kn.value !== 'string') {
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
      if (value === null || (yaml().isScalar(value) && value.value === null)) continue; // null = not set
      if (isSetting(spec)) setting(spec, value, path);
      else if (!yaml().isMap(value)) errors.push(`wrong type for field "${path}": want object, got ${typeName(value)}`);
      else walkMap(value, spec, path);
    }
  };

  const scalarOf = (node: Node, path: string, want: 'string' | 'integer' | 'boolean' | 'duration'): unknown => {
    const got = typeName(node);
    const ok = want === 'integer' ? got === 'integer' : want === 'duration' ? got === 'string' : got === want;
    if (!ok || !yaml().isScalar(node)) {
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
    if (!yaml().isSeq(node)) {
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

  const setting = (s: Entry, node: Node, path: string) => {
    const cfg = result.config as Record<string, unknown>;
    const k = s.kind;
    switch (k.t) {
      case 'string':
      case 'choice': {
        const v = scalarOf(node, path, 'string');
        if (typeof v !== 'string') return;
        try {
          cfg[s.key] = k.t === 'string' ? k.check(v) : checkChoice(v, k.choices);
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
        if (!yaml().isSeq(node)) {
          errors.push(`wrong type for field "${path}": want list of {id, address}, got ${typeName(node)}`);
          return;
        }
        const peers: StaticPeer[] = [];
        node.items.forEach((raw, i) => {
          const item = deref(raw);
          const ipath = `${path}[${i}]`;
          if (!yaml().isMap(item)) {
            errors.push(`wrong type for field "${ipath}": want object {id, address}, got ${typeName(item)}`);
            return;
          }
          const fields: Record<string, string> = {};
          const seen = new Set<string>();
          for (const pair of item.items) {
            const kn = deref(pair.key);
            const name = yaml().isScalar(kn) ? String(kn.value) : '?';
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
          const peer = { id: fields.id, address: fields.address };
          const problem = peerProblem(peer);
          if (problem) {
            invalid(`${ipath}.${problem.field}`, problem.value, new ValueError(problem.reason));
            return;
          }
          peers.push(peer);
        });
        if (peers.length === node.items.length) cfg[s.key] = peers;
        return;
      }
      case 'gates': {
        if (!yaml().isMap(node)) {
          errors.push(`wrong type for field "${path}": want a map of gate names to true|false, got ${typeName(node)}`);
          return;
        }
        const seen = new Set<string>();
        for (const pair of node.items) {
          const kn = deref(pair.key);
          const name = yaml().isScalar(kn) ? String(kn.value) : '?';
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
  fromCLI: (key: SettingKey) => boolean,
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

