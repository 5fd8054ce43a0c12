// A streamed answer's head (a watch, logs -f: sent before any body byte) reaches the client with the
// upstream's bytes: an obs-text value (0xE9, RFC 9110 §5.5) stays one byte, on a 200, on a HEAD and
// on a 204 or 304, which carry no body. node:http's flushHeaders() wrote the head as UTF-8 (C3 A9);
// HEAD, 204 and 304 kept that bug after the 200 was fixed (helper 8).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FRONTENDS } from '../support/frontends';
import { daemonInFront } from '../support/daemon';
import { createCA } from '../../src/pki/throwaway';

const API = JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{ metadata: { name: '' }, versions: [{ version: 'v1', resources: [{ resource: 'configmaps', scope: 'Namespaced', singularResource: 'configmap', verbs: ['get', 'list', 'watch'] }] }] }] });
const APIS = JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [] });
const DISCOVERY = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const WATCH = '/api/v1/namespaces/default/configmaps?watch=1';
const EVENT = '{"type":"ADDED","object":{"kind":"ConfigMap"}}\n';

/** The watch's answer by the status the client asks for (?status=N); the upstream's own bytes, latin1. */
function answer(status: string): string {
  if (status === '204') return 'HTTP/1.1 204 No Content\r\nx-obs: caf\xe9\r\n\r\n';
  if (status === '304') return 'HTTP/1.1 304 Not Modified\r\nx-obs: caf\xe9\r\n\r\n';
  return `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-obs: caf\xe9\r\ntransfer-encoding: chunked\r\n\r\n${EVENT.length.toString(16)}\r\n${EVENT}\r\n`;
}

/** A TLS apiserver (http/1.1 only) that writes its answers as raw bytes. */
async function rawAPIServer(dir: string) {
  const ca = await createCA('apiserver-ca');
  const leaf = await ca.issue({ commonName: 'kube-apiserver', usage: 'server', ipAddresses: ['127.0.0.1'], dnsNames: ['localhost'] });
  writeFileSync(join(dir, 'ca.crt'), ca.cert);
  const sockets = new Set<tls.TLSSocket>();
  const server = tls.createServer({ cert: leaf.cert, key: leaf.key, ALPNProtocols: ['http/1.1'] }, (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    let buf = '';
    s.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      let end;
      while ((end = buf.indexOf('\r\n\r\n')) >= 0) {
        const [method, target] = buf.slice(0, buf.indexOf(' ', buf.indexOf(' ') + 1)).split(' ') as [string, string];
        buf = buf.slice(end + 4);
        if (target === '/api' || target === '/apis') {
          const body = target === '/api' ? API : APIS;
          s.write(`HTTP/1.1 200 OK\r\ncontent-type: ${DISCOVERY}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
        } else if (target.startsWith(WATCH)) {
          const status = /[?&]status=(\d+)/.exec(target)?.[1] ?? '200';
          // A HEAD answer has no body: its head only.
          s.write(method === 'HEAD' ? answer(status).split('\r\n\r\n')[0] + '\r\n\r\n' : answer(status), 'latin1');
        } else s.write('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    caFile: join(dir, 'ca.crt'),
    close: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}

/** The bytes of the answer's head a raw HTTP/1.1 client reads (latin1: one char a byte). */
function headBytes(port: number, method: string, target: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect(port, '127.0.0.1', () => c.write(`${method} ${target} HTTP/1.1\r\nHost: x\r\n\r\n`));
    let buf = '';
    const t = setTimeout(() => (c.destroy(), reject(new Error(`no head: ${JSON.stringify(buf)}`))), 5000);
    c.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        clearTimeout(t);
        c.destroy();
        resolve(buf.slice(0, end));
      }
    });
    c.on('error', reject);
  });
}

for (const frontend of FRONTENDS) {
  describe(`a streamed answer's head keeps the upstream's bytes (${frontend} front end)`, () => {
    const s = daemonInFront(frontend, rawAPIServer);
    for (const [method, status] of [['GET', '200'], ['HEAD', '200'], ['GET', '204'], ['GET', '304']] as const) {
      test(`${method} watch answered ${status}: x-obs is caf + the one byte E9`, async () => {
        const head = await headBytes(s.d.clientPort, method, `${WATCH}&status=${status}`);
        assert.match(head, new RegExp(`^HTTP/1.1 ${status} `), head);
        const line = head.split('\r\n').find((l) => l.toLowerCase().startsWith('x-obs:'));
        assert.equal(line && Buffer.from(line.slice(6).trim(), 'latin1').toString('hex'), '636166e9', `the value's bytes: ${JSON.stringify(line)}`);
      });
    }
  });
}
