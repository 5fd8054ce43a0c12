// The node:http / node:https front end. Second client-facing front end (--frontend=node), the
// fallback when uWebSockets.js cannot load, and the base of the peer listener (it can read the
// client certificate, which the uWS build that loads here cannot: stack.md §4).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { ClientResponse, Exchange } from './exchange';
import type { Identity, ResponseHead } from '../upstream/headers';

export class NodeResponse implements ClientResponse {
  onDrain: (() => void) | null = null;
  constructor(private readonly res: ServerResponse) {
    res.on('drain', () => this.onDrain?.());
  }

  get headersSent(): boolean {
    return this.res.headersSent;
  }

  writeHead(status: number, head: ResponseHead, flushNow: boolean): void {
    const headers = head.contentLength >= 0 ? [...head.headers, 'content-length', String(head.contentLength)] : head.headers;
    this.res.writeHead(status, headers);
    if (flushNow) this.res.flushHeaders();
  }

  write(chunk: Buffer): boolean {
    return this.res.write(chunk);
  }

  end(): void {
    this.res.end();
  }

  destroy(): void {
    this.res.destroy();
  }
}

export class NodeExchange implements Exchange {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly headers: string[];
  readonly peerProxied: string | undefined;
  readonly remoteAddress: string;
  readonly body: Readable | null;
  readonly res: NodeResponse;
  onClientClose: (() => void) | null = null;
  clientClosed = false;
  readonly identity?: Identity;

  constructor(req: IncomingMessage, res: ServerResponse, identity?: Identity) {
    this.identity = identity;
    this.method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    this.path = q === -1 ? url : url.slice(0, q);
    this.query = q === -1 ? '' : url.slice(q + 1);
    const raw = req.rawHeaders;
    const headers = new Array<string>(raw.length);
    let peerProxied: string | undefined;
    let hasBody = false;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i].toLowerCase();
      headers[i] = name;
      headers[i + 1] = raw[i + 1];
      if (name === 'x-kubernetes-peer-proxied' && peerProxied === undefined) peerProxied = raw[i + 1];
      else if ((name === 'content-length' && raw[i + 1] !== '0') || name === 'transfer-encoding') hasBody = true;
    }
    this.headers = headers;
    this.peerProxied = peerProxied;
    this.remoteAddress = req.socket.remoteAddress ?? '';
    this.body = hasBody ? req : null;
    this.res = new NodeResponse(res);
    res.on('close', () => {
      if (res.writableFinished) return;
      this.clientClosed = true;
      const cb = this.onClientClose;
      this.onClientClose = null;
      if (cb) cb();
    });
  }
}
