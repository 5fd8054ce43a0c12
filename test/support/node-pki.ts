// One node's certificates from a throwaway cluster PKI, as the daemon settings that use them: the
// peer CA, the front-proxy CA, the proxy client pair and the peer serving pair (one place for the
// six, whether a test starts the daemon in-process or as the CLI).
import type { ClusterPKI } from '../../src/pki/bundle';
import type { DaemonConfig } from '../../src/config/types';

export async function nodePKIConfig(pki: ClusterPKI, name: string): Promise<Partial<DaemonConfig>> {
  const c = await pki.node(name);
  return {
    peerCAFile: pki.clusterCAFile,
    requestheaderClientCAFile: pki.frontProxyCAFile,
    proxyClientCertFile: c.proxyClientCert,
    proxyClientKeyFile: c.proxyClientKey,
    peerTLSCertFile: c.servingCert,
    peerTLSPrivateKeyFile: c.servingKey,
  };
}

/** The same as command-line flags. */
export async function nodePKIFlags(pki: ClusterPKI, name: string): Promise<string[]> {
  const c = await pki.node(name);
  return [
    `--peer-ca-file=${pki.clusterCAFile}`,
    `--requestheader-client-ca-file=${pki.frontProxyCAFile}`,
    `--proxy-client-cert-file=${c.proxyClientCert}`,
    `--proxy-client-key-file=${c.proxyClientKey}`,
    `--peer-tls-cert-file=${c.servingCert}`,
    `--peer-tls-private-key-file=${c.servingKey}`,
  ];
}
