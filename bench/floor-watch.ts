// The floor of mvproxy's node front end for watches (issue 29): the least code that relays
// client-go watches to kube-apiserver the way mvproxy's node front end does — node:http2 in front
// (h2 and HTTP/1.1 by ALPN, the compat API), HTTP/2 sessions behind (a new one when one carries 100
// streams, as kube-apiserver's limit), each response piped — and nothing else: no routing, no
// identity (it dials the apiserver as the certificate it is given), no metrics, no bounds.
// npm run test:scale's `floor-local` case runs it beside node-local: what this runtime costs per
// delivered event before any mvproxy code. With `uws` last, the front is uWebSockets.js instead
// (SSLApp, each DATA chunk written as it comes, the head with the first): the floor of the uWS
// front end (`uwsfloor-local`), on the Node that loads uWS.
//
//   node --import tsx bench/floor-watch.ts PORT UPSTREAM_URL CA_FILE CLIENT_CERT CLIENT_KEY SERVING_CERT SERVING_KEY [uws]
//
// FLOOR_H2=mvproxy: HTTP/2 settings as mvproxy's (up to 250 streams a session in front and behind,
// 256 KiB stream and 1 GiB session windows upstream, src/upstream/h2/origin.ts) instead of node's
// defaults (100 a session behind here), to tell the settings' share of a difference from the code's.

import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
// Constants only (no code of src/ runs here): FLOOR_H2=mvproxy takes mvproxy's own numbers.
import { MAX_STREAMS_PER_SESSION, SESSION_WINDOW_BYTES, STREAM_WINDOW_BYTES } from '../src/upstream/h2/origin';

const [port, upstream, caFile, certFile, keyFile, servingCert, servingKey, front] = process.argv.slice(2);
if (!servingKey) {
  process.stderr.write('usage: floor-watch.ts PORT UPSTREAM_URL CA_FILE CLIENT_CERT CLIENT_KEY SERVING_CERT SERVING_KEY\n');
  process.exit(2);
}
const tls = { ca: readFileSync(caFile!), cert: readFileSync(certFile!), key: readFileSync(keyFile!) };
const LIKE_MVPROXY = process.env.FLOOR_H2 === 'mvproxy';
/** Streams a session takes: 100 (kube-apiserver's limit), or with FLOOR_H2=mvproxy up to 250 as the server's SETTINGS allow. */
const STREAMS_PER_SESSION = 100;

interface Session {
  s: http2.ClientHttp2Session;
  streams: number;
  max: number;
}
const sessions: Session[] = [];

function session(): Session {
  for (const x of sessions) if (x.streams < x.max && !x.s.closed && !x.s.destroyed) return x;
  const x: Session = { s: http2.connect(upstream!, LIKE_MVPROXY ? { ...tls, settings: { enablePush: false, initialWindowSize: STREAM_WINDOW_BYTES }, maxSessionMemory: 64 } : tls), streams: 0, max: STREAMS_PER_SESSION };
  if (LIKE_MVPROXY)
    x.s.once('remoteSettings', (st) => {
      x.s.setLocalWindowSize(SESSION_WINDOW_BYTES);
      x.max = Math.max(1, Math.min(st.maxConcurrentStreams ?? MAX_STREAMS_PER_SESSION, MAX_STREAMS_PER_SESSION));
    });
  x.s.on('error', () => undefined);
  x.s.on('close', () => sessions.splice(sessions.indexOf(x), 1));
  sessions.push(x);
  return x;
}

const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'te']);

if (front === 'uws') serveUWS();
else {
  const server = http2.createSecureServer({ cert: readFileSync(servingCert!), key: readFileSync(servingKey!), allowHTTP1: true, ...(LIKE_MVPROXY ? { settings: { maxConcurrentStreams: MAX_STREAMS_PER_SESSION } } : {}) }, (req, res) => {
    const x = session();
    x.streams++;
    const headers: http2.OutgoingHttpHeaders = { ':method': req.method, ':path': req.url };
    for (const [k, v] of Object.entries(req.headers)) if (k[0] !== ':' && !HOP.has(k)) headers[k] = v;
    const up = x.s.request(headers, { endStream: req.method === 'GET' || req.method === 'HEAD' });
    if (req.method !== 'GET' && req.method !== 'HEAD') req.pipe(up);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      x.streams--;
    };
    up.on('response', (h) => {
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(h)) if (k[0] !== ':' && !HOP.has(k) && v !== undefined) out[k] = v as string | string[];
      res.writeHead(Number(h[':status']), out);
      up.pipe(res);
    });
    up.on('close', () => {
      finish();
      if (!res.headersSent) res.writeHead(502).end();
      else if (!res.writableEnded) res.end();
    });
    up.on('error', () => undefined);
    res.on('close', () => {
      finish();
      if (!up.closed) up.close(http2.constants.NGHTTP2_CANCEL);
    });
  });
  server.listen(Number(port), '127.0.0.1', () => process.stdout.write(`floor-watch listening on 127.0.0.1:${port}\n`));
}
process.on('SIGTERM', () => process.exit(0));

/** The uWS front: GETs only (watches), each upstream chunk written at once, backpressure by onWritable. */
function serveUWS(): void {
  // The native addon is CommonJS only (src/listener/uws.ts loads it the same way).
  const uws = require('uwebsockets') as typeof import('uwebsockets');
  const app = uws.SSLApp({ cert_file_name: servingCert!, key_file_name: servingKey! });
  app.any('/*', (res, req) => {
    const q = req.getQuery();
    const headers: http2.OutgoingHttpHeaders = { ':method': req.getCaseSensitiveMethod(), ':path': q ? `${req.getUrl()}?${q}` : req.getUrl() };
    req.forEach((k, v) => {
      if (!HOP.has(k)) headers[k] = v;
    });
    const x = session();
    x.streams++;
    const up = x.s.request(headers, { endStream: true });
    let aborted = false;
    let status = '502 Bad Gateway';
    let head: [string, string][] = [];
    let headSent = false;
    const writeHead = () => {
      if (headSent) return;
      headSent = true;
      res.writeStatus(status);
      for (const [k, v] of head) res.writeHeader(k, v);
    };
    res.onAborted(() => {
      aborted = true;
      if (!up.closed) up.close(http2.constants.NGHTTP2_CANCEL);
    });
    up.on('response', (h) => {
      status = String(h[':status']);
      head = [];
      for (const [k, v] of Object.entries(h)) if (k[0] !== ':' && !HOP.has(k) && k !== 'content-length' && k !== 'date' && v !== undefined) for (const one of [v].flat()) head.push([k, String(one)]);
    });
    up.on('data', (chunk: Buffer) => {
      if (aborted) return;
      res.cork(() => {
        writeHead();
        if (!res.write(chunk)) {
          up.pause();
          res.onWritable(() => {
            up.resume();
            return true;
          });
        }
      });
    });
    up.on('error', () => undefined);
    up.on('close', () => {
      x.streams--;
      if (!aborted) res.cork(() => (writeHead(), res.end()));
    });
  });
  app.listen('127.0.0.1', Number(port), (token) => {
    if (!token) {
      process.stderr.write(`floor-watch: cannot listen on ${port}\n`);
      process.exit(1);
    }
    process.stdout.write(`floor-watch listening on 127.0.0.1:${port}\n`);
  });
}
