// --feature-gates with Kubernetes semantics (component-base featuregate/feature_gate.go):
// "A=true,B=false", split on ',' then the first '='; values parsed like Go's strconv.ParseBool;
// unknown gates are errors; AllAlpha=/AllBeta= set every gate of that stage that is not set by
// name; the result starts from each gate's default. Also Go's time.ParseDuration and
// Duration.String, used by every duration flag and config field.

import { FEATURE_GATES } from '../config/types';

export class FlagError extends Error {
  readonly code = 'MVP_ERR_FLAG';
}

const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Go strconv.ParseBool. */
export function parseGoBool(v: string): boolean | undefined {
  return TRUE.has(v) ? true : FALSE.has(v) ? false : undefined;
}

/** The special gates of component-base: set every gate of their stage that is not set by name. */
export const ALL_GATES: Record<string, 'ALPHA' | 'BETA'> = { AllAlpha: 'ALPHA', AllBeta: 'BETA' };

export function isKnownGate(name: string): boolean {
  return name in FEATURE_GATES || name in ALL_GATES;
}

/** The help lines of --feature-gates, as kube components print them. */
export function featureGateHelp(): string {
  const lines = Object.entries(ALL_GATES).map(([k, stage]) => `${k}=true|false (${stage} - default=false)`);
  for (const [k, v] of Object.entries(FEATURE_GATES).sort(([a], [b]) => a.localeCompare(b))) lines.push(`${k}=true|false (${v.preRelease} - default=${v.default})`);
  return lines.join('\n');
}

/**
 * The gates named in --feature-gates values (each "A=true,B=false"), later values winning, checked.
 * Includes AllAlpha/AllBeta when given; resolveFeatureGates() applies them.
 */
export function parseFeatureGateFlags(values: readonly string[]): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const value of values) {
    for (const item of value.split(',')) {
      const s = item.trim();
      if (!s) continue;
      const eq = s.indexOf('=');
      if (eq === -1) throw new FlagError(`invalid argument "${value}" for "--feature-gates" flag: missing bool value for ${s}`);
      const k = s.slice(0, eq).trim();
      const v = s.slice(eq + 1).trim();
      const b = parseGoBool(v);
      if (b === undefined) throw new FlagError(`invalid argument "${value}" for "--feature-gates" flag: invalid value of ${k}=${v}, err: strconv.ParseBool: parsing "${v}": invalid syntax`);
      if (!isKnownGate(k)) throw new FlagError(`invalid argument "${value}" for "--feature-gates" flag: unrecognized feature gate: ${k}`);
      out.set(k, b);
    }
  }
  return out;
}

/** Every known gate's value: named ones as given, then AllAlpha/AllBeta for the rest of their stage, then defaults. */
export function resolveFeatureGates(explicit: ReadonlyMap<string, boolean>): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const [name, spec] of Object.entries(FEATURE_GATES)) {
    const named = explicit.get(name);
    const all = spec.preRelease === 'ALPHA' ? explicit.get('AllAlpha') : spec.preRelease === 'BETA' ? explicit.get('AllBeta') : undefined;
    out[name] = named ?? all ?? spec.default;
  }
  return out;
}

/** --feature-gates values over `base` (per gate: a gate named in the flags wins, the others keep their base value). */
export function parseFeatureGates(values: readonly string[], base: Record<string, boolean> = {}): Record<string, boolean> {
  return resolveFeatureGates(new Map([...Object.entries(base), ...parseFeatureGateFlags(values)]));
}

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go time.ParseDuration (non-negative), in milliseconds; undefined when `v` is not a duration. */
export function goDurationMs(v: string): number | undefined {
  if (v === '0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let total = 0;
  let pos = 0;
  let m: RegExpExecArray | null;
  const s = v.startsWith('+') ? v.slice(1) : v;
  while ((m = re.exec(s)) !== null) {
    total += Number(m[1]) * UNITS[m[2]];
    pos = re.lastIndex;
  }
  if (pos === 0 || pos !== s.length) return undefined;
  return total;
}

/** Go time.ParseDuration for the units operators use (ns us µs ms s m h), e.g. "60s", "1m30s", "500ms". */
export function parseDuration(flag: string, v: string): number {
  const n = goDurationMs(v);
  if (n === undefined) throw new FlagError(`invalid argument "${v}" for "--${flag}" flag: time: invalid duration "${v}"`);
  return n;
}

/** Go time.Duration.String for whole milliseconds: 0s, 500ms, 20s, 1m0s, 1m30s, 1h0m0s. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  if (h) return `${h}h${m}m${s}s`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}
