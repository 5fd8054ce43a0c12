// The shape of bench/results/<timestamp>.json (schema "mvproxy-bench/1"). NaN is written as null.

import type { Tool } from './load';

export type Group = 'get' | 'list' | 'discovery';

export interface ScenarioInfo {
  id: string;
  label: string;
  target: string;
  group: Group;
  path: string;
  accept: string;
  /** The client talks TLS to the target (https). */
  tls?: boolean;
  /** Only these load tools apply (HTTP/2: h2load; TLS HTTP/1.1: wrk); default: every tool of the run. */
  tools?: Tool[];
}

/** One load run of one scenario with one tool. */
export interface RunRecord {
  scenario: string;
  tool: Tool;
  round: number;
  rps: number;
  /** ms */
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  non2xx: number;
  /** CPU seconds (user+system) of the measured processes during the run (proxy, or backend for direct). */
  cpuS: number;
  cpuUsPerReq: number;
  /** CPU per request of each measured process (peer: [A, B]; nginx: [master, worker]). */
  cpuUsPerReqEach: number[];
  /** CPU per request of the backend (the same in every scenario: shows it is not the bottleneck). */
  backendCpuUsPerReq: number;
  /** RSS of the measured processes at the end of the run, MB (1e6 bytes). */
  rssMB: number;
  /** Busy share per CPU over the run (from /proc/stat; includes every process on the machine). */
  busy: number[];
  steal: number[];
  /** CPU of the load generator process over the run, seconds. */
  loadgenCpuS: number;
  /**
   * CPU used by processes outside the benchmark during the run, as a share of one core:
   * (busy of all CPUs) − (measured processes + backend + load generator). Other work on a shared
   * machine; high values mean a noisy run.
   */
  others: number;
}

export interface Summary {
  scenario: string;
  label: string;
  target: string;
  group: Group;
  tool: Tool;
  runs: number;
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  cpuUsPerReqEach: number[];
  rssMB: number;
  errors: number;
  /** median req/s ÷ median req/s of direct with the same tool and group. */
  xDirect: number;
  /** ÷ nginx's (get, list; discovery: nginx serving the same bytes as a static file). */
  xNginx: number;
  busyServer: number;
  busyClient: number;
  others: number;
}

export interface WatchRecord {
  scenario: string;
  target: string;
  round: number;
  watches: number;
  established: number;
  intervalMs: number;
  eventsPerS: number;
  p50: number;
  p99: number;
  max: number;
  cpuUsPerEvent: number;
  rssMB: number;
}

export interface WatchSummary {
  scenario: string;
  label: string;
  target: string;
  runs: number;
  watches: number;
  offeredPerS: number;
  eventsPerS: number;
  p50: number;
  p99: number;
  cpuUsPerEvent: number;
  rssMB: number;
}

export interface OpenWatches {
  target: string;
  label: string;
  watches: number;
  established: number;
  idleRssMB: number;
  rssMB: number;
  hwmMB: number;
  eventsPerS: number;
  p99: number;
}

export interface Check {
  goal: string;
  tool: Tool | '-';
  value: string;
  met: boolean | null;
}

export interface TargetInfo {
  name: string;
  version?: string;
  skipped?: string;
  idleRssMB?: number;
}

export interface BenchResult {
  schema: 'mvproxy-bench/1';
  mode: 'full' | 'quick' | 'smoke' | 'custom';
  startedAt: string;
  finishedAt: string;
  elapsedS: number;
  machine: { node: string; cpus: number; cpuModel: string; kernel: string; loadavgStart: number[]; loadavgEnd: number[] };
  settings: {
    rounds: number;
    durationS: number;
    /** Unmeasured seconds of each scenario's tool before its first measured run (absent in older results: 0). */
    settleS?: number;
    connections: number;
    tools: Tool[];
    toolVersions: Record<string, string>;
    pinning: { server: string | null; client: string | null; note: string };
    runtime: string;
    watch: { watches: number; intervalMs: number; measureMs: number };
    openWatches: number;
  };
  targets: TargetInfo[];
  scenarios: ScenarioInfo[];
  skippedScenarios: { scenario: string; reason: string }[];
  runs: RunRecord[];
  summary: Summary[];
  watchRuns: WatchRecord[];
  watchSummary: WatchSummary[];
  openWatches: OpenWatches[];
  checks: Check[];
  notes: string[];
}
