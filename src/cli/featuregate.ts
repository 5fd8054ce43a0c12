// --feature-gates with Kubernetes semantics (component-base featuregate/feature_gate.go):
// "A=true,B=false", split on ',' then the first '='; values parsed like Go's strconv.ParseBool;
// unknown gates are errors; the result starts from each gate's default.

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

export function parseFeatureGates(values: readonly string[], base: Record<string, boolean> = {}): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const [name, spec] of Object.entries(FEATURE_GATES)) out[name] = base[name] ?? spec.default;
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
      if (!(k in FEATURE_GATES)) throw new FlagError(`invalid argument "${value}" for "--feature-gates" flag: unrecognized feature gate: ${k}`);
      out[k] = b;
    }
  }
  return out;
}

/** Go time.ParseDuration for the units operators use (ns us µs ms s m h), e.g. "60s", "1m30s", "500ms". */
export function parseDuration(flag: string, v: string): number {
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  if (v === '0') return 0;
  let total = 0;
  let pos = 0;
  re.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(v)) !== null) {
    total += Number(m[1]) * units[m[2]];
    pos = re.lastIndex;
  }
  if (pos === 0 || pos !== v.length) throw new FlagError(`invalid argument "${v}" for "--${flag}" flag: time: invalid duration "${v}"`);
  return total;
}
