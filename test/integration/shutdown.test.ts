// SIGTERM (issue 6): /readyz fails first, watches end cleanly, requests in flight finish, new ones
// are refused with a Status, the process exits 0 within the drain bound. A real CLI process.
import { test } from 'node:test';
import { FRONTENDS } from '../support/frontends';
import { eventually } from '../support/poll';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { startChildDaemon } from '../support/child-daemon';
import { startFakeUpstream } from '../support/fake-upstream';
import net from 'node:net';
import { closedWithin, readResponse } from '../support/http1';

for (const frontend of FRONTENDS) {
  test(`SIGTERM during a long watch and a stream of requests (${frontend} front end)`, async (t) => {
    const upstream = await startFakeUpstream((req, res) => {
      if (req.url?.includes('watch=true')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a"}}}\n');
        return true; // never ends by itself
      }
      if (req.url?.startsWith('/api/v1/namespaces/default/configmaps/slow')) {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"kind":"ConfigMap","metadata":{"name":"slow"}}');
        }, 300);
        return true;
      }
      return false;
    });
    const d = await startChildDaemon([`--frontend=${frontend}`, '--secure-port=0', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${upstream.url}`, '--shutdown-delay-duration=500ms', '--shutdown-drain-timeout=5s', '--v=2']);
    const base = `http://127.0.0.1:${d.clientPort}`;
    const ops = `http://127.0.0.1:${d.metricsPort}`;
    const agent = new Agent({ connections: 8 });
    try {
      const ready = await request(`${ops}/readyz`);
      await ready.body.dump();
      const watch = await request(`${base}/api/v1/namespaces/default/configmaps?watch=true`, { dispatcher: agent, bodyTimeout: 0 });
      assert.equal(watch.statusCode, 200);
      const watchEnd = (async () => {
        let text = '';
        for await (const c of watch.body) text += c;
        return text;
      })();
      // A stream of slow requests, some in flight when the signal arrives.
      const results: Promise<number>[] = [];
      let stop = false;
      const loop = (async () => {
        while (!stop) {
          results.push(
            request(`${base}/api/v1/namespaces/default/configmaps/slow`, { dispatcher: agent })
              .then(async (r) => {
                await r.body.text();
                return r.statusCode;
              })
              .catch((e: { code?: string }) => { if (e.code !== 'ECONNREFUSED') t.diagnostic(`request error: ${e.code} ${String(e)}`); return e.code === 'ECONNREFUSED' ? -1 : -2; }),
          );
          await sleep(50);
        }
      })();
      await sleep(400);
      const t0 = Date.now();
      const exited = d.stop('SIGTERM');
      await sleep(150);
      const during = await request(`${ops}/readyz`);
      const duringText = await during.body.text();
      assert.equal(during.statusCode, 500, 'readyz fails during the shutdown delay');
      assert.match(duringText, /\[-\]shutdown failed/);
      const code = await exited;
      stop = true;
      await loop;
      const statuses = await Promise.all(results);
      t.diagnostic(`exit ${code} after ${Date.now() - t0} ms; statuses ${JSON.stringify(countBy(statuses))}`);
      assert.equal(code, 0);
      assert.ok(Date.now() - t0 < 5000 + 500 + 1500, 'within delay + drain bound');
      // Nothing cut mid-response: every request either succeeded, was refused with a Status (429), or found no listener.
      assert.ok(statuses.every((s) => s === 200 || s === 429 || s === -1), JSON.stringify(countBy(statuses)));
      assert.ok(statuses.filter((s) => s === 200).length > 3);
      const watchText = await watchEnd; // ends cleanly (no error thrown)
      assert.match(watchText, /"name":"a"/);
    } finally {
      await agent.close();
      await d.stop('SIGKILL');
      await upstream.close();
    }
  });
}

for (const frontend of FRONTENDS) {
  test(`a kept-alive connection idle when the drain starts (${frontend} front end): its next request is served (the apiserver is up) with Connection: close, not a reset nor a 429; a watch there gets the 429`, async () => {
    const upstream = await startFakeUpstream((req, res) => {
      if (req.url?.startsWith('/api/v1/namespaces/default/configmaps/slow')) {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"kind":"ConfigMap","metadata":{"name":"slow"}}');
        }, 2500); // in flight through the drain, so the drain lasts
        return true;
      }
      if (req.url === '/api/v1/namespaces/default/configmaps/a' || req.url === '/api/v1/namespaces/default/configmaps/b') {
        const body = '{"kind":"ConfigMap","metadata":{"name":"a"}}';
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) }); // readResponse reads Content-Length
        res.end(body);
        return true;
      }
      return false;
    });
    const d = await startChildDaemon([`--frontend=${frontend}`, '--secure-port=0', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${upstream.url}`, '--shutdown-delay-duration=300ms', '--shutdown-drain-timeout=5s']);
    const s = net.connect(d.clientPort, '127.0.0.1');
    let w: net.Socket | undefined;
    try {
      await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
      const get = (name: string) => s.write(`GET /api/v1/namespaces/default/configmaps/${name} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      get('a');
      const first = await readResponse(s);
      assert.equal(first.closed, false, 'kept alive');
      w = net.connect(d.clientPort, '127.0.0.1');
      await new Promise<void>((resolve, reject) => w!.once('connect', resolve).once('error', reject));
      w.write('GET /api/v1/namespaces/default/configmaps/a HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      assert.equal((await readResponse(w)).closed, false, 'kept alive');
      const slow = request(`http://127.0.0.1:${d.clientPort}/api/v1/namespaces/default/configmaps/slow`).then(async (r) => {
        await r.body.text();
        return r.statusCode;
      });
      await sleep(200);
      const exited = d.stop('SIGTERM');
      await sleep(700); // past the 300 ms delay: the listener stopped accepting; the slow request holds the drain open
      const err = await new Promise<Error | null>((resolve) => {
        s.once('error', resolve);
        setTimeout(() => resolve(null), 100);
      });
      assert.equal(err, null, 'the idle connection was not reset when the drain started');
      assert.equal(s.destroyed, false, 'the idle connection is still open');
      get('b');
      const second = await readResponse(s);
      assert.equal(second.status, 200, `served while draining (it got a 429 before: bench/restart.ts): ${second.head}`);
      assert.match(second.head, /\r\nconnection: close/i);
      assert.ok(await closedWithin(s, 3000), 'closed after the answer');
      // A watch would hold the drain to its timeout: 429, and its client starts it again elsewhere.
      w.write('GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      const watch = await readResponse(w);
      assert.equal(watch.status, 429, watch.head);
      assert.match(watch.head, /\r\nconnection: close/i);
      assert.equal(await slow, 200, 'the request in flight finished');
      assert.equal(await exited, 0);
    } finally {
      s.destroy();
      w?.destroy();
      await d.stop('SIGKILL');
      await upstream.close();
    }
  });
}

function countBy(xs: number[]): Record<string, number> {
  const m: Record<string, number> = {};
  for (const x of xs) m[x] = (m[x] ?? 0) + 1;
  return m;
}

for (const frontend of FRONTENDS) {
  test(`health on the client port (${frontend} front end): the local apiserver's answer, and mvproxy's /readyz failure (shutdown named) from the first moment of a shutdown`, async () => {
    const upstream = await startFakeUpstream((req, res) => {
      if (req.url?.startsWith('/readyz') || req.url?.startsWith('/livez')) {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'x-from': 'apiserver' });
        res.end(req.url.includes('verbose') ? '[+]etcd ok\nreadyz check passed\n' : 'ok');
        return true;
      }
      return false;
    });
    const d = await startChildDaemon([`--frontend=${frontend}`, '--secure-port=0', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${upstream.url}`, '--shutdown-delay-duration=1500ms', '--shutdown-drain-timeout=2s']);
    const base = `http://127.0.0.1:${d.clientPort}`;
    try {
      // Until mvproxy itself is ready (its discovery fetched and published), the client port says so.
      await eventually(
        async () => {
          const r = await request(`http://127.0.0.1:${d.metricsPort}/readyz`);
          await r.body.dump();
          return r.statusCode === 200;
        },
        { what: 'mvproxy ready', timeoutMs: 10_000, intervalMs: 100 },
      );
      const ok = await request(`${base}/readyz?verbose`);
      assert.equal(ok.statusCode, 200);
      assert.equal(ok.headers['x-from'], 'apiserver', 'a healthy mvproxy passes /readyz to the local apiserver');
      assert.match(await ok.body.text(), /\[\+\]etcd ok/);
      const named = await request(`${base}/readyz/etcd`);
      assert.equal(named.headers['x-from'], 'apiserver', 'a check only the apiserver has goes to it');
      await named.body.dump();
      const exited = d.stop('SIGTERM');
      await sleep(300);
      const during = await request(`${base}/readyz`);
      assert.equal(during.statusCode, 500);
      assert.equal(during.headers['content-type'], 'text/plain; charset=utf-8');
      assert.match(await during.body.text(), /^\[\+\]ping ok\n\[-\]shutdown failed: reason withheld\n[\s\S]*readyz check failed\n$/);
      const live = await request(`${base}/livez`);
      assert.equal(live.statusCode, 200, '/livez stays the apiserver\'s answer while mvproxy drains');
      assert.equal(live.headers['x-from'], 'apiserver');
      await live.body.dump();
      assert.equal(await exited, 0);
    } finally {
      await d.stop('SIGKILL');
      await upstream.close();
    }
  });
}
