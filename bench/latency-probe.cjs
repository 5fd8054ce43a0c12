// Where a proxy's GET latency goes at saturation (bench/README "Where the GET p99 goes"). A preload
// for the mvproxy processes of `bench/run.ts`:
//   bench/run.ts --only uws/get --proxy-node-flags "--require $PWD/bench/latency-probe.cjs" ...
// Each process writes /tmp/latency-probe-<pid>.json every second, from the time the load starts
// (PROBE_FROM_MS after start, 3 s: past start-up's own collections and compiles):
// - its GC pauses (perf_hooks 'gc' entries): count, p50, p99, max, sum;
// - its event loop's delay (monitorEventLoopDelay, 1 ms resolution: a 1 ms timer's lateness, so
//   under load about how long an iteration ran). Not a setImmediate chain per iteration: that never
//   lets a loop sleep, and the bench keeps its mvproxy processes up beside the other scenarios;
// - mvproxy's own mvproxy_request_duration_seconds buckets (from receiving a request to the end of
//   its answer), scraped from its metrics port (read off its start line).
// Bench-only: it wakes each loop every millisecond and writes files; never in a daemon that serves anyone.
'use strict';
const { PerformanceObserver, monitorEventLoopDelay } = require('node:perf_hooks');
const fs = require('node:fs');

const FROM_MS = Number(process.env.PROBE_FROM_MS ?? 3000);
const out = `/tmp/latency-probe-${process.pid}.json`;
const gcs = [];
new PerformanceObserver((l) => {
  for (const e of l.getEntries()) if (e.startTime >= FROM_MS) gcs.push(e.duration);
}).observe({ entryTypes: ['gc'] });

// The loop's delay (a 1 ms timer's lateness: under load, about how long an iteration ran past it).
const delay = monitorEventLoopDelay({ resolution: 1 });
setTimeout(() => delay.enable(), FROM_MS).unref();

let metricsPort;
const write = process.stderr.write.bind(process.stderr);
process.stderr.write = (chunk, ...rest) => {
  if (metricsPort === undefined) metricsPort = /"metricsPort":(\d+)/.exec(String(chunk))?.[1];
  return write(chunk, ...rest);
};
let buckets = {};
const pct = (a, p) => a[Math.min(a.length - 1, Math.floor(a.length * p))];
setInterval(async () => {
  if (metricsPort !== undefined) {
    try {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      buckets = {};
      for (const m of text.matchAll(/^mvproxy_request_duration_seconds_bucket\{le="([^"]+)",route="local",verb="get",code="2xx"\} (\d+)$/gm)) buckets[m[1]] = Number(m[2]);
    } catch {
      // the daemon is going away with the bench
    }
  }
  const g = [...gcs].sort((a, b) => a - b);
  const ms = (x) => (x === undefined ? null : Number(x.toFixed(2)));
  const report = {
    member: /\/pki\/([a-z]+)\//.exec(process.argv.join(' '))?.[1] ?? '',
    gc: { n: g.length, p50: ms(pct(g, 0.5)), p99: ms(pct(g, 0.99)), max: ms(g[g.length - 1]), sum: ms(g.reduce((a, b) => a + b, 0)) },
    loopDelay: { n: delay.count, p50: ms(delay.percentile(50) / 1e6), p99: ms(delay.percentile(99) / 1e6), max: ms(delay.max / 1e6) },
    localGetSeconds: buckets,
  };
  fs.writeFileSync(out, JSON.stringify(report));
}, 1000).unref();
