// A daemon serving TLS with a client CA (certificate users), in front of a fake apiserver that answers
// GETs of `path` with the headers it got: what the client-certificate attack tests need
// (test/security/large-client-certificate.test.ts, tls-renegotiation.test.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeUpstream } from './fake-upstream';
import { startTestDaemon } from './daemon';
import { createCA } from '../../src/pki/throwaway';
import type { Daemon, DaemonDeps } from '../../src/daemon';

export interface ClientCADaemon {
  /** The client CA (also the serving certificate's issuer: clients trust it for both). */
  ca: Awaited<ReturnType<typeof createCA>>;
  d: Daemon;
  /** The headers of every GET of `path` the fake apiserver answered. */
  seen: http.IncomingHttpHeaders[];
  close(): Promise<void>;
}

export async function startClientCADaemon(frontend: 'uws' | 'node', path: string, deps: DaemonDeps = {}): Promise<ClientCADaemon> {
  const dir = mkdtempSync(join(tmpdir(), 'mvproxy-client-ca-'));
  const ca = await createCA('client-ca');
  const server = await ca.issue({ commonName: 'localhost', usage: 'server', ipAddresses: ['127.0.0.1'], dnsNames: ['localhost'] });
  writeFileSync(join(dir, 'ca.crt'), ca.cert);
  writeFileSync(join(dir, 'tls.crt'), server.cert);
  writeFileSync(join(dir, 'tls.key'), server.key);
  const seen: http.IncomingHttpHeaders[] = [];
  const up = await startFakeUpstream((req, res) => {
    if (!req.url?.startsWith(path)) return false;
    seen.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(req.headers));
    return true;
  });
  const d = await startTestDaemon({ frontend, localAPIServer: up.url, tlsCertFile: join(dir, 'tls.crt'), tlsPrivateKeyFile: join(dir, 'tls.key'), clientCAFile: join(dir, 'ca.crt'), bindAddress: '127.0.0.1' }, deps);
  await d.publisher.refresh();
  return {
    ca,
    d,
    seen,
    async close() {
      await d.close();
      await up.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
