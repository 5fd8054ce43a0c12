// /livez, /readyz, /healthz in kube-apiserver's format (kubernetes/apiserver
// pkg/server/healthz/healthz.go; docs/operating.md §2), and the ops listener that serves them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { HealthChecks, ping, type HealthResponse } from '../../src/observability/healthz';
import { listenOps } from '../../src/observability/ops-server';
import { Metrics } from '../../src/telemetry/metrics';
import type { Logger } from '../../src/telemetry/log';

const TEXT = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' };

function recorder(): Logger & { lines: { v: number; msg: string; kv?: Record<string, unknown> }[] } {
  const lines: { v: number; msg: string; kv?: Record<string, unknown> }[] = [];
  return { lines, verbosity: 10, enabled: () => true, info: (v, msg, kv) => lines.push({ v, msg, kv }), error: () => {} };
}

/** The checks mvproxy registers (daemon/readiness.ts), with switches. */
function daemonChecks(state = { shuttingDown: false, published: true, peerB: true }, log?: Logger) {
  const h = new HealthChecks({ log });
  h.add('both', 'ping', ping);
  h.add('readyz', 'shutdown', () => (state.shuttingDown ? new Error('process is shutting down') : null));
  h.add('readyz', 'local-discovery', () => null);
  h.add('readyz', 'discovery-snapshot-published', () => (state.published ? null : new Error('no discovery snapshot published yet')));
  h.addInformational('readyz', 'peer-node-b', () => (state.peerB ? null : new Error('dial tcp 10.0.0.2:6445: connect: connection refused')));
  return { h, state };
}

function get(h: HealthChecks, url: string): HealthResponse {
  const q = url.indexOf('?');
  const r = h.evaluate(q === -1 ? url : url.slice(0, q), q === -1 ? '' : url.slice(q + 1));
  assert.ok(r, `no response for ${url}`);
  return r;
}

test('healthy: 200 "ok", text/plain; charset=utf-8, nosniff', () => {
  const { h } = daemonChecks();
  for (const p of ['/readyz', '/livez', '/healthz']) {
    const r = get(h, p);
    assert.equal(r.status, 200, p);
    assert.equal(r.body, 'ok', p);
    assert.deepEqual(r.headers, TEXT);
  }
});

test('?verbose lists each check, then "<endpoint> check passed"', () => {
  const { h } = daemonChecks();
  assert.equal(
    get(h, '/readyz?verbose').body,
    '[+]ping ok\n[+]shutdown ok\n[+]local-discovery ok\n[+]discovery-snapshot-published ok\n[+]peer-node-b ok\nreadyz check passed\n',
  );
  assert.equal(get(h, '/livez?verbose').body, '[+]ping ok\nlivez check passed\n');
  assert.equal(get(h, '/healthz?verbose=1').body, '[+]ping ok\nhealthz check passed\n');
});

test('failure: 500, "[-]<name> failed: reason withheld", "readyz check failed"; the reason only in the log at V(2)', () => {
  const log = recorder();
  const { h, state } = daemonChecks(undefined, log);
  state.published = false;
  const r = get(h, '/readyz');
  assert.equal(r.status, 500);
  assert.deepEqual(r.headers, TEXT);
  assert.equal(r.body, '[+]ping ok\n[+]shutdown ok\n[+]local-discovery ok\n[-]discovery-snapshot-published failed: reason withheld\n[+]peer-node-b ok\nreadyz check failed\n');
  assert.ok(!r.body.includes('no discovery snapshot'));
  assert.equal(log.lines.length, 1);
  assert.equal(log.lines[0].v, 2);
  assert.equal(log.lines[0].msg, 'readyz check failed');
  assert.deepEqual(log.lines[0].kv, { checks: 'discovery-snapshot-published', reasons: { 'discovery-snapshot-published': 'no discovery snapshot published yet' } });
});

test('shutdown delay: /readyz fails on "shutdown", /livez and /healthz still pass', () => {
  const { h, state } = daemonChecks();
  state.shuttingDown = true;
  const r = get(h, '/readyz?verbose');
  assert.equal(r.status, 500);
  assert.match(r.body, /^\[\+\]ping ok\n\[-\]shutdown failed: reason withheld\n/);
  assert.equal(get(h, '/livez').status, 200);
  assert.equal(get(h, '/healthz').status, 200);
});

test('?exclude=<name> (repeatable): "[+]<name> excluded: ok"; unknown names are warned about', () => {
  const { h, state } = daemonChecks();
  state.shuttingDown = true;
  assert.equal(get(h, '/readyz?exclude=shutdown').status, 200);
  assert.equal(get(h, '/readyz?exclude=shutdown').body, 'ok');
  assert.equal(
    get(h, '/readyz?verbose&exclude=shutdown&exclude=local-discovery').body,
    '[+]ping ok\n[+]shutdown excluded: ok\n[+]local-discovery excluded: ok\n[+]discovery-snapshot-published ok\n[+]peer-node-b ok\nreadyz check passed\n',
  );
  assert.equal(
    get(h, '/readyz?verbose&exclude=shutdown&exclude=zeta&exclude=alpha').body,
    '[+]ping ok\n[+]shutdown excluded: ok\n[+]local-discovery ok\n[+]discovery-snapshot-published ok\n[+]peer-node-b ok\nwarn: some health checks cannot be excluded: no matches for "alpha","zeta"\nreadyz check passed\n',
  );
  // Failing with an unknown exclusion: the warning is part of the failure listing too.
  assert.equal(get(h, '/readyz?exclude=nope').body, '[+]ping ok\n[-]shutdown failed: reason withheld\n[+]local-discovery ok\n[+]discovery-snapshot-published ok\n[+]peer-node-b ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nreadyz check failed\n');
  // Not verbose and healthy: just "ok".
  state.shuttingDown = false;
  assert.equal(get(h, '/readyz?exclude=nope').body, 'ok');
});

test('/readyz/<name> and /livez/<name>: "ok", or 500 "internal server error: <err>"; unknown names 404', () => {
  const { h, state } = daemonChecks();
  assert.deepEqual(get(h, '/readyz/shutdown'), { status: 200, headers: TEXT, body: 'ok' });
  state.shuttingDown = true;
  assert.deepEqual(get(h, '/readyz/shutdown'), { status: 500, headers: TEXT, body: 'internal server error: process is shutting down\n' });
  assert.equal(get(h, '/livez/ping').body, 'ok');
  assert.equal(get(h, '/healthz/ping').body, 'ok');
  assert.deepEqual(get(h, '/livez/shutdown'), { status: 404, headers: TEXT, body: '404 page not found\n' });
  assert.equal(get(h, '/readyz/nope').status, 404);
  assert.equal(h.evaluate('/readyz/a/b'), undefined);
  assert.equal(h.evaluate('/metrics'), undefined);
  assert.equal(h.evaluate('/readyzz'), undefined);
});

test('informational checks: listed, never fail their endpoint; /readyz/<name> reports them', () => {
  const log = recorder();
  const { h, state } = daemonChecks(undefined, log);
  state.peerB = false;
  assert.equal(get(h, '/readyz').status, 200);
  assert.equal(get(h, '/readyz').body, 'ok');
  assert.equal(
    get(h, '/readyz?verbose').body,
    '[+]ping ok\n[+]shutdown ok\n[+]local-discovery ok\n[+]discovery-snapshot-published ok\n[+]peer-node-b failed (informational, does not fail readyz): reason withheld\nreadyz check passed\n',
  );
  assert.deepEqual(get(h, '/readyz/peer-node-b'), { status: 500, headers: TEXT, body: 'internal server error: dial tcp 10.0.0.2:6445: connect: connection refused\n' });
  assert.equal(log.lines.length, 0);
  // In a failure listing they keep their "[+]" line; only real failures are "[-]".
  state.published = false;
  const r = get(h, '/readyz');
  assert.equal(r.status, 500);
  assert.deepEqual(r.body.split('\n').filter((l) => l.startsWith('[-]')), ['[-]discovery-snapshot-published failed: reason withheld']);
  assert.equal(get(h, '/readyz?verbose&exclude=peer-node-b&exclude=discovery-snapshot-published').status, 200);
});

test('a throwing check fails with what it threw', () => {
  const h = new HealthChecks().add('livez', 'boom', () => {
    throw new Error('kaput');
  });
  assert.equal(get(h, '/livez').status, 500);
  assert.equal(get(h, '/livez').body, '[-]boom failed: reason withheld\nlivez check failed\n');
  assert.equal(get(h, '/livez/boom').body, 'internal server error: kaput\n');
});

test('no checks: ok (as kube with an empty list)', () => {
  const h = new HealthChecks();
  assert.equal(get(h, '/readyz').body, 'ok');
  assert.equal(get(h, '/readyz?verbose').body, 'readyz check passed\n');
});

test('registration: unique names per endpoint, URL-safe names, remove, names(), order kept', () => {
  const h = new HealthChecks();
  h.add('both', 'ping', ping);
  assert.throws(() => h.add('readyz', 'ping', ping), /health check "ping" is already registered for readyz/);
  assert.throws(() => h.add('livez', 'bad name', ping), /not URL-path safe/);
  assert.throws(() => h.add('livez', 'a/b', ping), /not URL-path safe/);
  h.add('readyz', 'b', ping).add('readyz', 'a', ping);
  h.addInformational('readyz', 'peer-x', ping);
  assert.deepEqual(h.names('readyz'), ['ping', 'b', 'a', 'peer-x']);
  assert.deepEqual(h.names('livez'), ['ping']);
  assert.deepEqual(h.names('healthz'), ['ping']);
  assert.equal(h.has('readyz', 'peer-x'), true);
  assert.equal(h.remove('readyz', 'peer-x'), true);
  assert.equal(h.remove('readyz', 'peer-x'), false);
  assert.equal(h.has('readyz', 'peer-x'), false);
  h.addInformational('readyz', 'peer-x', ping); // a peer that comes back
  assert.equal(h.remove('both', 'ping'), true);
  assert.deepEqual(h.names('livez'), []);
});

function request(port: number, path: string, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('ops listener: health checks, /metrics, 404 elsewhere, HEAD', async () => {
  const { h, state } = daemonChecks();
  const ops = await listenOps({ address: '127.0.0.1:0', metrics: new Metrics(), health: h });
  try {
    let r = await request(ops.port, '/readyz');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'ok');
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    state.shuttingDown = true;
    r = await request(ops.port, '/readyz?verbose');
    assert.equal(r.status, 500);
    assert.match(r.body, /\[-\]shutdown failed: reason withheld\n/);
    assert.equal((await request(ops.port, '/livez')).status, 200);
    assert.equal((await request(ops.port, '/readyz/shutdown')).body, 'internal server error: process is shutting down\n');
    r = await request(ops.port, '/readyz', 'HEAD');
    assert.equal(r.status, 500);
    assert.equal(r.body, '');
    r = await request(ops.port, '/metrics');
    assert.equal(r.status, 200);
    assert.match(r.body, /apiserver_rerouted_request_total/);
    r = await request(ops.port, '/api/v1/pods');
    assert.equal(r.status, 404);
    assert.equal(r.body, '404 page not found\n');
  } finally {
    ops.close();
  }
});

test('ops listener without `health` (deprecated ready()): ping + discovery-snapshot-published', async () => {
  let ready = false;
  const ops = await listenOps({ address: '127.0.0.1:0', metrics: new Metrics(), ready: () => ready });
  try {
    let r = await request(ops.port, '/readyz');
    assert.equal(r.status, 500);
    assert.equal(r.body, '[+]ping ok\n[-]discovery-snapshot-published failed: reason withheld\nreadyz check failed\n');
    assert.equal((await request(ops.port, '/livez')).body, 'ok');
    ready = true;
    r = await request(ops.port, '/readyz');
    assert.equal(r.status, 200);
  } finally {
    ops.close();
  }
});
