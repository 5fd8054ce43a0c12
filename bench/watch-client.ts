// Watch load generator (its own process, pinned with the other load generators): opens N watches
// (HTTP/1.1, one connection each) and measures what arrives: events/s delivered and the delivery
// latency of each event (backend send time, carried in the object's resourceVersion as
// process.hrtime.bigint() — CLOCK_MONOTONIC, the same clock for every process on the machine —
// subtracted from the receive time here).
//
//   node --import tsx bench/watch-client.ts --port P --path /api/v1/...?watch=1 --n 200 \
//        [--warmup-ms 1000] [--measure-ms 4000] [--hold] [--connect-timeout-ms 20000]
//
// Without --hold: opens all, waits warmup, measures, prints one JSON line, exits.
// With --hold: opens all, prints {"established":N,...} and keeps them open (events are counted)
// until stdin ends or SIGTERM, then prints the final JSON line.

import net from 'node:net';

const argv = process.argv.slice(2);
const str = (name: string, dflt: string) => {
  const i = argv.indexOf(name);
  return i === -1 ? dflt : argv[i + 1]!;
};
const num = (name: string, dflt: number) => Number(str(name, String(dflt)));

const HOST = str('--host', '127.0.0.1');
const PORT = num('--port', 0);
const PATH = str('--path', '/api/v1/namespaces/default/configmaps?watch=1');
const N = num('--n', 100);
const WARMUP = num('--warmup-ms', 1000);
const MEASURE = num('--measure-ms', 4000);
const HOLD = argv.includes('--hold');
const CONNECT_TIMEOUT = num('--connect-timeout-ms', 20_000);
const BATCH = 50;

const MARK = '"resourceVersion":"';
const REQUEST = Buffer.from(`GET ${PATH} HTTP/1.1\r\nHost: ${HOST}:${PORT}\r\nAccept: application/json\r\nUser-Agent: mvproxy-bench-watch\r\n\r\n`);

let measuring = false;
let events = 0;
let totalEvents = 0;
const latMs: number[] = [];
let closedEarly = 0;
const sockets: net.Socket[] = [];

function openOne(): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: HOST, port: PORT });
    s.setNoDelay(true);
    let headersDone = false;
    let carry = '';
    let settled = false;
    const done = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(ok);
    };
    const timer = setTimeout(() => {
      s.destroy();
      done(false);
    }, CONNECT_TIMEOUT);
    s.on('connect', () => s.write(REQUEST));
    s.on('data', (chunk: Buffer) => {
      const now = process.hrtime.bigint();
      let buf = carry + chunk.toString('latin1');
      let pos = 0;
      if (!headersDone) {
        const end = buf.indexOf('\r\n\r\n');
        if (end === -1) {
          carry = buf;
          return;
        }
        if (!buf.startsWith('HTTP/1.1 200')) {
          process.stderr.write(`watch-client: ${buf.slice(0, buf.indexOf('\r\n'))}\n`);
          s.destroy();
          done(false);
          return;
        }
        headersDone = true;
        sockets.push(s);
        done(true);
        pos = end + 4;
      }
      for (;;) {
        const i = buf.indexOf(MARK, pos);
        if (i === -1) {
          carry = buf.slice(Math.max(pos, buf.length - MARK.length - 24));
          break;
        }
        const j = buf.indexOf('"', i + MARK.length);
        if (j === -1) {
          carry = buf.slice(i);
          break;
        }
        totalEvents++;
        if (measuring) {
          events++;
          latMs.push(Number(now - BigInt(buf.slice(i + MARK.length, j))) / 1e6);
        }
        pos = j + 1;
      }
      if (pos >= buf.length) carry = '';
      buf = '';
    });
    s.on('error', () => {
      done(false);
    });
    s.on('close', () => {
      if (settled && headersDone && !stopping) closedEarly++;
      done(false);
    });
  });
}

let stopping = false;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const k = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[k]!;
}

function result(measuredMs: number, connectMs: number): Record<string, unknown> {
  const s = latMs.slice().sort((a, b) => a - b);
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    requested: N,
    established: sockets.length,
    failed: N - sockets.length,
    closedEarly,
    connectMs: Math.round(connectMs),
    measuredMs: Math.round(measuredMs),
    events,
    totalEvents,
    eventsPerS: Math.round((events / measuredMs) * 1000),
    latencyMs: { p50: r3(percentile(s, 50)), p99: r3(percentile(s, 99)), max: r3(s.length ? s[s.length - 1]! : NaN), mean: r3(s.length ? s.reduce((a, b) => a + b, 0) / s.length : NaN) },
  };
}

async function main(): Promise<void> {
  const t0 = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    await Promise.all(Array.from({ length: Math.min(BATCH, N - i) }, openOne));
  }
  const connectMs = performance.now() - t0;
  if (HOLD) {
    measuring = true;
    const started = performance.now();
    process.stdout.write(JSON.stringify({ established: sockets.length, failed: N - sockets.length, connectMs: Math.round(connectMs) }) + '\n');
    const finish = () => {
      stopping = true;
      process.stdout.write(JSON.stringify(result(performance.now() - started, connectMs)) + '\n');
      for (const s of sockets) s.destroy();
      process.exit(0);
    };
    process.stdin.on('end', finish);
    process.stdin.resume();
    process.on('SIGTERM', finish);
    return;
  }
  await new Promise((r) => setTimeout(r, WARMUP));
  measuring = true;
  const started = performance.now();
  await new Promise((r) => setTimeout(r, MEASURE));
  measuring = false;
  stopping = true;
  const measured = performance.now() - started;
  process.stdout.write(JSON.stringify(result(measured, connectMs)) + '\n');
  for (const s of sockets) s.destroy();
  process.exit(0);
}

void main();
