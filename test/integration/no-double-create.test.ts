// A request that must never run twice is never sent twice (issue 27, item 3). A request for a
// resource no snapshot lists is asked of each peer after the local 404 (discovery-lag.test.ts). A
// peer that answers 502/503/504 used to pass it on to the next peer too; but a peer's apiserver can
// run a create and then answer 504 (its request timeout), and the next peer would create it again
// (with generateName: two objects). Three members: A (asked), B whose apiserver runs the create
// and then answers 504, C. A create stops at B's answer; a GET, which is safe, goes on to C; and
// mvproxy's own "not sent" answer (B's apiserver refusing connections) passes even a create on.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type http from 'node:http';
import { DEFAULT_FRONTEND } from '../support/frontends';
import { startFakeUpstream } from '../support/fake-upstream';
import { call, AUTH } from '../support/plane';
import { startPlane, type Plane } from '../../src/demo/topology';

const THINGS = '/apis/lagging.example.com/v1/namespaces/default/things'; // no member's discovery lists it

describe(`no create runs twice after a local 404 (${DEFAULT_FRONTEND} front end)`, () => {
  let plane: Plane;
  let tmp: string;
  let fakeB: Awaited<ReturnType<typeof startFakeUpstream>>;
  const ranOnB: string[] = [];
  let bDown = false;

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'mvproxy-test-'));
    // B's apiserver: runs what it is sent (records it), then answers 504 as a request timeout would.
    fakeB = await startFakeUpstream((req: http.IncomingMessage, res: http.ServerResponse) => {
      if (!req.url?.startsWith(THINGS)) return false;
      if (bDown) {
        req.socket.destroy();
        return true;
      }
      ranOnB.push(`${req.method} ${req.url}`);
      req.resume();
      req.on('end', () => {
        res.writeHead(504, { 'content-type': 'application/json' });
        res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Timeout","code":504}');
      });
      return true;
    });
    plane = await startPlane({
      dir: join(tmp, 'pki'),
      frontend: DEFAULT_FRONTEND,
      members: [
        { name: 'a', kubernetesVersion: 'v1.33' },
        { name: 'b', kubernetesVersion: 'v1.33' },
        { name: 'c', kubernetesVersion: 'v1.37' },
      ],
      configure: (c, m) => {
        c.connectTimeoutMs = 1000;
        c.discoveryRefreshIntervalMs = 60_000;
        if (m.name === 'b') c.localAPIServer = fakeB.url;
      },
    });
  });
  after(async () => {
    await plane?.close();
    await fakeB?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  const postsOnC = () => plane.member('c').sim.requests.filter((r) => r.method === 'POST' && r.url.startsWith(THINGS)).length;
  const getsOnC = () => plane.member('c').sim.requests.filter((r) => r.method === 'GET' && r.url.startsWith(THINGS)).length;

  test('a create that B\'s apiserver ran and then timed out (504) is not sent to C: the client gets B\'s 504', async () => {
    ranOnB.length = 0;
    const before = postsOnC();
    const body = JSON.stringify({ apiVersion: 'lagging.example.com/v1', kind: 'Thing', metadata: { generateName: 'x-' } });
    const r = await call(plane.member('a').url, THINGS, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body });
    assert.deepEqual(ranOnB, [`POST ${THINGS}`], 'B was asked (and ran it)');
    assert.equal(postsOnC(), before, 'the create was sent a second time, to C');
    assert.equal(r.status, 504, r.text);
  });

  test('a GET that B answers 504 is safe to ask again: C answers', async () => {
    ranOnB.length = 0;
    const before = getsOnC();
    const r = await call(plane.member('a').url, `${THINGS}/one`, { headers: AUTH });
    assert.deepEqual(ranOnB, [`GET ${THINGS}/one`]);
    assert.equal(getsOnC(), before + 1, 'C was asked after B\'s 504');
    assert.equal(r.status, 404);
  });

  test('B\'s apiserver drops the connection after reading the create: it may have run, so C is not asked (503)', async () => {
    bDown = true;
    try {
      const before = postsOnC();
      const body = JSON.stringify({ apiVersion: 'lagging.example.com/v1', kind: 'Thing', metadata: { name: 'y' } });
      const r = await call(plane.member('a').url, THINGS, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body });
      assert.equal(postsOnC(), before, 'the create was sent a second time, to C');
      assert.equal(r.status, 503, r.text);
    } finally {
      bDown = false;
    }
  });

  test('B\'s apiserver refuses connections: B\'s mvproxy answers "not sent", so even a create goes on to C (last test: B stays down)', async () => {
    fakeB.server.close();
    fakeB.server.closeAllConnections();
    const before = postsOnC();
    const body = JSON.stringify({ apiVersion: 'lagging.example.com/v1', kind: 'Thing', metadata: { name: 'z' } });
    const r = await call(plane.member('a').url, THINGS, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body });
    assert.equal(postsOnC(), before + 1, 'C was asked');
    assert.equal(r.status, 404, r.text);
  });
});
