// In-memory object store shared by simulated apiservers, as real apiservers share etcd.
// Objects are keyed by group/resource/namespace/name (NOT version): an object written through one
// version is read through any other. One global resourceVersion counter; every write is recorded in
// a bounded event history so watches can resume from a resourceVersion.
import { randomUUID } from 'node:crypto';

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

/** A stored object, without apiVersion/kind (the serving version adds those). */
export interface KubeObject {
  metadata: ObjectMeta;
  [key: string]: unknown;
}

export interface StoredObject {
  readonly group: string;
  readonly resource: string;
  /** '' for cluster-scoped objects. */
  readonly namespace: string;
  readonly name: string;
  readonly rv: number;
  /** Treat as immutable: it is shared by every reader. Clone with `cloneObject`. */
  readonly object: KubeObject;
  /** JSON.stringify(object) without the leading '{' (so a serving version can prepend kind/apiVersion). */
  readonly tail: string;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  readonly type: WatchEventType;
  readonly rv: number;
  readonly group: string;
  readonly resource: string;
  /** For DELETED, the object as of deletion with the deletion resourceVersion. */
  readonly object: StoredObject;
  /** The previous state for MODIFIED and DELETED. */
  readonly prev?: StoredObject;
}

export type StoreListener = (e: StoreEvent) => void;

export type StoreErrorReason = 'NotFound' | 'AlreadyExists' | 'Conflict' | 'Expired' | 'Invalid';

export class StoreError extends Error {
  constructor(readonly reason: StoreErrorReason, message: string, readonly group = '', readonly resource = '', readonly objectName = '') {
    super(message);
    this.name = 'StoreError';
  }
}

export interface ObjectStoreOptions {
  /** Create the namespaces default, kube-system, kube-public and kube-node-lease (default true). */
  seedNamespaces?: boolean;
  /** Events kept for watch resumption (default 10,000). Older resourceVersions get 410 Expired. */
  historyLimit?: number;
  /** First resourceVersion handed out minus one (default 100). */
  initialResourceVersion?: number;
}

export interface Preconditions {
  resourceVersion?: string;
  uid?: string;
}

function qualified(group: string, resource: string): string {
  return group ? `${resource}.${group}` : resource;
}

function nowTimestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function cloneObject(s: StoredObject): KubeObject {
  return JSON.parse('{' + s.tail) as KubeObject;
}

export class ObjectStore {
  private rvCounter: number;
  private readonly buckets = new Map<string, Map<string, Map<string, StoredObject>>>();
  private readonly listeners = new Map<string, Set<StoreListener>>();
  private history: StoreEvent[] = [];
  private readonly historyLimit: number;
  private objectCount = 0;

  constructor(opts: ObjectStoreOptions = {}) {
    this.rvCounter = opts.initialResourceVersion ?? 100;
    this.historyLimit = Math.max(16, opts.historyLimit ?? 10_000);
    if (opts.seedNamespaces !== false) {
      for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
        this.create('', 'namespaces', {
          metadata: { name: ns, labels: { 'kubernetes.io/metadata.name': ns } },
          spec: { finalizers: ['kubernetes'] },
          status: { phase: 'Active' },
        });
      }
    }
  }

  /** The current (latest) resourceVersion. */
  get resourceVersion(): number {
    return this.rvCounter;
  }

  /** Number of stored objects. */
  get size(): number {
    return this.objectCount;
  }

  /** Resource version of the oldest event still in the history (or undefined). */
  get oldestEventResourceVersion(): number | undefined {
    return this.history.length ? this.history[0]!.rv : undefined;
  }

  get(group: string, resource: string, namespace: string, name: string): StoredObject | undefined {
    return this.buckets.get(`${group}/${resource}`)?.get(namespace)?.get(name);
  }

  /** Objects sorted by namespace then name (etcd key order). `namespace` undefined = all namespaces. */
  list(group: string, resource: string, namespace?: string): StoredObject[] {
    const bucket = this.buckets.get(`${group}/${resource}`);
    if (!bucket) return [];
    const out: StoredObject[] = [];
    if (namespace !== undefined) {
      const m = bucket.get(namespace);
      if (m) for (const o of m.values()) out.push(o);
      out.sort(byName);
      return out;
    }
    // etcd orders by the full key ".../<namespace>/<name>", so sort on that string.
    for (const m of bucket.values()) for (const o of m.values()) out.push(o);
    return out.sort(byKey);
  }

  /** 'group/resource' keys that hold objects. */
  groupResources(): string[] {
    return [...this.buckets.entries()].filter(([, b]) => b.size > 0).map(([k]) => k);
  }

  /**
   * Stores a new object. The store takes ownership of `object` (do not mutate it afterwards): it
   * fills metadata.uid and creationTimestamp when missing and sets metadata.resourceVersion.
   * `object.metadata.namespace` decides the namespace ('' or absent = cluster-scoped).
   */
  create(group: string, resource: string, object: KubeObject): StoredObject {
    const meta = object.metadata;
    if (!meta || typeof meta.name !== 'string' || !meta.name) {
      throw new StoreError('Invalid', 'metadata.name: Required value: name or generateName is required', group, resource);
    }
    const ns = typeof meta.namespace === 'string' ? meta.namespace : '';
    if (this.get(group, resource, ns, meta.name)) {
      throw new StoreError('AlreadyExists', `${qualified(group, resource)} "${meta.name}" already exists`, group, resource, meta.name);
    }
    meta.uid ??= randomUUID();
    meta.creationTimestamp ??= nowTimestamp();
    const stored = this.seal(group, resource, object, ++this.rvCounter);
    this.bucketFor(group, resource, ns, true)!.set(stored.name, stored);
    this.objectCount++;
    this.emit({ type: 'ADDED', rv: stored.rv, group, resource, object: stored });
    return stored;
  }

  /**
   * Replaces an existing object. uid and creationTimestamp are kept from the stored object.
   * `pre.resourceVersion` / `pre.uid` are optimistic-concurrency preconditions (409 Conflict).
   */
  update(group: string, resource: string, object: KubeObject, pre: Preconditions = {}): StoredObject {
    const meta = object.metadata;
    const ns = typeof meta.namespace === 'string' ? meta.namespace : '';
    const name = String(meta.name ?? '');
    const prev = this.get(group, resource, ns, name);
    if (!prev) throw new StoreError('NotFound', `${qualified(group, resource)} "${name}" not found`, group, resource, name);
    this.checkPreconditions(prev, pre);
    meta.uid = prev.object.metadata.uid;
    meta.creationTimestamp = prev.object.metadata.creationTimestamp;
    const stored = this.seal(group, resource, object, ++this.rvCounter);
    this.bucketFor(group, resource, ns, true)!.set(name, stored);
    this.emit({ type: 'MODIFIED', rv: stored.rv, group, resource, object: stored, prev });
    return stored;
  }

  /** Deletes an object; returns it as it was stored before deletion. */
  delete(group: string, resource: string, namespace: string, name: string, pre: Preconditions = {}): StoredObject {
    const prev = this.get(group, resource, namespace, name);
    if (!prev) throw new StoreError('NotFound', `${qualified(group, resource)} "${name}" not found`, group, resource, name);
    this.checkPreconditions(prev, pre);
    const bucket = this.bucketFor(group, resource, namespace, false)!;
    bucket.delete(name);
    if (bucket.size === 0) this.buckets.get(`${group}/${resource}`)!.delete(namespace);
    this.objectCount--;
    const rv = ++this.rvCounter;
    const tomb = cloneObject(prev);
    const tombstone = this.seal(group, resource, tomb, rv);
    this.emit({ type: 'DELETED', rv, group, resource, object: tombstone, prev });
    return prev;
  }

  /** Deletes every namespaced object in `namespace` (what the namespace controller does). */
  deleteNamespaceContents(namespace: string): number {
    let n = 0;
    for (const [key, bucket] of [...this.buckets.entries()]) {
      const m = bucket.get(namespace);
      if (!m || namespace === '') continue;
      const slash = key.lastIndexOf('/');
      for (const name of [...m.keys()]) {
        this.delete(key.slice(0, slash), key.slice(slash + 1), namespace, name);
        n++;
      }
    }
    return n;
  }

  /**
   * Events of group/resource with resourceVersion > `rv`, oldest first; `undefined` when `rv` is
   * older than the retained history (the caller answers 410 Expired).
   */
  eventsSince(rv: number, group: string, resource: string): StoreEvent[] | undefined {
    const h = this.history;
    if (rv >= this.rvCounter) return [];
    if (!h.length || rv < h[0]!.rv - 1) return undefined;
    // Binary search for the first event with rv > `rv`.
    let lo = 0;
    let hi = h.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (h[mid]!.rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    const out: StoreEvent[] = [];
    for (let i = lo; i < h.length; i++) {
      const e = h[i]!;
      if (e.group === group && e.resource === resource) out.push(e);
    }
    return out;
  }

  /**
   * Forgets the event history, as an etcd compaction does: a watch that resumes from any
   * resourceVersion older than the current one now gets 410 Expired and its client must relist
   * (tests of the identity-lease watcher use it). Open watches are not affected.
   */
  compact(): void {
    this.history = [];
  }

  /** Live watch subscriptions across all resources (tests use it to see that a watch was released). */
  listenerCount(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }

  /** Live events of group/resource, delivered synchronously after each write. Returns the unsubscribe. */
  subscribe(group: string, resource: string, fn: StoreListener): () => void {
    const key = `${group}/${resource}`;
    let set = this.listeners.get(key);
    if (!set) this.listeners.set(key, (set = new Set()));
    set.add(fn);
    return () => {
      set!.delete(fn);
    };
  }

  private checkPreconditions(prev: StoredObject, pre: Preconditions): void {
    if (pre.uid && pre.uid !== prev.object.metadata.uid) {
      throw new StoreError(
        'Conflict',
        `Operation cannot be fulfilled on ${qualified(prev.group, prev.resource)} "${prev.name}": Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${String(prev.object.metadata.uid)}`,
        prev.group, prev.resource, prev.name,
      );
    }
    if (pre.resourceVersion && pre.resourceVersion !== String(prev.rv)) {
      throw new StoreError(
        'Conflict',
        `Operation cannot be fulfilled on ${qualified(prev.group, prev.resource)} "${prev.name}": the object has been modified; please apply your changes to the latest version and try again`,
        prev.group, prev.resource, prev.name,
      );
    }
  }

  private bucketFor(group: string, resource: string, ns: string, create: boolean): Map<string, StoredObject> | undefined {
    const key = `${group}/${resource}`;
    let b = this.buckets.get(key);
    if (!b) {
      if (!create) return undefined;
      this.buckets.set(key, (b = new Map()));
    }
    let m = b.get(ns);
    if (!m && create) b.set(ns, (m = new Map()));
    return m;
  }

  private seal(group: string, resource: string, object: KubeObject, rv: number): StoredObject {
    delete object['apiVersion'];
    delete object['kind'];
    const meta = object.metadata;
    const ns = typeof meta.namespace === 'string' ? meta.namespace : '';
    if (!ns) delete meta.namespace;
    meta.resourceVersion = String(rv);
    const json = JSON.stringify(object);
    return { group, resource, namespace: ns, name: String(meta.name), rv, object, tail: json.slice(1) };
  }

  private emit(e: StoreEvent): void {
    this.history.push(e);
    if (this.history.length > this.historyLimit * 2) this.history = this.history.slice(this.history.length - this.historyLimit);
    const set = this.listeners.get(`${e.group}/${e.resource}`);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(e);
      } catch {
        // A broken watcher must not break writers.
      }
    }
  }
}

export function objectKey(o: { namespace: string; name: string }): string {
  return o.namespace ? `${o.namespace}/${o.name}` : o.name;
}

function byKey(a: StoredObject, b: StoredObject): number {
  const ka = objectKey(a);
  const kb = objectKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

function byName(a: StoredObject, b: StoredObject): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
