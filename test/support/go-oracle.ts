// Go's own net/http server as the oracle of the differential test (test/oracle/main.go): built once
// with the machine's Go into .cache/oracle (rebuilt when its source changes), started per suite.
// It records every request Go parsed, by role: `upstream-N` (behind mvproxy member N), `direct`
// (plain HTTP/1.1) and `directTLS` (HTTP/2 and HTTP/1.1 by ALPN), the latter two fed the client's
// own bytes; and every answer Go's server wrote without a handler (a refusal while parsing).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { request } from 'undici';

const ROOT = join(__dirname, '..', '..');
const SRC = join(ROOT, 'test', 'oracle');
const OUT = join(ROOT, '.cache', 'oracle');

/** Why a Go oracle cannot be built here (no Go), or undefined; `oracle` says which and what for. */
export function oracleUnavailable(oracle = 'the differential test builds Go net/http as its oracle'): string | undefined {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return `go is not installed: ${oracle}`;
  }
}

/** The oracle binary, built when missing or its sources changed (~1 s warm, ~20 s with a cold Go cache). */
export function buildOracle(): string {
  return buildGoProgram(SRC, 'oracle');
}

/** A Go program of the test tree (its dir holds main.go and go.mod) built into .cache/oracle/<name> when missing or changed. */
export function buildGoProgram(src: string, name: string): string {
  const bin = join(OUT, name);
  const stamp = createHash('sha256').update(readFileSync(join(src, 'main.go'))).update(readFileSync(join(src, 'go.mod'))).digest('hex').slice(0, 16);
  const stampFile = bin + '.stamp';
  if (existsSync(bin) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return bin;
  mkdirSync(OUT, { recursive: true });
  execFileSync('go', ['build', '-trimpath', '-o', bin + '.tmp', '.'], { cwd: src, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' } });
  renameSync(bin + '.tmp', bin);
  writeFileSync(stampFile, stamp);
  return bin;
}

/** One request as Go parsed it; byte strings are Buffers. */
export interface OracleRequest {
  seq: number;
  role: string;
  conn: string;
  proto: string;
  method: Buffer;
  target: Buffer;
  host: Buffer;
  /** Canonical name (latin1 string) → values, in Go's order. */
  headers: Map<string, Buffer[]>;
  body: Buffer;
  te: string[] | null;
  contentLength: number;
}

export interface OracleError {
  seq: number;
  role: string;
  conn: string;
  text: string;
}

export interface OracleLog {
  requests: OracleRequest[];
  errors: OracleError[];
}

export interface Oracle {
  /** Port of each role: upstream-0.. (upstream-0-tls.. with TLS), direct, directTLS, control. */
  readonly ports: Record<string, number>;
  log(): Promise<OracleLog>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

interface RawRequest {
  seq: number;
  role: string;
  conn: string;
  proto: string;
  method: string | null;
  target: string | null;
  host: string | null;
  headers: { name: string; values: (string | null)[] | null }[] | null;
  body: string | null;
  te: string[] | null;
  contentLength: number;
}

const b64 = (s: string | null): Buffer => Buffer.from(s ?? '', 'base64');

/**
 * Starts the oracle with one upstream per entry of `apis` (the /apis document that member's
 * "apiserver" serves) and `api` for /api; with `tls`, each upstream also on TLS (HTTP/2 and
 * HTTP/1.1 by ALPN) at port `upstream-N-tls`, serving that pair.
 */
export async function startOracle(o: { api: string; apis: string[]; tls?: { certFile: string; keyFile: string } }): Promise<Oracle> {
  const bin = buildOracle();
  const tls = o.tls ? ['-tls-cert', o.tls.certFile, '-tls-key', o.tls.keyFile] : [];
  const child: ChildProcess = spawn(bin, ['-api', o.api, '-apis', o.apis.join(','), '-upstreams', String(o.apis.length), ...tls], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (l) => resolve(l));
    child.once('exit', (code) => reject(new Error(`the oracle exited (${code}) before it listened`)));
  });
  const ports = JSON.parse(first) as Record<string, number>;
  const control = `http://127.0.0.1:${ports.control}`;
  return {
    ports,
    async log() {
      const res = await request(control + '/log');
      const raw = (await res.body.json()) as { requests: RawRequest[] | null; errors: OracleError[] | null };
      const requests = (raw.requests ?? []).map((r) => ({
        seq: r.seq,
        role: r.role,
        conn: r.conn,
        proto: r.proto,
        method: b64(r.method),
        target: b64(r.target),
        host: b64(r.host),
        headers: new Map((r.headers ?? []).map((f) => [b64(f.name).toString('latin1'), (f.values ?? []).map(b64)])),
        body: b64(r.body),
        te: r.te,
        contentLength: r.contentLength,
      }));
      return { requests, errors: raw.errors ?? [] };
    },
    async reset() {
      const res = await request(control + '/reset', { method: 'POST' });
      await res.body.dump();
    },
    close: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}
