// Preloaded into mvproxy by bench/gc-pauses.ts (`node --require`): every V8 collection's duration and
// kind (perf_hooks 'gc' entries). SIGUSR2 starts a window; SIGUSR1 writes the window's entries as
// JSON [startMs, durationMs, kind, flags] to $MVPROXY_GC_OUT (kind: 1 scavenge, 2 minor mark-sweep, 4
// full mark-compact, 8 incremental marking, 16 weak callbacks; flags: perf_hooks.constants
// NODE_PERFORMANCE_GC_FLAGS_*). bench/latency-probe.cjs requires it for observeGc only: the window
// and its signals are set up only where $MVPROXY_GC_OUT names a file.
'use strict';
const { PerformanceObserver } = require('node:perf_hooks');
const { writeFileSync } = require('node:fs');

/** Calls onEntry with each collection's perf_hooks entry from now on. */
function observeGc(onEntry) {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) onEntry(e);
  }).observe({ entryTypes: ['gc'] });
}

if (process.env.MVPROXY_GC_OUT) {
  let entries = [];
  observeGc((e) => entries.push([e.startTime, e.duration, e.detail ? e.detail.kind : 0, e.detail ? e.detail.flags : 0]));
  process.on('SIGUSR2', () => {
    entries = [];
  });
  process.on('SIGUSR1', () => writeFileSync(process.env.MVPROXY_GC_OUT, JSON.stringify(entries)));
}

module.exports = { observeGc };
