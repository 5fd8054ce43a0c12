// Issue 38 against real kube-apiservers: a request target or header value whose characters above
// U+00FF have CR, LF and SP as their low bytes (U+010D, U+010A, U+0120) once made mvproxy write
// header lines of its own upstream (`X-Remote-User: system:admin`, `X-Remote-Group:
// system:masters`) and even a second request, over the front-proxy identity: an anonymous client
// became cluster-admin. Judged by the real authenticator: a SelfSubjectReview through each front
// end, on the local route (the member beside v1.37.2, which serves it) and the peer route (the
// member beside v1.34.4, which does not), anonymous and as a certificate user, over HTTP/1.1 and
// (node front end) HTTP/2, and through a uWS peer listener: the answer is 400, or the client's
// own identity; never system:admin. A ClusterRoleBinding smuggled in a target is never created.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startControlPlane, type KubeControlPlane } from './support/control-plane';
import { KubeClient } from './support/client';
import { frontends } from './support/suite';
import { startMvproxies, type Frontend, type Member } from './support/mvproxy';
import type { UserCert } from './support/pki';
import { sendH1, sendH2, type ClientTLS } from '../support/raw-wire';
import { highSmuggle } from '../support/differential';

const SSR = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
const REVIEW = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
/** The member beside v1.37.2 serves SelfSubjectReview (local route); the one beside v1.34.4 sends it to its peer. */
const LOCAL = 1;
const PEER = 0;
const L = (s: string) => Buffer.from(s, 'latin1');

/** The ClusterRoleBinding the smuggled request would create. */
const PWNED_NAME = 'mvproxy-injection-pwned';
const PWNED = JSON.stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: PWNED_NAME }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' }, subjects: [{ kind: 'User', name: 'mallory', apiGroup: 'rbac.authorization.k8s.io' }] });

/** The targets that carried identity lines (and a whole second request) upstream, as U+0100 + byte in UTF-8. */
const ATTACKS: { name: string; target: Buffer }[] = [
  { name: 'identity lines in the query', target: Buffer.concat([L(SSR + '?x='), highSmuggle('" HTTP/1.1\r\nX-Remote-User: system:admin\r\nX-Remote-Group: system:masters\r\nX: "')]) },
  { name: 'identity lines in the path', target: Buffer.concat([L(SSR), highSmuggle(' HTTP/1.1\r\nX-Remote-User: system:admin\r\nX-Remote-Group: system:masters\r\nX:')]) },
  {
    name: 'a ClusterRoleBinding request smuggled behind it',
    target: Buffer.concat([
      L(SSR + '?x='),
      highSmuggle(
        ` HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\nPOST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings HTTP/1.1\r\nHost: x\r\nX-Remote-User: system:admin\r\nX-Remote-Group: system:masters\r\nContent-Type: application/json\r\nContent-Length: ${PWNED.length}\r\n\r\n${PWNED}`,
      ),
    ]),
  },
];

/** Status and body of the first answer in raw HTTP/1.1 bytes. */
function firstAnswer(out: Buffer): { status: number; body: string } {
  const s = out.toString('latin1');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(s)?.[1] ?? 0);
  const he = s.indexOf('\r\n\r\n');
  let body = he < 0 ? '' : s.slice(he + 4);
  if (/\r\ntransfer-encoding: *chunked/i.test(s.slice(0, he))) body = body.replace(/^[0-9a-f]+\r\n/i, '');
  return { status, body };
}

/**
 * The answer shows the client's own identity, or none: a review (201) of the client itself, an
 * apiserver refusal that names the client (403 `User "…"`), or a 400 (mvproxy's refusal, or the
 * apiserver's). The apiserver may echo the injected text as a resource name; that is no identity.
 */
function assertOwnIdentity(status: number, body: string, own: string, what: string): void {
  if (status === 201) {
    const u = (JSON.parse(body) as { status: { userInfo: { username: string; groups?: string[] } } }).status.userInfo;
    assert.equal(u.username, own, what);
    assert.ok(!(u.groups ?? []).includes('system:masters'), what);
    return;
  }
  if (status === 400) return;
  assert.equal(status, 403, `${what}: ${body.slice(0, 300)}`);
  assert.equal(/User \\?"([^"\\]*)\\?"/.exec(body)?.[1], own, `${what}: ${body.slice(0, 300)}`);
}

describe('issue 38 against the real apiserver: injected characters never become an identity', () => {
  let plane: KubeControlPlane;
  let alice: UserCert;
  let admin: KubeClient;

  before(async () => {
    plane = await startControlPlane();
    alice = await plane.pki.user('alice', ['devs']);
    admin = new KubeClient(plane.apiservers[1]!.url, plane.pki.caFile, { cert: plane.admin });
  });
  after(async () => plane?.stop());

  // Each front end on both members; then the node front end sending to a uWS peer listener (the
  // member beside v1.37.2 runs uWS with --peer-frontend=uws), the pair that wrote CR LF upstream.
  const setups: { name: string; frontend: Frontend; member?: (i: number) => { frontend?: Frontend; extraArgs?: string[] }; skip?: string }[] = [];
  for (const f of frontends()) setups.push({ name: `front end ${f.frontend}`, frontend: f.frontend, skip: f.skip });
  const uws = frontends().find((f) => f.frontend === 'uws')!;
  setups.push({ name: 'node front end → uWS peer listener', frontend: 'node', member: (i) => (i === LOCAL ? { frontend: 'uws', extraArgs: ['--peer-frontend=uws'] } : {}), skip: uws.skip });

  for (const s of setups) {
    describe(s.name, { skip: s.skip }, () => {
      let members: Member[] = [];
      before(async () => {
        members = await startMvproxies(plane, { frontend: s.frontend, member: s.member });
      });
      after(async () => Promise.all(members.map((m) => m.stop())));

      const who: { name: string; tls: () => ClientTLS; user: string }[] = [
        { name: 'anonymous', tls: () => ({}), user: 'system:anonymous' },
        { name: 'a certificate user', tls: () => ({ cert: alice.cert, key: alice.key }), user: 'alice' },
      ];
      for (const w of who) {
        for (const [route, index] of [['local', LOCAL], ['peer', PEER]] as const) {
          test(`HTTP/1.1, ${route} route, ${w.name}: 400 or the client's own identity, never system:admin`, async () => {
            for (const a of ATTACKS) {
              const bytes = Buffer.concat([L('POST '), a.target, L(` HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: ${REVIEW.length}\r\nConnection: close\r\n\r\n${REVIEW}`)]);
              const r = await sendH1(Number(new URL(members[index]!.url).port), bytes, { tls: w.tls(), timeoutMs: 10_000 });
              const { status, body } = firstAnswer(r.out);
              assertOwnIdentity(status, body, w.user, a.name);
            }
            const crb = await admin.get(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${PWNED_NAME}`);
            assert.equal(crb.status, 404, 'the smuggled ClusterRoleBinding was never created');
          });
        }
        if (s.frontend === 'node') {
          test(`HTTP/2, to each node client listener, ${w.name}: the :path refused or the client's own identity, never system:admin`, async () => {
            // To every member whose client listener is node's (uWS speaks no HTTP/2).
            for (const index of [LOCAL, PEER].filter((i) => (s.member?.(i).frontend ?? s.frontend) === 'node')) {
              for (const a of ATTACKS) {
                const fields: [Buffer, Buffer][] = [[L(':method'), L('POST')], [L(':scheme'), L('https')], [L(':authority'), L('127.0.0.1')], [L(':path'), a.target], [L('content-type'), L('application/json')], [L('accept'), L('application/json')]];
                const r = await sendH2(Number(new URL(members[index]!.url).port), [{ fields, body: L(REVIEW) }], { tls: w.tls(), timeoutMs: 10_000 });
                assert.notEqual(r.streams[0], 'open', `${a.name}: answered`);
                // The head is HPACK-coded; the body says which: the review, or a Status.
                const body = r.bodies[0]!.toString('utf8');
                const doc = JSON.parse(body) as { kind: string; code?: number };
                assertOwnIdentity(doc.kind === 'SelfSubjectReview' ? 201 : (doc.code ?? 0), body, w.user, a.name);
              }
            }
            const crb = await admin.get(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${PWNED_NAME}`);
            assert.equal(crb.status, 404, 'the smuggled ClusterRoleBinding was never created');
            const mallory = await admin.request('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', { body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: 'mallory', resourceAttributes: { verb: 'list', resource: 'secrets', namespace: 'kube-system' } } } });
            assert.equal(JSON.parse(mallory.body).status.allowed, false, 'no request made mallory an admin');
          });
        }
      }
    });
  }
});
