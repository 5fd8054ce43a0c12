// Idle RSS of mvproxy A (dist build, the bench environment: IMAGE_ENV) 2 s after start and at 90 s
// without traffic, and its thread count then (the merge worker exits after MERGE_WORKER_IDLE_MS).
// Beside it, in the same run, a bare Node process (`node -e` with a timer, same binary and
// environment): what any daemon on this runtime costs before its own code. Each RSS is split into
// anonymous memory (heaps, malloc) and file-backed pages (the node binary's code and data, shared
// libraries, uWS's .node; shared with every other process mapping the same files).
//   node --import tsx bench/idle-rss.ts
import { join } from 'node:path';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { buildDist, IMAGE_ENV, makePKI, startBackend, startMvproxy } from './targets';
import { memory, sleep, startProc } from './lib';

const MB = (n: number) => (n / 1e6).toFixed(1);
const split = (pid: number) => {
  const m = memory(pid);
  return `${MB(m.rss)} MB (anon ${MB(m.anon)}, file ${MB(m.file)})`;
};

async function main() {
  const err = buildDist();
  if (err) throw new Error(err);
  const be = await startBackend({});
  const tmp = mkdtempSync(join(os.tmpdir(), 'mvproxy-idle-'));
  const pki = await makePKI(join(tmp, 'pki'), ['a', 'b']);
  const B = await startMvproxy({ name: 'b', frontend: 'uws', localPort: be.portB, peers: {}, pki, runtime: 'dist' });
  const A = await startMvproxy({ name: 'a', frontend: 'uws', localPort: be.portA, peers: { [B.serverID]: `127.0.0.1:${B.peerPort}` }, pki, runtime: 'dist' });
  const bare = startProc('bare-node', process.execPath, ['-e', 'setTimeout(() => {}, 100000)'], { env: { ...process.env, ...IMAGE_ENV } });
  await sleep(2000);
  const t2 = split(A.proc.pid);
  await sleep(88000);
  console.log(`A idle RSS: 2 s ${t2}, 90 s ${split(A.proc.pid)}; threads now: ${readdirSync(`/proc/${A.proc.pid}/task`).length}`);
  console.log(`bare node (-e, a timer) at 90 s: ${split(bare.pid)}`);
  await Promise.all([A.proc.stop('SIGTERM', 5000), B.proc.stop('SIGTERM', 5000), be.proc.stop('SIGTERM', 5000), bare.stop('SIGTERM', 5000)]);
  rmSync(tmp, { recursive: true, force: true });
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
