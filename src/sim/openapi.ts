// A minimal OpenAPI v3 (/openapi/v3 and /openapi/v3/<api|apis/g>/<v>): paths with a PATCH operation
// per resource carrying x-kubernetes-group-version-kind and the fieldValidation parameter. That is
// what kubectl's query-param verifier looks for before it sends fieldValidation=Strict (server-side
// validation) for `kubectl create -f` / `apply`. No schemas: kubectl falls back to its compiled-in types.
import type { Catalog, VersionInfo } from './catalog';
import { etagOf } from './discovery';

export interface OpenApiDocuments {
  readonly root: Buffer;
  /** 'api/v1', 'apis/<group>/<version>' → document. */
  readonly groupVersions: ReadonlyMap<string, { body: Buffer; etag: string }>;
}

const QUERY_PARAMS = ['dryRun', 'fieldManager', 'fieldValidation', 'force', 'pretty'].map((name) => ({
  name,
  in: 'query',
  schema: { type: name === 'force' ? 'boolean' : 'string', uniqueItems: true },
}));

function gvDocument(c: Catalog, v: VersionInfo): unknown {
  const base = v.group ? `/apis/${v.group}/${v.version}` : `/api/${v.version}`;
  const paths: Record<string, unknown> = {};
  for (const r of v.resources.values()) {
    if (!r.verbs.has('patch')) continue;
    const path = r.namespaced ? `${base}/namespaces/{namespace}/${r.resource}/{name}` : `${base}/${r.resource}/{name}`;
    paths[path] = {
      patch: {
        operationId: `patch${r.namespaced ? 'Namespaced' : ''}${r.kind}`,
        parameters: QUERY_PARAMS,
        responses: { '200': { description: 'OK' } },
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.kind },
      },
      parameters: [
        { name: 'name', in: 'path', required: true, schema: { type: 'string', uniqueItems: true } },
        ...(r.namespaced ? [{ name: 'namespace', in: 'path', required: true, schema: { type: 'string', uniqueItems: true } }] : []),
      ],
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: c.kubernetesVersion === 'v1.33' ? 'v1.33.0' : 'v1.37.0' },
    paths,
    components: { schemas: {} },
  };
}

export function buildOpenApi(c: Catalog): OpenApiDocuments {
  const groupVersions = new Map<string, { body: Buffer; etag: string }>();
  const rootPaths: Record<string, { serverRelativeURL: string }> = {};
  for (const v of c.byApiVersion.values()) {
    const key = v.group ? `apis/${v.group}/${v.version}` : `api/${v.version}`;
    const body = Buffer.from(JSON.stringify(gvDocument(c, v)));
    const etag = etagOf(body);
    groupVersions.set(key, { body, etag });
    rootPaths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${etag.slice(1, 129)}` };
  }
  return { root: Buffer.from(JSON.stringify({ paths: rootPaths })), groupVersions };
}
