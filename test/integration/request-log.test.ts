// --v=4: one line per request in the shape of Kubernetes' httplog (with the apiserver's audit-ID),
// plus mvproxy's route and the upstream's latency (issue 15 §4); below it, none. A real CLI process on each front end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { FRONTENDS } from '../support/frontends';
import { startChildDaemon } from '../support/child-daemon';
import { startFakeUpstream } from '../support/fake-upstream';

for (const frontend of FRONTENDS) {
  test(`request log lines at --v=4, none at --v=2 (${frontend} front end)`, async () => {
    const upstream = await startFakeUpstream((req, res) => {
      if (req.url?.startsWith('/api/v1/namespaces/default/configmaps/x')) {
        res.writeHead(200, { 'content-type': 'application/json', 'audit-id': 'a1b2c3d4-audit' });
        res.end('{"kind":"ConfigMap","metadata":{"name":"x"}}');
        return true;
      }
      return false;
    });
    try {
      for (const v of [4, 2]) {
        const d = await startChildDaemon([`--frontend=${frontend}`, '--secure-port=0', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${upstream.url}`, `--v=${v}`]);
        try {
          const r = await request(`http://127.0.0.1:${d.clientPort}/api/v1/namespaces/default/configmaps/x?resourceVersion=0`, { headers: { 'user-agent': 'kubectl/v1.33.0 (linux/amd64)' } });
          assert.equal(r.statusCode, 200);
          await r.body.dump();
          await sleep(200);
          const lines = d.stderr().split('\n').filter((l) => l.includes('"msg":"HTTP"'));
          if (v === 2) {
            assert.equal(lines.length, 0, lines.join('\n'));
            continue;
          }
          const line = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l.URI).startsWith('/api/v1/namespaces/default/configmaps/x'));
          assert.ok(line, `a line for the request in:\n${d.stderr()}`);
          assert.equal(line.verb, 'GET');
          assert.equal(line.URI, '/api/v1/namespaces/default/configmaps/x?resourceVersion=0');
          assert.equal(line.resp, 200);
          assert.equal(line.route, 'local');
          assert.equal(line.userAgent, 'kubectl/v1.33.0 (linux/amd64)');
          assert.match(String(line.latency), /^\d+\.\d{3}ms$/);
          assert.match(String(line.srcIP), /127\.0\.0\.1/);
          // The apiserver's Audit-Id (what its audit log and the client saw), and the upstream's share.
          assert.equal(line['audit-ID'], 'a1b2c3d4-audit');
          assert.match(String(line.upstreamLatency), /^\d+\.\d{3}ms$/);
          assert.ok(Number.parseFloat(String(line.upstreamLatency)) <= Number.parseFloat(String(line.latency)), 'the upstream\'s share is part of the whole');
        } finally {
          await d.stop('SIGKILL');
        }
      }
    } finally {
      await upstream.close();
    }
  });
}

// An upstream that breaks a watch after its first event: the client's connection is cut (a truncated
// response, not a clean end) and the request is recorded once. uWS reports the cut as the client's
// abort at once, in the call that makes it: recorded there and again after it, the request was two
// log lines (and, on the peer route, two apiserver_rerouted_request_total; helper 15).
for (const frontend of FRONTENDS) {
  test(`a watch cut by its upstream mid-stream is one request log line (${frontend} front end)`, async () => {
    const upstream = await startFakeUpstream((req, res) => {
      if (!req.url?.startsWith('/api/v1/namespaces/default/configmaps?watch=1')) return false;
      res.writeHead(200, { 'content-type': 'application/json', 'audit-id': 'cut-watch' });
      res.write('{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a"}}}\n');
      setTimeout(() => res.socket?.destroy(), 100);
      return true;
    });
    const d = await startChildDaemon([`--frontend=${frontend}`, '--secure-port=0', '--metrics-bind-address=127.0.0.1:0', `--local-apiserver=${upstream.url}`, '--v=4']);
    try {
      const r = await request(`http://127.0.0.1:${d.clientPort}/api/v1/namespaces/default/configmaps?watch=1`);
      assert.equal(r.statusCode, 200);
      let got = '';
      const cut = await new Promise<boolean>((resolve) => {
        r.body.on('data', (c: Buffer) => (got += c.toString()));
        r.body.on('error', () => resolve(true));
        r.body.on('end', () => resolve(false));
      });
      assert.ok(got.includes('"ADDED"'), 'the event before the cut arrived');
      assert.equal(cut, true, 'the client sees a truncated response, not a clean end');
      await sleep(300);
      const lines = d.stderr().split('\n').filter((l) => l.includes('"msg":"HTTP"') && l.includes('configmaps?watch=1'));
      assert.equal(lines.length, 1, lines.join('\n'));
      assert.equal((JSON.parse(lines[0]!) as Record<string, unknown>)['audit-ID'], 'cut-watch');
    } finally {
      await d.stop('SIGKILL');
      await upstream.close();
    }
  });
}
