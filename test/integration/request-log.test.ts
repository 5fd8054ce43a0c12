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
