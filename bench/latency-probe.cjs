// Where a proxy's GET latency goes at saturation (bench/README "Where the GET p99 at saturation goes").
// A preload for the mvproxy processes of `bench/run.ts`:
//   bench/run.ts --only uws/get --proxy-node-flags "--require $PWD/bench/latency-probe.cjs" ...
// Each process's main thread writes /tmp/latency-probe-<pid>.json every second, and once more at exit,
// with what it saw from PROBE_FROM_MS after its start (3 s: past start-up's own collections and compiles;
// the bench's warm-up and any other scenario's run are inside the window too):
// - its GC pauses (perf_hooks 'gc' entries): count, p50, p99, max, sum;
// - its event loop's delay (monitorEventLoopDelay at 1 ms resolution: the time between the timer's
//   firings, the millisecond itself included, so ~1.1 ms idle; under load about how long an iteration
//   ran). Not a setImmediate chain per iteration: that never lets a loop sleep, and the bench keeps its
//   mvproxy processes up beside the other scenarios;
// - mvproxy's own mvproxy_request_duration_seconds buckets for local GETs (from receiving a request to
//   the end of its answer), scraped from its metrics port (read off its JSON start line). They count
//   from the process's start, warm-up included.
// Bench-only: it wakes each loop every millisecond, scrapes /metrics and writes a file every second in
// the process it measures; never in a daemon that serves anyone. mvproxy passes its --require on to its
// merge worker (src/aggregation/merger.ts), so a worker thread returns at once.
'use strict';
const { isMainThread } = require('node:worker_threads');

if (isMainThread) probe();

function probe() {
  const { monitorEventLoopDelay } = require('node:perf_hooks');
  const { observeGc } = require('./gc-probe.cjs');
  const fs = require('node:fs');

  const FROM_MS = Number(process.env.PROBE_FROM_MS ?? 3000) || 0;
  const out = `/tmp/latency-probe-${process.pid}.json`;
  const gcs = [];
  observeGc((e) => {
    if (e.startTime >= FROM_MS) gcs.push(e.duration);
  });

  const delay = monitorEventLoopDelay({ resolution: 1 });
  setTimeout(() => delay.enable(), FROM_MS).unref();

  let metricsPort;
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (chunk, ...rest) => {
    if (metricsPort === undefined) metricsPort = /"metricsPort":(\d+)/.exec(String(chunk))?.[1];
    return write(chunk, ...rest);
  };
  let buckets = {};
  let scrapeError = null;
  let scraping = false;
  // Nearest rank: the smallest value with at least p of the samples at or below it.
  const pct = (a, p) => a[Math.max(0, Math.ceil(a.length * p) - 1)];
  const ms = (x) => (x === undefined ? null : Number(x.toFixed(2)));
  const report = () => {
    const g = [...gcs].sort((a, b) => a - b);
    fs.writeFileSync(
      out,
      JSON.stringify({
        member: /\/pki\/([a-z]+)\//.exec(process.argv.join(' '))?.[1] ?? '',
        gc: { n: g.length, p50: ms(pct(g, 0.5)), p99: ms(pct(g, 0.99)), max: ms(g[g.length - 1]), sum: ms(g.reduce((a, b) => a + b, 0)) },
        loopDelay: { n: delay.count, p50: ms(delay.percentile(50) / 1e6), p99: ms(delay.percentile(99) / 1e6), max: ms(delay.max / 1e6) },
        localGetSeconds: buckets,
        scrapeError,
      }),
    );
  };
  setInterval(async () => {
    if (metricsPort !== undefined && !scraping) {
      scraping = true;
      try {
        const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(900) })).text();
        buckets = {};
        for (const m of text.matchAll(/^mvproxy_request_duration_seconds_bucket\{le="([^"]+)",route="local",verb="get",code="2xx"\} (\d+)$/gm)) buckets[m[1]] = Number(m[2]);
        scrapeError = null;
      } catch (e) {
        scrapeError = String(e && e.message); // the daemon going away with the bench, or a scrape that timed out
      } finally {
        scraping = false;
      }
    } else if (metricsPort === undefined) scrapeError = 'no "metricsPort" in a JSON start line (--logging-format=json)';
    report();
  }, 1000).unref();
  process.on('exit', report);
}
