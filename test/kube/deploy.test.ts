// deploy/config.yaml as shipped, in front of real kube-apiservers (issue 15 §1, docs/deploy.md):
// one mvproxy beside each apiserver started from the file itself, with only what differs per node
// changed (addresses, ports, server ID, peer list, the pki directory, the token file the guide
// says to uncomment). Every other choice is the file's: kubeadm's apiserver.crt serving both
// listeners, ca.crt verifying client certificates and the local apiserver (as
// kubernetes.default.svc), front-proxy-client toward apiserver and peers, the uWS front end.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseDocument } from 'yaml';
import { ROOT } from '../support/child-daemon';
import { kubectlAs, startControlPlane, type KubeControlPlane } from './support/control-plane';
import { KubeClient } from './support/client';
import { startMvproxies, type Member } from './support/mvproxy';
import { frontends, PEER_ONLY } from './support/suite';
import type { UserCert } from './support/pki';

const KUBEADM_PKI = '/etc/kubernetes/pki/';

/** Every string value under /etc/kubernetes/pki/ moved to the test PKI directory (same file names: it is laid out as kubeadm's). */
function movePKI(v: unknown, dir: string): unknown {
  if (typeof v === 'string') return v.startsWith(KUBEADM_PKI) ? join(dir, basename(v)) : v;
  if (Array.isArray(v)) return v.map((x) => movePKI(x, dir));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, movePKI(x, dir)]));
  return v;
}

type UserInfo = { username: string; groups?: string[] };

const shipped = frontends().find((f) => f.frontend === 'uws')!;

describe('deploy/config.yaml as shipped, in front of kube-apiserver v1.34.4 and v1.37.2', { skip: shipped.skip }, () => {
  let plane: KubeControlPlane;
  let members: Member[] = [];
  const users: Record<string, UserCert> = {};

  before(async () => {
    plane = await startControlPlane();
    const config = parseDocument(readFileSync(join(ROOT, 'deploy', 'config.yaml'), 'utf8')).toJS() as Record<string, any>;
    assert.equal(config.frontend, 'uws', 'the shipped front end');
    members = await startMvproxies(plane, {
      frontend: 'uws',
      configFile: (m) => {
        const c = movePKI(structuredClone(config), plane.pki.dir) as Record<string, any>;
        c.serverID = m.id;
        Object.assign(c.serving, { bindAddress: '127.0.0.1', securePort: m.ports.client });
        Object.assign(c.peerServing, { bindAddress: '127.0.0.1', port: m.ports.peer });
        Object.assign(c.localAPIServer, { url: m.apiserver.url, tokenFile: plane.pki.mvproxyTokenFile });
        c.peers.static = m.peers;
        c.metrics.bindAddress = `127.0.0.1:${m.ports.metrics}`;
        const file = join(plane.dir, `config-${m.id}.yaml`);
        writeFileSync(file, JSON.stringify(c), { mode: 0o600 });
        return file;
      },
    });
    // The identities kubeadm writes into controller-manager.conf, scheduler.conf and kubelet.conf.
    users.controllerManager = await plane.pki.user('system:kube-controller-manager');
    users.scheduler = await plane.pki.user('system:kube-scheduler');
    users.kubelet = await plane.pki.user('system:node:cp-1', ['system:nodes']);
  });
  after(async () => {
    await Promise.all(members.map((m) => m.stop()));
    await plane?.stop();
  });

  const whoami = async (cert: UserCert, server: string): Promise<UserInfo> => {
    const kc = plane.kubeconfig(`whoami-${Math.random().toString(36).slice(2)}`, { cert });
    const { stdout } = await kubectlAs(kc, server, ['auth', 'whoami', '-o', 'json']);
    return (JSON.parse(stdout) as { status: { userInfo: UserInfo } }).status.userInfo;
  };

  test('the controller-manager, scheduler and kubelet identities reach the apiserver as themselves through each member (not system:anonymous)', async () => {
    for (const [name, cert] of Object.entries(users)) {
      const direct = await whoami(cert, plane.apiservers[1]!.url);
      assert.notEqual(direct.username, 'system:anonymous');
      for (const m of members) assert.deepEqual(await whoami(cert, m.url), direct, `${name} through ${m.name}`);
    }
  });

  test('a kubelet is authorized as its node: its own Node is a 404 (not found), not a 403 (forbidden)', async () => {
    for (const m of members) {
      const r = await new KubeClient(m.url, plane.pki.caFile, { cert: users.kubelet! }).get('/api/v1/nodes/cp-1');
      assert.equal(r.status, 404, `${m.name}: ${r.body}`);
    }
  });

  test('a kind only the peer serves, through the shipped peer settings (front-proxy-client, apiserver.crt checked as kubernetes.default.svc)', async () => {
    const kind = PEER_ONLY.find((k) => k.servedBy === 1 && k.resource === 'clustertrustbundles')!;
    const through = new KubeClient(members[0]!.url, plane.pki.caFile, { cert: plane.admin });
    const path = `/apis/${kind.group}/${kind.version}/${kind.resource}`;
    await through.json('POST', path, { body: kind.object(plane, 'deploy-ctb') });
    const got = await through.json<{ metadata: { name: string } }>('GET', `${path}/deploy-ctb`);
    assert.equal(got.metadata.name, 'deploy-ctb');
  });

  test("the client port's /readyz is the apiserver's answer while mvproxy is ready (what a load balancer probes)", async () => {
    for (const m of members) {
      const r = await new KubeClient(m.url, plane.pki.caFile, { anonymous: true }).get('/readyz?verbose');
      assert.equal(r.status, 200, r.body);
      assert.match(r.body, /\[\+\]etcd ok/);
      assert.match(r.body, /readyz check passed/);
    }
  });
});
