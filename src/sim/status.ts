// metav1.Status bodies, shaped like the ones k8s.io/apimachinery/pkg/api/errors produces.

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: { reason?: string; message: string; field?: string }[];
  retryAfterSeconds?: number;
}

export class ApiError extends Error {
  constructor(readonly code: number, readonly reason: string, message: string, readonly details: StatusDetails = {}) {
    super(message);
    this.name = 'ApiError';
  }

  body(): string {
    return statusBody(this.code, this.reason, this.message, this.details);
  }
}

export function statusBody(code: number, reason: string, message: string, details: StatusDetails = {}): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details, code });
}

export function successStatus(code: number, details?: StatusDetails): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', ...(details ? { details } : {}), code });
}

/** The exact body a kube-apiserver returns for an unknown path. */
export const NOT_FOUND_BODY = Buffer.from(
  statusBody(404, 'NotFound', 'the server could not find the requested resource'),
);

function qualified(group: string, resource: string): string {
  return group ? `${resource}.${group}` : resource;
}

function details(group: string, resource: string, name: string): StatusDetails {
  // Go omits the empty group (omitempty); "kind" carries the resource, as NewNotFound does.
  return group ? { name, group, kind: resource } : { name, kind: resource };
}

export const errors = {
  notFound(group: string, resource: string, name: string): ApiError {
    return new ApiError(404, 'NotFound', `${qualified(group, resource)} "${name}" not found`, details(group, resource, name));
  },
  alreadyExists(group: string, resource: string, name: string): ApiError {
    return new ApiError(409, 'AlreadyExists', `${qualified(group, resource)} "${name}" already exists`, details(group, resource, name));
  },
  conflict(group: string, resource: string, name: string, message: string): ApiError {
    return new ApiError(409, 'Conflict', message, details(group, resource, name));
  },
  badRequest(message: string): ApiError {
    return new ApiError(400, 'BadRequest', message);
  },
  invalid(group: string, resource: string, kind: string, name: string, field: string, message: string): ApiError {
    const d: StatusDetails = { ...(name ? { name } : {}), ...(group ? { group } : {}), kind, causes: [{ reason: 'FieldValueRequired', message, field }] };
    return new ApiError(422, 'Invalid', `${kind}${group ? `.${group}` : ''} "${name}" is invalid: ${field}: ${message}`, d);
  },
  methodNotAllowed(): ApiError {
    return new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
  },
  notAcceptable(): ApiError {
    return new ApiError(406, 'NotAcceptable', 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf');
  },
  unsupportedMediaType(contentType: string, accepted: string[]): ApiError {
    return new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format (${contentType}) - accepted media types include: ${accepted.join(', ')}`);
  },
  gone(message: string): ApiError {
    return new ApiError(410, 'Expired', message);
  },
  forbidden(group: string, resource: string, name: string, message: string): ApiError {
    return new ApiError(403, 'Forbidden', `${qualified(group, resource)} "${name}" is forbidden: ${message}`, details(group, resource, name));
  },
  tooLarge(): ApiError {
    return new ApiError(413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728');
  },
  serviceUnavailable(message: string): ApiError {
    return new ApiError(503, 'ServiceUnavailable', message);
  },
};
