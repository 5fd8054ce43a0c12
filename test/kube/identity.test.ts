// Identity through mvproxy, judged by the real authenticator: `kubectl auth whoami` (a
// SelfSubjectReview) through the member whose apiserver serves it (local route) and through the
// member whose apiserver does not (v1.34.4 runs without it: peer route) must say exactly what the
// apiserver says when the same client reaches it directly. Authorization (RBAC) decides as it would
// without mvproxy, on both routes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { kubectlAs, startControlPlane, type Impersonation, type KubeControlPlane } from './support/control-plane';
import { KubeClient, type UserInfo } from './support/client';
import { forEachFrontend } from './support/suite';
import type { UserCert } from './support/pki';


type Cred = { cert: UserCert } | { token: string } | { anonymous: true };

describe('identity through mvproxy, judged by kube-apiserver', () => {
  let plane: KubeControlPlane;
  let alice: UserCert;
  let saToken: string;
  /** The apiserver that serves SelfSubjectReview (v1.37.2), and its member; the other member routes it as a peer. */
  const SERVES_SSR = 1;

  before(async () => {
    plane = await startControlPlane();
    alice = await plane.pki.user('alice', ['devs', 'acme:team']);
    const admin = new KubeClient(plane.apiservers[0]!.url, plane.pki.caFile, { cert: plane.admin });
    await admin.json('POST', '/api/v1/namespaces/default/serviceaccounts', { body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'robot' } } });
    const tr = await admin.json<{ status: { token: string } }>('POST', '/api/v1/namespaces/default/serviceaccounts/robot/token', { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } } });
    saToken = tr.status.token;
  });
  after(async () => plane?.stop());

  const whoami = async (cred: Cred, server: string, impersonate?: Impersonation): Promise<UserInfo | { error: string }> => {
    const kc = plane.kubeconfig(`whoami-${Math.random().toString(36).slice(2)}`, cred, impersonate);
    try {
      const { stdout } = await kubectlAs(kc, server, ['auth', 'whoami', '-o', 'json']);
      return (JSON.parse(stdout) as { status: { userInfo: UserInfo } }).status.userInfo;
    } catch (e) {
      // The error kubectl prints (Unauthorized, Forbidden) is what a user sees: compare it too.
      return { error: String((e as { stderr?: string }).stderr ?? e).replace(/https:\/\/127\.0\.0\.1:\d+/g, 'SERVER').trim() };
    }
  };

  forEachFrontend(() => plane, (frontend, members) => {

      const cases: { name: string; cred: () => Cred; impersonate?: Impersonation; expect: (u: UserInfo) => void }[] = [
        { name: 'an x509 client-certificate user with groups', cred: () => ({ cert: alice }), expect: (u) => (assert.equal(u.username, 'alice'), assert.ok(u.groups?.includes('devs') && u.groups.includes('acme:team'))) },
        { name: 'a ServiceAccount token (TokenRequest)', cred: () => ({ token: saToken }), expect: (u) => assert.equal(u.username, 'system:serviceaccount:default:robot') },
        {
          name: 'impersonation with groups and a dotted extra key',
          cred: () => ({ cert: plane.admin }),
          impersonate: { as: 'bob', groups: ['team-x'], extra: { 'acme.com/project': ['blue', 'green'] } },
          expect: (u) => (assert.equal(u.username, 'bob'), assert.ok(u.groups?.includes('team-x')), assert.deepEqual(u.extra?.['acme.com/project'], ['blue', 'green'])),
        },
      ];
      for (const c of cases) {
        test(`${c.name}: the same identity on the local route, the peer route and directly`, async () => {
          const direct = await whoami(c.cred(), plane.apiservers[SERVES_SSR]!.url, c.impersonate);
          if (!('error' in direct)) c.expect(direct);
          for (const [i, route] of [[SERVES_SSR, 'local'], [1 - SERVES_SSR, 'peer']] as const) {
            const through = await whoami(c.cred(), members()[i]!.url, c.impersonate);
            assert.deepEqual(through, direct, `${route} route through ${members()[i]!.name}`);
          }
        });
      }

      test('no credentials: the same answer as from the apiserver directly (anonymous, as system:unauthenticated), on both routes', async () => {
        // Not through kubectl: with no credentials in its kubeconfig it prompts for a password.
        const review = { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' };
        const ssr = (base: string) => new KubeClient(base, plane.pki.caFile, { anonymous: true }).request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { body: review });
        const direct = await ssr(plane.apiservers[SERVES_SSR]!.url);
        assert.notEqual(direct.status, 401, 'anonymous auth is on: the apiserver judges system:anonymous, not "Unauthorized"');
        for (const m of members()) {
          const r = await ssr(m.url);
          assert.equal(r.status, direct.status, `${m.name}: ${r.body}`);
          assert.deepEqual(JSON.parse(r.body), JSON.parse(direct.body), m.name);
        }
        // /version and /readyz are public (system:public-info-viewer): served to nobody, through both members().
        for (const m of members()) for (const p of ['/version', '/readyz']) assert.equal((await new KubeClient(m.url, plane.pki.caFile, { anonymous: true }).get(p)).status, 200, `${m.name} ${p}`);
      });

      test('a client-sent X-Remote-User is never believed, on either route', async () => {
        const review = { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' };
        const spoof = { 'X-Remote-User': 'system:admin', 'X-Remote-Group': 'system:masters', 'X-Remote-Extra-Scopes': 'all' };
        for (const cred of [{ anonymous: true } as const, { cert: alice }, { token: saToken }]) {
          const direct = await new KubeClient(plane.apiservers[SERVES_SSR]!.url, plane.pki.caFile, cred).request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { body: review });
          for (const m of members()) {
            const r = await new KubeClient(m.url, plane.pki.caFile, cred).request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { body: review, headers: spoof });
            assert.equal(r.status, direct.status, `${m.name}: ${r.body}`);
            if (r.status === 201) assert.deepEqual(JSON.parse(r.body).status, JSON.parse(direct.body).status);
            assert.doesNotMatch(r.body, /system:admin|system:masters/);
          }
          // And the secrets of kube-system stay out of reach.
          for (const m of members()) {
            const r = await new KubeClient(m.url, plane.pki.caFile, cred).get('/api/v1/namespaces/kube-system/secrets', spoof);
            assert.ok(r.status === 401 || r.status === 403, `${m.name}: ${r.status}`);
          }
        }
      });

      test('RBAC decides as without mvproxy: forbidden stays forbidden, a grant takes effect, on both routes', async () => {
        // HorizontalPodAutoscalers (autoscaling/v1) are served only by v1.34.4: through the new
        // member they take the peer route, through the old one the local route.
        const path = '/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers';
        const asAlice = (base: string) => new KubeClient(base, plane.pki.caFile, { cert: alice }).get(path);
        // (The grant of an earlier front end's run is deleted; RBAC's cache may take a moment.)
        let direct = await asAlice(plane.apiservers[0]!.url);
        for (let i = 0; i < 40 && direct.status !== 403; i++) {
          await new Promise((res) => setTimeout(res, 250));
          direct = await asAlice(plane.apiservers[0]!.url);
        }
        assert.equal(direct.status, 403);
        for (const m of members()) {
          const r = await asAlice(m.url);
          assert.equal(r.status, 403, m.name);
          assert.equal(JSON.parse(r.body).message, JSON.parse(direct.body).message, 'the apiserver names the same user and verb');
        }
        const admin = new KubeClient(plane.apiservers[0]!.url, plane.pki.caFile, { cert: plane.admin });
        const role = `hpa-reader-${frontend}`;
        await admin.json('POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles', { body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: role }, rules: [{ apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'], verbs: ['list'] }] } });
        await admin.json('POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings', { body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: role }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'acme:team' }] } });
        try {
          for (const m of members()) {
            // RBAC's cache takes a moment to see the binding on each apiserver.
            let r = await asAlice(m.url);
            for (let i = 0; i < 40 && r.status === 403; i++) {
              await new Promise((res) => setTimeout(res, 250));
              r = await asAlice(m.url);
            }
            assert.equal(r.status, 200, `${m.name}: ${r.body}`);
          }
        } finally {
          await admin.request('DELETE', `/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/${role}`);
          await admin.request('DELETE', `/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/${role}`);
        }
      });
  });
});
