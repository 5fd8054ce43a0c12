// The floor of mvproxy's local route in front of a real kube-apiserver of the kube suite's plane:
// bench/floor-proxy.ts (uWS or node:http2 + the plain HTTP/1.1 client), TLS to the client asking for its
// certificate (verified against the cluster CA) and sending its CN and O as X-Remote-User/-Group, TLS with
// the front-proxy client certificate and keep-alive to the apiserver: the least code on mvproxy's runtime
// that does what mvproxy's local route does. bench/rate.ts and bench/idle-rss-kube.ts run it.
import type { KubeControlPlane } from '../test/kube/support/control-plane';
import { freePort, startProcess, waitFor, type Proc } from '../test/kube/support/processes';
import { strippedScript } from './targets';

/** `upstream`: the apiserver's origin; `env`: the floor's environment (the image's, jemalloc's). */
export async function startKubeFloor(plane: KubeControlPlane, upstream: string, front: 'uws' | 'node', name: string, env: NodeJS.ProcessEnv): Promise<{ proc: Proc; url: string }> {
  const pki = plane.pki;
  const port = await freePort();
  const args = [strippedScript('floor-proxy.ts'), String(port), upstream, front, '--client', 'plain', '--identity-from-cert',
    '--tls-cert', pki.apiserverCert, '--tls-key', pki.apiserverKey, '--client-ca', pki.caFile,
    '--upstream-ca', pki.caFile, '--upstream-cert', pki.proxyClientCert, '--upstream-key', pki.proxyClientKey,
    '--upstream-servername', 'kubernetes'];
  const proc = startProcess(name, process.execPath, args, plane.dir, env);
  await waitFor(() => `${name} listening on ${port}`, async () => /"listening"/.test(proc.log()), 20_000, proc);
  return { proc, url: `https://127.0.0.1:${port}` };
}
