// Feature gates with Kubernetes semantics (staging/src/k8s.io/component-base/featuregate/feature_gate.go):
// --feature-gates "A=true,B=false" is split on ',' then the first '='; values are parsed like Go's
// strconv.ParseBool; unknown gates are errors; AllAlpha=/AllBeta= set every gate of that stage
// that is not set by name; the result starts from each gate's default. The config file's
// featureGates map takes the same names.

import { ValueError } from './values';
import { parseGoBool } from '../gocompat/strconv';

/** Known feature gates (Kubernetes semantics: unknown names are errors). */
export const FEATURE_GATES: Record<string, { default: boolean; preRelease: 'ALPHA' | 'BETA' | 'GA' }> = {
  // Beta and on by default from Kubernetes 1.36 (PR #137172); the daemon follows.
  UnknownVersionInteroperabilityProxy: { default: true, preRelease: 'BETA' },
};

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
 * Includes AllAlpha/AllBeta when given; resolveFeatureGates() applies them. Throws a ValueError
 * whose `value` is the flag value at fault.
 */
export function parseFeatureGateFlags(values: readonly string[]): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const value of values) {
    for (const item of value.split(',')) {
      const s = item.trim();
      if (!s) continue;
      const eq = s.indexOf('=');
      if (eq === -1) throw new ValueError(`missing bool value for ${s}`, value);
      const k = s.slice(0, eq).trim();
      const v = s.slice(eq + 1).trim();
      const b = parseGoBool(v);
      if (b === undefined) throw new ValueError(`invalid value of ${k}=${v}, err: strconv.ParseBool: parsing "${v}": invalid syntax`, value);
      if (!isKnownGate(k)) throw new ValueError(`unrecognized feature gate: ${k}`, value);
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
