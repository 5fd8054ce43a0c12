// Memory at rest in front of real kube-apiservers (issue 40 §2): the plane of the kube suite (v1.34.4 and
// v1.37.2) and an mvproxy pair started as `npm run test:scale` starts them (the compiled build, the image's
// environment, jemalloc), each member read 8 s after it is ready and again at rest, after the merge worker's
// idle exit and the collection at rest (src/lifecycle/memory.ts REST_MS). ~2.5 minutes.
//
//   node --import tsx bench/idle-rss-kube.ts [node|uws] [--floors] [--requests N]   (uws: under scripts/node-glibc.sh's node)
// --floors: beside each member, the floor of its front end (bench/floor-proxy.ts: the same front end and
//   runtime, the plain HTTP/1.1 client, TLS both sides with the client's certificate asked for and its CN and
//   O sent as identity, the front-proxy certificate upstream; no discovery, routing, metrics or peers), in
//   front of the same apiserver, with the image's environment and jemalloc, collected once at rest as mvproxy
//   is (SIGUSR2, once every member has): the least memory a process of this design holds at rest here.
// --heap: each member and floor preloads bench/heap-probe.cjs, which writes what its V8 heap holds at its
//   exit (after the reading at rest): printed as a second line per process, {"process":…,"heap":…}.
// --requests N: after the 8-s reading, N GETs through each member and floor (HTTPS, keep-alive, 8 at once,
//   the admin's certificate), so that each has compiled its request path before it rests.
// MVPROXY_MAIN=<build>/src/main.js measures another build. Prints one JSON line per process.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClientRequest } from 'node:http';
import { Agent, request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { startControlPlane, type KubeControlPlane } from '../test/kube/support/control-plane';
import { startMvproxies } from '../test/kube/support/mvproxy';
import { waitFor, type Proc as KubeProc } from '../test/kube/support/processes';
import { jemalloc } from '../test/support/jemalloc';
import { REST_MS } from '../src/lifecycle/memory';
import { residentMiB, restCollectedLine } from './lib';
import { BUILD_DIR, IMAGE_ENV, buildDist } from './targets';
import { startKubeFloor } from './kube-floor';

const argv = process.argv.slice(2);
const withFloors = argv.includes('--floors');
const heapDir = argv.includes('--heap') ? mkdtempSync(join(tmpdir(), 'idle-heap-')) : undefined;
/** The image's environment, and the heap probe's preload with --heap. */
const PROCESS_ENV = { ...IMAGE_ENV, ...(heapDir ? { NODE_OPTIONS: `${IMAGE_ENV.NODE_OPTIONS} --require ${join(__dirname, 'heap-probe.cjs')}`, HEAP_PROBE_DIR: heapDir } : {}) };
const requestsAt = argv.indexOf('--requests');
const requests = requestsAt === -1 ? 0 : Number(argv[requestsAt + 1]);
if (!Number.isInteger(requests) || requests < 0) throw new Error(`--requests wants a count, not ${argv[requestsAt + 1]}`);
/** How long after the requests mvproxy may take to collect at rest (REST_MS of quiet, and its checks' period). */
const REST_WAIT_MS = REST_MS + 60_000;

interface Measured {
  name: string;
  pid: number;
  url: string;
  log(): string;
}

/** n GETs of the default namespace through `url`, 8 at once on keep-alive connections. */
async function getMany(plane: KubeControlPlane, url: string, n: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 8, ca: readFileSync(plane.pki.caFile), cert: plane.admin.cert, key: plane.admin.key });
  let ok = 0;
  let next = 0;
  const one = () => new Promise<void>((resolve, reject) => {
    request(`${url}/api/v1/namespaces/default`, { agent, timeout: 10_000 }, (res) => {
      if (res.statusCode === 200) ok++;
      res.resume().on('end', resolve).on('error', reject);
    }).on('timeout', function (this: ClientRequest) {
      this.destroy(new Error(`GET through ${url}: no answer in 10 s`));
    }).on('error', reject).end();
  });
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next++ < n) await one();
  }));
  agent.destroy();
  return ok;
}

async function main() {
  const frontend = argv[0] === 'uws' ? 'uws' : 'node';
  const entry = process.env.MVPROXY_MAIN ?? join(BUILD_DIR, 'src', 'main.js');
  if (!process.env.MVPROXY_MAIN) {
    const err = buildDist();
    if (err) throw new Error(err);
  }
  const plane = await startControlPlane();
  const floors: { proc: KubeProc; url: string }[] = [];
  try {
    // --v=2: the kube helpers wait for the merge by its log line; the collection logs at --v=1.
    const members = await startMvproxies(plane, { frontend, extraArgs: ['--discovery-refresh-interval=30s', '--v=2'], command: { entry: [entry], env: { ...PROCESS_ENV, ...jemalloc() } } });
    const t0 = Date.now();
    if (withFloors) for (let i = 0; i < members.length; i++) floors.push(await startKubeFloor(plane, plane.apiservers[i]!.url, frontend, `floor-${frontend}-${i}`, { ...PROCESS_ENV, ...jemalloc() }));
    const all: Measured[] = [
      ...members.map((m) => ({ name: m.proc.name, pid: m.proc.child.pid!, url: m.url, log: () => m.proc.log() })),
      ...floors.map((f) => ({ name: f.proc.name, pid: f.proc.child.pid!, url: f.url, log: () => f.proc.log() })),
    ];
    const read = () => all.map((m) => residentMiB(m.pid));
    await sleep(t0 + 8000 - Date.now());
    const startup = read();
    const served: number[] = [];
    for (const m of all) served.push(requests > 0 ? await getMany(plane, m.url, requests) : 0);
    // Each member collects once at rest, REST_MS after its last request; then each floor the same way
    // (SIGUSR2), and everything is read.
    const collected = () => members.every((m) => restCollectedLine(m.proc.log()) !== null);
    await waitFor(() => 'every member collected at rest', async () => collected(), REST_WAIT_MS);
    for (const f of floors) f.proc.child.kill('SIGUSR2');
    await waitFor(() => 'every floor collected', async () => floors.every((f) => /collectedAtRest/.test(f.proc.log())), 10_000);
    await sleep(5000);
    const rest = read();
    all.forEach((m, i) => {
      const collectedLine = restCollectedLine(m.log()) ?? /collectedAtRest/.test(m.log());
      console.log(JSON.stringify({ process: m.name, startup: startup[i], served: served[i], atRest: { ...rest[i], collected: collectedLine } }));
    });
    await Promise.all([...members.map((m) => m.stop()), ...floors.map((f) => f.proc.stop(5000))]);
    if (heapDir) {
      for (const m of all) {
        const file = join(heapDir, `heap-${m.pid}.json`);
        const heap = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as unknown) : null;
        console.log(JSON.stringify({ process: m.name, heap }));
      }
    }
  } finally {
    await Promise.all(floors.map((f) => f.proc.stop(0)));
    await plane.stop();
  }
}
void main().then(() => process.exit(0), (e: unknown) => {
  console.error(e);
  process.exit(1);
});
