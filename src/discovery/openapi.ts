// OpenAPI v3 across versions (beyond in-tree). kubectl create/apply validate against the server's
// OpenAPI: GET /openapi/v3 (an index of group/versions), then the group/version's document. During
// an upgrade the old apiserver's index lacks the new group/versions, so `kubectl apply` of a
// peer-only resource fails validation even though the write itself would be proxied. mvproxy lists
// peer-only group/versions in the index (pointing at its own URL, without a hash: each peer may hash
// differently) and proxies /openapi/v3/apis/<g>/<v> to a peer that serves the group/version.
//
// This file is the request path's part (which /openapi/v3 path names a group/version); the index
// itself is fetched and merged off the request path (aggregation/openapi-index.ts).

import { OPENAPI_V3_PREFIX } from '../aggregation/openapi-index';

/**
 * The group/version named by an /openapi/v3/<api/v>|<apis/g/v> path, or undefined.
 * @param path the raw request path
 */
export function openAPIGroupVersion(path: string): [group: string, version: string] | undefined {
  if (!path.startsWith(OPENAPI_V3_PREFIX)) return undefined;
  const rest = path.slice(OPENAPI_V3_PREFIX.length);
  const parts = rest.split('/');
  if (parts[0] === 'api' && parts.length === 2 && parts[1]) return ['', parts[1]];
  if (parts[0] === 'apis' && parts.length === 3 && parts[1] && parts[2]) return [parts[1], parts[2]];
  return undefined;
}
