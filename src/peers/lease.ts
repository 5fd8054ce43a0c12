// Membership through Kubernetes identity Leases (--peer-discovery=lease; docs/kubernetes-mvp.md §4.1 and §9), the
// way kube-apiserver keeps its own, with the changes an out-of-tree router needs:
//
//   own Lease    coordination.k8s.io/v1 Lease <server-id> in --lease-namespace (kube-system),
//                labels mvproxy.k8s.io/identity=mvproxy and kubernetes.io/hostname=<host>,
//                annotation kubernetes.io/peer-advertise-address=<ip:port> (src/peers/advertise.ts),
//                spec.holderIdentity <server-id>_<uuid> (a new UUID every start, so a restart is
//                visible), spec.leaseDurationSeconds --identity-lease-duration-seconds (30),
//                renewed every --identity-lease-renew-interval-seconds (a third of it). Create or
//                update with resourceVersion preconditions; a 409 re-reads and retries. Deleted on
//                graceful shutdown (only if it is still ours) within a bounded wait: shutdown never
//                hangs on the apiserver (kubernetes#140242).
//   the others   list + watch with resourceVersion and that label selector (not kube-apiserver's:
//                its in-tree proxy would take our Leases for apiservers); relist on 410 Expired;
//                exponential backoff with jitter on errors. Renewals change nothing; a new Lease, a
//                deleted one, a new holderIdentity (a restart: its discovery is re-read at once) or a
//                new address does, and so does an expiry.
//   expiry       a Lease whose renewTime + leaseDurationSeconds has passed is gone. Clock skew
//                between hosts is absorbed: a Lease this node has SEEN renewed within its duration
//                (local clock) is alive even if its renewTime reads old. An expired peer is never
//                dialled again, but stays listed for --peer-discovery-grace-period so its GVRs answer
//                503 (KEP-4020: known but unreachable) rather than a 404 that a garbage collector
//                could read as "deleted"; a Lease deleted on graceful shutdown leaves at once.
//
// Credentials: mvproxy has none of its own. Its Lease calls go to the local apiserver through the
// same pool as discovery, with --local-apiserver-token-file when set. In a real cluster that token
// needs get, list, watch, create, update and delete on coordination.k8s.io leases in
// --lease-namespace (a Role and RoleBinding for the identity the token belongs to).

import { randomUUID } from 'node:crypto';
import { hostname as osHostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { OwnDispatcher } from '../api/own-requests';
import type { Logger } from '../telemetry/log';
import { isHostPort } from '../gocompat/net';
import { APIStatusError, LEASE_API_VERSION, LeaseAPI, WatchExpiredError, isStatus, microTime, type Lease } from './lease-api';
import type { Membership, PeerEndpoint } from './membership';

/** The label that marks mvproxy identity Leases (kube-apiserver's are apiserver.kubernetes.io/identity=kube-apiserver). */
export const IDENTITY_LEASE_LABEL = 'mvproxy.k8s.io/identity';
export const IDENTITY_LEASE_LABEL_VALUE = 'mvproxy';
export const IDENTITY_LEASE_SELECTOR = `${IDENTITY_LEASE_LABEL}=${IDENTITY_LEASE_LABEL_VALUE}`;
/** corev1.AnnotationPeerAdvertiseAddress. */
export const PEER_ADVERTISE_ADDRESS_ANNOTATION = 'kubernetes.io/peer-advertise-address';
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/** Watches end after 5–10 min (client-go's reflector picks minWatchTimeout × [1, 2)), then resume from their resourceVersion. */
const WATCH_TIMEOUT_S = () => 300 + Math.floor(Math.random() * 300);
/** Retry delays after an error: 0.5 s doubling to 30 s, ±20 % jitter (client-go's backoff manager shape). */
export const DEFAULT_BACKOFF = { initialMs: 500, maxMs: 30_000 };

export interface LeaseMembershipOptions {
  /** The local apiserver (with mvproxy's bearer token when configured). */
  local: OwnDispatcher;
  namespace: string;
  /** This node's server ID: the Lease name. */
  serverID: string;
  /** host:port peers dial ('' = none found: the Lease is written without the annotation). */
  advertiseAddress: string;
  durationSeconds: number;
  renewIntervalMs: number;
  /** How long an expired peer stays listed (unreachable) before it is forgotten. */
  expiredGraceMs: number;
  /** Per-call bound of Lease requests. */
  timeoutMs: number;
  log: Logger;
  hostname?: string;
  now?: () => number;
  backoff?: { initialMs: number; maxMs: number };
  /** Watch timeout in seconds (tests shorten it). */
  watchTimeoutSeconds?: () => number;
  userAgent?: string;
}

/** What this node knows about one other Lease. */
interface Observed {
  name: string;
  holder: string | undefined;
  address: string;
  /** spec.renewTime (ms since the epoch, the writer's clock), NaN when absent. */
  renewTime: number;
  durationMs: number;
  /** Local time this node last saw renewTime change (-Infinity: never, e.g. first listed). */
  seenRenewedAt: number;
}

export class LeaseMembership implements Membership {
  readonly mode = 'lease';
  /** <server-id>_<uuid>: new on every start. */
  readonly holderIdentity: string;
  private readonly api: LeaseAPI;
  private readonly now: () => number;
  private readonly leases = new Map<string, Observed>();
  private readonly listeners: (() => void)[] = [];
  /** Aborts the watch (stop()). */
  private readonly abort = new AbortController();
  /** Aborts an in-flight renewal (release() and stop()). */
  private readonly renewAbort = new AbortController();
  private stopped = false;
  private releasing = false;
  private lastKey = '';
  private readonly lastLive = new Map<string, boolean>();
  private expiryTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  /** The own Lease as last written (its resourceVersion is the next update's precondition). */
  private own: Lease | undefined;
  /** The holder this incarnation replaced (a previous run of this node), to tell it from a duplicate server ID. */
  private replacedHolder: string | undefined;
  private renewFailures = 0;
  private lastRenewOK = -Infinity;
  private watchSynced = false;
  private warnedAddress = new Set<string>();

  constructor(private readonly o: LeaseMembershipOptions) {
    this.now = o.now ?? Date.now;
    this.holderIdentity = `${o.serverID}_${randomUUID()}`;
    this.api = new LeaseAPI(o.local, { namespace: o.namespace, timeoutMs: o.timeoutMs, userAgent: o.userAgent ?? 'mvproxy-identity-lease' });
  }

  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  start(): void {
    this.renewLoop();
    void this.watchLoop();
  }

  /** Whether the first list of the others' Leases is in. */
  get synced(): boolean {
    return this.watchSynced;
  }

  /** null when the own Lease was renewed within its duration, else why not (the /readyz informational check). */
  ownLeaseProblem(): Error | null {
    if (this.now() - this.lastRenewOK < this.o.durationSeconds * 1000) return null;
    return new Error(this.lastRenewOK === -Infinity ? 'the identity lease has not been written yet' : 'the identity lease was not renewed within its duration: peers no longer route to this node');
  }

  peers(): PeerEndpoint[] {
    const now = this.now();
    const out: PeerEndpoint[] = [];
    for (const l of this.leases.values()) {
      if (l.name === this.o.serverID || !l.holder) continue;
      if (!isHostPort(l.address)) continue; // nothing to dial (warned once in observe())
      const expiry = this.expiresAt(l);
      if (expiry + this.o.expiredGraceMs <= now) continue;
      out.push({ id: l.name, address: l.address, incarnation: l.holder });
    }
    return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  live(id: string): boolean {
    const l = this.leases.get(id);
    return l !== undefined && this.expiresAt(l) > this.now();
  }

  /** Stops renewing and deletes the own Lease if it is still ours; resolves within timeoutMs whatever the apiserver does. */
  async release(timeoutMs: number): Promise<void> {
    if (this.releasing) return;
    this.releasing = true;
    if (this.renewTimer) clearTimeout(this.renewTimer);
    const signal = AbortSignal.timeout(Math.max(1, timeoutMs));
    this.renewAbort.abort(); // a renewal in flight ends now; if the apiserver applied it, the 409 below re-reads
    const work = (async () => {
      await this.renewing;
      let own = this.own;
      if (!own) {
        // Not known to be written, but a write may have been in flight: look before leaving.
        try {
          own = await this.api.get(this.o.serverID, signal);
        } catch (e) {
          if (isStatus(e, 404)) return;
          throw e;
        }
        if (own.spec?.holderIdentity !== this.holderIdentity) return;
      }
      for (let attempt = 0; attempt < 3 && !signal.aborted; attempt++) {
        try {
          await this.api.delete(this.o.serverID, own.metadata.resourceVersion, signal);
          this.o.log.info(2, 'identity lease deleted', { lease: `${this.o.namespace}/${this.o.serverID}` });
          return;
        } catch (e) {
          if (isStatus(e, 404)) return;
          if (!isStatus(e, 409)) throw e;
          // Changed since our last write: delete only if it is still ours (a new incarnation may own it now).
          own = await this.api.get(this.o.serverID, signal);
          if (own.spec?.holderIdentity !== this.holderIdentity) return;
        }
      }
    })();
    try {
      await Promise.race([work, new Promise<void>((_, reject) => signal.addEventListener('abort', () => reject(new Error(`timed out after ${timeoutMs} ms`)), { once: true }))]);
    } catch (e) {
      this.o.log.error('could not delete the identity lease; it expires by itself', e, { lease: `${this.o.namespace}/${this.o.serverID}`, expiresInSeconds: this.o.durationSeconds });
    }
  }

  stop(): void {
    this.stopped = true;
    this.abort.abort();
    this.renewAbort.abort();
    if (this.renewTimer) clearTimeout(this.renewTimer);
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
  }

  // -------------------------------------------------------------------------------------------
  // The own Lease

  private renewLoop(): void {
    if (this.stopped || this.releasing) return;
    this.renewing = this.renewOnce().then(
      () => {
        if (this.renewFailures > 0) this.o.log.info(0, 'identity lease renewed again', { lease: `${this.o.namespace}/${this.o.serverID}`, failures: this.renewFailures });
        else if (this.lastRenewOK === -Infinity) this.o.log.info(2, 'identity lease written', { lease: `${this.o.namespace}/${this.o.serverID}`, holderIdentity: this.holderIdentity, address: this.o.advertiseAddress });
        this.renewFailures = 0;
        this.lastRenewOK = this.now();
      },
      (e) => {
        if (this.stopped || this.releasing) return;
        if (this.renewFailures === 0) this.o.log.error('renewing the identity lease failed; retrying', e, { lease: `${this.o.namespace}/${this.o.serverID}` });
        this.renewFailures++;
      },
    );
    void this.renewing.then(() => {
      if (this.stopped || this.releasing) return;
      // After a failure, retry sooner (0.5 s doubling), but never later than the renew interval.
      const delay = this.renewFailures === 0 ? this.o.renewIntervalMs : Math.min(this.o.renewIntervalMs, this.backoffMs(this.renewFailures - 1));
      this.renewTimer = setTimeout(() => this.renewLoop(), delay);
      this.renewTimer.unref();
    });
  }

  private desired(base: Lease | undefined): Lease {
    const now = microTime(this.now());
    const ours = base?.spec?.holderIdentity === this.holderIdentity;
    const annotations = { ...(base?.metadata.annotations ?? {}) };
    if (this.o.advertiseAddress) annotations[PEER_ADVERTISE_ADDRESS_ANNOTATION] = this.o.advertiseAddress;
    else delete annotations[PEER_ADVERTISE_ADDRESS_ANNOTATION];
    return {
      apiVersion: LEASE_API_VERSION,
      kind: 'Lease',
      metadata: {
        ...(base?.metadata ?? {}),
        name: this.o.serverID,
        namespace: this.o.namespace,
        labels: { ...(base?.metadata.labels ?? {}), [IDENTITY_LEASE_LABEL]: IDENTITY_LEASE_LABEL_VALUE, [HOSTNAME_LABEL]: hostLabel(this.o.hostname ?? osHostname()) },
        annotations,
      },
      spec: {
        ...(base?.spec ?? {}),
        holderIdentity: this.holderIdentity,
        leaseDurationSeconds: this.o.durationSeconds,
        acquireTime: ours && base?.spec?.acquireTime ? base.spec.acquireTime : now,
        renewTime: now,
        ...(base && !ours ? { leaseTransitions: (base.spec?.leaseTransitions ?? 0) + 1 } : {}),
      },
    };
  }

  private async renewOnce(): Promise<void> {
    const signal = this.renewAbort.signal;
    let lastErr: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        if (!this.own) {
          let found: Lease | undefined;
          try {
            found = await this.api.get(this.o.serverID, signal);
          } catch (e) {
            if (!isStatus(e, 404)) throw e;
          }
          if (found) {
            const holder = found.spec?.holderIdentity;
            if (holder && holder !== this.holderIdentity) {
              if (this.replacedHolder === undefined) {
                this.replacedHolder = holder;
                this.o.log.info(2, 'taking over the identity lease from a previous holder', { lease: `${this.o.namespace}/${this.o.serverID}`, previousHolder: holder });
              } else if (holder !== this.replacedHolder) {
                this.o.log.error('another process renews this node\'s identity lease: do two mvproxy daemons use the same --server-id?', new Error(`holderIdentity ${holder}`), { lease: `${this.o.namespace}/${this.o.serverID}`, serverID: this.o.serverID });
                this.replacedHolder = holder;
              }
            }
          }
          this.own = found ? await this.api.update(this.desired(found), signal) : await this.api.create(this.desired(undefined), signal);
          return;
        }
        this.own = await this.api.update(this.desired(this.own), signal);
        return;
      } catch (e) {
        lastErr = e;
        // 409: someone else wrote it (or it exists already); 404: it was deleted. Re-read and retry.
        if (isStatus(e, 409) || isStatus(e, 404)) {
          this.own = undefined;
          continue;
        }
        throw e;
      }
    }
    throw lastErr;
  }

  // -------------------------------------------------------------------------------------------
  // The others' Leases

  private async watchLoop(): Promise<void> {
    const signal = this.abort.signal;
    const backoff = this.o.backoff ?? DEFAULT_BACKOFF;
    let rv: string | undefined;
    let failures = 0;
    while (!this.stopped) {
      try {
        if (rv === undefined) {
          const list = await this.api.list(IDENTITY_LEASE_SELECTOR, signal);
          this.replaceAll(list.items);
          rv = list.resourceVersion;
          if (!this.watchSynced) this.o.log.info(2, 'identity leases listed', { namespace: this.o.namespace, leases: list.items.length, peers: this.peers().length });
          this.watchSynced = true;
        }
        const started = this.now();
        let events = 0;
        await this.api.watch(IDENTITY_LEASE_SELECTOR, rv, (this.o.watchTimeoutSeconds ?? WATCH_TIMEOUT_S)(), signal, (e) => {
          events++;
          const v = e.object as Lease;
          if (v.metadata?.resourceVersion) rv = v.metadata.resourceVersion;
          if (e.type === 'ADDED' || e.type === 'MODIFIED') this.observe(e.object, true);
          else if (e.type === 'DELETED') this.forget(e.object.metadata.name);
        });
        if (failures > 0) this.o.log.info(2, 'watching identity leases again', { failures });
        // A watch the server ended at once without a word (it is closing, or refuses): do not spin.
        failures = events === 0 && this.now() - started < 1000 ? failures + 1 : 0;
        if (failures > 0) await sleep(this.backoffMs(failures - 1, backoff), undefined, { signal });
      } catch (e) {
        if (this.stopped) return;
        if (e instanceof WatchExpiredError) {
          this.o.log.info(2, 'identity lease watch expired; relisting', { err: (e as Error).message });
          rv = undefined;
          continue;
        }
        if (failures === 0) this.o.log.error('listing or watching identity leases failed; retrying with backoff', e, { namespace: this.o.namespace });
        if (e instanceof APIStatusError) rv = undefined; // the apiserver answered with an error: start over with a list
        failures++;
        try {
          await sleep(this.backoffMs(failures - 1, backoff), undefined, { signal });
        } catch {
          return; // stopped
        }
      }
    }
  }

  private backoffMs(n: number, b = this.o.backoff ?? DEFAULT_BACKOFF): number {
    const base = Math.min(b.maxMs, b.initialMs * 2 ** Math.min(n, 30));
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  private replaceAll(items: Lease[]): void {
    const names = new Set(items.map((l) => l.metadata.name));
    for (const name of [...this.leases.keys()]) if (!names.has(name)) this.leases.delete(name);
    for (const l of items) this.observe(l, false, true);
    this.changed();
  }

  /** Records a Lease. `live` = from a watch event (a renewal seen now); a relist counts a changed renewTime as seen now. */
  private observe(l: Lease, live: boolean, batch = false): void {
    const name = l.metadata?.name;
    if (!name) return;
    const prev = this.leases.get(name);
    const renewTime = l.spec?.renewTime ? Date.parse(l.spec.renewTime) : NaN;
    const address = l.metadata.annotations?.[PEER_ADVERTISE_ADDRESS_ANNOTATION] ?? '';
    const renewedNow = prev ? prev.renewTime !== renewTime && !Number.isNaN(renewTime) : live;
    const o: Observed = {
      name,
      holder: l.spec?.holderIdentity,
      address,
      renewTime,
      durationMs: (l.spec?.leaseDurationSeconds ?? 0) * 1000,
      seenRenewedAt: renewedNow ? this.now() : (prev?.seenRenewedAt ?? -Infinity),
    };
    this.leases.set(name, o);
    if (name === this.o.serverID) {
      if (o.holder && o.holder !== this.holderIdentity && o.holder !== this.replacedHolder && this.own) {
        this.o.log.error('another process wrote this node\'s identity lease: do two mvproxy daemons use the same --server-id?', new Error(`holderIdentity ${o.holder}`), { lease: `${this.o.namespace}/${name}` });
        this.replacedHolder = o.holder;
      }
    } else if (!isHostPort(address) && !this.warnedAddress.has(`${name} ${address}`)) {
      this.warnedAddress.add(`${name} ${address}`);
      this.o.log.info(0, 'a peer identity lease has no usable peer address; the peer is not dialled', { lease: `${this.o.namespace}/${name}`, annotation: PEER_ADVERTISE_ADDRESS_ANNOTATION, value: address });
    }
    if (prev && prev.holder !== o.holder && o.holder && name !== this.o.serverID) this.o.log.info(2, 'peer restarted (new holderIdentity); re-reading its discovery', { peer: name, holderIdentity: o.holder });
    if (!batch) this.changed();
  }

  private forget(name: string): void {
    if (!this.leases.delete(name)) return;
    if (name !== this.o.serverID) this.o.log.info(2, 'peer identity lease deleted', { peer: name });
    this.changed();
  }

  /** When a Lease expires: its renewTime (writer's clock) or the last renewal seen (local clock) plus its duration, whichever is later. */
  private expiresAt(l: Observed): number {
    if (!l.holder) return -Infinity;
    const byWriter = Number.isNaN(l.renewTime) ? -Infinity : l.renewTime + l.durationMs;
    return Math.max(byWriter, l.seenRenewedAt + l.durationMs);
  }

  /** Tells listeners when peers() or live() answers changed, and schedules the next expiry or forgetting. */
  private changed(): void {
    if (this.stopped) return;
    const now = this.now();
    const key = this.peers()
      .map((p) => `${p.id} ${p.address} ${p.incarnation} ${this.live(p.id)}`)
      .join('\n');
    if (key !== this.lastKey) {
      const peers = this.peers();
      for (const p of peers) {
        const live = this.live(p.id);
        if (!live && this.lastLive.get(p.id) !== false) this.o.log.info(2, 'peer identity lease expired; not routing to it', { peer: p.id, graceSeconds: this.o.expiredGraceMs / 1000 });
        this.lastLive.set(p.id, live);
      }
      for (const id of [...this.lastLive.keys()]) if (!peers.some((p) => p.id === id)) this.lastLive.delete(id);
      this.lastKey = key;
      for (const fn of this.listeners) fn();
    }
    // Next moment an answer can change by time alone: an expiry or the end of an expired peer's grace.
    let next = Infinity;
    for (const l of this.leases.values()) {
      if (l.name === this.o.serverID) continue;
      const exp = this.expiresAt(l);
      if (exp > now) next = Math.min(next, exp);
      else if (exp + this.o.expiredGraceMs > now) next = Math.min(next, exp + this.o.expiredGraceMs);
    }
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    if (next !== Infinity) {
      this.expiryTimer = setTimeout(() => this.changed(), Math.max(10, next - now + 5));
      this.expiryTimer.unref();
    }
  }
}

/**
 * A host name as a label value: at most 63 characters of [A-Za-z0-9._-], alphanumeric at both
 * ends. Longer host names are cut rather than refused: kube-apiserver 1.35 could not create its
 * Lease for a 64-byte host name and then never exited (kubernetes#140242).
 */
export function hostLabel(h: string): string {
  const cleaned = h.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  return cleaned;
}
