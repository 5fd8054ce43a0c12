// What an HTTP client costs a process at rest (issue 40 §2: why mvproxy's own calls left undici).
// One process per client, with node:tls/https/http2 and mvproxy's other packages loaded as the daemon
// loads them, 20 GET requests to a local node:http server, then RssAnon and the V8 heap 5 s later.
//
//   node --import tsx bench/client-memory.ts node-http
//   node --import tsx bench/client-memory.ts undici
import { spawnSync } from 'node:child_process';

const CHILD = `
const tls = require('tls'); require('https'); require('http2'); tls.createSecureContext();
const pc = require('prom-client'); pc.collectDefaultMetrics({ eventLoopMonitoringPrecision: 10 });
require('protobufjs/minimal'); require('piscina'); require('@opentelemetry/api');
const http = require('http');
const srv = http.createServer((q, r) => r.end('{"a":1}')).listen(0, '127.0.0.1', async () => {
  const url = 'http://127.0.0.1:' + srv.address().port + '/';
  if (process.argv[1] === 'undici') {
    const { Pool } = require('undici'); const p = new Pool(url);
    for (let i = 0; i < 20; i++) await (await p.request({ path: '/', method: 'GET' })).body.text();
  } else {
    const agent = new http.Agent({ keepAlive: true });
    for (let i = 0; i < 20; i++) await new Promise((res) => http.get(url, { agent }, (r) => { r.resume(); r.on('end', res); }));
  }
  setTimeout(() => {
    const st = require('fs').readFileSync('/proc/self/status', 'utf8');
    const m = process.memoryUsage();
    console.log(JSON.stringify({ client: process.argv[1], anonMiB: +(Number(/RssAnon:\\s+(\\d+)/.exec(st)[1]) / 1024).toFixed(1), heapUsedMiB: +(m.heapUsed / 2 ** 20).toFixed(1), heapTotalMiB: +(m.heapTotal / 2 ** 20).toFixed(1) }));
    process.exit(0);
  }, 5000);
});`;

const client = process.argv[2] === 'undici' ? 'undici' : 'node-http';
const r = spawnSync(process.execPath, ['-e', CHILD, client], { cwd: __dirname, stdio: ['ignore', 'inherit', 'inherit'] });
process.exit(r.status ?? 1);
