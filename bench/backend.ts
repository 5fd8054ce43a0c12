// The bench backend: a fixed, fast responder shaped like a kube-apiserver, in its own process.
// uWebSockets.js (the fastest HTTP server that loads here, docs/dependencies.md §1, §9), every body a
// precomputed Buffer, so it is never the bottleneck (its direct req/s is the "direct" scenario).
//
// Two listeners in one process, the same answers except discovery:
//   "a"  (--port-a) the local apiserver of mvproxy A, of the node front-end mvproxy, and of the
//        anchors (nginx, HAProxy, Go); its /apis is a v1.37 apiserver's;
//   "b"  (--port-b) the local apiserver of mvproxy B; its /apis also lists bench.mvproxy.io/v1
//        widgets, so A routes that group to B (the peer route: client → A → mTLS → B → "b").
//
// Answers, by the shape of the path (GET and HEAD):
//   /api, /apis                         aggregated discovery v2 JSON (ETag, If-None-Match → 304)
//   /api(s)/.../<resource>/<name>        the 2 KiB ConfigMap
//   /api(s)/.../<resource>               the 100 KiB ConfigMapList, or with ?watch=1|true a watch
//                                        stream: one event to every open watch every
//                                        --watch-interval-ms (settable at run time)
//   /readyz, /livez, /healthz           200 "ok" (mvproxy's peer health probe reaches B's apiserver)
//   CRD and APIService lists            404 metav1.Status (mvproxy counts that as "none")
//   POST /_bench/watch-interval?ms=N    sets the event interval (0 = no events); answers the count
//   GET  /_bench/stats                  {"watchers":N,"events":N,"skipped":N}
//
//   node --import tsx bench/backend.ts --port-a 0 --port-b 0 [--watch-interval-ms 0]
// Prints one JSON line {"portA","portB","pid"} once both listen. Exits on SIGTERM/SIGINT.

import net from 'node:net';
import type { HttpResponse, HttpRequest, TemplatedApp } from 'uwebsockets';
import { list100k, object2k, discoveryDocs, WatchEventTemplate, type AggregatedDoc } from './payloads';

type UWS = typeof import('uwebsockets');
const uws = require('uwebsockets') as UWS;

const argv = process.argv.slice(2);
const arg = (name: string, dflt: number) => {
  const i = argv.indexOf(name);
  return i === -1 ? dflt : Number(argv[i + 1]);
};

const OBJECT = object2k();
const LIST = list100k();
const WATCH = new WatchEventTemplate();
const NOT_FOUND = Buffer.from(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'the server could not find the requested resource', reason: 'NotFound', details: {}, code: 404 }));
const DISCOVERY_CT = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

// Response headers as kube-apiserver sends them (uWS adds Date and Content-Length / chunking).
const COMMON: [string, string][] = [
  ['Audit-Id', '0b6c2f8e-5a1d-4c3b-9e7f-1a2b3c4d5e6f'],
  ['Cache-Control', 'no-cache, private'],
  ['Content-Type', 'application/json'],
  ['X-Kubernetes-Pf-Flowschema-Uid', 'd7c1f1d4-6b0e-4c9a-8f44-0f5f2a1c3b9e'],
  ['X-Kubernetes-Pf-Prioritylevel-Uid', '4a2e9b7c-1d3f-4e5a-b6c7-8d9e0f1a2b3c'],
];

interface Watcher {
  res: HttpResponse;
  blocked: boolean;
}
const watchers = new Set<Watcher>();
let intervalMs = arg('--watch-interval-ms', 0);
let timer: NodeJS.Timeout | undefined;
let events = 0;
let skipped = 0;

function reschedule(): void {
  if (timer) clearInterval(timer);
  timer = undefined;
  if (intervalMs > 0 && watchers.size > 0) timer = setInterval(broadcast, intervalMs);
}

/** One change fanned out to every open watch (kube's watch cache does the same per event). */
function broadcast(): void {
  const ev = WATCH.event(process.hrtime.bigint());
  for (const w of watchers) {
    if (w.blocked) {
      skipped++;
      continue;
    }
    w.res.cork(() => {
      if (!w.res.write(ev)) w.blocked = true;
    });
    events++;
  }
}

/** Which listener answered ("a" or "b"): lets the harness check that the peer route reached B's apiserver. */
let answeredBy = 'a';

function send(res: HttpResponse, status: string, body: Buffer, head: boolean, extra?: [string, string][]): void {
  res.writeStatus(status);
  res.writeHeader('X-Bench-Backend', answeredBy);
  for (const [k, v] of COMMON) {
    if (k === 'Content-Type' && extra?.some(([x]) => x === 'Content-Type')) continue;
    res.writeHeader(k, v);
  }
  if (extra) for (const [k, v] of extra) res.writeHeader(k, v);
  if (head) res.endWithoutBody(body.length);
  else res.end(body);
}

function discovery(res: HttpResponse, req: HttpRequest, doc: AggregatedDoc, head: boolean): void {
  if (req.getHeader('if-none-match') === doc.etag) {
    res.writeStatus('304 Not Modified');
    res.writeHeader('Etag', doc.etag);
    res.endWithoutBody(0);
    return;
  }
  send(res, '200 OK', doc.body, head, [
    ['Content-Type', DISCOVERY_CT],
    ['Etag', doc.etag],
    ['Vary', 'Accept'],
  ]);
}

function startWatch(res: HttpResponse): void {
  const w: Watcher = { res, blocked: false };
  res.onAborted(() => {
    watchers.delete(w);
    if (watchers.size === 0) reschedule();
  });
  res.onWritable(() => {
    w.blocked = false;
    return true;
  });
  res.writeStatus('200 OK');
  for (const [k, v] of COMMON) res.writeHeader(k, v);
  // nginx buffers proxied responses unless told not to; kube-apiserver does not send this, the
  // other proxies ignore it, and without it nginx would hold watch events back.
  res.writeHeader('X-Accel-Buffering', 'no');
  // uWS sends the head with the first body byte: send the first event now, as a real watch does
  // (resourceVersion=0 starts with the current state).
  res.write(WATCH.event(process.hrtime.bigint()));
  const wasEmpty = watchers.size === 0;
  watchers.add(w);
  if (wasEmpty) reschedule();
}

function handler(name: 'a' | 'b', docs: { api: AggregatedDoc; apis: AggregatedDoc }) {
  return (res: HttpResponse, req: HttpRequest): void => {
    answeredBy = name;
    const method = req.getMethod();
    const url = req.getUrl();
    const query = req.getQuery() ?? '';
    if (url.startsWith('/_bench/')) {
      if (url === '/_bench/watch-interval') {
        const m = /(?:^|&)ms=(\d+)/.exec(query);
        intervalMs = m ? Number(m[1]) : 0;
        reschedule();
      }
      res.writeHeader('Content-Type', 'application/json').end(JSON.stringify({ watchers: watchers.size, events, skipped, intervalMs }));
      return;
    }
    const head = method === 'head';
    if (method !== 'get' && !head) {
      send(res, '405 Method Not Allowed', NOT_FOUND, false);
      return;
    }
    if (url === '/readyz' || url === '/livez' || url === '/healthz') {
      // mvproxy probes its peers' peer listeners with GET /readyz, which they pass to their apiserver.
      res.writeStatus('200 OK');
      res.writeHeader('Content-Type', 'text/plain; charset=utf-8');
      res.writeHeader('X-Content-Type-Options', 'nosniff');
      res.end('ok');
      return;
    }
    if (url === '/api' || url === '/api/') return discovery(res, req, docs.api, head);
    if (url === '/apis' || url === '/apis/') return discovery(res, req, docs.apis, head);
    if (url.endsWith('/customresourcedefinitions') || url.endsWith('/apiservices')) {
      send(res, '404 Not Found', NOT_FOUND, head);
      return;
    }
    // /api/v1/namespaces/<ns>/<resource>[/<name>] or /apis/<g>/<v>/namespaces/<ns>/<resource>[/<name>]
    const parts = url.split('/').length - 1;
    const core = url.startsWith('/api/');
    const collectionDepth = core ? 5 : 6;
    if (parts === collectionDepth) {
      if (/(?:^|&)watch=(1|true)(?:&|$)/.test(query)) return startWatch(res);
      send(res, '200 OK', LIST, head);
      return;
    }
    if (parts === collectionDepth + 1) {
      send(res, '200 OK', OBJECT, head);
      return;
    }
    send(res, '404 Not Found', NOT_FOUND, head);
  };
}

/** uSockets sets SO_REUSEADDR only for explicit ports: pick one with node first (as src/listener/uws.ts). */
async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => srv.once('error', reject).listen(0, '127.0.0.1', resolve));
  const p = (srv.address() as net.AddressInfo).port;
  await new Promise((resolve) => srv.close(resolve));
  return p;
}

async function listen(app: TemplatedApp, port: number): Promise<number> {
  const p = port || (await freePort());
  return new Promise((resolve, reject) => {
    app.listen('127.0.0.1', p, (sock) => (sock ? resolve(uws.us_socket_local_port(sock)) : reject(new Error(`backend could not listen on 127.0.0.1:${p}`))));
  });
}

async function main(): Promise<void> {
  const appA = uws.App().any('/*', handler('a', discoveryDocs(false)));
  const appB = uws.App().any('/*', handler('b', discoveryDocs(true)));
  const portA = await listen(appA, arg('--port-a', 0));
  const portB = await listen(appB, arg('--port-b', 0));
  process.stdout.write(JSON.stringify({ portA, portB, pid: process.pid }) + '\n');
  const stop = () => process.exit(0);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench backend: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
