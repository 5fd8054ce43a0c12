// Idle RSS of the compiled daemon as the image runs it, broken down (issue 40 §2: what is Node's and
// what is mvproxy's at rest). Needs the build of `npm run test:scale` (bench/.build) or `npm run build`'s
// dist via MVPROXY_MAIN. One daemon in front of a fake apiserver (which answers discovery with an ETag
// and 304s, as kube-apiserver does), read 8 s after it starts and again at rest: after the merge
// worker's idle exit and the collection at rest (src/lifecycle/memory.ts REST_MS), ~100 s in.
//
//   node --import tsx bench/idle-rss.ts [node|uws] [image|glibc|lite]
// image: the image's environment and jemalloc; glibc: without jemalloc; lite: also --max-old-space-size=64.
// (the uws front end under scripts/node-glibc.sh's node). Prints one JSON line.
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { startFakeUpstream } from '../test/support/fake-upstream';
import { IMAGE_ENV } from './targets';
import { memory, residentMiB, restCollectedLine } from './lib';
import { jemalloc } from '../test/support/jemalloc';
import { REST_MS } from '../src/lifecycle/memory';

const fe = process.argv[2] ?? 'node';
const variant = process.argv[3] ?? 'image';
async function main() {
  const up = await startFakeUpstream(() => false);
  const env: NodeJS.ProcessEnv = { ...process.env, ...IMAGE_ENV };
  if (variant !== 'glibc') Object.assign(env, jemalloc());
  // Another jemalloc setting to compare with the image's (bench/README "jemalloc with one arena").
  if (variant !== 'glibc' && process.env.MVPROXY_IDLE_MALLOC_CONF) env.MALLOC_CONF = process.env.MVPROXY_IDLE_MALLOC_CONF;
  const extra = variant === 'lite' ? ['--max-old-space-size=64'] : [];
  const p = spawn(process.execPath, [...extra, process.env.MVPROXY_MAIN ?? join(__dirname, '.build', 'src', 'main.js'), `--frontend=${fe}`, '--secure-port=0', '--bind-address=127.0.0.1', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${up.url}`, '--v=1'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  p.stderr.on('data', (d) => (out += d));
  await sleep(8000);
  const read = () => ({ ...residentMiB(p.pid!), threads: memory(p.pid!).threads });
  const startup = read();
  const m = /"metricsPort":(\d+)/.exec(out);
  let heap = '';
  if (m) {
    const text = await (await fetch(`http://127.0.0.1:${m[1]}/metrics`)).text();
    heap = ['nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes'].map((k) => `${k.replace('nodejs_', '').replace('_bytes', '')} ${(Number(new RegExp(`^${k} (\\S+)`, 'm').exec(text)?.[1]) / 2 ** 20).toFixed(1)}`).join(', ');
  }
  await sleep(REST_MS + 10_000 - 8000);
  console.log(JSON.stringify({ fe, variant, ...startup, heap, atRest: { ...read(), collected: restCollectedLine(out) } }));
  p.kill('SIGKILL');
  await up.close();
}
void main();
