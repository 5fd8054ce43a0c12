// The /openapi/v3 index mvproxy serves (beyond in-tree; why: discovery/openapi.ts): the local
// apiserver's, fetched off the request path, plus the group/versions only peers serve, merged at
// publish time into the snapshot.

import type { OwnDispatcher } from '../api/own-requests';

/** Where the index's group/version documents live; the request path matches it too (discovery/openapi.ts). */
export const OPENAPI_V3_PREFIX = '/openapi/v3/';

export interface OpenAPIIndex {
  readonly etag: string;
  /** The local apiserver's index as received. */
  readonly raw: Buffer;
}

/** Fetches the local apiserver's /openapi/v3 index (If-None-Match); undefined when it has none (404). */
export async function fetchOpenAPIIndex(local: OwnDispatcher, prev: OpenAPIIndex | undefined, timeoutMs: number): Promise<OpenAPIIndex | undefined> {
  const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'mvproxy-openapi' };
  if (prev?.etag) headers['if-none-match'] = prev.etag;
  const res = await local.request({ path: '/openapi/v3', method: 'GET', headers, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  if (res.statusCode === 304 && prev) {
    await res.body.dump();
    return prev;
  }
  const raw = Buffer.from(await res.body.arrayBuffer());
  if (res.statusCode === 404) return undefined;
  if (res.statusCode !== 200) throw new Error(`GET /openapi/v3: status ${res.statusCode}`);
  return { etag: String(res.headers.etag ?? ''), raw };
}

/** The index path of a group/version: "api/v1" for the core group, "apis/<g>/<v>" otherwise. */
function openAPIIndexKey(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

/**
 * Where the group/versions only peers serve come from: the route table being published
 * (routing/routetable.ts RouteTable has this method). Declared here, as a shape, so that this
 * folder does not import the routing stage.
 */
export interface PeerOnlyGroupVersions {
  peerOnlyGroupVersions(): Iterable<[group: string, version: string]>;
}

/**
 * The local index plus the group/versions only peers serve. Returns undefined when there is
 * nothing to add (the local index is then served as the apiserver sends it) or it cannot be read.
 */
export function mergeOpenAPIIndex(local: OpenAPIIndex, table: PeerOnlyGroupVersions): Buffer | undefined {
  const extra = [...table.peerOnlyGroupVersions()];
  if (extra.length === 0) return undefined;
  let doc: { paths?: Record<string, unknown> };
  try {
    doc = JSON.parse(local.raw.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof doc !== 'object' || doc === null) return undefined;
  const paths: Record<string, unknown> = { ...(doc.paths ?? {}) };
  for (const [g, v] of extra) {
    const key = openAPIIndexKey(g, v);
    if (!(key in paths)) paths[key] = { serverRelativeURL: `${OPENAPI_V3_PREFIX}${key}` };
  }
  return Buffer.from(JSON.stringify({ ...doc, paths }));
}

