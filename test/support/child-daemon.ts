// Runs mvproxy as a separate process (the real CLI, through tsx), so tests can measure its own
// memory (/proc/<pid>/status) and signal it like an operator would.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');

export interface ChildDaemon {
  proc: ChildProcess;
  clientPort: number;
  metricsPort: number;
  peerPort: number;
  stderr(): string;
  /** Resident set size and its peak, in bytes. */
  memory(): { rss: number; peak: number };
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface ChildOptions {
  /**
   * RLIMIT_NOFILE of the daemon, soft and hard (prlimit(1) execs it with that limit: the same pid).
   * Node.js raises the soft limit to the hard one at start, so only a lower hard limit holds.
   */
  nofile?: number;
}

export function startChildDaemon(args: string[], env: NodeJS.ProcessEnv = {}, o: ChildOptions = {}): Promise<ChildDaemon> {
  const node = [process.execPath, '--import', 'tsx', join(ROOT, 'src', 'main.ts'), ...args];
  const [cmd, ...argv] = o.nofile === undefined ? node : ['prlimit', `--nofile=${o.nofile}:${o.nofile}`, '--', ...node];
  const proc = spawn(cmd!, argv, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`daemon did not start in 20 s:\n${err}`)), 20_000);
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /\{[^\n]*"msg":"mvproxy started"[^\n]*\}/.exec(err);
      if (m && timer) {
        clearTimeout(timer);
        const rec = JSON.parse(m[0]);
        resolve({
          proc,
          clientPort: rec.clientPort,
          metricsPort: rec.metricsPort,
          peerPort: rec.peerPort,
          stderr: () => err,
          memory() {
            const s = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
            const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)![1]) * 1024;
            return { rss: kb('VmRSS'), peak: kb('VmHWM') };
          },
          stop(signal = 'SIGTERM') {
            return new Promise((res) => {
              if (proc.exitCode !== null) return res(proc.exitCode);
              proc.once('exit', (code) => res(code));
              proc.kill(signal);
            });
          },
        });
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`daemon exited with ${code}:\n${err}`));
    });
  });
}
