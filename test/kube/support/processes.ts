// Child processes of the real control plane (etcd, kube-apiservers, mvproxies, fake clients): each
// logs to a file of its own (printed when a test fails), and every one still running is killed when
// the test process exits, however it exits, so a failed run leaves nothing listening.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import https from 'node:https';
import { eventually, GiveUp, PollTimeout } from '../../support/poll';

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of running) p.kill('SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    for (const p of running) p.kill('SIGKILL');
    process.exit(130);
  });
}

export interface Proc {
  name: string;
  child: ChildProcess;
  logFile: string;
  log(): string;
  /** SIGTERM, then SIGKILL after graceMs; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
  exited(): boolean;
}

export function startProcess(name: string, bin: string, args: string[], dir: string, env: NodeJS.ProcessEnv = {}): Proc {
  // A log file of its own per start: a restarted process (or a second mvproxy pair with the same
  // names) must not let waitFor() read the previous run's lines, and the file is created before
  // spawn (createWriteStream opens asynchronously), so log() never sees stale content.
  let logFile = join(dir, `${name}.log`);
  for (let n = 2; existsSync(logFile); n++) logFile = join(dir, `${name}.${n}.log`);
  const out = createWriteStream(logFile, { fd: openSync(logFile, 'w') });
  const child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.pipe(out, { end: false });
  child.stderr!.pipe(out, { end: false });
  running.add(child);
  let code: number | null | undefined;
  const exit = new Promise<number | null>((resolve) =>
    child.once('exit', (c, sig) => {
      running.delete(child);
      code = c ?? (sig ? -1 : null);
      resolve(code);
    }),
  );
  return {
    name,
    child,
    logFile,
    log: () => {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    },
    exited: () => code !== undefined,
    async stop(graceMs = 10_000) {
      if (code !== undefined) return code;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const c = await exit;
      clearTimeout(t);
      return c;
    },
  };
}

/**
 * Ports this process has handed out. The kernel can give one port to two bind(0)s once the first is
 * closed, and mvproxy listens with SO_REUSEPORT, so two daemons of one test file given the same port
 * would both bind it and split its connections (a TLS client reaching the other's plain metrics
 * listener: "server gave HTTP response to HTTPS client", as CI saw once).
 */
const handedOut = new Set<number>();

/** A TCP port free right now on 127.0.0.1 and not handed out before by this process (for processes whose peers must know it before they start). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const port = await kernelPort();
    if (!handedOut.has(port) || attempt >= 100) {
      handedOut.add(port);
      return port;
    }
  }
}

function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export interface TLSClient {
  ca: string;
  cert?: string;
  key?: string;
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  raw: Buffer;
}

/** One request over TLS (own connection); resolves with the reply, never rejects (an error is status 0). */
export function httpsRequest(url: string, tls: TLSClient, o: { method?: string; headers?: Record<string, string>; body?: string | Buffer; timeoutMs?: number } = {}): Promise<Reply> {
  return new Promise((resolve) => {
    const req = https.request(url, { method: o.method ?? 'GET', ca: tls.ca, cert: tls.cert, key: tls.key, headers: o.headers, timeout: o.timeoutMs ?? 10_000, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw.toString('utf8'), raw });
      });
      res.on('error', (e) => resolve({ status: 0, headers: {}, body: String(e), raw: Buffer.alloc(0) }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status: 0, headers: {}, body: String(e), raw: Buffer.alloc(0) }));
    req.end(o.body);
  });
}

/** GET url over TLS. */
export function httpsGet(url: string, tls: TLSClient, headers: Record<string, string> = {}): Promise<Reply> {
  return httpsRequest(url, tls, { headers });
}

/** Polls until check() returns true, at most timeoutMs; throws with what() on timeout or when proc exits. */
export async function waitFor(what: () => string, check: () => Promise<boolean>, timeoutMs: number, proc?: Proc): Promise<void> {
  const logTail = () => (proc ? `\n--- ${proc.logFile} (last 40 lines)\n${tail(proc.log(), 40)}` : '');
  try {
    await eventually(
      async () => {
        if (await check()) return true;
        if (proc?.exited()) throw new GiveUp(`${proc.name} exited while waiting: ${what()}`);
        return false;
      },
      { what: 'the condition', timeoutMs, intervalMs: 250 },
    );
  } catch (e) {
    // what() describes the state at the end; the process's own log says why it never got there.
    if (e instanceof PollTimeout) e.message = `timed out after ${timeoutMs} ms: ${what()}`;
    if (e instanceof Error) e.message += logTail();
    throw e;
  }
}

export function tail(s: string, lines: number): string {
  return s.split('\n').slice(-lines).join('\n');
}
