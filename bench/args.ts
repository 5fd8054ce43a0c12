// The benchmarks' command-line options: `--name value` or `--name=value`, one place for every
// script of bench/ (run.ts, rate.ts, scale.ts, allocations.ts).

const argv = process.argv.slice(2);

/** Whether a flag is given. */
export const has = (n: string): boolean => argv.includes(n);

/** An option's value, or undefined when it is not given. */
export function str(n: string): string | undefined {
  const i = argv.findIndex((a) => a === n || a.startsWith(n + '='));
  if (i === -1) return undefined;
  return argv[i]!.includes('=') ? argv[i]!.slice(n.length + 1) : argv[i + 1];
}

/** A number option; the default when it is missing or not a number. */
export function num(n: string, d: number): number {
  const v = str(n);
  return v === undefined || !Number.isFinite(Number(v)) ? d : Number(v);
}

/** A comma-separated list option. */
export const list = (n: string, d: string): string[] => (str(n) ?? d).split(',').map((s) => s.trim()).filter(Boolean);
