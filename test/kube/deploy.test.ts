// deploy/config.yaml as shipped, in front of real kube-apiservers (issue 15 §1, docs/deploy.md):
// one mvproxy beside each apiserver started from the file itself, with only what differs per node
// changed (addresses, ports, server ID, peer list, the pki directory, the token file the guide
// says to uncomment). Every other choice is the file's: kubeadm's apiserver.crt serving both
// listeners, ca.crt verifying client certificates and the local apiserver (as
// kubernetes.default.svc), front-proxy-client toward apiserver and peers, the uWS front end.
// Run twice on one control plane: from source, and from the image (npm run test:image sets
// MVPROXY_IMAGE) as deploy/static-pod.yaml runs it, played by podman with the PKI mounted at
// /etc/kubernetes/pki (issue 31; support/static-pod.ts lists what podman 4.3 plays differently).
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseDocument } from 'yaml';
import { ROOT } from '../support/child-daemon';
import { kubectlAs, startControlPlane, type KubeControlPlane } from './support/control-plane';
import { KubeClient } from './support/client';
import { startMvproxies, type Member } from './support/mvproxy';
import { probe, startStaticPods, type PodMember } from './support/static-pod';
import { IMAGE, imageSkip, inspect, podman } from '../support/podman';
import { httpsGet } from './support/processes';
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
const noImage = imageSkip();


/** deploy/config.yaml as shipped (parsed), with the frontend the file names. */
function shippedConfig(): Record<string, any> {
  const config = parseDocument(readFileSync(join(ROOT, 'deploy', 'config.yaml'), 'utf8')).toJS() as Record<string, any>;
  assert.equal(config.frontend, 'uws', 'the shipped front end');
  return config;
}

/** The values that differ per node (docs/deploy.md's install steps 3 and 4), set on a copy of the shipped file. */
function perNode(config: Record<string, any>, m: { id: string; ports: { client: number; peer: number; metrics: number }; apiserver: { url: string }; peers: { id: string; address: string }[] }, tokenFile: string): Record<string, any> {
  const c = structuredClone(config);
  c.serverID = m.id;
  Object.assign(c.serving, { bindAddress: '127.0.0.1', securePort: m.ports.client });
  Object.assign(c.peerServing, { bindAddress: '127.0.0.1', port: m.ports.peer });
  Object.assign(c.localAPIServer, { url: m.apiserver.url, tokenFile });
  c.peers.static = m.peers;
  c.metrics.bindAddress = `127.0.0.1:${m.ports.metrics}`;
  return c;
}

describe('deploy/config.yaml as shipped, in front of kube-apiserver v1.34.4 and v1.37.2', { skip: shipped.skip && noImage ? shipped.skip : undefined }, () => {
  let plane: KubeControlPlane;
  const users: Record<string, UserCert> = {};

  before(async () => {
    plane = await startControlPlane();
    // The identities kubeadm writes into controller-manager.conf, scheduler.conf and kubelet.conf.
    users.controllerManager = await plane.pki.user('system:kube-controller-manager');
    users.scheduler = await plane.pki.user('system:kube-scheduler');
    users.kubelet = await plane.pki.user('system:node:cp-1', ['system:nodes']);
  });
  after(async () => {
    await plane?.stop();
  });

  const whoami = async (cert: UserCert, server: string): Promise<UserInfo> => {
    const kc = plane.kubeconfig(`whoami-${Math.random().toString(36).slice(2)}`, { cert });
    const { stdout } = await kubectlAs(kc, server, ['auth', 'whoami', '-o', 'json']);
    return (JSON.parse(stdout) as { status: { userInfo: UserInfo } }).status.userInfo;
  };

  /** What each way of running it must do, through its members. */
  const checks = (members: () => Member[]) => {
    test('the controller-manager, scheduler and kubelet identities reach the apiserver as themselves through each member (not system:anonymous)', async () => {
      for (const [name, cert] of Object.entries(users)) {
        const direct = await whoami(cert, plane.apiservers[1]!.url);
        assert.notEqual(direct.username, 'system:anonymous');
        for (const m of members()) assert.deepEqual(await whoami(cert, m.url), direct, `${name} through ${m.name}`);
      }
    });

    test('a kubelet is authorized as its node: its own Node is a 404 (not found), not a 403 (forbidden)', async () => {
      for (const m of members()) {
        const r = await new KubeClient(m.url, plane.pki.caFile, { cert: users.kubelet! }).get('/api/v1/nodes/cp-1');
        assert.equal(r.status, 404, `${m.name}: ${r.body}`);
      }
    });

    test('a kind only the peer serves, through the shipped peer settings (front-proxy-client, apiserver.crt checked as kubernetes.default.svc)', async () => {
      const kind = PEER_ONLY.find((k) => k.servedBy === 1 && k.resource === 'clustertrustbundles')!;
      const through = new KubeClient(members()[0]!.url, plane.pki.caFile, { cert: plane.admin });
      const path = `/apis/${kind.group}/${kind.version}/${kind.resource}`;
      const name = `deploy-ctb-${Math.random().toString(36).slice(2, 8)}`;
      await through.json('POST', path, { body: kind.object(plane, name) });
      const got = await through.json<{ metadata: { name: string } }>('GET', `${path}/${name}`);
      assert.equal(got.metadata.name, name);
    });

    test("the client port's /readyz is the apiserver's answer while mvproxy is ready (what a load balancer probes)", async () => {
      for (const m of members()) {
        const r = await new KubeClient(m.url, plane.pki.caFile, { anonymous: true }).get('/readyz?verbose');
        assert.equal(r.status, 200, r.body);
        assert.match(r.body, /\[\+\]etcd ok/);
        assert.match(r.body, /readyz check passed/);
      }
    });
  };

  describe('from source, started with the file', { skip: shipped.skip }, () => {
    let members: Member[] = [];
    before(async () => {
      const config = shippedConfig();
      members = await startMvproxies(plane, {
        frontend: 'uws',
        configFile: (m) => {
          const c = movePKI(perNode(config, m, plane.pki.mvproxyTokenFile), plane.pki.dir);
          const file = join(plane.dir, `config-${m.id}.yaml`);
          writeFileSync(file, JSON.stringify(c), { mode: 0o600 });
          return file;
        },
      });
    });
    after(async () => Promise.all(members.map((m) => m.stop())));
    checks(() => members);
  });

  describe(`from the image (${IMAGE ?? 'not built'}): deploy/static-pod.yaml played by podman, the PKI at /etc/kubernetes/pki`, { skip: noImage }, () => {
    let pods: PodMember[] = [];
    before(async () => {
      const config = shippedConfig();
      // Paths stay the file's (/etc/kubernetes/pki/..., /etc/mvproxy/token): the pod mounts them there.
      pods = await startStaticPods(plane, { image: IMAGE!, config: (m) => perNode(config, m, '/etc/mvproxy/token') });
    });
    after(async () => Promise.all(pods.map((m) => m.stop())));
    checks(() => pods);

    test('the container runs as the static pod says: uid 0 with no capability, no new privileges, a read-only root filesystem, the kubeadm PKI and the config read-only', async () => {
      for (const m of pods) {
        assert.match(m.proc.log(), /"msg":"mvproxy started".*"frontend":"uws"/, 'the image picks uWS (glibc 2.41)');
        const c = await inspect('container', m.container);
        assert.equal(c.Config.User, '0:0', 'runAsUser/runAsGroup 0: kubeadm writes the keys root-owned 0600');
        assert.equal(c.HostConfig.ReadonlyRootfs, true);
        assert.equal(c.HostConfig.NetworkMode, 'host');
        // The process itself, as the kernel sees it: no effective or bounding capability, no_new_privs.
        const status = readFileSync(`/proc/${c.State.Pid}/status`, 'utf8');
        for (const field of ['CapEff', 'CapPrm', 'CapBnd']) assert.match(status, new RegExp(`^${field}:\\s+0+$`, 'm'), field);
        assert.match(status, /^NoNewPrivs:\s+1$/m);
        assert.match(status, /^Uid:\s+0\s+0\s+0\s+0$/m);
        // Nothing it may write but /tmp: the root filesystem, the PKI and the config refuse writes.
        const write = (path: string) => podman(['exec', m.container, '/nodejs/bin/node', '-e', `try { require('fs').writeFileSync(${JSON.stringify(path)}, 'x'); console.log('written') } catch (e) { console.log(e.code) }`]).then((r) => r.stdout.trim());
        assert.equal(await write('/app/x'), 'EROFS');
        assert.equal(await write('/etc/kubernetes/pki/x'), 'EROFS');
        assert.equal(await write('/etc/mvproxy/x'), 'EROFS');
        assert.equal(await write('/tmp/x'), 'written');
        // The image's own default user (without the static pod's runAsUser) is nonroot, by number.
        assert.equal((await inspect('image', IMAGE!)).Config.User, '65532:65532');
      }
    });

    test("the static pod's probes answer as the kubelet asks them (httpGet from the node to the ops listener)", async () => {
      for (const m of pods) for (const name of ['startupProbe', 'livenessProbe', 'readinessProbe'] as const) assert.equal(await probe(m, name), 200, `${m.name} ${name}`);
    });

    test('SIGTERM drains within terminationGracePeriodSeconds: the readiness probe fails at once while clients are still served, then mvproxy exits 0 (not killed at the end of the grace period)', async () => {
      const m = pods[0]!;
      const ca = readFileSync(plane.pki.caFile, 'utf8');
      const stopping = m.terminate();
      let failedWhileServing = false;
      // shutdown.delayDuration (5 s in the file): /readyz fails, everything serves on. Bounded by the grace period.
      for (let i = 0; i < m.graceSeconds * 10 && !failedWhileServing; i++) {
        if ((await probe(m, 'readinessProbe')) === 500) failedWhileServing = (await httpsGet(`${m.url}/version`, { ca, cert: plane.admin.cert, key: plane.admin.key })).status === 200;
        else await new Promise((r) => setTimeout(r, 100));
      }
      const { exitCode, log } = await stopping;
      assert.equal(failedWhileServing, true, 'the readiness probe failed while the client listener still answered');
      assert.equal(exitCode, 0, `exit code ${exitCode} (137: killed after ${m.graceSeconds} s)\n${log.slice(-3000)}`);
      assert.match(log, /"msg":"shutting down: \/readyz fails from now on"/);
      assert.match(log, /"msg":"drained"/);
    });
  });
});
