// The floor of mvproxy's design: the same runtime and the same two libraries (uWebSockets.js in
// front, undici's dispatch() behind), with none of mvproxy's logic: no RequestInfo, no routing,
// no header rules, no metrics, no deadlines, no request body. It copies the request head upstream
// and streams the answer back with backpressure. Whatever mvproxy costs above this per request is
// its own code; what this costs above nginx is the JavaScript stack's (issue 18's analysis).
//
//   node --import tsx bench/floor-proxy.ts <port> <upstream origin>
//
// Prints {"listening":<port>} once it accepts. Bench-only: GET and HEAD without bodies.

import { Pool, type Dispatcher } from 'undici';

// The native addon is CommonJS only (src/listener/uws.ts loads it the same way).
const uws = require('uwebsockets') as typeof import('uwebsockets');

const [portArg, origin] = process.argv.slice(2);
const pool = new Pool(origin!, { connections: 128, pipelining: 1 });

class Relay implements Dispatcher.DispatchHandler {
  private aborted = false;
  private resume: (() => void) | null = null;
  private length = -1;
  private ended = false;
  constructor(private readonly res: import('uwebsockets').HttpResponse) {
    res.onAborted(() => (this.aborted = true));
    res.onWritable(() => {
      this.resume?.();
      return true;
    });
  }
  onRequestStart(): void {}
  onResponseStart(controller: Dispatcher.DispatchController, status: number): void {
    if (this.aborted) return;
    const raw = controller.rawHeaders as Buffer[];
    const res = this.res;
    this.resume = () => controller.resume();
    res.cork(() => {
      res.writeStatus(String(status));
      for (let i = 0; i < raw.length; i += 2) {
        const name = raw[i]!.toString('latin1');
        const lower = name.toLowerCase();
        if (lower === 'content-length') this.length = Number(raw[i + 1]!.toString('latin1'));
        else if (lower !== 'connection' && lower !== 'date' && lower !== 'transfer-encoding') res.writeHeader(name, raw[i + 1]!.toString('latin1'));
      }
    });
  }
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.aborted) return;
    if (this.length === chunk.length) {
      // The whole body in one chunk (the 2 KiB GET): one end() with its Content-Length, as mvproxy's tryEnd.
      this.ended = true;
      this.res.cork(() => this.res.end(chunk));
      return;
    }
    let ok = true;
    this.res.cork(() => {
      ok = this.res.write(chunk);
    });
    if (!ok) controller.pause();
  }
  onResponseEnd(): void {
    if (!this.aborted && !this.ended) this.res.cork(() => this.res.end());
  }
  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (this.aborted) return;
    this.res.cork(() => this.res.writeStatus('502').end(err.message));
  }
}

const app = uws.App();
app.any('/*', (res, req) => {
  const headers: string[] = [];
  req.forEach((k, v) => {
    if (k !== 'host' && k !== 'connection') headers.push(k, v);
  });
  const q = req.getQuery();
  pool.dispatch({ method: req.getCaseSensitiveMethod() as Dispatcher.HttpMethod, path: q ? `${req.getUrl()}?${q}` : req.getUrl(), headers, body: null }, new Relay(res));
});
app.listen('127.0.0.1', Number(portArg), (sock) => {
  if (!sock) {
    console.error(`floor-proxy: cannot listen on ${portArg}`);
    process.exit(1);
  }
  console.log(JSON.stringify({ listening: Number(portArg) }));
});
