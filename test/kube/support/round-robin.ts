// A round-robin TCP load balancer over the apiservers, as the comparison of issue 39: each new
// connection goes to the next backend, TLS passing through (client certificates reach the
// apiserver). With clients on HTTP/1.1 (client-go's DISABLE_HTTP2) every connection is a fresh
// choice, so consecutive requests of one controller land on different releases.
import net from 'node:net';

export interface RoundRobin {
  port: number;
  close(): Promise<void>;
}

export async function startRoundRobin(backends: number[]): Promise<RoundRobin> {
  let next = 0;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const port = backends[next++ % backends.length]!;
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).on('error', () => undefined);
    upstream.pipe(client).on('error', () => undefined);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise((r) => {
        for (const s of open) s.destroy();
        server.close(() => r());
      }),
  };
}
