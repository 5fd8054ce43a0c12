// Preloaded into a proxy by bench/allocations.ts (node --require): counts the bytes the process
// allocates on the V8 heap between two SIGUSR2 signals, exactly, from v8.GCProfiler: for every
// collection in the window, used-before minus used-after-the-previous-one, plus the growth since
// the last. Written as JSON to MVPROXY_ALLOC_OUT.<pid> at the second signal. With
// MVPROXY_ALLOC_SITES=1 the window also runs V8's sampling heap profiler with collected objects
// included (node's --heap-prof keeps only what is alive at exit: none of a request's garbage),
// written beside it as <pid>.heapprofile.
'use strict';
const v8 = require('node:v8');
const inspector = require('node:inspector');
const { writeFileSync } = require('node:fs');
const out = () => `${process.env.MVPROXY_ALLOC_OUT}.${process.pid}`;
// '1': every allocation; 'promoted': only what outlived the young generation (alive, or collected
// by a major GC): the objects that make the old generation grow and the major GC pauses.
const sites = process.env.MVPROXY_ALLOC_SITES === '1' || process.env.MVPROXY_ALLOC_SITES === 'promoted';
const promotedOnly = process.env.MVPROXY_ALLOC_SITES === 'promoted';
let profiler = null;
let session = null;
let startUsed = 0;
process.on('SIGUSR2', () => {
  if (profiler === null) {
    if (sites) {
      session = new inspector.Session();
      session.connect();
      session.post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !promotedOnly });
    }
    profiler = new v8.GCProfiler();
    profiler.start();
    startUsed = v8.getHeapStatistics().used_heap_size;
    return;
  }
  const endUsed = v8.getHeapStatistics().used_heap_size;
  const { statistics } = profiler.stop();
  profiler = null;
  let bytes = 0;
  let prevAfter = startUsed;
  for (const s of statistics) {
    bytes += s.beforeGC.heapStatistics.usedHeapSize - prevAfter;
    prevAfter = s.afterGC.heapStatistics.usedHeapSize;
  }
  bytes += endUsed - prevAfter;
  if (session !== null) {
    session.post('HeapProfiler.stopSampling', (err, r) => {
      if (!err) writeFileSync(`${out()}.heapprofile`, JSON.stringify(r.profile));
      session.disconnect();
      session = null;
      writeFileSync(out(), JSON.stringify({ bytes, collections: statistics.length }));
    });
  } else writeFileSync(out(), JSON.stringify({ bytes, collections: statistics.length }));
});
