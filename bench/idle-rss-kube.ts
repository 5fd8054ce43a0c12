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
//   is (--collect-at-ms): the least memory a process of this design holds at rest on this runtime.
// --requests N: after the 8-s reading, N GETs through each member and floor (HTTPS, keep-alive, 8 at once,
//   the admin's certificate), so that each has compiled its request path before it rests.
// MVPROXY_MAIN=<build>/src/main.js measures another build. Prints one JSON line per process.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { startControlPlane, type KubeControlPlane } from '../test/kube/support/control-plane';
import { startMvproxies } from '../test/kube/support/mvproxy';
import { freePort, startProcess, type Proc as KubeProc } from '../test/kube/support/processes';
import { jemalloc } from '../test/support/jemalloc';
import { REST_MS } from '../src/lifecycle/memory';
import { residentMiB, restCollectedLine } from './lib';
import { BUILD_DIR, IMAGE_ENV, buildDist, strippedScript } from './targets';

const argv = process.argv.slice(2);
const withFloors = argv.includes('--floors');
const requestsAt = argv.indexOf('--requests');
const requests = requestsAt === -1 ? 0 : Number(argv[requestsAt + 1]);
/** When every process is read at rest: after mvproxy's collection at rest (REST_MS of quiet) with room for the requests. */
const READ_AT_MS = REST_MS + 25_000;

interface Measured {
  name: string;
  pid: number;
  url: string;
  log(): string;
}

/** The floor of `front` in front of apiserver `i` (bench/floor-proxy.ts), collected at rest as mvproxy is. */
async function startFloor(plane: KubeControlPlane, i: number, front: 'uws' | 'node'): Promise<KubeProc & { url: string }> {
  const pki = plane.pki;
  const port = await freePort();
  const args = [strippedScript('floor-proxy.ts'), String(port), plane.apiservers[i]!.url, front, '--client', 'plain', '--identity-from-cert',
    '--tls-cert', pki.apiserverCert, '--tls-key', pki.apiserverKey, '--client-ca', pki.caFile,
    '--upstream-ca', pki.caFile, '--upstream-cert', pki.proxyClientCert, '--upstream-key', pki.proxyClientKey, '--upstream-servername', 'kubernetes',
    '--collect-at-ms', String(REST_MS + 10_000)];
  const proc = startProcess(`floor-${front}-${i}`, process.execPath, args, plane.dir, { ...IMAGE_ENV, ...jemalloc() });
  const deadline = Date.now() + 20_000;
  while (!/"listening"/.test(proc.log())) {
    if (Date.now() > deadline) throw new Error(`floor ${i} did not listen: ${proc.log()}`);
    await sleep(100);
  }
  return Object.assign(proc, { url: `https://127.0.0.1:${port}` });
}

/** n GETs of the default namespace through `url`, 8 at once on keep-alive connections. */
async function getMany(plane: KubeControlPlane, url: string, n: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 8, ca: readFileSync(plane.pki.caFile), cert: plane.admin.cert, key: plane.admin.key });
  let ok = 0;
  let next = 0;
  const one = () => new Promise<void>((resolve, reject) => {
    request(`${url}/api/v1/namespaces/default`, { agent }, (res) => {
      if (res.statusCode === 200) ok++;
      res.resume().on('end', resolve).on('error', reject);
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
  const floors: (KubeProc & { url: string })[] = [];
  try {
    // --v=2: the kube helpers wait for the merge by its log line; the collection logs at --v=1.
    const members = await startMvproxies(plane, { frontend, extraArgs: ['--discovery-refresh-interval=30s', '--v=2'], command: { entry: [entry], env: { ...IMAGE_ENV, ...jemalloc() } } });
    const t0 = Date.now();
    if (withFloors) for (let i = 0; i < members.length; i++) floors.push(await startFloor(plane, i, frontend));
    const all: Measured[] = [
      ...members.map((m) => ({ name: m.proc.name, pid: m.proc.child.pid!, url: m.url, log: () => m.proc.log() })),
      ...floors.map((f) => ({ name: f.name, pid: f.child.pid!, url: f.url, log: () => f.log() })),
    ];
    const read = () => all.map((m) => residentMiB(m.pid));
    await sleep(8000);
    const startup = read();
    const served: number[] = [];
    for (const m of all) served.push(requests > 0 ? await getMany(plane, m.url, requests) : 0);
    await sleep(t0 + READ_AT_MS - Date.now());
    const rest = read();
    all.forEach((m, i) => {
      console.log(JSON.stringify({ process: m.name, startup: startup[i], served: served[i], atRest: { ...rest[i], collected: restCollectedLine(m.log()) ?? /collectedAtRest/.test(m.log()) } }));
    });
    await Promise.all(members.map((m) => m.stop()));
  } finally {
    await Promise.all(floors.map((f) => f.stop(0)));
    await plane.stop();
  }
}
void main().then(() => process.exit(0), (e: unknown) => {
  console.error(e);
  process.exit(1);
});
