// Command-line flags, kube style (--flag=value, --flag value, booleans --flag/--flag=true/
// --flag=false, comma lists, repeatable --feature-gates, -v=N/--v=N; docs/operating.md §1), parsed
// with commander 15 (docs/dependencies.md §7), merged with --config FILE by the kubelet rule
// (config/load.ts). Every flag, its default, its help text and its --help section come from the
// settings table (config/settings.ts); this module turns the table into commander options and
// reads each kind of flag text.

import { Command, Option } from 'commander';
import { ErrorCode } from '../api/errors';
import { parseFeatureGateFlags, resolveFeatureGates } from '../config/featuregate';
import { CONFIG_API_VERSION, CONFIG_KIND, loadConfigFile, mergeConfig } from '../config/load';
import { SECTIONS, SETTINGS, SETTING_TABLE, type Section, type Setting, type SettingKey } from '../config/settings';
import type { DaemonConfig } from '../config/types';
import { validateConfig } from '../config/validate';
import { ValueError, checkChoice, checkDuration, checkStaticPeer, type StaticPeer } from '../config/values';
import { parseGoBool } from '../gocompat/strconv';
import { formatDuration } from '../gocompat/time';

export class FlagError extends Error {
  readonly code = ErrorCode.MVP_ERR_FLAG;
}

type Entry = Setting & { key: SettingKey };

/** Kube boolean flags: `--flag`, `--flag=true`, `--flag=false` (never `--flag false`). */
export const KUBE_BOOL_FLAGS: readonly string[] = SETTINGS.filter((s) => s.kind.t === 'bool').map((s) => s.flag);

/** commander's attribute name of a flag: kebab-case → camelCase. */
export function attributeName(flag: string): string {
  return flag.split('-').reduce((acc, w) => acc + w[0].toUpperCase() + w.slice(1));
}

/** The --help heading of a section, as kube-apiserver prints it ("Generic flags:"). */
export function sectionHeading(section: Section): string {
  return `${section} flags:`;
}

const split = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);

function argName(s: Setting): string {
  if (s.arg) return s.arg;
  return s.kind.t === 'path' ? '<file>' : s.kind.t === 'duration' ? '<duration>' : s.kind.t === 'bool' ? '[bool]' : '<value>';
}

/** The commander option of a setting: names, help, section, the default as flag text, and how repeats add up. */
function option(s: Setting): Option {
  let help = s.help;
  if (s.kind.t === 'bool') help += ` (--${s.flag}, --${s.flag}=true or --${s.flag}=false)`;
  if (s.defaultHelp) help += ` (default: ${s.defaultHelp})`;
  const o = new Option(`${s.short ? `-${s.short}, ` : ''}--${s.flag} ${argName(s)}`, help).helpGroup(sectionHeading(s.section));
  const k = s.kind;
  const d = s.default;
  switch (k.t) {
    case 'choice':
      return o.choices(k.choices).default(d);
    case 'int':
      return d === undefined ? o : o.default(String(d));
    case 'duration':
      return d === undefined ? o : o.default(formatDuration(d as number));
    case 'strings':
    case 'peers': {
      // pflag StringSlice: the first use replaces the default, later uses append. A fresh array per
      // program, so parsing twice never leaks values through a shared default.
      const initial = k.t === 'peers' ? (d as StaticPeer[]).map((p) => `${p.id}=${p.address}`) : [...(d as string[])];
      return o.default(initial).argParser((v: string, prev: string[]) => (prev === initial ? split(v) : [...prev, ...split(v)]));
    }
    case 'gates':
      return o.default([] as string[]).argParser((v: string, prev: string[]) => [...prev, v]);
    default:
      return d === undefined ? o : o.default(d);
  }
}

/** The daemon's flags on `cmd`: --config, then every setting, grouped into --help sections. */
export function daemonFlags(cmd: Command): Command {
  cmd.addOption(
    new Option('--config <file>', `versioned config file (apiVersion: ${CONFIG_API_VERSION}, kind: ${CONFIG_KIND}) with the same settings as these flags; a flag given on the command line overrides the file, relative paths in the file resolve against its directory`).helpGroup(
      sectionHeading(SECTIONS[0]),
    ),
  );
  // commander prints a group where its first option was added: add them section by section.
  for (const section of SECTIONS) for (const s of SETTINGS) if (s.section === section) cmd.addOption(option(s));
  return cmd;
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

/** A setting's value from commander's value for its flag (undefined: not given and no default). Throws ValueError. */
function flagValue(s: Entry, raw: unknown): unknown {
  const k = s.kind;
  if (raw === undefined) return s.defaultFrom?.();
  const text = String(raw);
  switch (k.t) {
    case 'string':
      return k.check(text);
    case 'choice':
      return checkChoice(text, k.choices);
    case 'path':
      return text || undefined;
    case 'int':
      return k.check(/^\d+$/.test(text) ? Number(text) : NaN);
    case 'bool': {
      const b = typeof raw === 'boolean' ? raw : parseGoBool(text);
      if (b === undefined) throw new ValueError(`strconv.ParseBool: parsing "${text}": invalid syntax`);
      return b;
    }
    case 'duration':
      return checkDuration(text, k.minMs);
    case 'strings':
      return [...(raw as string[])];
    case 'peers':
      return (raw as string[]).map((item) => {
        const eq = item.indexOf('=');
        if (eq <= 0) throw new ValueError('want <server-id>=<host:port>', item);
        try {
          return checkStaticPeer({ id: item.slice(0, eq), address: item.slice(eq + 1) });
        } catch (e) {
          throw e instanceof ValueError ? new ValueError(e.message, item) : e;
        }
      });
    case 'gates':
      return resolveFeatureGates(parseFeatureGateFlags(raw as string[]));
  }
}

/** Wraps a ValueError as kube's flag error ("invalid argument "x" for "--flag" flag: why"). */
function asFlagError<T>(s: Setting, raw: unknown, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof ValueError) throw new FlagError(`invalid argument "${e.value ?? String(raw)}" for "--${s.flag}" flag: ${e.message}`);
    throw e;
  }
}

interface FlagValues {
  config: DaemonConfig;
  /** Gates named in --feature-gates (AllAlpha/AllBeta included). */
  gates: Map<string, boolean>;
}

function parseFlagValues(o: Record<string, unknown>): FlagValues {
  const config: Record<string, unknown> = {};
  let gates = new Map<string, boolean>();
  for (const s of SETTINGS) {
    const raw = o[attributeName(s.flag)];
    config[s.key] = asFlagError(s, raw, () => flagValue(s, raw));
    if (s.kind.t === 'gates') gates = parseFeatureGateFlags(raw as string[]); // checked just above
  }
  return { config: config as DaemonConfig, gates };
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
  const fromCLI = (key: SettingKey) => {
    const src = source(attributeName(SETTING_TABLE[key].flag));
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
