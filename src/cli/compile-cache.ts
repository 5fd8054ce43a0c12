// What must be set before any other module loads: the compile cache and one V8 flag (below).
// Start-up is the gap of every restart (issue 39 item 4: a static pod's container restarted, a unit
// restarted): node:module's compile cache keeps the V8 code of every module between starts, in
// NODE_COMPILE_CACHE or the system's temporary directory. Imported first by main.ts, before any
// other module is loaded. Where the cache cannot be written (a read-only root file system) node
// says so in the status it returns and everything runs as without it.
import module from 'node:module';
import { setFlagsFromString } from 'node:v8';

module.enableCompileCache?.();

// V8's allocation-site pretenuring, off. At GET saturation it decided that the request path's objects
// live long (50 requests in flight at every young-generation collection) and allocated them in the
// old space, which then filled every ~1.6 s: a full mark-compact with an incremental-marking pause
// before it, 5-7 ms each (bench/gc-pauses.ts). Off, the same load makes no full collection and each
// scavenge is cheaper (0.29 against 0.70 ms at the median). Not allowed in NODE_OPTIONS, so set here,
// before the request path's code has run.
setFlagsFromString('--no-allocation-site-pretenuring');
