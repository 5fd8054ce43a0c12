// What an operator installs beside mvproxy's /metrics (issue 31 §2): the rules file, the
// PrometheusRule and the Grafana dashboard, read as the tests need them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { ROOT } from './child-daemon';

export const RULES_FILE = join(ROOT, 'deploy', 'prometheus', 'rules.yaml');
export const RULES_TEST_FILE = join(ROOT, 'deploy', 'prometheus', 'rules.test.yaml');
export const PROMETHEUS_RULE_FILE = join(ROOT, 'deploy', 'prometheus', 'prometheusrule.yaml');
export const DASHBOARD_FILE = join(ROOT, 'deploy', 'grafana', 'mvproxy.json');

export interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface RuleGroup {
  name: string;
  rules: Rule[];
}

export function ruleGroups(file = RULES_FILE): RuleGroup[] {
  return (parseDocument(readFileSync(file, 'utf8')).toJS() as { groups: RuleGroup[] }).groups;
}

export function alerts(): Rule[] {
  return ruleGroups().flatMap((g) => g.rules.filter((r) => r.alert));
}

/** Prometheus' duration (`1m`, `90s`, `1h30m`) in milliseconds. */
export function durationMs(d: string): number {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  let ms = 0;
  for (const [, n, u] of d.matchAll(/(\d+)(ms|s|m|h|d)/g)) ms += Number(n) * units[u!]!;
  return ms;
}

export interface DashboardQuery {
  panel: string;
  refId: string;
  expr: string;
}

/** The dashboard (deploy/grafana/mvproxy.json) as parsed JSON. */
export function dashboard(): Record<string, any> {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Record<string, any>;
}

/** Every PromQL expression of the dashboard's panels (rows' nested panels included). */
export function dashboardQueries(): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  const walk = (panels: Record<string, any>[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) out.push({ panel: p.title as string, refId: t.refId as string, expr: t.expr as string });
      walk(p.panels ?? []);
    }
  };
  walk(dashboard().panels as Record<string, any>[]);
  return out;
}

/** The dashboard's template variable queries (`label_values(...)`), by variable name. */
export function dashboardVariableQueries(): Record<string, string> {
  return Object.fromEntries((dashboard().templating.list as Record<string, any>[]).filter((v) => v.type === 'query').map((v) => [v.name as string, (v.query?.query ?? v.query) as string]));
}

/**
 * An expression as Grafana sends it with every job and instance selected: `$job` and `$instance`
 * as `.+` (the variables' "All"), `$__rate_interval` as `rateInterval`.
 */
export function asSent(expr: string, rateInterval = '1m'): string {
  return expr.replaceAll('$__rate_interval', rateInterval).replaceAll('$job', '.+').replaceAll('$instance', '.+');
}

/** Metric names an expression reads (identifiers followed by a selector or a range, not functions or labels). */
export function metricNames(expr: string): string[] {
  // Strings and grouping label lists (`by (route, long_running)`) hold label names, not metrics.
  const stripped = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{|\[)/g)) names.add(m[1]!);
  // A bare metric name: followed by a comparison, an operator or the end (`mvproxy_peer_up == 0`).
  for (const m of stripped.matchAll(/(?:^|[\s(,])([a-z_][a-z0-9_]*_[a-z0-9_]+)(?=\s*(?:==|!=|>|<|,|\)|$|\s[-+*/]))/gm)) names.add(m[1]!);
  return [...names].filter((n) => !['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'label_replace', 'histogram_quantile', 'sum', 'rate', 'max', 'min', 'count', 'time', 'vector'].includes(n));
}
