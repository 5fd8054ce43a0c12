// Resource requests: get, list, create, update, patch, delete, deletecollection and the
// subresources (status, scale, log, eviction, binding, token, …). Watch and log streaming live in
// watch.ts.
import { randomUUID } from 'node:crypto';
import type { ResourceInfo, ResourceRequest, SubresourceInfo } from './catalog';
import { header, send, sendError, sendJson, type Ctx } from './context';
import { negotiateResource, type ResourceChoice } from './negotiate';
import { jsonPatch, mergePatch, PatchError } from './patch';
import { includeObjectParam, renderList, renderObject, type TypeMeta } from './render';
import { both, parseFieldSelector, parseLabelSelector, SelectorError, type Matcher } from './selectors';
import { ApiError, errors, successStatus } from './status';
import { cloneObject, objectKey, StoreError, type KubeObject, type ObjectMeta, type StoredObject } from './store';
import { serveLogs, serveWatch } from './watch';

/** Maps an /api or /apis resource path to a ResourceRequest (RequestInfo rules, docs/kubernetes-mvp.md §2.1). */
export function resolveResource(ctx: Ctx, group: string, version: string, rest: string[]): ResourceRequest | undefined {
  const v = ctx.sim.catalog.byApiVersion.get(group ? `${group}/${version}` : version);
  if (!v || v.group !== group) return undefined;
  let parts = rest;
  let watchPath = false;
  if (parts[0] === 'watch') {
    if (parts.length < 2) return undefined;
    watchPath = true;
    parts = parts.slice(1);
  }
  let namespace = '';
  let namespacedPath = false;
  if (parts[0] === 'namespaces' && parts.length > 1) {
    if (parts.length > 2 && parts[2] !== 'status' && parts[2] !== 'finalize') {
      namespace = parts[1]!;
      namespacedPath = true;
      parts = parts.slice(2);
    }
  }
  const info = v.resources.get(parts[0]!);
  if (!info) return undefined;
  if (namespacedPath && (!info.namespaced || namespace === '')) return undefined;
  const name = parts[1];
  const subresource = parts[2];
  if (name !== undefined && info.namespaced && !namespacedPath) return undefined; // /api/v1/configmaps/foo
  if (name === '') return undefined;
  if (subresource !== undefined && !info.subresources.has(subresource)) return undefined;
  const subpath = parts.slice(3);
  if (subpath.length && subresource !== 'proxy') return undefined;
  if (watchPath && subresource !== undefined) return undefined;
  return {
    info,
    namespace,
    ...(name !== undefined ? { name } : {}),
    ...(subresource !== undefined ? { subresource } : {}),
    subpath,
    watchPath,
  };
}

function verbFor(ctx: Ctx, rr: ResourceRequest): string | undefined {
  switch (ctx.method) {
    case 'GET':
    case 'HEAD': {
      if (rr.watchPath) return 'watch';
      if (rr.name !== undefined) return 'get';
      const w = ctx.query.get('watch');
      return w !== null && w !== 'false' && w !== '0' ? 'watch' : 'list';
    }
    case 'POST': return rr.watchPath ? undefined : 'create';
    case 'PUT': return rr.watchPath || rr.name === undefined ? undefined : 'update';
    case 'PATCH': return rr.watchPath || rr.name === undefined ? undefined : 'patch';
    case 'DELETE': return rr.watchPath ? undefined : rr.name === undefined ? 'deletecollection' : 'delete';
    default: return undefined;
  }
}

export function handleResource(ctx: Ctx, rr: ResourceRequest): void {
  try {
    const verb = verbFor(ctx, rr);
    if (!verb) throw errors.methodNotAllowed();
    if (rr.subresource !== undefined) {
      const sub = rr.info.subresources.get(rr.subresource)!;
      if (!sub.verbs.has(verb)) throw errors.methodNotAllowed();
      handleSubresource(ctx, rr, sub, verb);
      return;
    }
    if (!rr.info.verbs.has(verb)) throw errors.methodNotAllowed();
    // A namespaced resource outside /namespaces/<ns>/ only lists and watches across namespaces.
    if (rr.info.namespaced && rr.namespace === '' && verb !== 'list' && verb !== 'watch') throw errors.methodNotAllowed();
    if (verb === 'create' && rr.name !== undefined) throw errors.methodNotAllowed();
    switch (verb) {
      case 'get': return doGet(ctx, rr);
      case 'list': return doList(ctx, rr);
      case 'watch': return doWatch(ctx, rr);
      case 'create': return doCreate(ctx, rr);
      case 'update': return doUpdate(ctx, rr);
      case 'patch': return doPatch(ctx, rr);
      case 'delete': return doDelete(ctx, rr);
      case 'deletecollection': return doDeleteCollection(ctx, rr);
    }
    throw errors.methodNotAllowed();
  } catch (e) {
    replyError(ctx, e);
  }
}

export function replyError(ctx: Ctx, e: unknown): void {
  if (e instanceof ApiError) return sendError(ctx, e);
  if (e instanceof StoreError) {
    switch (e.reason) {
      case 'NotFound': return sendError(ctx, errors.notFound(e.group, e.resource, e.objectName));
      case 'AlreadyExists': return sendError(ctx, errors.alreadyExists(e.group, e.resource, e.objectName));
      case 'Conflict': return sendError(ctx, errors.conflict(e.group, e.resource, e.objectName, e.message));
      case 'Expired': return sendError(ctx, errors.gone(e.message));
      case 'Invalid': return sendError(ctx, errors.badRequest(e.message));
    }
  }
  if (e instanceof SelectorError || e instanceof PatchError) return sendError(ctx, errors.badRequest(e.message));
  const msg = e instanceof Error ? e.message : String(e);
  send(ctx, 500, 'application/json', new ApiError(500, 'InternalError', `Internal error occurred: ${msg}`).body());
}

// ---------------------------------------------------------------------------------------------
// helpers

function typeMeta(info: ResourceInfo): TypeMeta {
  return info;
}

function negotiate(ctx: Ctx, watch: boolean): ResourceChoice {
  const c = negotiateResource(header(ctx, 'accept'), watch);
  if (!c) throw errors.notAcceptable();
  return c;
}

function mediaType(ctx: Ctx): string {
  const ct = header(ctx, 'content-type');
  if (!ct) return 'application/json';
  const semi = ct.indexOf(';');
  return (semi < 0 ? ct : ct.slice(0, semi)).trim().toLowerCase();
}

let yamlModule: { parse(s: string): unknown } | undefined;
function parseYaml(text: string): unknown {
  // Loaded only when a YAML body arrives.
  yamlModule ??= require('yaml') as { parse(s: string): unknown };
  return yamlModule.parse(text);
}

function parseBody(ctx: Ctx, kind: 'object' | 'patch'): unknown {
  const text = ctx.body ? ctx.body.toString('utf8') : '';
  const mt = mediaType(ctx);
  const yaml = mt === 'application/yaml' || mt === 'application/apply-patch+yaml';
  if (kind === 'object' && mt !== 'application/json' && mt !== 'application/yaml' && mt !== '*/*') {
    throw errors.unsupportedMediaType(mt, ['application/json', 'application/yaml']);
  }
  if (!text.trim()) throw errors.badRequest('the request body is empty: Object \'Kind\' is missing in \'\'');
  try {
    return yaml ? parseYaml(text) : JSON.parse(text);
  } catch (e) {
    throw errors.badRequest(`error decoding the request body: ${(e as Error).message}`);
  }
}

function asObject(v: unknown, what = 'the request body'): KubeObject {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw errors.badRequest(`${what} must be a JSON object`);
  const o = v as KubeObject;
  if (o.metadata === undefined || o.metadata === null) o.metadata = {};
  if (typeof o.metadata !== 'object' || Array.isArray(o.metadata)) throw errors.badRequest('metadata must be an object');
  return o;
}

function checkTypeMeta(o: KubeObject, info: { kind: string; group: string }): void {
  const kind = o['kind'];
  if (kind !== undefined && kind !== info.kind) {
    throw errors.badRequest(`the kind in the body (${String(kind)}) does not match the expected kind (${info.kind})`);
  }
  const av = o['apiVersion'];
  if (typeof av === 'string') {
    const slash = av.indexOf('/');
    const g = slash < 0 ? '' : av.slice(0, slash);
    if (g !== info.group) throw errors.badRequest(`the API version in the data (${av}) does not match the expected API group (${info.group || 'core'})`);
  }
}

function dryRun(ctx: Ctx): boolean {
  return ctx.query.getAll('dryRun').includes('All');
}

function checkNamespace(ctx: Ctx, rr: ResourceRequest, meta: ObjectMeta): void {
  if (!rr.info.namespaced) {
    delete meta.namespace;
    return;
  }
  if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== rr.namespace) {
    throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  meta.namespace = rr.namespace;
  if (ctx.sim.strictNamespaces && !ctx.sim.store.get('', 'namespaces', '', rr.namespace)) {
    throw errors.notFound('', 'namespaces', rr.namespace);
  }
}

function mustGet(ctx: Ctx, rr: ResourceRequest): StoredObject {
  const o = ctx.sim.store.get(rr.info.group, rr.info.resource, rr.namespace, rr.name!);
  if (!o) throw errors.notFound(rr.info.group, rr.info.resource, rr.name!);
  return o;
}

function selectors(ctx: Ctx): { matcher: Matcher; name?: string } {
  const fs = parseFieldSelector(ctx.query.get('fieldSelector'));
  const ls = parseLabelSelector(ctx.query.get('labelSelector'));
  return { matcher: both(ls, fs.matcher), ...(fs.name !== undefined ? { name: fs.name } : {}) };
}

function hasSpecChange(prev: KubeObject, next: KubeObject): boolean {
  return JSON.stringify(prev['spec']) !== JSON.stringify(next['spec']);
}

function nextGeneration(prev: KubeObject, next: KubeObject): void {
  const g = typeof prev.metadata.generation === 'number' ? prev.metadata.generation : undefined;
  if (g === undefined) {
    delete next.metadata.generation;
    return;
  }
  next.metadata.generation = hasSpecChange(prev, next) ? g + 1 : g;
}

const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
function generateName(base: string): string {
  let s = base;
  for (let i = 0; i < 5; i++) s += GENERATE_ALPHABET[Math.floor(Math.random() * GENERATE_ALPHABET.length)];
  return s;
}

// ---------------------------------------------------------------------------------------------
// verbs

function doGet(ctx: Ctx, rr: ResourceRequest): void {
  const choice = negotiate(ctx, false);
  const o = mustGet(ctx, rr);
  sendJson(ctx, 200, renderObject(typeMeta(rr.info), o, choice, includeObjectParam(ctx.query.get('includeObject'))), choice.contentType);
}

interface ContinueToken {
  v: string;
  rv: number;
  start: string;
}

function doList(ctx: Ctx, rr: ResourceRequest): void {
  const choice = negotiate(ctx, false);
  const store = ctx.sim.store;
  const sel = selectors(ctx);
  let items = store.list(rr.info.group, rr.info.resource, rr.info.namespaced && rr.namespace ? rr.namespace : undefined);
  if (sel.name !== undefined) items = items.filter((o) => o.name === sel.name);
  items = items.filter((o) => sel.matcher(o.object));
  let rv = store.resourceVersion;
  const cont = ctx.query.get('continue');
  if (cont) {
    let tok: ContinueToken;
    try {
      tok = JSON.parse(Buffer.from(cont, 'base64url').toString('utf8')) as ContinueToken;
      if (typeof tok.start !== 'string' || typeof tok.rv !== 'number') throw new Error('bad');
    } catch {
      throw errors.badRequest('continue key is not valid: illegal base64 data or invalid token');
    }
    rv = tok.rv;
    items = items.filter((o) => objectKey(o) >= tok.start);
  }
  const meta: { resourceVersion: string; continue?: string; remainingItemCount?: number } = { resourceVersion: String(rv) };
  const limit = Number(ctx.query.get('limit') ?? '0');
  if (Number.isInteger(limit) && limit > 0 && items.length > limit) {
    const last = items[limit - 1]!;
    const tok: ContinueToken = { v: 'meta.k8s.io/v1', rv, start: objectKey(last) + '\u0000' };
    meta.continue = Buffer.from(JSON.stringify(tok)).toString('base64url');
    meta.remainingItemCount = items.length - limit;
    items = items.slice(0, limit);
  }
  sendJson(ctx, 200, renderList(typeMeta(rr.info), rr.info.listKind, items, choice, includeObjectParam(ctx.query.get('includeObject')), meta), choice.contentType);
}

function doWatch(ctx: Ctx, rr: ResourceRequest): void {
  const choice = negotiate(ctx, true);
  const sel = selectors(ctx);
  const name = rr.watchPath && rr.name !== undefined ? rr.name : sel.name;
  const timeout = Number(ctx.query.get('timeoutSeconds') ?? '');
  serveWatch(ctx, {
    info: rr.info,
    namespace: rr.info.namespaced && rr.namespace ? rr.namespace : undefined,
    ...(name !== undefined ? { name } : {}),
    matcher: sel.matcher,
    resourceVersion: ctx.query.get('resourceVersion') ?? undefined,
    timeoutSeconds: Number.isFinite(timeout) && timeout > 0 ? timeout : undefined,
    allowBookmarks: ctx.query.get('allowWatchBookmarks') === 'true',
    sendInitialEvents: ctx.query.get('sendInitialEvents') === 'true',
    choice,
    include: includeObjectParam(ctx.query.get('includeObject')),
  });
}

function doCreate(ctx: Ctx, rr: ResourceRequest): void {
  const choice = negotiate(ctx, false);
  // kubectl sends a SelfSubjectReview (`kubectl auth whoami`) as protobuf, which the simulator does
  // not decode; a review's answer here comes from the request's identity, not its body.
  if (!rr.info.persisted && mediaType(ctx) === 'application/vnd.kubernetes.protobuf') return createReview(ctx, rr, { metadata: {} } as KubeObject);
  const obj = asObject(parseBody(ctx, 'object'));
  checkTypeMeta(obj, rr.info);
  const meta = obj.metadata;
  if (!rr.info.persisted) return createReview(ctx, rr, obj);
  checkNamespace(ctx, rr, meta);
  if (!meta.name && !meta.generateName) {
    throw errors.invalid(rr.info.group, rr.info.resource, rr.info.kind, '', 'metadata.name', 'Required value: name or generateName is required');
  }
  if (rr.info.resource === 'namespaces') {
    meta.labels = { ...(meta.labels ?? {}), 'kubernetes.io/metadata.name': String(meta.name ?? '') };
    obj['spec'] ??= { finalizers: ['kubernetes'] };
    obj['status'] ??= { phase: 'Active' };
  }
  if (obj['spec'] !== undefined) meta.generation = 1;
  delete meta.resourceVersion;
  const store = ctx.sim.store;
  let stored: StoredObject | undefined;
  for (let attempt = 0; !stored; attempt++) {
    if (meta.generateName && !meta.name) meta.name = generateName(String(meta.generateName));
    if (dryRun(ctx)) {
      if (store.get(rr.info.group, rr.info.resource, rr.info.namespaced ? rr.namespace : '', String(meta.name))) {
        throw errors.alreadyExists(rr.info.group, rr.info.resource, String(meta.name));
      }
      meta.uid ??= randomUUID();
      meta.creationTimestamp ??= new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
      delete obj['apiVersion'];
      delete obj['kind'];
      const json = JSON.stringify(obj);
      stored = { group: rr.info.group, resource: rr.info.resource, namespace: rr.namespace, name: String(meta.name), rv: 0, object: obj, tail: json.slice(1) };
      break;
    }
    try {
      stored = store.create(rr.info.group, rr.info.resource, obj);
    } catch (e) {
      if (e instanceof StoreError && e.reason === 'AlreadyExists' && meta.generateName && attempt < 5) {
        delete meta.name;
        continue;
      }
      throw e;
    }
  }
  sendJson(ctx, 201, renderObject(typeMeta(rr.info), stored, choice, 'Object'), choice.contentType);
}

/** Create-only resources (TokenReview, SubjectAccessReview, SelfSubjectReview…): answered, not stored. */
function createReview(ctx: Ctx, rr: ResourceRequest, obj: KubeObject): void {
  const id = ctx.identity;
  const extra: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(ctx.headers)) {
    if (!k.startsWith('x-remote-extra-')) continue;
    let key = k.slice('x-remote-extra-'.length);
    try {
      key = decodeURIComponent(key);
    } catch {
      // keep as is
    }
    extra[key] = Array.isArray(v) ? v : [v];
  }
  let status: unknown;
  switch (rr.info.resource) {
    case 'selfsubjectreviews':
      status = {
        userInfo: {
          username: id.remoteUser ?? 'system:anonymous',
          groups: id.remoteGroups.length ? id.remoteGroups : ['system:unauthenticated'],
          ...(Object.keys(extra).length ? { extra } : {}),
        },
      };
      break;
    case 'tokenreviews':
      status = { authenticated: true, user: { username: 'system:sim:token-user', groups: ['system:authenticated'] }, audiences: ['https://kubernetes.default.svc'] };
      break;
    case 'subjectaccessreviews':
    case 'localsubjectaccessreviews':
    case 'selfsubjectaccessreviews':
      status = { allowed: true, reason: `the simulated apiserver ${ctx.sim.name} allows everything` };
      break;
    case 'selfsubjectrulesreviews':
      status = {
        resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }],
        nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
        incomplete: false,
      };
      break;
    case 'bindings': {
      const target = (obj['target'] ?? {}) as { name?: string };
      bindPod(ctx, rr.namespace, String(obj.metadata.name ?? ''), String(target.name ?? ''));
      return send(ctx, 201, 'application/json', successStatus(201));
    }
    default:
      status = obj['status'];
  }
  delete obj['apiVersion'];
  delete obj['kind'];
  obj.metadata.creationTimestamp ??= null as unknown as string;
  if (status !== undefined) obj['status'] = status;
  const json = JSON.stringify(obj);
  sendJson(ctx, 201, `{"kind":${JSON.stringify(rr.info.kind)},"apiVersion":${JSON.stringify(rr.info.apiVersion)},${json.slice(1)}`);
}

function bindPod(ctx: Ctx, namespace: string, pod: string, node: string): void {
  const store = ctx.sim.store;
  const cur = store.get('', 'pods', namespace, pod);
  if (!cur) throw errors.notFound('', 'pods', pod);
  const next = cloneObject(cur);
  const spec = (next['spec'] ??= {}) as Record<string, unknown>;
  if (spec['nodeName']) throw errors.conflict('', 'pods', pod, `pod ${pod} is already assigned to node "${String(spec['nodeName'])}"`);
  spec['nodeName'] = node;
  store.update('', 'pods', next);
}

function doUpdate(ctx: Ctx, rr: ResourceRequest): void {
  const choice = negotiate(ctx, false);
  const obj = asObject(parseBody(ctx, 'object'));
  checkTypeMeta(obj, rr.info);
  const meta = obj.metadata;
  if (meta.name !== undefined && meta.name !== rr.name) {
    throw errors.badRequest(`the name of the object (${String(meta.name)}) does not match the name on the URL (${rr.name!})`);
  }
  meta.name = rr.name!;
  checkNamespace(ctx, rr, meta);
  const prev = mustGet(ctx, rr);
  writeUpdate(ctx, rr, prev, obj, { keepStatus: rr.info.subresources.has('status'), choice, code: 200 });
}

function writeUpdate(
  ctx: Ctx,
  rr: ResourceRequest,
  prev: StoredObject,
  next: KubeObject,
  o: { keepStatus: boolean; choice: ResourceChoice; code: number; t?: TypeMeta },
): void {
  const meta = next.metadata;
  const precondition = meta.resourceVersion !== undefined && meta.resourceVersion !== '' ? String(meta.resourceVersion) : undefined;
  if (o.keepStatus) {
    if (prev.object['status'] === undefined) delete next['status'];
    else next['status'] = prev.object['status'];
  }
  nextGeneration(prev.object, next);
  let stored: StoredObject;
  if (dryRun(ctx)) {
    if (precondition && precondition !== String(prev.rv)) {
      throw errors.conflict(rr.info.group, rr.info.resource, prev.name, `Operation cannot be fulfilled on ${rr.info.group ? `${rr.info.resource}.${rr.info.group}` : rr.info.resource} "${prev.name}": the object has been modified; please apply your changes to the latest version and try again`);
    }
    delete next['apiVersion'];
    delete next['kind'];
    meta.uid = prev.object.metadata.uid;
    meta.creationTimestamp = prev.object.metadata.creationTimestamp;
    meta.resourceVersion = String(prev.rv);
    stored = { ...prev, object: next, tail: JSON.stringify(next).slice(1) };
  } else {
    stored = ctx.sim.store.update(rr.info.group, rr.info.resource, next, precondition ? { resourceVersion: precondition } : {});
  }
  sendJson(ctx, o.code, renderObject(o.t ?? typeMeta(rr.info), stored, o.choice, 'Object'), o.choice.contentType);
}

const PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];

function applyPatch(ctx: Ctx, base: KubeObject): { result: KubeObject; apply: boolean } {
  const mt = mediaType(ctx);
  if (!PATCH_TYPES.includes(mt)) throw errors.unsupportedMediaType(mt, PATCH_TYPES);
  const apply = mt === 'application/apply-patch+yaml';
  if (apply && !ctx.query.get('fieldManager')) {
    throw new ApiError(422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch', {
      group: 'meta.k8s.io',
      kind: 'PatchOptions',
      causes: [{ reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' }],
    });
  }
  const patch = parseBody(ctx, 'patch');
  const out = mt === 'application/json-patch+json' ? jsonPatch(base, patch) : mergePatch(base, patch);
  return { result: asObject(out, 'the patched object'), apply };
}

function doPatch(ctx: Ctx, rr: ResourceRequest): void {
  const choice = negotiate(ctx, false);
  const store = ctx.sim.store;
  const prev = store.get(rr.info.group, rr.info.resource, rr.namespace, rr.name!);
  if (!prev) {
    if (mediaType(ctx) !== 'application/apply-patch+yaml') throw errors.notFound(rr.info.group, rr.info.resource, rr.name!);
    // Server-side apply of a missing object creates it.
    const { result } = applyPatch(ctx, { metadata: {} });
    checkTypeMeta(result, rr.info);
    result.metadata.name = rr.name!;
    checkNamespace(ctx, rr, result.metadata);
    delete result.metadata.resourceVersion;
    if (result['spec'] !== undefined) result.metadata.generation = 1;
    const stored = store.create(rr.info.group, rr.info.resource, result);
    return sendJson(ctx, 201, renderObject(typeMeta(rr.info), stored, choice, 'Object'), choice.contentType);
  }
  const base = cloneObject(prev);
  const { result } = applyPatch(ctx, base);
  checkTypeMeta(result, rr.info);
  if (result.metadata.name !== prev.name) throw errors.badRequest('metadata.name: Invalid value: field is immutable');
  if (rr.info.namespaced && result.metadata.namespace !== prev.namespace) throw errors.badRequest('metadata.namespace: Invalid value: field is immutable');
  writeUpdate(ctx, rr, prev, result, { keepStatus: rr.info.subresources.has('status'), choice, code: 200 });
}

interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: string[];
}

function deleteOptions(ctx: Ctx): DeleteOptions {
  if (!ctx.body || !ctx.body.length) return {};
  let v: unknown;
  try {
    v = JSON.parse(ctx.body.toString('utf8'));
  } catch (e) {
    throw errors.badRequest(`error decoding the request body: ${(e as Error).message}`);
  }
  return v && typeof v === 'object' ? (v as DeleteOptions) : {};
}

const UNDELETABLE_NAMESPACES = new Set(['default', 'kube-system', 'kube-public']);

function doDelete(ctx: Ctx, rr: ResourceRequest): void {
  const choice = negotiate(ctx, false);
  const opts = deleteOptions(ctx);
  const store = ctx.sim.store;
  if (rr.info.group === '' && rr.info.resource === 'namespaces' && UNDELETABLE_NAMESPACES.has(rr.name!)) {
    throw errors.forbidden('', 'namespaces', rr.name!, 'this namespace may not be deleted');
  }
  const pre = { ...(opts.preconditions?.uid ? { uid: opts.preconditions.uid } : {}), ...(opts.preconditions?.resourceVersion ? { resourceVersion: opts.preconditions.resourceVersion } : {}) };
  let deleted: StoredObject;
  if (dryRun(ctx) || opts.dryRun?.includes('All')) {
    deleted = mustGet(ctx, rr);
  } else {
    deleted = store.delete(rr.info.group, rr.info.resource, rr.namespace, rr.name!, pre);
    if (rr.info.group === '' && rr.info.resource === 'namespaces') store.deleteNamespaceContents(rr.name!);
  }
  sendJson(ctx, 200, renderObject(typeMeta(rr.info), deleted, choice, 'Object'), choice.contentType);
}

function doDeleteCollection(ctx: Ctx, rr: ResourceRequest): void {
  const choice = negotiate(ctx, false);
  const store = ctx.sim.store;
  const sel = selectors(ctx);
  const dry = dryRun(ctx) || deleteOptions(ctx).dryRun?.includes('All');
  const items = store
    .list(rr.info.group, rr.info.resource, rr.info.namespaced && rr.namespace ? rr.namespace : undefined)
    .filter((o) => (sel.name === undefined || o.name === sel.name) && sel.matcher(o.object));
  const deleted: StoredObject[] = [];
  for (const o of items) {
    if (rr.info.group === '' && rr.info.resource === 'namespaces' && UNDELETABLE_NAMESPACES.has(o.name)) continue;
    if (dry) {
      deleted.push(o);
      continue;
    }
    try {
      deleted.push(store.delete(o.group, o.resource, o.namespace, o.name));
      if (rr.info.group === '' && rr.info.resource === 'namespaces') store.deleteNamespaceContents(o.name);
    } catch {
      // deleted concurrently
    }
  }
  sendJson(ctx, 200, renderList(typeMeta(rr.info), rr.info.listKind, deleted, choice, 'Object', { resourceVersion: String(store.resourceVersion) }), choice.contentType);
}

// ---------------------------------------------------------------------------------------------
// subresources

function subTypeMeta(sub: SubresourceInfo): TypeMeta {
  return { kind: sub.kind, apiVersion: sub.group ? `${sub.group}/${sub.version}` : sub.version };
}

const STATUS_LIKE = new Set(['status', 'approval']);
const CONNECT = new Set(['exec', 'attach', 'portforward']);

function handleSubresource(ctx: Ctx, rr: ResourceRequest, sub: SubresourceInfo, verb: string): void {
  const name = sub.name;
  if (name === 'log') return serveLogs(ctx, rr, mustGet(ctx, rr));
  if (CONNECT.has(name)) throw errors.badRequest('Upgrade request required');
  if (name === 'proxy') {
    mustGet(ctx, rr);
    throw errors.serviceUnavailable(`error trying to reach service: the simulated apiserver ${ctx.sim.name} has no network to ${rr.info.resource}/${rr.name!}`);
  }
  if (name === 'scale') return scaleSubresource(ctx, rr, sub, verb);
  const t = subTypeMeta(sub);
  const sameKind = t.kind === rr.info.kind;
  switch (verb) {
    case 'get': {
      const choice = negotiate(ctx, false);
      return sendJson(ctx, 200, renderObject(t, mustGet(ctx, rr), choice, 'Object'), choice.contentType);
    }
    case 'update':
    case 'patch': {
      const choice = negotiate(ctx, false);
      const prev = mustGet(ctx, rr);
      let incoming: KubeObject;
      if (verb === 'update') {
        incoming = asObject(parseBody(ctx, 'object'));
        if (sameKind) checkTypeMeta(incoming, { kind: rr.info.kind, group: rr.info.group });
        if (incoming.metadata.name !== undefined && incoming.metadata.name !== rr.name) {
          throw errors.badRequest(`the name of the object (${String(incoming.metadata.name)}) does not match the name on the URL (${rr.name!})`);
        }
      } else {
        incoming = applyPatch(ctx, cloneObject(prev)).result;
      }
      let next: KubeObject;
      if (STATUS_LIKE.has(name)) {
        next = cloneObject(prev);
        if (incoming['status'] === undefined) delete next['status'];
        else next['status'] = incoming['status'];
        if (incoming.metadata.resourceVersion) next.metadata.resourceVersion = incoming.metadata.resourceVersion;
      } else {
        next = incoming;
        next.metadata.name = prev.name;
        if (rr.info.namespaced) next.metadata.namespace = prev.namespace;
      }
      return writeUpdate(ctx, rr, prev, next, { keepStatus: !STATUS_LIKE.has(name) && rr.info.subresources.has('status'), choice, code: 200, t: sameKind ? t : typeMeta(rr.info) });
    }
    case 'create':
      return subresourceCreate(ctx, rr, sub);
    case 'delete':
      throw errors.methodNotAllowed();
  }
  throw errors.methodNotAllowed();
}

function subresourceCreate(ctx: Ctx, rr: ResourceRequest, sub: SubresourceInfo): void {
  const body = asObject(parseBody(ctx, 'object'));
  const store = ctx.sim.store;
  switch (sub.name) {
    case 'eviction': {
      mustGet(ctx, rr);
      if (!dryRun(ctx)) store.delete(rr.info.group, rr.info.resource, rr.namespace, rr.name!);
      return send(ctx, 201, 'application/json', successStatus(201));
    }
    case 'binding': {
      const target = (body['target'] ?? {}) as { name?: string };
      bindPod(ctx, rr.namespace, rr.name!, String(target.name ?? ''));
      return send(ctx, 201, 'application/json', successStatus(201));
    }
    case 'token': {
      const sa = mustGet(ctx, rr);
      const spec = (body['spec'] ?? {}) as { expirationSeconds?: number; audiences?: string[] };
      const seconds = typeof spec.expirationSeconds === 'number' ? spec.expirationSeconds : 3600;
      const payload = Buffer.from(JSON.stringify({ sub: `system:serviceaccount:${sa.namespace}:${sa.name}`, iss: ctx.sim.name })).toString('base64url');
      const out = {
        kind: 'TokenRequest',
        apiVersion: 'authentication.k8s.io/v1',
        metadata: { name: sa.name, namespace: sa.namespace, creationTimestamp: null },
        spec: { audiences: spec.audiences ?? ['https://kubernetes.default.svc'], expirationSeconds: seconds, boundObjectRef: null },
        status: { token: `eyJhbGciOiJub25lIn0.${payload}.sim`, expirationTimestamp: new Date(Date.now() + seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') },
      };
      return sendJson(ctx, 201, JSON.stringify(out));
    }
    default: {
      mustGet(ctx, rr);
      delete body['apiVersion'];
      delete body['kind'];
      const t = subTypeMeta(sub);
      return sendJson(ctx, 201, `{"kind":${JSON.stringify(t.kind)},"apiVersion":${JSON.stringify(t.apiVersion)},${JSON.stringify(body).slice(1)}`);
    }
  }
}

function scaleJson(sub: SubresourceInfo, o: StoredObject): string {
  const spec = (o.object['spec'] ?? {}) as { replicas?: number; selector?: { matchLabels?: Record<string, string> } };
  const status = (o.object['status'] ?? {}) as { replicas?: number };
  const m = o.object.metadata;
  const selector = spec.selector?.matchLabels
    ? Object.entries(spec.selector.matchLabels).map(([k, v]) => `${k}=${v}`).join(',')
    : undefined;
  const scale = {
    kind: sub.kind,
    apiVersion: sub.group ? `${sub.group}/${sub.version}` : sub.version,
    metadata: { name: m.name, ...(m.namespace ? { namespace: m.namespace } : {}), uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp },
    spec: { replicas: spec.replicas ?? 1 },
    status: { replicas: status.replicas ?? 0, ...(selector ? { selector } : {}) },
  };
  return JSON.stringify(scale);
}

function scaleSubresource(ctx: Ctx, rr: ResourceRequest, sub: SubresourceInfo, verb: string): void {
  const prev = mustGet(ctx, rr);
  if (verb === 'get') return sendJson(ctx, 200, scaleJson(sub, prev));
  let scale: KubeObject;
  if (verb === 'update') scale = asObject(parseBody(ctx, 'object'));
  else if (verb === 'patch') scale = applyPatch(ctx, JSON.parse(scaleJson(sub, prev)) as KubeObject).result;
  else throw errors.methodNotAllowed();
  const replicas = (scale['spec'] as { replicas?: unknown } | undefined)?.replicas;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
    throw errors.invalid(sub.group, 'scales', sub.kind, prev.name, 'spec.replicas', 'Invalid value: must be a non-negative integer');
  }
  const next = cloneObject(prev);
  ((next['spec'] ??= {}) as Record<string, unknown>)['replicas'] = replicas;
  const rv = scale.metadata.resourceVersion ? String(scale.metadata.resourceVersion) : undefined;
  nextGeneration(prev.object, next);
  const stored = dryRun(ctx) ? prev : ctx.sim.store.update(rr.info.group, rr.info.resource, next, rv ? { resourceVersion: rv } : {});
  sendJson(ctx, 200, scaleJson(sub, stored));
}
