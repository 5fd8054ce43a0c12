// JSON renderings of stored objects: plain objects, <Kind>List, meta.k8s.io Table and
// PartialObjectMetadata(List). Built by string concatenation from the stored JSON tail, so serving
// an object never re-serialises it.
import type { ResourceChoice } from './negotiate';
import type { StoredObject } from './store';

export interface TypeMeta {
  readonly kind: string;
  readonly apiVersion: string;
}

const prefixes = new Map<string, string>();

function prefix(t: TypeMeta): string {
  const key = `${t.kind}\u0000${t.apiVersion}`;
  let p = prefixes.get(key);
  if (p === undefined) {
    p = `{"kind":${JSON.stringify(t.kind)},"apiVersion":${JSON.stringify(t.apiVersion)},`;
    if (prefixes.size > 4096) prefixes.clear();
    prefixes.set(key, p);
  }
  return p;
}

export function objectJson(t: TypeMeta, o: StoredObject): string {
  return prefix(t) + o.tail;
}

function partialMetadataJson(o: StoredObject, metaVersion: string): string {
  return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/${metaVersion}","metadata":${JSON.stringify(o.object.metadata)}}`;
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

const COLUMNS = JSON.stringify([
  {
    name: 'Name',
    type: 'string',
    format: 'name',
    description: 'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
    priority: 0,
  },
  {
    name: 'Created At',
    type: 'date',
    format: '',
    description: 'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
    priority: 0,
  },
]);

function rowJson(t: TypeMeta, o: StoredObject, metaVersion: string, include: IncludeObject): string {
  const cells = JSON.stringify([o.name, o.object.metadata.creationTimestamp ?? null]);
  if (include === 'None') return `{"cells":${cells}}`;
  const obj = include === 'Object' ? objectJson(t, o) : partialMetadataJson(o, metaVersion);
  return `{"cells":${cells},"object":${obj}}`;
}

export interface ListMeta {
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

export function tableJson(t: TypeMeta, items: readonly StoredObject[], metaVersion: string, include: IncludeObject, meta?: ListMeta): string {
  const rows = items.map((o) => rowJson(t, o, metaVersion, include)).join(',');
  const m = meta ? JSON.stringify(meta) : '{}';
  return `{"kind":"Table","apiVersion":"meta.k8s.io/${metaVersion}","metadata":${m},"columnDefinitions":${COLUMNS},"rows":[${rows}]}`;
}

export function listJson(t: TypeMeta, listKind: string, items: readonly StoredObject[], meta: ListMeta): string {
  let s = `{"kind":${JSON.stringify(listKind)},"apiVersion":${JSON.stringify(t.apiVersion)},"metadata":${JSON.stringify(meta)},"items":[`;
  for (let i = 0; i < items.length; i++) s += (i ? ',' : '') + objectJson(t, items[i]!);
  return s + ']}';
}

function metadataListJson(items: readonly StoredObject[], metaVersion: string, meta: ListMeta): string {
  return `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/${metaVersion}","metadata":${JSON.stringify(meta)},"items":[${items.map((o) => partialMetadataJson(o, metaVersion)).join(',')}]}`;
}

/** One object as the negotiated rendering asks. */
export function renderObject(t: TypeMeta, o: StoredObject, choice: ResourceChoice, include: IncludeObject): string {
  switch (choice.rendering) {
    case 'table': return tableJson(t, [o], choice.metaVersion, include, { resourceVersion: String(o.rv) });
    case 'metadata': return partialMetadataJson(o, choice.metaVersion);
    default: return objectJson(t, o);
  }
}

/** A collection as the negotiated rendering asks. */
export function renderList(t: TypeMeta, listKind: string, items: readonly StoredObject[], choice: ResourceChoice, include: IncludeObject, meta: ListMeta): string {
  switch (choice.rendering) {
    case 'table': return tableJson(t, items, choice.metaVersion, include, meta);
    case 'metadata': return metadataListJson(items, choice.metaVersion, meta);
    default: return listJson(t, listKind, items, meta);
  }
}

export function includeObjectParam(v: string | null): IncludeObject {
  return v === 'None' || v === 'Object' ? v : 'Metadata';
}
