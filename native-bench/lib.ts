// Small helpers shared by the native benchmarks: argument parsing, medians, plain-text tables.
// No dependencies (tinybench/autocannon are not installed; see the README section in run.ts).

export interface Args {
  quick: boolean;
  num(name: string, dflt: number): number;
  str(name: string, dflt: string): string;
  has(name: string): boolean;
}

export function parseArgs(argv: readonly string[] = process.argv.slice(2)): Args {
  const value = (name: string): string | undefined => {
    for (let i = 0; i < argv.length; i++) {
      if (argv[i] === name) return argv[i + 1];
      if (argv[i].startsWith(name + '=')) return argv[i].slice(name.length + 1);
    }
    return undefined;
  };
  return {
    quick: argv.includes('--quick'),
    num: (name, dflt) => {
      const v = value(name);
      const n = v === undefined ? NaN : Number(v);
      return Number.isFinite(n) ? n : dflt;
    },
    str: (name, dflt) => value(name) ?? dflt,
    has: (name) => argv.includes(name),
  };
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Prints rows as an aligned table; numbers right-aligned, text left-aligned. */
export function printTable(title: string, header: readonly string[], rows: readonly (readonly (string | number)[])[]): void {
  const cells = [header.map(String), ...rows.map((r) => r.map((c) => (typeof c === 'number' ? fmtNum(c) : c)))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number' || r[i] === '-'));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (numeric[i] ? (c ?? '').padStart(widths[i]) : (c ?? '').padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  console.log(title);
  console.log(line(cells[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of cells.slice(1)) console.log(line(r));
}

export function fmtNum(n: number): string {
  if (!Number.isFinite(n)) return '-';
  if (Number.isInteger(n)) return n.toLocaleString('en-US');
  const a = Math.abs(n);
  if (a >= 1000) return Math.round(n).toLocaleString('en-US');
  if (a >= 100) return n.toFixed(0);
  if (a >= 10) return n.toFixed(1);
  return n.toFixed(2);
}
