// Preloaded into a process by bench/idle-rss-kube.ts --heap (NODE_OPTIONS=--require): at its exit, what
// its V8 heap holds, as JSON in $HEAP_PROBE_DIR/heap-<pid>.json: each space's used MiB, V8's code
// statistics, and the sources of the modules it loaded, which V8 keeps as heap strings (it compiles
// lazily from them): characters, and bytes on the heap (one a character, two in a string with any
// character above U+00FF), by package. Main thread only (mvproxy passes --require on to its merge worker).
'use strict';
const { isMainThread } = require('node:worker_threads');

if (isMainThread && process.env.HEAP_PROBE_DIR) {
  process.on('exit', () => {
    const fs = require('node:fs');
    const v8 = require('node:v8');
    const MiB = (n) => Math.round((n / 2 ** 20) * 100) / 100;
    const sources = {};
    for (const f of Object.keys(require.cache)) {
      const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f);
      const k = m ? m[1] : /\/src\//.test(f) ? 'mvproxy src' : 'other';
      let text = '';
      try {
        text = fs.readFileSync(f, 'utf8');
      } catch {
        continue;
      }
      const wide = /[^\u0000-\u00ff]/.test(text);
      const s = (sources[k] ??= { modules: 0, chars: 0, heapBytes: 0 });
      s.modules++;
      s.chars += text.length;
      s.heapBytes += text.length * (wide ? 2 : 1);
    }
    const spaces = {};
    for (const s of v8.getHeapSpaceStatistics()) if (s.space_size > 0) spaces[s.space_name] = { usedMiB: MiB(s.space_used_size), sizeMiB: MiB(s.space_size) };
    const c = v8.getHeapCodeStatistics();
    const code = { codeAndMetadataMiB: MiB(c.code_and_metadata_size), bytecodeAndMetadataMiB: MiB(c.bytecode_and_metadata_size), externalScriptSourceMiB: MiB(c.external_script_source_size) };
    fs.writeFileSync(`${process.env.HEAP_PROBE_DIR}/heap-${process.pid}.json`, JSON.stringify({ pid: process.pid, spaces, code, sources }));
  });
}
