// The requests being proxied right now: their deadlines, the peers they wait on, and the streams
// a shutdown ends. One registry per daemon; a ProxiedRequest (proxied.ts) is in it from its first
// upstream attempt until its answer ended.

import { performance } from 'node:perf_hooks';
import type { InFlight } from '../telemetry/metrics';
import { PeerDownError } from '../upstream/failover';

/** What the registry needs of a request in flight. */
export interface Tracked {
  readonly longRunning: boolean;
  /** The route of the attempt under way (mvproxy_inflight_requests). */
  readonly route: InFlight['route'];
  /** The peer listener the attempt under way goes to; '' for the local apiserver. */
  readonly peerAddress: string;
  /**
   * performance.now() ms after which expire() is called: a non-long-running request's whole
   * --request-timeout; a stream's wait for its head (Infinity once it arrived).
   */
  readonly deadline: number;
  /** The request ran past its deadline: 504 if nothing was answered yet, else cut. */
  expire(): void;
  /** Gives up on an upstream that has not answered yet; false when it had. */
  abandon(err: Error): boolean;
  /** Ends a streaming answer cleanly (shutdown). */
  endCleanly(): void;
  /** Where the registry keeps it (Slots); -1 while it is not in it. */
  inflightSlot: number;
}

/**
 * Requests in an array, each knowing its index: add and delete are a store and a swap, no
 * allocation. With a JS Set here (45,000 adds and deletes a second under wrk) the old generation
 * grew by ~40 MB every 0.6 s, freed by a 5-7 ms mark-compact each time: the p99. Measured with
 * uws/get (wrk, 50 connections, 13 s, --trace-gc), base and change alternating twice: 12 -> 4
 * mark-compacts, p99 8.9-9.7 -> 5.2-5.7 ms (bench/README.md, issue 28's targets).
 */
class Slots {
  private readonly items: Tracked[] = [];

  get size(): number {
    return this.items.length;
  }

  add(r: Tracked): void {
    r.inflightSlot = this.items.length;
    this.items.push(r);
  }

  delete(r: Tracked): void {
    const i = r.inflightSlot;
    if (i < 0 || this.items[i] !== r) return;
    const last = this.items.pop()!;
    if (last !== r) {
      this.items[i] = last;
      last.inflightSlot = i;
    }
    r.inflightSlot = -1;
  }

  /** Every request, last first (a delete of the one given is safe: the last one moves into its slot, and was visited). */
  forEach(fn: (r: Tracked) => void): void {
    for (let i = this.items.length - 1; i >= 0; i--) fn(this.items[i]!);
  }

  /** A copy, for callers that end requests other than the one they are given. */
  toArray(): Tracked[] {
    return this.items.slice();
  }
}

export class InflightRequests {
  /** Non-long-running requests, each with a deadline. */
  private readonly timed = new Slots();
  /** Long-running requests (watches, logs -f), ended cleanly at shutdown, timed out only while their head has not come. */
  private readonly streams = new Slots();
  /**
   * One sweep for every deadline instead of a timer per request (the relay's client has none of its
   * own): a request is cut at most DEADLINE_SWEEP_MS after its deadline, whether its upstream is
   * silent, trickles, or stalls half-way.
   */
  private readonly sweeper: NodeJS.Timeout;

  constructor() {
    this.sweeper = setInterval(() => this.expireOverdue(), DEADLINE_SWEEP_MS);
    this.sweeper.unref();
  }

  /** The most requests in flight at once since peak() was last asked (lifecycle/memory.ts: a burst shorter than its check interval counts too). */
  private highWater = 0;

  add(r: Tracked): void {
    (r.longRunning ? this.streams : this.timed).add(r);
    const n = this.timed.size + this.streams.size;
    if (n > this.highWater) this.highWater = n;
  }

  /** The most requests in flight at once since the last call; starts over from the count now. */
  peak(): number {
    const p = Math.max(this.highWater, this.size);
    this.highWater = this.size;
    return p;
  }

  delete(r: Tracked): void {
    (r.longRunning ? this.streams : this.timed).delete(r);
  }

  /** Requests not yet answered (shutdown drains until it is 0). */
  get size(): number {
    return this.timed.size + this.streams.size;
  }

  private expireOverdue(): void {
    if (this.timed.size === 0 && this.streams.size === 0) return;
    const now = performance.now();
    // Collected first: expire() may end the request (a delete) or any other.
    const overdue: Tracked[] = [];
    const check = (r: Tracked) => {
      if (r.deadline < now) overdue.push(r);
    };
    this.timed.forEach(check);
    // A stream's deadline is its head's (Infinity once the head arrived).
    this.streams.forEach(check);
    for (const r of overdue) r.expire();
  }

  /** What is being proxied now (mvproxy_inflight_requests, read at scrape time). */
  *inFlight(): Iterable<InFlight> {
    for (const r of this.streams.toArray()) yield { route: r.route, longRunning: true };
    for (const r of this.timed.toArray()) yield { route: r.route, longRunning: false };
  }

  /**
   * A peer failed its health probe: requests to it still waiting for an answer fail now instead of
   * at --request-timeout (a stalled peer keeps kept-alive connections open and never answers). As
   * a transport failure: a GET or HEAD fails over to another serving peer, else a 503 Status.
   * Requests it already answers (a watch streaming) are left alone. Returns how many failed.
   */
  abandonPeer(address: string, why: string): number {
    let n = 0;
    for (const set of [this.timed, this.streams]) {
      for (const r of set.toArray()) if (r.peerAddress === address && r.abandon(new PeerDownError(why))) n++;
    }
    return n;
  }

  /** Shutdown: ends every watch and log stream cleanly; returns how many there were. */
  endStreams(): number {
    const n = this.streams.size;
    for (const r of this.streams.toArray()) r.endCleanly();
    return n;
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}

/** How often deadlines are checked: a request ends within this much of --request-timeout. */
const DEADLINE_SWEEP_MS = 250;
