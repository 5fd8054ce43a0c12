// A real Prometheus (Debian's prometheus package) scraping mvproxy ops listeners with the shipped
// rules (deploy/prometheus/rules.yaml), on 127.0.0.1, its data in the plane's folder. Scrapes and
// rule evaluations every second, so that a rate over a minute has many samples after seconds of
// traffic and an alert's `for:` is the only wait.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RULES_FILE } from '../../support/monitoring';
import { freePort, startProcess, waitFor, type Proc } from './processes';

export const PROMETHEUS = '/usr/bin/prometheus';

/** Why the Prometheus tests cannot run here, or undefined; MVPROXY_REQUIRE_PROMETHEUS=1 (CI) makes a missing one an error. */
export function prometheusSkip(): string | undefined {
  if (existsSync(PROMETHEUS)) return undefined;
  if (process.env.MVPROXY_REQUIRE_PROMETHEUS === '1') throw new Error(`MVPROXY_REQUIRE_PROMETHEUS=1 but ${PROMETHEUS} is missing (apt-get install prometheus)`);
  return `${PROMETHEUS} not found (Debian's prometheus package; .ci/run installs it)`;
}

export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface Alert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
}

export interface Prometheus {
  url: string;
  proc: Proc;
  /** An instant query; rejects on a PromQL error (a broken expression). */
  query(expr: string): Promise<Sample[]>;
  /** Series matching a selector (what Grafana's label_values() asks for). */
  series(match: string): Promise<Record<string, string>[]>;
  alerts(): Promise<Alert[]>;
  /** Scrape targets and their health. */
  targets(): Promise<{ scrapeUrl: string; health: string; lastError: string }[]>;
  stop(): Promise<void>;
}

export async function startPrometheus(dir: string, targets: string[], job = 'mvproxy'): Promise<Prometheus> {
  const data = join(dir, 'prometheus');
  mkdirSync(data, { recursive: true });
  const config = join(data, 'prometheus.yml');
  writeFileSync(config, JSON.stringify({
    global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
    rule_files: [RULES_FILE],
    scrape_configs: [{ job_name: job, static_configs: [{ targets }] }],
  }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = startProcess('prometheus', PROMETHEUS, [`--config.file=${config}`, `--storage.tsdb.path=${join(data, 'tsdb')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], dir);
  const api = async <T>(path: string): Promise<T> => {
    const r = await fetch(url + path, { signal: AbortSignal.timeout(10_000) });
    const body = (await r.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${r.status} ${body.error}`);
    return body.data;
  };
  await waitFor(() => `Prometheus ${url}/-/ready`, async () => (await fetch(`${url}/-/ready`).then((r) => r.ok, () => false)), 30_000, proc);
  return {
    url,
    proc,
    query: async (expr) => (await api<{ resultType: string; result: Sample[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
    series: async (match) => api<Record<string, string>[]>(`/api/v1/series?match[]=${encodeURIComponent(match)}`),
    alerts: async () => (await api<{ alerts: Alert[] }>('/api/v1/alerts')).alerts,
    targets: async () => (await api<{ activeTargets: { scrapeUrl: string; health: string; lastError: string }[] }>('/api/v1/targets')).activeTargets,
    stop: async () => void (await proc.stop(10_000)),
  };
}
