// Open client connections of the node:http listeners (client, peer, operations), for
// lifecycle/memory.ts: what 10,000 idle connections held (TLS state, sockets) is garbage once they
// close, but V8 frees it only in a major collection, and an idle daemon allocates too little to
// cause one: RSS stayed at 1.7-4x its rest (617 MiB; 236 after a forced collection) after the
// connections went away (test/slow/idle-connections.test.ts). Requests in flight did not count them.

import type { Socket } from 'node:net';

export class ConnectionCount {
  /** Open now. */
  current = 0;
  private high = 0;

  /** Counts a connection until it closes. */
  track(socket: Socket): void {
    this.current++;
    if (this.current > this.high) this.high = this.current;
    socket.once('close', () => this.current--);
  }

  /** The most open at once since the last call (a burst between two reads counts too). */
  peak(): number {
    const p = this.high;
    this.high = this.current;
    return p;
  }
}
