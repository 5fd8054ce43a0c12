// Debian's libjemalloc2 preloaded into a daemon a test runs as its own process, as the image
// preloads its copy (docs/deploy.md "Memory"): glibc's malloc keeps what a burst freed, so RSS
// measured without it says more about the allocator than about mvproxy. .ci/run installs it.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';

/** The environment that preloads it (MVPROXY_WATCH_MEMORY_MALLOC=glibc: none, to compare). */
export function jemalloc(): Record<string, string> {
  if (process.env.MVPROXY_WATCH_MEMORY_MALLOC === 'glibc') return {};
  const dir = readdirSync('/usr/lib').find((d) => d.endsWith('-linux-gnu') && existsSync(`/usr/lib/${d}/libjemalloc.so.2`));
  assert.ok(dir, "libjemalloc.so.2 not found: install Debian's libjemalloc2 (the image preloads jemalloc; .ci/run installs it)");
  return { LD_PRELOAD: `/usr/lib/${dir}/libjemalloc.so.2` };
}
