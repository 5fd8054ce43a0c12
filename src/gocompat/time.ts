// Go's time.ParseDuration and time.Duration.String (go/src/time/format.go), in milliseconds: every
// duration flag and config field takes Go's forms ("60s", "1m30s", "500ms") and --help prints
// its default as Go does ("1m0s"), as kube components' pflag durations do.

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
