// The published route table: replaced whole by the discovery pipeline, read synchronously by
// every request. A plain field swap is atomic on Node's single main thread; a request that
// started with the old table finishes with it.

import { RouteTable } from './routetable';

export class RouteTableHolder {
  current: RouteTable = RouteTable.empty();
  generation = 0;
  private readonly listeners: ((t: RouteTable) => void)[] = [];

  publish(t: RouteTable): void {
    this.current = t;
    this.generation++;
    for (const l of this.listeners) l(t);
  }

  onPublish(l: (t: RouteTable) => void): void {
    this.listeners.push(l);
  }
}
