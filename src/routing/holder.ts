// The published route table: replaced whole by the discovery pipeline, read synchronously by
// every request. A plain field swap is atomic on Node's single main thread; a request that
// started with the old table finishes with it.

import { RouteTable } from './routetable';
import type { DiscoverySnapshot } from '../discovery/snapshot';

export class RouteTableHolder {
  current: RouteTable = RouteTable.empty();
  generation = 0;
  /** When the current table was published (Date.now()); 0 = never. */
  publishedAt = 0;
  /** Encoded discovery documents (merged, local, legacy), published after each merge; undefined until the first. */
  discovery: DiscoverySnapshot | undefined = undefined;
  /** /openapi/v3 index with peer-only group/versions added; undefined = pass the local one through. */
  openAPIIndex: Buffer | undefined = undefined;
  private readonly listeners: ((t: RouteTable) => void)[] = [];

  publish(t: RouteTable): void {
    this.current = t;
    this.generation++;
    this.publishedAt = Date.now();
    for (const l of this.listeners) l(t);
  }

  publishDiscovery(s: DiscoverySnapshot): void {
    this.discovery = s;
  }

  onPublish(l: (t: RouteTable) => void): void {
    this.listeners.push(l);
  }
}
