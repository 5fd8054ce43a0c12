// `mvproxy demo` (the README's first command): a whole mixed-version control plane in one process
// on 127.0.0.1. First line of standard output is one line of JSON describing the members; then
// human-readable lines with kubectl commands to try. Ctrl-C or SIGTERM stops everything and
// removes the throwaway PKI it wrote.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPlane } from './topology';
import { createLogger } from '../telemetry/log';
import type { FrontendSetting } from '../config/types';

export interface DemoOptions {
  basePort: number;
  frontend: FrontendSetting;
}

export const DEMO_MEMBERS = [
  { name: 'apiserver-old', kubernetesVersion: 'v1.33' as const },
  { name: 'apiserver-new', kubernetesVersion: 'v1.37' as const },
];

export async function runDemo(o: DemoOptions): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'mvproxy-demo-'));
  const log = createLogger(1, 'json');
  let plane;
  try {
    plane = await startPlane({ dir: join(tmp, 'pki'), frontend: o.frontend, members: DEMO_MEMBERS, basePort: o.basePort, log });
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  const members = plane.members.map((m) => ({
    name: m.spec.name,
    kubernetesVersion: m.spec.kubernetesVersion,
    url: m.url,
    metricsUrl: m.metricsUrl,
    frontend: m.daemon.frontend,
    apiserverUrl: m.sim.url,
  }));
  process.stdout.write(JSON.stringify({ demo: members }) + '\n');
  const old = plane.members[0];
  const k = 'kubectl --kubeconfig=/dev/null --server=' + old.url;
  process.stdout.write(
    [
      '',
      `mvproxy demo: ${members.map((m) => `${m.name} (Kubernetes ${m.kubernetesVersion}) at ${m.url}`).join(', ')}`,
      'Try a resource only Kubernetes v1.37 serves, through the v1.33 member:',
      `  ${k} api-resources --api-group=scheduling.k8s.io`,
      `  ${k} create -f - <<<'{"apiVersion":"scheduling.k8s.io/v1beta1","kind":"Workload","metadata":{"name":"demo","namespace":"default"}}'`,
      `  ${k} get workloads.v1beta1.scheduling.k8s.io -n default`,
      `  curl -s ${old.metricsUrl} | grep -E 'apiserver_rerouted_request_total|route="peer"'`,
      'Ctrl-C stops the demo.',
      '',
    ].join('\n'),
  );
  let stopping = false;
  const stop = async () => {
    if (stopping) process.exit(1); // a second signal exits at once
    stopping = true;
    await plane.close().catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}
