// Idle RSS of mvproxy A (dist build, the bench environment: IMAGE_ENV) 2 s after start and at 90 s
// without traffic, and its thread count then (the merge worker exits after MERGE_WORKER_IDLE_MS).
//   node --import tsx bench/idle-rss.ts
import { join } from 'node:path';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { buildDist, makePKI, startBackend, startMvproxy } from './targets';
import { memory, sleep } from './lib';
async function main() {
  const err = buildDist();
  if (err) throw new Error(err);
  const be = await startBackend({});
  const tmp = mkdtempSync(join(os.tmpdir(), 'mvproxy-idle-'));
  const pki = await makePKI(join(tmp, 'pki'), ['a', 'b']);
  const B = await startMvproxy({ name: 'b', frontend: 'uws', localPort: be.portB, peers: {}, pki, runtime: 'dist' });
  const A = await startMvproxy({ name: 'a', frontend: 'uws', localPort: be.portA, peers: { [B.serverID]: `127.0.0.1:${B.peerPort}` }, pki, runtime: 'dist' });
  const rss = () => (memory(A.proc.pid).rss / 1e6).toFixed(1);
  await sleep(2000);
  const t2 = rss();
  await sleep(88000);
  const t90 = rss();
  console.log(`A idle RSS: 2 s ${t2} MB, 90 s ${t90} MB; threads now: ${readdirSync(`/proc/${A.proc.pid}/task`).length}`);
  await Promise.all([A.proc.stop('SIGTERM', 5000), B.proc.stop('SIGTERM', 5000), be.proc.stop('SIGTERM', 5000)]);
  rmSync(tmp, { recursive: true, force: true });
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
