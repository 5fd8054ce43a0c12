// Structured logs in Kubernetes' shape (sig-instrumentation logging.md): JSON lines with `ts`
// (Unix seconds, float), `v` (info verbosity), `msg`, optional `err`, then key/values; or klog text
// `Lmmdd hh:mm:ss.uuuuuu pid] msg key="value"`. -v/--v sets the verbosity: V(0) always, V(2) the
// default (state changes, failed requests), V(4) one line per proxied request.

export type LogFormat = 'json' | 'text';

export interface Logger {
  readonly verbosity: number;
  enabled(v: number): boolean;
  info(v: number, msg: string, kv?: Record<string, unknown>): void;
  error(msg: string, err: unknown, kv?: Record<string, unknown>): void;
}

export function createLogger(verbosity = 2, format: LogFormat = 'json', out: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const write = (severity: 'I' | 'E', v: number | undefined, msg: string, err: string | undefined, kv?: Record<string, unknown>) => {
    if (format === 'json') {
      const rec: Record<string, unknown> = { ts: Date.now() / 1000 };
      if (v !== undefined) rec.v = v;
      rec.msg = msg;
      if (err !== undefined) rec.err = err;
      if (kv) Object.assign(rec, kv);
      out(JSON.stringify(rec) + '\n');
      return;
    }
    const d = new Date();
    const p2 = (n: number) => String(n).padStart(2, '0');
    let line = `${severity}${p2(d.getMonth() + 1)}${p2(d.getDate())} ${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}.${String(d.getMilliseconds() * 1000).padStart(6, '0')} ${process.pid}] ${JSON.stringify(msg)}`;
    if (err !== undefined) line += ` err=${JSON.stringify(err)}`;
    if (kv) for (const [k, val] of Object.entries(kv)) line += ` ${k}=${JSON.stringify(val)}`;
    out(line + '\n');
  };
  return {
    verbosity,
    enabled: (v) => v <= verbosity,
    info(v, msg, kv) {
      if (v <= verbosity) write('I', v, msg, undefined, kv);
    },
    error(msg, err, kv) {
      write('E', undefined, msg, err instanceof Error ? ((err as { code?: string }).code ? `${(err as { code?: string }).code}: ${err.message}` : err.message) : String(err), kv);
    },
  };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = { verbosity: -1, enabled: () => false, info() {}, error() {} };
