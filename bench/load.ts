// The HTTP load generators, each run as its own process (pinned to the load-generator CPU):
//   autocannon 9 (the users' tool; one thread, ~20-50k req/s ceiling here, latency in whole ms);
//   wrk (Debian's, C, one thread: a higher ceiling and µs latency), where installed;
//   h2load (Debian's nghttp2-client) for HTTP/2, where installed: connections/10 connections with
//   10 concurrent streams each (client-go's way: few connections, many streams), latency from its
//   per-request log.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { startProc, which } from './lib';

export type Tool = 'autocannon' | 'wrk' | 'h2load';

export interface LoadSpec {
  url: string;
  connections: number;
  durationS: number;
  headers: Record<string, string>;
  cpus?: string;
}

export interface LoadResult {
  tool: Tool;
  requests: number;
  /** Completed requests per second over the run. */
  rps: number;
  /** Latency percentiles in ms. */
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  bytesPerS: number;
}

const ROOT = join(__dirname, '..');
const AUTOCANNON = join(ROOT, 'node_modules', 'autocannon', 'autocannon.js');
export const WRK = which('wrk');
export const H2LOAD = which('h2load');

/** Whether a tool can run here (autocannon always: it is a dependency). */
export function toolAvailable(t: Tool): boolean {
  return t === 'autocannon' || (t === 'wrk' && WRK !== undefined) || (t === 'h2load' && H2LOAD !== undefined);
}

export function wrkVersion(): string | undefined {
  if (!WRK) return undefined;
  const r = spawnSync(WRK, ['-v'], { encoding: 'utf8' });
  return /wrk (\S+)/.exec((r.stdout ?? '') + (r.stderr ?? ''))?.[1];
}

export async function runLoad(tool: Tool, s: LoadSpec): Promise<LoadResult> {
  return tool === 'autocannon' ? autocannon(s) : tool === 'wrk' ? wrk(s) : h2load(s);
}

async function finish(name: string, cmd: string, args: string[], s: LoadSpec): Promise<string> {
  const p = startProc(name, cmd, args, { cpus: s.cpus });
  // Bounded: duration + 20 s, then killed.
  const killer = setTimeout(() => p.child.kill('SIGKILL'), (s.durationS + 20) * 1000);
  const stdout: Buffer[] = [];
  p.child.stdout!.on('data', (d: Buffer) => stdout.push(d));
  const code = await new Promise<number | null>((resolve) => p.child.once('exit', (c) => resolve(c)));
  clearTimeout(killer);
  const text = Buffer.concat(stdout).toString();
  if (code !== 0) throw new Error(`${name} exited with ${code}: ${p.output().slice(-1500)}`);
  return text;
}

async function autocannon(s: LoadSpec): Promise<LoadResult> {
  const args = [AUTOCANNON, '-j', '-c', String(s.connections), '-d', String(s.durationS), '-t', '10'];
  for (const [k, v] of Object.entries(s.headers)) args.push('-H', `${k}=${v}`);
  args.push(s.url);
  const out = await finish('autocannon', process.execPath, args, s);
  const r = JSON.parse(out.slice(out.indexOf('{'))) as {
    duration: number;
    requests: { total: number };
    latency: { p50: number; p99: number };
    errors: number;
    timeouts: number;
    non2xx: number;
    throughput: { total: number };
  };
  const secs = r.duration || s.durationS;
  return {
    tool: 'autocannon',
    requests: r.requests.total,
    rps: r.requests.total / secs,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    bytesPerS: r.throughput.total / secs,
  };
}

function wrkTime(v: string, unit: string): number {
  const n = Number(v);
  return unit === 'us' ? n / 1000 : unit === 'ms' ? n : unit === 's' ? n * 1000 : unit === 'm' ? n * 60_000 : NaN;
}

function wrkSize(v: string, unit: string): number {
  const n = Number(v);
  const m: Record<string, number> = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 };
  return n * (m[unit] ?? NaN);
}

async function wrk(s: LoadSpec): Promise<LoadResult> {
  if (!WRK) throw new Error('wrk is not installed');
  const args = ['-t1', `-c${s.connections}`, `-d${s.durationS}s`, '--latency', '--timeout', '10s'];
  for (const [k, v] of Object.entries(s.headers)) args.push('-H', `${k}: ${v}`);
  args.push(s.url);
  const out = await finish('wrk', WRK, args, s);
  const pct = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
    return m ? wrkTime(m[1]!, m[2]!) : NaN;
  };
  const reqs = /(\d+) requests in ([\d.]+)(us|ms|s|m)/.exec(out);
  if (!reqs) throw new Error(`cannot parse wrk output:\n${out}`);
  const secs = wrkTime(reqs[2]!, reqs[3]!) / 1000;
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  const tr = /Transfer\/sec:\s+([\d.]+)(B|KB|MB|GB)/.exec(out);
  return {
    tool: 'wrk',
    requests: Number(reqs[1]),
    rps: Number(reqs[1]) / secs,
    p50: pct('50'),
    p99: pct('99'),
    errors: sock ? Number(sock[1]) + Number(sock[2]) + Number(sock[3]) + Number(sock[4]) : 0,
    non2xx: non2xx ? Number(non2xx[1]) : 0,
    bytesPerS: tr ? wrkSize(tr[1]!, tr[2]!) : NaN,
  };
}

async function h2load(s: LoadSpec): Promise<LoadResult> {
  if (!H2LOAD) throw new Error('h2load is not installed (Debian: nghttp2-client)');
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-h2load-'));
  const logFile = join(dir, 'requests.log');
  const streams = 10;
  const conns = Math.max(1, Math.round(s.connections / streams));
  const args = ['-c', String(conns), '-m', String(streams), '-D', String(s.durationS), '--log-file', logFile];
  for (const [k, v] of Object.entries(s.headers)) args.push('-H', `${k}: ${v}`);
  args.push(s.url);
  try {
    const out = await finish('h2load', H2LOAD, args, s);
    const fin = /finished in ([\d.]+)s, ([\d.]+) req\/s, ([\d.]+)([KMG]?B)\/s/.exec(out);
    const reqs = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(out);
    const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
    if (!fin || !reqs) throw new Error(`cannot parse h2load output:\n${out}`);
    if (!/application protocol: h2\b/i.test(out)) throw new Error(`h2load did not negotiate h2:\n${out.slice(0, 800)}`);
    // Per request: start (µs since epoch), status, duration (µs).
    const durations = readFileSync(logFile, 'utf8').split('\n').filter(Boolean).map((l) => Number(l.split('\t')[2]) / 1000).sort((a, b) => a - b);
    const pct = (q: number) => (durations.length ? durations[Math.min(durations.length - 1, Math.floor(q * durations.length))]! : NaN);
    const done = Number(reqs[4]);
    const unit: Record<string, number> = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 };
    return {
      tool: 'h2load',
      requests: done,
      rps: Number(fin[2]),
      p50: Math.round(pct(0.5) * 100) / 100,
      p99: Math.round(pct(0.99) * 100) / 100,
      errors: Number(reqs[5]) + Number(reqs[6]) + Number(reqs[7]),
      non2xx: codes ? Number(codes[2]) + Number(codes[3]) + Number(codes[4]) : 0,
      bytesPerS: Number(fin[3]) * (unit[fin[4]!] ?? NaN),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
