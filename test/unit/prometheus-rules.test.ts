// deploy/prometheus (rules file, PrometheusRule, promtool unit tests) and deploy/grafana/mvproxy.json
// as files (issue 31 §2): promtool checks and tests every rule, each alert links a runbook that
// docs/operating.md has, the PrometheusRule holds the same groups, and every metric the rules and
// the dashboard read is one mvproxy exports. Whether each expression returns data from a real
// Prometheus scraping real mvproxies: test/kube/prometheus.test.ts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseDocument } from 'yaml';
import { Metrics } from '../../src/telemetry/metrics';
import { ROOT } from '../support/child-daemon';
import { alerts, dashboard, dashboardQueries, dashboardVariableQueries, metricNames, PROMETHEUS_RULE_FILE, ruleGroups, RULES_FILE, RULES_TEST_FILE } from '../support/monitoring';

const PROMTOOL = '/usr/bin/promtool';
/** Why the promtool tests cannot run here, or undefined; MVPROXY_REQUIRE_PROMETHEUS=1 (CI) makes a missing promtool an error. */
function promtoolMissing(): string | undefined {
  if (existsSync(PROMTOOL)) return undefined;
  if (process.env.MVPROXY_REQUIRE_PROMETHEUS === '1') throw new Error(`MVPROXY_REQUIRE_PROMETHEUS=1 but ${PROMTOOL} is missing (apt-get install prometheus)`);
  return `${PROMTOOL} not found (Debian's prometheus package brings it; .ci/run installs it)`;
}
const promtoolSkip = promtoolMissing();

/** GitHub's anchor for a Markdown heading. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** Every series name mvproxy's registry exports (histograms as _bucket, _sum, _count). */
function exported(): Set<string> {
  const names = new Set<string>();
  for (const m of new Metrics({ defaultMetrics: true }).registry.getMetricsAsArray() as unknown as { name: string; type: string }[]) {
    if (m.type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(m.name + s);
    else names.add(m.name);
  }
  return names;
}

describe('deploy/prometheus and deploy/grafana', () => {
  test('promtool check rules: the rules file is valid', { skip: promtoolSkip }, () => {
    assert.match(execFileSync(PROMTOOL, ['check', 'rules', RULES_FILE], { encoding: 'utf8' }), /SUCCESS: \d+ rules found/);
  });

  test('promtool test rules: every alert fires on its case and stays quiet on the others', { skip: promtoolSkip }, () => {
    assert.match(execFileSync(PROMTOOL, ['test', 'rules', RULES_TEST_FILE], { encoding: 'utf8', cwd: join(ROOT, 'deploy', 'prometheus') }), /SUCCESS/);
  });

  test('each alert has promtool cases where it fires and where it does not, and each recording rule an expression test', () => {
    const tests = (parseDocument(readFileSync(RULES_TEST_FILE, 'utf8')).toJS() as { tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[]; promql_expr_test?: { expr: string }[] }[] }).tests;
    const cases = tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const a of alerts()) {
      const mine = cases.filter((c) => c.alertname === a.alert);
      assert.ok(mine.some((c) => c.exp_alerts.length > 0), `${a.alert}: a case where it fires`);
      assert.ok(mine.some((c) => c.exp_alerts.length === 0), `${a.alert}: a case where it does not`);
    }
    const exprs = tests.flatMap((t) => t.promql_expr_test ?? []).map((t) => t.expr);
    for (const r of ruleGroups().flatMap((g) => g.rules.filter((x) => x.record))) assert.ok(exprs.includes(r.record!), `${r.record}: an expression test`);
  });

  test('each alert has a severity, a summary, a description and a runbook_url whose anchor docs/operating.md has', () => {
    const headings = new Set([...readFileSync(join(ROOT, 'docs', 'operating.md'), 'utf8').matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1]!)));
    assert.ok(alerts().length >= 8);
    for (const a of alerts()) {
      assert.match(a.labels?.severity ?? '', /^(warning|critical)$/, a.alert);
      for (const k of ['summary', 'description', 'runbook_url']) assert.ok(a.annotations?.[k], `${a.alert}: ${k}`);
      const [file, anchor] = a.annotations!.runbook_url!.split('#');
      assert.equal(file, 'docs/operating.md', a.alert);
      assert.ok(headings.has(anchor!), `${a.alert}: docs/operating.md has no heading for #${anchor}`);
    }
  });

  test('the PrometheusRule holds exactly the rules file\'s groups', () => {
    const pr = parseDocument(readFileSync(PROMETHEUS_RULE_FILE, 'utf8')).toJS() as { apiVersion: string; kind: string; metadata: { name: string }; spec: { groups: unknown } };
    assert.equal(pr.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(pr.kind, 'PrometheusRule');
    assert.equal(pr.metadata.name, 'mvproxy');
    assert.deepEqual(pr.spec.groups, ruleGroups());
  });

  test('every metric the rules and the dashboard read is one mvproxy exports', () => {
    const names = exported();
    const read = [...ruleGroups().flatMap((g) => g.rules.map((r) => [r.alert ?? r.record, r.expr] as const)), ...dashboardQueries().map((q) => [`${q.panel} ${q.refId}`, q.expr] as const), ...Object.entries(dashboardVariableQueries())];
    for (const [where, expr] of read) {
      const used = metricNames(expr!);
      assert.ok(used.length > 0, `${where}: no metric found in ${expr}`);
      for (const n of used) assert.ok(names.has(n), `${where}: ${n} is not exported by mvproxy`);
    }
  });

  test('the dashboard: every panel queries the ${datasource} variable, every selector is narrowed to $job and $instance', () => {
    const d = dashboard();
    assert.equal(d.uid, 'mvproxy');
    const vars = (d.templating.list as { name: string }[]).map((v) => v.name);
    assert.deepEqual(vars, ['datasource', 'job', 'instance']);
    const panels = (d.panels as { type: string; title: string; datasource?: { uid: string } }[]).filter((p) => p.type !== 'row');
    assert.ok(panels.length >= 10);
    for (const p of panels) assert.equal(p.datasource?.uid, '${datasource}', p.title);
    for (const q of dashboardQueries()) {
      for (const sel of q.expr.matchAll(/[a-z_:][a-z0-9_:]*\{([^}]*)\}/g)) {
        assert.match(sel[1]!, /job=~"\$job", instance=~"\$instance"/, `${q.panel} ${q.refId}: ${sel[0]}`);
      }
    }
  });
});
