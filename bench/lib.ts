// Process plumbing for bench/: spawning (optionally pinned with taskset), readiness, /proc
// sampling (CPU time, RSS, per-core busy time), free ports, medians.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import net from 'node:net';
import { REST_COLLECTED_MSG } from '../src/lifecycle/memory';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** First executable found on PATH (or the given absolute path), else undefined. */
export function which(cmd: string, extra: string[] = []): string | undefined {
  if (cmd.startsWith('/')) return existsSync(cmd) ? cmd : undefined;
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin', '/sbin', ...extra];
  for (const d of dirs) {
    if (d && existsSync(`${d}/${cmd}`)) return `${d}/${cmd}`;
  }
  return undefined;
}

export const TASKSET = which('taskset');

/** Clock ticks per second of /proc/<pid>/stat (getconf CLK_TCK; 100 on Linux). */
export const CLK_TCK = (() => {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? n : 100;
})();

export interface Proc {
  name: string;
  pid: number;
  child: ChildProcess;
  /** Last ~64 KiB of stdout+stderr. */
  output(): string;
  /** Resolves with the first stdout/stderr line matching re (or rejects after timeoutMs / on exit). */
  waitFor(re: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  exited: boolean;
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  /** taskset CPU list, e.g. "0"; ignored when taskset is missing or pinning is off. */
  cpus?: string;
  cwd?: string;
  stdin?: 'ignore' | 'pipe';
}

export function startProc(name: string, cmd: string, args: string[], o: SpawnOptions = {}): Proc {
  const pinned = o.cpus !== undefined && TASKSET !== undefined;
  // taskset execs the command: the pid is the command's own.
  const child = pinned ? spawn(TASKSET!, ['-c', o.cpus!, cmd, ...args], { cwd: o.cwd, env: o.env ?? process.env, stdio: [o.stdin ?? 'ignore', 'pipe', 'pipe'] }) : spawn(cmd, args, { cwd: o.cwd, env: o.env ?? process.env, stdio: [o.stdin ?? 'ignore', 'pipe', 'pipe'] });
  let out = '';
  const waiters: { re: RegExp; resolve: (m: RegExpExecArray) => void }[] = [];
  const onData = (d: Buffer) => {
    out += d.toString();
    if (out.length > 65536) out = out.slice(-65536);
    for (let i = waiters.length - 1; i >= 0; i--) {
      const m = waiters[i]!.re.exec(out);
      if (m) {
        waiters[i]!.resolve(m);
        waiters.splice(i, 1);
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const p: Proc = {
    name,
    pid: child.pid ?? -1,
    child,
    exited: false,
    output: () => out,
    waitFor(re, timeoutMs) {
      const m = re.exec(out);
      if (m) return Promise.resolve(m);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name}: no ${re} within ${timeoutMs} ms; output:\n${out.slice(-2000)}`)), timeoutMs);
        const w = {
          re,
          resolve: (x: RegExpExecArray) => {
            clearTimeout(timer);
            resolve(x);
          },
        };
        waiters.push(w);
        child.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`${name} exited (${code}) before ${re}; output:\n${out.slice(-2000)}`));
        });
      });
    },
    stop(signal = 'SIGTERM', graceMs = 5000) {
      if (p.exited) return Promise.resolve();
      return new Promise((resolve) => {
        const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
        child.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill(signal);
      });
    },
  };
  child.once('exit', () => {
    p.exited = true;
  });
  child.on('error', (e) => {
    out += `\nspawn error: ${e.message}\n`;
  });
  return p;
}

/** Moves a running process (all threads) to other CPUs. */
export function repin(pid: number, cpus: string): void {
  if (!TASKSET) return;
  spawnSync(TASKSET, ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** utime + stime of a process (all its threads), in seconds; NaN when gone. */
export function cpuSeconds(pid: number): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // After the comm field: state is f[0]; utime is field 14 → f[11], stime field 15 → f[12].
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** CPU seconds of this process's reaped children (cutime + cstime): the load generators, once they exited. */
export function childrenCpuSeconds(): number {
  try {
    const s = readFileSync('/proc/self/stat', 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // cutime is field 16 → f[13], cstime field 17 → f[14].
    return (Number(f[13]) + Number(f[14])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** Bytes: resident set, its peak, and its anonymous and file-backed parts (RssFile counts the pages
 *  of the node binary and the shared libraries a process has touched; other processes share them). */
export function memory(pid: number): { rss: number; hwm: number; anon: number; file: number; threads: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile'), threads: Number(/^Threads:\s+(\d+)/m.exec(s)?.[1] ?? NaN) };
  } catch {
    return { rss: NaN, hwm: NaN, anon: NaN, file: NaN, threads: NaN };
  }
}

/** memory(pid)'s resident set and its two parts in MiB (0.1), as the idle benches print them. */
export function residentMiB(pid: number): { rssMiB: number; anonMiB: number; fileMiB: number } {
  const m = memory(pid);
  return { rssMiB: round(m.rss / 2 ** 20, 1), anonMiB: round(m.anon / 2 ** 20, 1), fileMiB: round(m.file / 2 ** 20, 1) };
}

/** The daemon's log line of its collection at rest (src/lifecycle/memory.ts), or null before it. */
export function restCollectedLine(log: string): string | null {
  return new RegExp(`"msg":"${REST_COLLECTED_MSG}"[^\\n]*`).exec(log)?.[0] ?? null;
}

/** Direct children of a process (nginx's workers). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      const c = readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim();
      if (c) out.push(...c.split(/\s+/).map(Number));
    }
  } catch {
    /* gone */
  }
  return out;
}

/** Per-CPU jiffies from /proc/stat: busy (user+nice+system+irq+softirq), steal, total. */
export function cpuTimes(): { busy: number; steal: number; total: number }[] {
  const out: { busy: number; steal: number; total: number }[] = [];
  try {
    for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
      const m = /^cpu(\d+)\s+(.*)$/.exec(line);
      if (!m) continue;
      const v = m[2]!.split(/\s+/).map(Number);
      const [user, nice, system, idle, iowait, irq, softirq, steal] = v as [number, number, number, number, number, number, number, number];
      out[Number(m[1])] = { busy: user + nice + system + irq + softirq, steal: steal ?? 0, total: user + nice + system + idle + iowait + irq + softirq + (steal ?? 0) };
    }
  } catch {
    /* not Linux */
  }
  return out;
}

/** Busy share (0-1) of each CPU between two cpuTimes() samples, and the steal share. */
export function cpuBusy(a: ReturnType<typeof cpuTimes>, b: ReturnType<typeof cpuTimes>): { busy: number[]; steal: number[] } {
  const busy: number[] = [];
  const steal: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const dt = b[i]!.total - a[i]!.total;
    busy.push(dt > 0 ? (b[i]!.busy - a[i]!.busy) / dt : NaN);
    steal.push(dt > 0 ? (b[i]!.steal - a[i]!.steal) / dt : NaN);
  }
  return { busy, steal };
}

export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => srv.once('error', reject).listen(0, '127.0.0.1', resolve));
  const p = (srv.address() as net.AddressInfo).port;
  await new Promise((resolve) => srv.close(resolve));
  return p;
}

/** Waits until a TCP connect to 127.0.0.1:port succeeds. */
export async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await sleep(100);
  }
}

export function median(xs: readonly number[]): number {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 === 1 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
}

export function round(x: number, digits = 2): number {
  if (!Number.isFinite(x)) return NaN;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
