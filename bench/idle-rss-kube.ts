// Memory at rest in front of real kube-apiservers (issue 40 §2): the plane of the kube suite (v1.34.4 and
// v1.37.2) and an mvproxy pair started as `npm run test:scale` starts them (the compiled build, the image's
// environment, jemalloc), each member read 8 s after it is ready and again at rest, after the merge worker's
// idle exit and the collection at rest (src/lifecycle/memory.ts REST_MS). ~2.5 minutes.
//
//   node --import tsx bench/idle-rss-kube.ts [node|uws]      (uws: under scripts/node-glibc.sh's node)
// MVPROXY_MAIN=<build>/src/main.js measures another build. Prints one JSON line per member.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startControlPlane } from '../test/kube/support/control-plane';
import { startMvproxies } from '../test/kube/support/mvproxy';
import { jemalloc } from '../test/support/jemalloc';
import { REST_MS } from '../src/lifecycle/memory';
import { residentMiB, restCollectedLine } from './lib';
import { BUILD_DIR, IMAGE_ENV, buildDist } from './targets';

async function main() {
  const frontend = process.argv[2] === 'uws' ? 'uws' : 'node';
  const entry = process.env.MVPROXY_MAIN ?? join(BUILD_DIR, 'src', 'main.js');
  if (!process.env.MVPROXY_MAIN) {
    const err = buildDist();
    if (err) throw new Error(err);
  }
  const plane = await startControlPlane();
  try {
    // --v=2: the kube helpers wait for the merge by its log line; the collection logs at --v=1.
    const members = await startMvproxies(plane, { frontend, extraArgs: ['--discovery-refresh-interval=30s', '--v=2'], command: { entry: [entry], env: { ...IMAGE_ENV, ...jemalloc() } } });
    const t0 = Date.now();
    const read = () => members.map((m) => residentMiB(m.proc.child.pid!));
    await sleep(8000);
    const startup = read();
    await sleep(t0 + REST_MS + 15_000 - Date.now());
    const rest = read();
    members.forEach((m, i) => {
      console.log(JSON.stringify({ member: m.proc.name, startup: startup[i], atRest: { ...rest[i], collected: restCollectedLine(m.proc.log()) } }));
    });
    await Promise.all(members.map((m) => m.stop()));
  } finally {
    await plane.stop();
  }
}
void main().then(() => process.exit(0), (e: unknown) => {
  console.error(e);
  process.exit(1);
});
