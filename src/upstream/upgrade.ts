// Protocol upgrades (kubectl exec/attach/port-forward over SPDY or WebSocket) on the node front
// end: the request head is rewritten with the same header rules as any request, sent to the local
// apiserver on a fresh connection, and then bytes are piped both ways untouched. They always go to
// the local apiserver: the subresources that upgrade (pods/exec, attach, portforward) belong to the
// core group, which every apiserver serves.

import net from 'node:net';
import tls from 'node:tls';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { forwardRequestHeaders, type Identity, type IdentityHeaderRules } from './headers';
import type { TLSFiles } from './pools';
import type { Logger } from '../observability/log';
import { statusBody } from '../respond/status';

/** Open tunnels, so shutdown can cut them (an exec session never ends by itself). */
export const openTunnels = new Set<Duplex>();

export function tunnelUpgrade(req: http.IncomingMessage, client: Duplex, head: Buffer, target: URL, tlsFiles: TLSFiles | undefined, log: Logger, identity?: Identity, identityRules?: IdentityHeaderRules): void {
  openTunnels.add(client);
  client.once('close', () => openTunnels.delete(client));
  const incoming: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) incoming.push(req.rawHeaders[i].toLowerCase(), req.rawHeaders[i + 1]);
  // Same identity rules as any request: client X-Remote-* stripped, a certificate user forwarded.
  const headers = forwardRequestHeaders(incoming, { remoteAddress: req.socket.remoteAddress ?? '', peerHop: false, upgrade: true, identity, identityRules });
  const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
  let lines = `${req.method} ${req.url} HTTP/1.1\r\nhost: ${target.host}\r\n`;
  for (let i = 0; i < headers.length; i += 2) lines += `${headers[i]}: ${headers[i + 1]}\r\n`;
  lines += '\r\n';

  const upstream: net.Socket =
    target.protocol === 'https:'
      ? tls.connect({ host: target.hostname, port, ca: tlsFiles?.ca, cert: tlsFiles?.cert, key: tlsFiles?.key, servername: tlsFiles?.servername ?? (net.isIP(target.hostname) ? undefined : target.hostname) })
      : net.connect({ host: target.hostname, port });
  let connected = false;
  upstream.once(target.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
    connected = true;
    upstream.write(lines);
    if (head.length) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on('error', (err) => {
    if (!connected && client.writable) {
      const body = statusBody(503, 'ServiceUnavailable', `the local kube-apiserver could not be reached (MVP_ERR_LOCAL_UNAVAILABLE)`);
      client.end(`HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
    } else client.destroy();
    log.info(2, 'upgrade tunnel failed', { err: err.message, path: req.url });
  });
  client.on('error', () => upstream.destroy());
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
}
