// mvproxy from the image, as deploy/static-pod.yaml runs it, beside the plane's real apiservers:
// `podman play kube` of the shipped manifest, one pod per apiserver, each with its own
// /etc/mvproxy (config.yaml and the token file) and the plane's kubeadm-style PKI mounted at
// /etc/kubernetes/pki, read-only, as on a control-plane node.
//
// What the manifest podman plays differs in, and why (podman 4.3, Debian 12):
// - per node, as an operator would: the image (the one scripts/image.sh built), the two hostPath
//   folders (here the plane's PKI and this member's config folder instead of the node's /etc), the
//   pod's name (two "nodes" share this host) and the probes' port (each member's ops listener has
//   its own port here, 10290 on a node);
// - the probes are left out of what podman plays and asked from the host instead, as the kubelet
//   asks them (probe()): podman turns an httpGet probe into `curl` run inside the container, and the
//   distroless image has neither curl nor a shell (4.3 would also restart the container on failure);
// - terminationGracePeriodSeconds is given to `podman pod stop -t` (4.3 plays it as a 10 s stop timeout);
// - the emptyDir /tmp becomes a podman volume named for the pod (podman names it after the pod
//   volume, "tmp", shared by every pod that uses that name; medium: Memory is not honoured);
// - ignored by podman, as nothing here schedules or limits: priorityClassName, priority,
//   resources.requests; securityContext.seccompProfile RuntimeDefault is podman's default profile.
import { mkdirSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { ROOT } from '../../support/child-daemon';
import { inspect, podman, podmanSync, PODMAN_ENV } from '../../support/podman';
import type { Apiserver, KubeControlPlane } from './control-plane';
import { waitMerged, type Member } from './mvproxy';
import { freePort, startProcess, waitFor } from './processes';

export interface PodMember extends Member {
  pod: string;
  container: string;
  /** The pod spec podman played. */
  manifest: Record<string, any>;
  /** The probes of the shipped manifest (port moved to this member's ops listener). */
  probes: Record<'livenessProbe' | 'readinessProbe' | 'startupProbe', { httpGet: { host: string; port: number; path: string; scheme: string } }>;
  /** terminationGracePeriodSeconds of the shipped manifest. */
  graceSeconds: number;
  /** `podman pod stop -t <grace>` (SIGTERM, SIGKILL after the grace period), then the container's exit code and its whole log; the pod is removed. */
  terminate(): Promise<{ exitCode: number; log: string }>;
}

export interface PodPorts {
  client: number;
  peer: number;
  metrics: number;
}

export interface StaticPodOptions {
  image: string;
  /** This member's configuration (deploy/config.yaml with the node-specific values set), paths as on a node. */
  config: (m: { index: number; id: string; ports: PodPorts; apiserver: Apiserver; peers: { id: string; address: string }[] }) => Record<string, unknown>;
}

const live = new Set<string>();
process.once('exit', () => {
  for (const pod of live) podmanSync(['pod', 'rm', '--force', '--time', '0', pod]);
});

/** What the kubelet would get for one of the member's probes (status, or 0 when nothing answered). */
export async function probe(m: PodMember, name: keyof PodMember['probes']): Promise<number> {
  const g = m.probes[name].httpGet;
  return fetch(`${g.scheme.toLowerCase()}://${g.host}:${g.port}${g.path}`, { signal: AbortSignal.timeout(5_000) }).then((r) => r.status, () => 0);
}

export async function startStaticPods(plane: KubeControlPlane, o: StaticPodOptions): Promise<PodMember[]> {
  const shipped = parseDocument(readFileSync(join(ROOT, 'deploy', 'static-pod.yaml'), 'utf8')).toJS() as Record<string, any>;
  const ports = await Promise.all(plane.apiservers.map(async () => ({ client: await freePort(), peer: await freePort(), metrics: await freePort() })));
  const ids = plane.apiservers.map((a) => `mvproxy-${a.name}`);
  const suffix = Math.random().toString(36).slice(2, 8);
  const members: PodMember[] = [];
  try {
    for (const [i, a] of plane.apiservers.entries()) {
      const id = ids[i]!;
      const p = ports[i]!;
      const pod = `${id}-${suffix}`;
      const container = `${pod}-${shipped.spec.containers[0].name}`;
      const dir = join(plane.dir, `pod-${id}`);
      mkdirSync(dir, { recursive: true });
      copyFileSync(plane.pki.mvproxyTokenFile, join(dir, 'token'));
      const peers = ids.flatMap((pid, j) => (j === i ? [] : [{ id: pid, address: `127.0.0.1:${ports[j]!.peer}` }]));
      const spec = structuredClone(shipped);
      spec.metadata.name = pod;
      const ctr = spec.spec.containers[0];
      ctr.image = o.image;
      const probes = {} as PodMember['probes'];
      for (const name of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
        probes[name] = { httpGet: { ...ctr[name].httpGet, port: p.metrics } };
        delete ctr[name];
      }
      const hostPaths: Record<string, string> = { 'k8s-certs': plane.pki.dir, 'mvproxy-config': dir };
      for (const v of spec.spec.volumes) {
        if (v.hostPath) v.hostPath.path = hostPaths[v.name] ?? assertNever(`hostPath volume ${v.name}`);
        if (v.emptyDir) {
          const renamed = `${pod}-${v.name}`;
          for (const vm of ctr.volumeMounts) if (vm.name === v.name) vm.name = renamed;
          v.name = renamed;
        }
      }
      const manifest = join(dir, 'pod.yaml');
      const member: PodMember = {
        name: id,
        url: '',
        metricsURL: `http://127.0.0.1:${p.metrics}`,
        peerPort: p.peer,
        proc: undefined as unknown as Member['proc'],
        pod,
        container,
        manifest: spec,
        probes,
        graceSeconds: shipped.spec.terminationGracePeriodSeconds,
        async terminate() {
          if (!live.has(pod)) return { exitCode: -1, log: '' };
          await podman(['pod', 'stop', '--time', String(member.graceSeconds), pod], { timeoutMs: (member.graceSeconds + 30) * 1000 });
          const state = (await inspect('container', container)).State as { ExitCode: number };
          // From podman itself: the follower's copy (proc.log()) may still be on its way to its file.
          const { stdout, stderr } = await podman(['logs', container]);
          await removePod(pod);
          return { exitCode: state.ExitCode, log: stdout + stderr };
        },
        async stop() {
          await member.terminate();
          await member.proc?.stop(5_000);
        },
      };
      // uWS binds without SO_REUSEADDR: a free port left in TIME_WAIT by a closed connection cannot
      // be taken (support/mvproxy.ts); then the pod is played again with another client port.
      for (let attempt = 1; ; attempt++) {
        const config = o.config({ index: i, id, ports: p, apiserver: a, peers });
        writeFileSync(join(dir, 'config.yaml'), JSON.stringify(config), { mode: 0o600 });
        writeFileSync(manifest, JSON.stringify(spec));
        live.add(pod);
        await podman(['play', 'kube', manifest]);
        member.url = `https://127.0.0.1:${p.client}`;
        member.proc = startProcess(`${pod}-logs`, 'podman', ['logs', '--follow', container], plane.dir, { CONTAINERS_CONF: PODMAN_ENV.CONTAINERS_CONF });
        try {
          await waitFor(() => `${id} started in pod ${pod}`, async () => /"msg":"mvproxy started"/.test(member.proc.log()), 60_000, member.proc);
          members.push(member);
          break;
        } catch (e) {
          const log = member.proc.log();
          await member.proc.stop(2_000);
          await removePod(pod);
          if (attempt >= 3 || !/could not listen on 127\.0\.0\.1:\d+/.test(log)) throw e;
          p.client = await freePort();
        }
      }
    }
    await waitMerged(members);
    return members;
  } catch (e) {
    await Promise.all(members.map((m) => m.stop()));
    throw e;
  }
}

async function removePod(pod: string): Promise<void> {
  live.delete(pod);
  await podman(['pod', 'rm', '--force', '--time', '0', pod]).catch(() => undefined);
  const { stdout } = await podman(['volume', 'ls', '--quiet', '--filter', `name=^${pod}-`]);
  for (const v of stdout.split('\n').filter(Boolean)) await podman(['volume', 'rm', '--force', v]).catch(() => undefined);
}

function assertNever(what: string): never {
  throw new Error(`deploy/static-pod.yaml: unexpected ${what}`);
}
