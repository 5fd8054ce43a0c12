// Discovery bodies for the decoder's tests (test/unit/discovery-decode.test.ts, the fuzz test and
// test/integration/discovery-bad-bodies.test.ts): real documents from the fixtures, the refusals
// issue 16 §2 lists, and protobuf bodies built by hand (unknown fields, odd envelopes).
import { Writer } from 'protobufjs/minimal';
import { encodeAPIGroupDiscoveryMessage, PROTOBUF_MAGIC } from '../../src/aggregation/codec/protobuf';
import type { APIGroupDiscoveryList } from '../../src/aggregation/types';
import { readFixture } from './fixtures';

export const V133_APIS = readFixture('v1.33-0b1dcaba/aggregated_v2.json');
export const V137_APIS = readFixture('v1.37.0-dev-6732d913/aggregated_v2.json');
/** An aggregated `/api` (the core group, name ""), as kube-apiserver serves it. */
export const CORE_API = Buffer.from(
  JSON.stringify({
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items: [{ metadata: { creationTimestamp: null }, versions: [{ version: 'v1', resources: [{ resource: 'configmaps', responseKind: { group: '', version: 'v1', kind: 'ConfigMap' }, scope: 'Namespaced', singularResource: 'configmap', verbs: ['create', 'delete', 'get', 'list'], shortNames: ['cm'] }], freshness: 'Current' }] }],
  }),
);

export const json = (v: unknown): Buffer => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

/** A v2 list with these fields over the usual ones. */
export const list = (fields: Record<string, unknown>): Buffer => json({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, ...fields });

/** A list with one group, version and resource; `resource` fields override the resource's. */
export const withResource = (resource: Record<string, unknown>): Buffer =>
  list({ items: [{ metadata: { name: 'example.com' }, versions: [{ version: 'v1', resources: [{ resource: 'widgets', scope: 'Namespaced', singularResource: 'widget', verbs: ['get'], ...resource }] }] }] });

/** A valid list whose unknown field `x` is `depth` levels deep counting the outer object (Go accepts 10000). */
export const nestedTo = (depth: number): Buffer =>
  Buffer.from(`{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[],"x":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`);

// ---- protobuf ---------------------------------------------------------------------------------

const tag = (field: number, wire: number) => ((field << 3) | wire) >>> 0;

/** Unknown fields of every wire type: varint, fixed64, length-delimited, a group, fixed32. */
export function unknownFields(): Uint8Array {
  const w = Writer.create();
  w.uint32(tag(99, 0)).uint64(123456789);
  w.uint32(tag(100, 1)).fixed64(9);
  w.uint32(tag(101, 2)).string('not known here');
  w.uint32(tag(102, 3)).uint32(tag(1, 0)).uint32(5).uint32(tag(102, 4));
  w.uint32(tag(103, 5)).fixed32(7);
  return w.finish();
}

/** "k8s\0" + runtime.Unknown{typeMeta, raw, extra fields}. */
export function protobufEnvelope(apiVersion: string, kind: string, raw: Uint8Array | undefined, extra?: (w: Writer) => void): Buffer {
  const w = Writer.create();
  w.uint32(tag(1, 2)).fork().uint32(tag(1, 2)).string(apiVersion).uint32(tag(2, 2)).string(kind).ldelim();
  if (raw !== undefined) w.uint32(tag(2, 2)).bytes(raw);
  extra?.(w);
  return Buffer.concat([PROTOBUF_MAGIC, w.finish()]);
}

/** An APIGroupDiscoveryList message of these groups; with `unknown`, unknown fields in the list and in every group. */
export function protobufListMessage(groups: APIGroupDiscoveryList['items'], unknown = false): Uint8Array {
  const w = Writer.create();
  w.uint32(tag(1, 2)).fork().ldelim(); // empty ListMeta
  for (const g of groups) {
    const m = encodeAPIGroupDiscoveryMessage(g);
    w.uint32(tag(2, 2)).bytes(unknown ? Buffer.concat([m, unknownFields()]) : m);
  }
  return unknown ? Buffer.concat([w.finish(), unknownFields()]) : w.finish();
}
