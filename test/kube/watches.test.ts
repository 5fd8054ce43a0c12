// Watches of real clients at their defaults (compression on) through mvproxy, on both front ends,
// the local and the peer route, into kube-apiserver v1.37.2 and v1.34.4 (issue 33 §1).
//
// kube-apiserver 1.37 gzips a watch-list (sendInitialEvents=true, WatchListCompression: beta, on by
// default) when the request sends Accept-Encoding: gzip, which Go's transport sends by default; and
// client-go 1.35+ fills every informer with a watch-list (WatchListClient). So every informer of a
// 1.37 cluster reads a gzip watch; 1.34 never gzips one. The uWS front end used to write one space
// before every JSON watch body, and such a body no longer began with the gzip magic ("gzip: invalid
// header"). The suite did not see it because nothing in it read a gzip watch and failed on a bad one:
// - its only client-go informer (clients.test.ts: through the v1.34 member, peer route to v1.37, on
//   uWS too) did get a corrupt watch-list, but client-go then falls back to LIST and a plain WATCH
//   without reporting an error (a V(4) log line), and the plain watch is not gzipped: the informer
//   saw every event. The informer now prints a LIST line for each list, and here no list is allowed;
// - kubectl get -w (1.27-1.33) lists, then watches from that resourceVersion: never a watch-list;
// - the suite's own REST client and protobuf watches send no Accept-Encoding.
// The peer hop keeps Accept-Encoding (upstream/h1/request-head.ts and requestHeaders2 drop only the
// hop-by-hop fields), so a peer-routed watch-list is gzipped by the serving peer's apiserver too.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { BIN_DIR, KUBECTL, startControlPlane, type KubeControlPlane } from './support/control-plane';
import { KubeClient } from './support/client';
import { collectionPath, forEachFrontend, PEER_ONLY, type PeerOnlyKind } from './support/suite';
import { eventually, PollTimeout } from '../support/poll';

const HPA = PEER_ONLY.find((k) => k.resource === 'horizontalpodautoscalers')!; // served by v1.34.4 only
const CTB = PEER_ONLY.find((k) => k.resource === 'clustertrustbundles')!; // served by v1.37.2 only
const VERSION = ['v1.34.4', 'v1.37.2'];

/** Which member the client uses: the one beside the serving apiserver (local route) or the other (peer route). */
const CASES: { kind: PeerOnlyKind; route: 'local' | 'peer' }[] = [
  { kind: CTB, route: 'local' },
  { kind: CTB, route: 'peer' },
  { kind: HPA, route: 'local' },
  { kind: HPA, route: 'peer' },
];

const WATCH_LIST = 'watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan';

describe('watches of real clients at their defaults (compression on) through mvproxy', () => {
  let plane: KubeControlPlane;
  let adminKC: string;
  before(async () => {
    plane = await startControlPlane();
    adminKC = plane.kubeconfig('admin', { cert: plane.admin });
  });
  after(async () => plane?.stop());

  forEachFrontend(() => plane, (frontend, members) => {
    for (const { kind, route } of CASES) {
      const via = route === 'local' ? kind.servedBy : 1 - kind.servedBy;
      const where = `${kind.kind} through member ${via}, ${route} route to ${VERSION[kind.servedBy]}`;
      const ns = kind.namespaced ? 'default' : '';
      const coll = collectionPath(kind);
      const admin = () => new KubeClient(plane.apiservers[kind.servedBy]!.url, plane.pki.caFile, { cert: plane.admin });

      test(`a client-go informer (defaults: watch-list, gzip${frontend === 'node' ? ', HTTP/2' : ''}), ${where}: fills by watch-list, never falls back to LIST, sees every add, update and delete`, async () => {
        const inf = spawn(join(BIN_DIR, 'informer'), [`-kubeconfig=${adminKC}`, `-server=${members()[via]!.url}`, `-group=${kind.group}`, `-version=${kind.version}`, `-resource=${kind.resource}`, `-namespace=${ns}`, '-duration=120s']);
        let out = '';
        inf.stdout.on('data', (d: Buffer) => (out += d.toString()));
        inf.stderr.on('data', (d: Buffer) => (out += d.toString()));
        const events = () => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { type: string; name?: string });
        const seen = (type: string, name?: string) => events().some((e) => e.type === type && (name === undefined || e.name === name));
        try {
          await until(() => seen('SYNCED'), 30_000, () => `informer printed: ${out}`);
          const name = `inf-${frontend}-${route}-${kind.resource.slice(0, 8)}`;
          const c = admin();
          await c.json('POST', coll, { body: kind.object(plane, name) });
          await until(() => seen('ADD', name), 20_000, () => out);
          await c.json('PATCH', `${coll}/${name}`, { body: JSON.stringify({ metadata: { labels: { step: 'updated' } } }), contentType: 'application/merge-patch+json' });
          await until(() => seen('UPDATE', name), 20_000, () => out);
          await c.json('DELETE', `${coll}/${name}`);
          await until(() => seen('DELETE', name), 20_000, () => out);
          assert.ok(!seen('ERROR'), `the informer's watch saw no error: ${out}`);
          assert.ok(!seen('LIST'), `the informer filled by watch-list; a LIST means the watch-list failed (a corrupt body) and client-go fell back: ${out}`);
        } finally {
          inf.kill();
        }
      });

      test(`kubectl get -w (defaults), ${where}: sees the add, update and delete`, async () => {
        const name = `kw-${frontend}-${route}-${kind.resource.slice(0, 8)}`;
        const c = admin();
        await c.json('POST', coll, { body: kind.object(plane, name) });
        const type = `${kind.resource}.${kind.version}.${kind.group}`;
        const watch = spawn(KUBECTL, [`--kubeconfig=${adminKC}`, `--server=${members()[via]!.url}`, 'get', ...(ns ? ['-n', ns] : []), type, '--watch', '--output-watch-events', '-o', 'json', `--field-selector=metadata.name=${name}`], { env: { ...process.env, HOME: plane.dir } });
        let out = '';
        watch.stdout.on('data', (d: Buffer) => (out += d.toString()));
        watch.stderr.on('data', (d: Buffer) => (out += d.toString()));
        try {
          await until(() => /"type":\s*"ADDED"/.test(out), 20_000, () => `kubectl get -w printed: ${out.slice(0, 300)}`);
          await c.json('PATCH', `${coll}/${name}`, { body: JSON.stringify({ metadata: { labels: { step: 'updated' } } }), contentType: 'application/merge-patch+json' });
          await until(() => /"type":\s*"MODIFIED"/.test(out), 20_000, () => `kubectl get -w printed: ${out.slice(-300)}`);
          await c.json('DELETE', `${coll}/${name}`);
          await until(() => /"type":\s*"DELETED"/.test(out), 20_000, () => `kubectl get -w printed: ${out.slice(-300)}`);
          assert.doesNotMatch(out, /unable to decode|invalid header/i, out);
        } finally {
          watch.kill();
        }
      });

      test(`a watch-list with Accept-Encoding: gzip as Go sends it, ${where}: ${kind.servedBy === 1 ? 'gzip' : 'identity'}, as the apiserver sends it, and the body decodes to the initial-events-end bookmark`, async () => {
        const name = `wl-${frontend}-${route}-${kind.resource.slice(0, 8)}`;
        await admin().json('POST', coll, { body: kind.object(plane, name) });
        try {
          const path = `${coll}?${WATCH_LIST}&timeoutSeconds=2`;
          const headers = { 'accept-encoding': 'gzip' };
          const direct = await admin().request('GET', path, { headers });
          const through = await new KubeClient(members()[via]!.url, plane.pki.caFile, { cert: plane.admin }).request('GET', path, { headers });
          assert.equal(through.status, 200, through.body);
          assert.equal(direct.headers['content-encoding'], kind.servedBy === 1 ? 'gzip' : undefined, 'v1.37 gzips a watch-list, v1.34 does not');
          assert.equal(through.headers['content-encoding'], direct.headers['content-encoding']);
          const body = (through.headers['content-encoding'] === 'gzip' ? gunzipSync(through.raw) : through.raw).toString();
          assert.match(body, /"k8s.io\/initial-events-end":"true"/);
          assert.ok(body.includes(`"name":"${name}"`), body.slice(0, 300));
        } finally {
          await admin().request('DELETE', `${coll}/${name}`);
        }
      });
    }
  });
});

async function until(cond: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  try {
    await eventually(cond, { what: 'the condition', timeoutMs, intervalMs: 100 });
  } catch (e) {
    if (e instanceof PollTimeout) e.message = `timed out after ${timeoutMs} ms: ${what()}`;
    throw e;
  }
}
