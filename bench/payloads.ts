// The bytes the bench backend answers with, shaped like a kube-apiserver's: a 2 KiB ConfigMap, a
// 100 KiB ConfigMapList, a watch event (~1 KiB, carrying the send time), and the aggregated
// discovery documents of a v1.37 apiserver (from the simulator's catalog, i.e. the real
// fixture). Built once at start; every response is a precomputed Buffer.

import { buildCatalog } from '../src/sim/catalog';
import { buildDiscovery, etagOf } from '../src/sim/discovery';
import type { APIGroupDiscovery, APIGroupDiscoveryList } from '../src/aggregation/types';

export const OBJECT_BYTES = 2048;
export const LIST_BYTES = 100 * 1024;

/** The group/version/resource only backend "b" serves: the peer route's target. */
export const PEER_GROUP = 'bench.mvproxy.io';
export const PEER_RESOURCE = 'widgets';

/** Request paths of the scenarios (the backend answers by shape, not by exact name). */
export const PATHS = {
  /** 2 KiB object GET, served by every apiserver (core configmaps): the local route. */
  get: '/api/v1/namespaces/default/configmaps/bench-2k',
  /** 100 KiB LIST (50 ConfigMaps): the local route. */
  list: '/api/v1/namespaces/default/configmaps',
  /** Watch on the core configmaps. */
  watch: '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&allowWatchBookmarks=true',
  /** The same object, in a group only backend "b" (mvproxy B's apiserver) serves: the peer route. */
  peerGet: `/apis/${PEER_GROUP}/v1/namespaces/default/${PEER_RESOURCE}/bench-2k`,
  peerList: `/apis/${PEER_GROUP}/v1/namespaces/default/${PEER_RESOURCE}`,
  apis: '/apis',
} as const;

export const ACCEPT_JSON = 'application/json';
export const ACCEPT_DISCOVERY_JSON = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
export const ACCEPT_DISCOVERY_PB = 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

const RV = '48213577';

function pad(n: number): string {
  let s = '';
  const line = 'key-%d: value-abcdefghijklmnopqrstuvwxyz0123456789; ';
  for (let i = 0; s.length < n; i++) s += line.replace('%d', String(i));
  return s.slice(0, n);
}

function configMap(name: string, resourceVersion: string, dataBytes: number): Record<string, unknown> {
  return {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: {
      name,
      namespace: 'default',
      uid: '7f4e3c1a-3b9d-4d6e-9a7b-2c1d0e9f8a7b',
      resourceVersion,
      creationTimestamp: '2025-11-02T10:15:31Z',
      labels: { 'app.kubernetes.io/name': 'bench', 'app.kubernetes.io/part-of': 'mvproxy' },
      annotations: { 'bench.mvproxy.io/purpose': 'end-to-end benchmark object' },
      managedFields: [
        {
          manager: 'kubectl-client-side-apply',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2025-11-02T10:15:31Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:data': { '.': {}, 'f:config.yaml': {} }, 'f:metadata': { 'f:labels': { '.': {}, 'f:app.kubernetes.io/name': {} } } },
        },
      ],
    },
    data: { 'config.yaml': pad(dataBytes) },
  };
}

/** A ConfigMap whose JSON is exactly `bytes` long. */
export function objectOfSize(name: string, bytes: number, resourceVersion = RV): Buffer {
  const base = JSON.stringify(configMap(name, resourceVersion, 0)).length;
  const b = Buffer.from(JSON.stringify(configMap(name, resourceVersion, Math.max(0, bytes - base))));
  if (b.length !== bytes) throw new Error(`object is ${b.length} bytes, wanted ${bytes}`);
  return b;
}

export function object2k(): Buffer {
  return objectOfSize('bench-2k', OBJECT_BYTES);
}

/** A ConfigMapList of 2 KiB items, padded to exactly LIST_BYTES. */
export function list100k(): Buffer {
  const head = `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"${RV}"},"items":[`;
  const tail = ']}';
  const items: string[] = [];
  let used = head.length + tail.length;
  for (let i = 0; ; i++) {
    const name = `bench-${String(i).padStart(3, '0')}`;
    const remaining = LIST_BYTES - used - (items.length > 0 ? 1 : 0);
    if (remaining < OBJECT_BYTES + 600) {
      // Last item takes exactly what is left.
      items.push(objectOfSize(name, remaining).toString());
      break;
    }
    const o = objectOfSize(name, OBJECT_BYTES).toString();
    items.push(o);
    used += o.length + (items.length > 1 ? 1 : 0);
  }
  const b = Buffer.from(head + items.join(',') + tail);
  if (b.length !== LIST_BYTES) throw new Error(`list is ${b.length} bytes, wanted ${LIST_BYTES}`);
  return b;
}

/**
 * A watch event as kube-apiserver writes it (one JSON object per line), about 1 KiB. The object's
 * resourceVersion carries the backend's send time (process.hrtime.bigint(), CLOCK_MONOTONIC, the
 * same clock in every process of the machine), which the watch client subtracts from its own.
 */
export class WatchEventTemplate {
  private readonly before: Buffer;
  private readonly after: Buffer;
  static readonly MARK = '"resourceVersion":"';
  constructor() {
    const placeholder = '99999999999999999999';
    const line = JSON.stringify({ type: 'MODIFIED', object: JSON.parse(objectOfSize('bench-watched', 1024 - 30, placeholder).toString()) }) + '\n';
    const i = line.indexOf(placeholder);
    this.before = Buffer.from(line.slice(0, i));
    this.after = Buffer.from(line.slice(i + placeholder.length));
  }
  event(stampNs: bigint): Buffer {
    return Buffer.concat([this.before, Buffer.from(stampNs.toString()), this.after]);
  }
}

export interface AggregatedDoc {
  body: Buffer;
  etag: string;
}

/** Aggregated v2 /api and /apis of a v1.37 apiserver; `withPeerGroup` adds bench.mvproxy.io/v1 widgets. */
export function discoveryDocs(withPeerGroup: boolean): { api: AggregatedDoc; apis: AggregatedDoc } {
  const d = buildDiscovery(buildCatalog('v1.37'), '127.0.0.1:443');
  const apisItems: APIGroupDiscovery[] = [...d.apisV2.document.items];
  if (withPeerGroup) {
    apisItems.push({
      metadata: { name: PEER_GROUP },
      versions: [
        {
          version: 'v1',
          freshness: 'Current',
          resources: [
            {
              resource: PEER_RESOURCE,
              responseKind: { group: PEER_GROUP, version: 'v1', kind: 'Widget' },
              scope: 'Namespaced',
              singularResource: 'widget',
              verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
            },
          ],
        },
      ],
    });
  }
  const apis: APIGroupDiscoveryList = { ...d.apisV2.document, items: apisItems };
  const apisBody = Buffer.from(JSON.stringify(apis));
  return {
    api: { body: d.apiV2.body, etag: d.apiV2.etag },
    apis: { body: apisBody, etag: etagOf(apisBody) },
  };
}
