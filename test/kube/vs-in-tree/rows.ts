// The rows of docs/vs-in-tree.md: each a request (or a small sequence) run against the entry point of
// either setup, and the answer reduced to what a client acts on: status, Status reason, the headers
// that matter (Retry-After, Content-Type), and what the serving apiserver recorded where identity is
// the point. `key` is what the two setups are compared on.
import type { Reply } from '../support/processes';
import type { Apiserver, KubeControlPlane } from '../support/control-plane';
import { KubeClient } from '../support/client';
import type { Member } from '../support/mvproxy';

export interface Answer {
  summary: string;
  detail?: string;
  key: string;
}

export interface RowContext {
  mode: 'in-tree' | 'mvproxy';
  plane: KubeControlPlane;
  entry: string;
  admin: KubeClient;
  members: Member[];
  /** The apiserver that serves the peer-only kind (kube-y), and the mvproxy beside it (mvproxy mode). */
  servingApiserver: Apiserver;
  servingMember?: Member;
}

export interface Row {
  id: string;
  label: string;
  run(c: RowContext): Promise<Answer>;
}

const HPA = '/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers';
const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const hpa = (name: string) => ({ apiVersion: 'autoscaling/v1', kind: 'HorizontalPodAutoscaler', metadata: { name, namespace: 'default' }, spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 1, maxReplicas: 2 } });

/** extra is compared (part of the answer); note is shown only (e.g. how long it took). */
function answer(r: Reply | { status: 0; error: string }, extra = '', note = ''): Answer {
  if (r.status === 0) return { summary: 'no answer', detail: [(r as { error: string }).error, note].filter(Boolean).join('; '), key: 'no answer' };
  const reply = r as Reply;
  let reason = '';
  let message = '';
  if (reply.status >= 400) {
    try {
      const st = JSON.parse(reply.body) as { kind?: string; reason?: string; message?: string };
      if (st.kind === 'Status') {
        reason = st.reason ?? '';
        message = st.message ?? '';
      }
    } catch {
      message = reply.body.slice(0, 120);
    }
  }
  const retry = reply.headers['retry-after'];
  const head = [`${reply.status}${reason ? ` ${reason}` : ''}`, ...(retry ? [`Retry-After: ${String(retry)}`] : [])].join(', ');
  const detail = [message && `“${message.replace(/\s+/g, ' ').trim().slice(0, 160)}”`, extra, note].filter(Boolean).join('; ');
  return { summary: head, ...(detail ? { detail } : {}), key: `${reply.status} ${reason}${retry ? ' retry' : ''} ${extra}` };
}

async function timed(c: KubeClient, path: string, headers: Record<string, string> = {}, timeoutMs = 15_000): Promise<Answer> {
  const t0 = Date.now();
  const r = await Promise.race([
    c.get(path, headers),
    new Promise<{ status: 0; error: string }>((r) => setTimeout(() => r({ status: 0, error: `no response within ${timeoutMs / 1000} s` }), timeoutMs)),
  ]).catch((e: Error) => ({ status: 0 as const, error: e.message }));
  return answer(r, '', r.status ? `after ${((Date.now() - t0) / 1000).toFixed(1)} s` : '');
}

/** Creates an HPA through the entry point as the given client; the answer plus who the serving apiserver's audit says made it. */
async function createAs(c: RowContext, who: KubeClient, name: string): Promise<Answer> {
  const r = await who.request('POST', HPA, { body: hpa(name) });
  await new Promise((res) => setTimeout(res, 300)); // blocking audit mode: written before the answer, read a moment later anyway
  const ev = c.servingApiserver.audit().find((e) => e.verb === 'create' && e.objectRef?.name === name && e.stage === 'ResponseComplete');
  const seen = ev ? `audited on kube-y as ${ev.user.username} [${(ev.user.groups ?? []).join(', ')}]` : 'not audited on kube-y';
  return answer(r, seen);
}

export const ROWS: Row[] = [
  { id: 'peer-list', label: 'LIST a peer-only kind (HPA v1)', run: async (c) => answer(await c.admin.get(HPA)) },
  { id: 'peer-create', label: 'CREATE a peer-only object', run: async (c) => answer(await c.admin.request('POST', HPA, { body: hpa(`vs-${c.mode}`) })) },
  { id: 'peer-get', label: 'GET that object', run: async (c) => answer(await c.admin.get(`${HPA}/vs-${c.mode}`)) },
  {
    id: 'peer-watch',
    label: 'WATCH the peer-only kind (`timeoutSeconds=1`)',
    run: async (c) => {
      const r = await c.admin.get(`${HPA}?watch=true&timeoutSeconds=1`);
      const events = r.body.split('\n').filter(Boolean).length;
      return answer(r, r.status === 200 ? `${events} event(s) then a clean end` : '');
    },
  },
  { id: 'unknown-gvr', label: 'GET a group/version/resource nobody serves', run: async (c) => answer(await c.admin.get('/apis/nope.example.com/v1/things')) },
  { id: 'one-hop-header', label: 'LIST the peer-only kind with a client-sent `X-Kubernetes-Peer-Proxied: true`', run: async (c) => answer(await c.admin.get(HPA, { 'x-kubernetes-peer-proxied': 'true' })) },
  {
    id: 'discovery',
    label: '`/apis` (aggregated v2): is `autoscaling/v1` listed?',
    run: async (c) => {
      const r = await c.admin.get('/apis', { accept: V2 });
      const listed = r.status === 200 && (JSON.parse(r.body) as { items: { metadata: { name: string }; versions: { version: string }[] }[] }).items.some((g) => g.metadata.name === 'autoscaling' && g.versions.some((v) => v.version === 'v1'));
      return answer(r, `autoscaling/v1 ${listed ? 'listed' : 'not listed'}`);
    },
  },
  {
    id: 'discovery-nopeer',
    label: '`/apis;profile=nopeer`: is `autoscaling/v1` listed?',
    run: async (c) => {
      const r = await c.admin.get('/apis', { accept: `${V2};profile=nopeer` });
      const listed = r.status === 200 && (JSON.parse(r.body) as { items: { metadata: { name: string }; versions: { version: string }[] }[] }).items.some((g) => g.metadata.name === 'autoscaling' && g.versions.some((v) => v.version === 'v1'));
      return answer(r, `autoscaling/v1 ${listed ? 'listed' : 'not listed'}`);
    },
  },
  {
    id: 'identity-cert',
    label: 'CREATE as a certificate user (alice, group devs, allowed by RBAC): who kube-y records',
    run: async (c) => {
      await grant(c);
      const alice = await c.plane.pki.user('alice', ['devs']);
      return createAs(c, new KubeClient(c.entry, c.plane.pki.caFile, { cert: alice }), `vs-alice-${c.mode}`);
    },
  },
  {
    id: 'identity-token',
    label: 'CREATE as a ServiceAccount token user (default/vs): who kube-y records',
    run: async (c) => {
      await grant(c);
      const direct = new KubeClient(c.plane.apiservers[0]!.url, c.plane.pki.caFile, { cert: c.plane.admin });
      const tr = await direct.json<{ status: { token: string } }>('POST', '/api/v1/namespaces/default/serviceaccounts/vs/token', { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } } });
      return createAs(c, new KubeClient(c.entry, c.plane.pki.caFile, { token: tr.status.token }), `vs-sa-${c.mode}`);
    },
  },
  {
    id: 'peer-unreachable',
    label: 'LIST the peer-only kind while the peer accepts connections but never answers (SIGSTOP)',
    run: async (c) => {
      const target = c.mode === 'in-tree' ? c.servingApiserver.proc.child : c.servingMember!.proc.child;
      target.kill('SIGSTOP');
      try {
        return await timed(c.admin, HPA, {}, 75_000);
      } finally {
        target.kill('SIGCONT');
        await new Promise((r) => setTimeout(r, 3000));
      }
    },
  },
  {
    id: 'peer-down',
    label: 'LIST the peer-only kind with the peer down (stopped)',
    run: async (c) => {
      if (c.servingMember) await c.servingMember.stop();
      await c.servingApiserver.stop();
      await new Promise((r) => setTimeout(r, 2000));
      return timed(c.admin, HPA);
    },
  },
];

const granted = new WeakSet<KubeControlPlane>();
/** RBAC for alice (group devs) and ServiceAccount default/vs: HPAs in default. */
async function grant(c: RowContext): Promise<void> {
  if (granted.has(c.plane)) return;
  granted.add(c.plane);
  const direct = new KubeClient(c.plane.apiservers[0]!.url, c.plane.pki.caFile, { cert: c.plane.admin });
  await direct.json('POST', '/api/v1/namespaces/default/serviceaccounts', { body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'vs' } } });
  await direct.json('POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles', { body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'hpa-editor' }, rules: [{ apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'], verbs: ['get', 'list', 'watch', 'create'] }] } });
  await direct.json('POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings', { body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'hpa-editor' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'hpa-editor' }, subjects: [{ kind: 'Group', name: 'devs', apiGroup: 'rbac.authorization.k8s.io' }, { kind: 'ServiceAccount', name: 'vs', namespace: 'default' }] } });
}

/** Differences that are intended, by row id, with the reason (filled in from the generated table). */
export const DIFFERENCES: Record<string, string> = {
  'peer-unreachable':
    "in-tree's proxy sets no deadline on a peer that accepted the connection and never answers, so the client waits (here it gave up after 75 s). mvproxy's health probe (`--peer-probe-interval`) takes the peer out of routing within seconds and the request gets a 503 with Retry-After, which client-go retries. In-tree answers 503 only on a transport error (docs/kubernetes-mvp.md §2.4).",
  'peer-down':
    "a kube-apiserver that stops gracefully deletes its identity Lease, so the in-tree proxy at once no longer knows that any peer serves the kind. It serves the request locally: a 404, which controllers read as \"deleted\" (the garbage collector and namespace controller of kubernetes/kubernetes#96486). mvproxy keeps a departed peer's view for `--peer-discovery-grace-period` and answers 503 with Retry-After, so clients retry and never act on a false 404 (docs/kubernetes-mvp.md §8).",
};

