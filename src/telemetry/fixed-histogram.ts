// A histogram whose series are bound once and observed with no allocation (issue 40 §3). prom-client's
// Histogram.observe builds a closure and a result object per call, checks every label, and joins the
// label values into a key string to find the series (also through a child from labels()): ~5 % of the
// bytes a uWS GET allocated (`npm run bench:alloc -- --sites`), all of it garbage at the next
// scavenge. Here a caller holds the series (HistogramSeries) or finds it in a table of its own
// (RequestDurations), and observe() is a bucket search and three additions into a Float64Array.
// The exposition is prom-client's, byte for byte: the object registers itself in prom-client
// registries and answers get()/getForPromString() in the shape they read.

import type { Registry } from 'prom-client';

export interface FixedHistogramConfig {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  /** Upper bounds, ascending (prom-client's `buckets`). */
  readonly buckets: readonly number[];
  readonly registers: readonly Registry[];
}

/** One label set's buckets: counts[i] the observations in (bounds[i-1], bounds[i]], the last slot above every bound. */
export class HistogramSeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(
    private readonly bounds: Float64Array,
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return; // prom-client throws; a latency is never one
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > b[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
}

export class FixedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  private readonly labelNames: readonly string[];
  private readonly bounds: Float64Array;
  /** Label values joined by NUL (no label value holds one: they come from bounded sets) → series. */
  private readonly series = new Map<string, HistogramSeries>();

  constructor(c: FixedHistogramConfig) {
    this.name = c.name;
    this.help = c.help;
    this.labelNames = c.labelNames;
    this.bounds = Float64Array.from(c.buckets);
    for (const r of c.registers) r.registerMetric(this as never);
  }

  /** The series of these label values (labelNames' order), made on first use. Bind it once; observe() on it per request. */
  of(...values: string[]): HistogramSeries {
    const key = values.join('\0');
    let s = this.series.get(key);
    if (s === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i] ?? ''));
      s = new HistogramSeries(this.bounds, labels);
      this.series.set(key, s);
    }
    return s;
  }

  /** Drops the series with these labels (a peer that left); a held HistogramSeries then counts for nobody. */
  remove(labels: Readonly<Record<string, string>>): void {
    this.series.delete(this.labelNames.map((n) => labels[n] ?? '').join('\0'));
  }

  reset(): void {
    this.series.clear();
  }

  /** What prom-client's Registry writes the exposition from: its Histogram's shape and order (le first, then the series' labels). */
  getForPromString(): { name: string; help: string; type: string; values: ExportedValue[]; aggregator: string } {
    const values: ExportedValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i]!;
        values.push({ labels: { le: this.bounds[i]! }, sharedLabels: s.labels, value: acc, metricName: bucket });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucket });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** As prom-client's get(): each value's labels with the series' own merged in. */
  async get(): Promise<{ name: string; help: string; type: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[]; aggregator: string }> {
    const d = this.getForPromString();
    return { ...d, values: d.values.map((v) => ({ labels: { ...v.labels, ...v.sharedLabels }, value: v.value, metricName: v.metricName })) };
  }
}
