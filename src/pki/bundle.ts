// The certificate set of a mixed-version control plane, written to a directory: what the demo
// and the tests hand to each mvproxy. Mirrors kubeadm's split: the cluster CA signs serving
// certificates (peers check them with --peer-ca-file as kubernetes.default.svc), the front-proxy
// CA signs the proxy client certificates (checked with --requestheader-client-ca-file).

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCA, type CA } from './throwaway';

export interface NodeCertFiles {
  servingCert: string;
  servingKey: string;
  proxyClientCert: string;
  proxyClientKey: string;
}

export interface ClusterPKI {
  dir: string;
  clusterCA: CA;
  frontProxyCA: CA;
  clusterCAFile: string;
  frontProxyCAFile: string;
  /** Writes a node's serving and proxy-client pairs under dir/<name>/. */
  node(name: string, proxyClientCN?: string): Promise<NodeCertFiles>;
}

/** The CN kube-apiserver's own proxy client certificate carries in kubeadm clusters. */
export const PROXY_CLIENT_CN = 'front-proxy-client';

export async function createClusterPKI(dir: string): Promise<ClusterPKI> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const [clusterCA, frontProxyCA] = await Promise.all([createCA('mvproxy-cluster-ca'), createCA('mvproxy-front-proxy-ca')]);
  const write = (name: string, content: string, mode = 0o600) => {
    const f = join(dir, name);
    writeFileSync(f, content, { mode });
    return f;
  };
  const clusterCAFile = write('ca.crt', clusterCA.cert, 0o644);
  const frontProxyCAFile = write('front-proxy-ca.crt', frontProxyCA.cert, 0o644);
  return {
    dir,
    clusterCA,
    frontProxyCA,
    clusterCAFile,
    frontProxyCAFile,
    async node(name, proxyClientCN = PROXY_CLIENT_CN) {
      mkdirSync(join(dir, name), { recursive: true, mode: 0o700 });
      const serving = await clusterCA.issue({ commonName: name, dnsNames: ['kubernetes.default.svc', 'kubernetes.default', 'kubernetes', 'localhost'], ipAddresses: ['127.0.0.1'], usage: 'server' });
      const client = await frontProxyCA.issue({ commonName: proxyClientCN, usage: 'client' });
      return {
        servingCert: write(join(name, 'serving.crt'), serving.cert, 0o644),
        servingKey: write(join(name, 'serving.key'), serving.key),
        proxyClientCert: write(join(name, 'proxy-client.crt'), client.cert, 0o644),
        proxyClientKey: write(join(name, 'proxy-client.key'), client.key),
      };
    },
  };
}
