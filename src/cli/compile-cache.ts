// Start-up is the gap of every restart (issue 39 item 4: a static pod's container restarted, a unit
// restarted): node:module's compile cache keeps the V8 code of every module between starts, in
// NODE_COMPILE_CACHE or the system's temporary directory. Imported first by main.ts, before any
// other module is loaded. Where the cache cannot be written (a read-only root file system) node
// says so in the status it returns and everything runs as without it.
import module from 'node:module';

module.enableCompileCache?.();
