// The per-run PKI of the real control plane, laid out as kubeadm lays out /etc/kubernetes/pki: a
// cluster CA (apiserver and mvproxy serving certificates, user client certificates), a front-proxy
// CA and its front-proxy-client pair (kube-apiserver's --proxy-client-cert-file and mvproxy's), a
// service-account signing key, and a static token for mvproxy's own requests. EC P-256 throughout
// (kube-apiserver accepts EC for every one of these; ~10 ms a certificate).
import { webcrypto } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClusterPKI, PROXY_CLIENT_CN, type ClusterPKI } from '../../../src/pki/bundle';

export interface UserCert {
  certFile: string;
  keyFile: string;
  cert: string;
  key: string;
}

export interface KubePKI {
  dir: string;
  cluster: ClusterPKI;
  caFile: string;
  frontProxyCAFile: string;
  /** kubeadm's apiserver.crt: valid for 127.0.0.1 and kubernetes.default.svc; also mvproxy's client listener. */
  apiserverCert: string;
  apiserverKey: string;
  /** front-proxy-client.crt/.key (CN front-proxy-client). */
  proxyClientCert: string;
  proxyClientKey: string;
  /** sa.key signs service-account tokens, sa.pub verifies them. */
  serviceAccountKey: string;
  serviceAccountPub: string;
  /** apiserver-kubelet-client.crt/.key: what kube-apiserver presents to kubelets (--kubelet-client-*). */
  kubeletClientCert: string;
  kubeletClientKey: string;
  /** The fake kubelet's serving pair (127.0.0.1), signed by the cluster CA (--kubelet-certificate-authority). */
  kubeletServingCert: string;
  kubeletServingKey: string;
  /** --token-auth-file of the apiservers: one line, mvproxy's own identity. */
  tokenAuthFile: string;
  /** mvproxy's --local-apiserver-token-file. */
  mvproxyTokenFile: string;
  /** A client certificate of the cluster CA, written beside the others. */
  user(name: string, groups?: string[]): Promise<UserCert>;
}

/** The user mvproxy's own requests (discovery, CRD/APIService lists, Leases) authenticate as. */
export const MVPROXY_USER = 'system:mvproxy';

export async function createKubePKI(dir: string): Promise<KubePKI> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const cluster = await createClusterPKI(dir);
  const write = (name: string, content: string, mode = 0o600) => {
    const f = join(dir, name);
    writeFileSync(f, content, { mode });
    return f;
  };
  const serving = await cluster.clusterCA.issue({
    commonName: 'kube-apiserver',
    dnsNames: ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local', 'localhost'],
    ipAddresses: ['127.0.0.1', '10.96.0.1'],
    usage: 'server',
  });
  const proxyClient = await cluster.frontProxyCA.issue({ commonName: PROXY_CLIENT_CN, usage: 'client' });
  // kubeadm's names: apiserver-kubelet-client (O kubeadm:cluster-admins) and a kubelet serving pair.
  const kubeletClient = await cluster.clusterCA.issue({ commonName: 'kube-apiserver-kubelet-client', organization: ['kubeadm:cluster-admins'], usage: 'client' });
  const kubeletServing = await cluster.clusterCA.issue({ commonName: 'fake-kubelet', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], usage: 'server' });
  const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const pem = (label: string, der: ArrayBuffer) => `-----BEGIN ${label}-----\n${Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${label}-----\n`;
  const saKey = pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const saPub = pem('PUBLIC KEY', await webcrypto.subtle.exportKey('spki', keys.publicKey));
  const token = Buffer.from(webcrypto.getRandomValues(new Uint8Array(24))).toString('hex');
  return {
    dir,
    cluster,
    caFile: cluster.clusterCAFile,
    frontProxyCAFile: cluster.frontProxyCAFile,
    apiserverCert: write('apiserver.crt', serving.cert, 0o644),
    apiserverKey: write('apiserver.key', serving.key),
    proxyClientCert: write('front-proxy-client.crt', proxyClient.cert, 0o644),
    proxyClientKey: write('front-proxy-client.key', proxyClient.key),
    kubeletClientCert: write('apiserver-kubelet-client.crt', kubeletClient.cert, 0o644),
    kubeletClientKey: write('apiserver-kubelet-client.key', kubeletClient.key),
    kubeletServingCert: write('kubelet.crt', kubeletServing.cert, 0o644),
    kubeletServingKey: write('kubelet.key', kubeletServing.key),
    serviceAccountKey: write('sa.key', saKey),
    serviceAccountPub: write('sa.pub', saPub, 0o644),
    // token,user,uid,"groups": kube-apiserver's static token file format.
    tokenAuthFile: write('tokens.csv', `${token},${MVPROXY_USER},mvproxy-uid\n`),
    mvproxyTokenFile: write('mvproxy.token', token + '\n'),
    async user(name, groups = []) {
      const c = await cluster.clusterCA.issue({ commonName: name, organization: groups, usage: 'client' });
      const base = name.replace(/[^A-Za-z0-9_.-]/g, '_');
      return { cert: c.cert, key: c.key, certFile: write(`user-${base}.crt`, c.cert, 0o644), keyFile: write(`user-${base}.key`, c.key) };
    },
  };
}
