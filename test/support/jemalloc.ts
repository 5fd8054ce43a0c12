// Debian's libjemalloc2 preloaded into a daemon a test runs as its own process, as the image
// preloads its copy (docs/deploy.md "Memory"): glibc's malloc keeps what a burst freed, so RSS
// measured without it says more about the allocator than about mvproxy. .ci/run installs it.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';

/**
 * What the image sets (Dockerfile): jemalloc purges freed pages only when its arena is ticked by
 * another allocation, so an idle daemon kept them: 484 MiB 20 s after 10,000 idle connections went
 * away (174 at rest, the V8 heap already collected to 21 MiB), in one run of two. Its background
 * thread purges on its own clock (dirty_decay_ms, 10 s). narenas:1: one arena instead of jemalloc's
 * default four per CPU; mvproxy allocates from one thread but for TLS in libuv's pool and the merge
 * worker, and each arena kept its own dirty pages: 143.5–146.8 MiB with 2,000 node-local watches
 * against 150.2–151.1, uWS 141.0–144.5 against 150.1–150.5, CPU per event within the runs' spread
 * (bench/README.md "jemalloc with one arena").
 */
export const JEMALLOC_CONF = 'background_thread:true,narenas:1';

/** The environment that preloads it (MVPROXY_WATCH_MEMORY_MALLOC=glibc: none, to compare). */
export function jemalloc(): Record<string, string> {
  if (process.env.MVPROXY_WATCH_MEMORY_MALLOC === 'glibc') return {};
  const dir = readdirSync('/usr/lib').find((d) => d.endsWith('-linux-gnu') && existsSync(`/usr/lib/${d}/libjemalloc.so.2`));
  assert.ok(dir, "libjemalloc.so.2 not found: install Debian's libjemalloc2 (the image preloads jemalloc; .ci/run installs it)");
  return { LD_PRELOAD: `/usr/lib/${dir}/libjemalloc.so.2`, MALLOC_CONF: JEMALLOC_CONF };
}
