// metav1.Status bodies: every error a Kubernetes client sees from mvproxy itself is one of these,
// so kubectl and client-go print the message and act on `reason` (e.g. retry on ServiceUnavailable)
// instead of failing to decode a plain-text body (the in-tree proxy's 503 is plain text, docs/kubernetes-mvp.md §2.4).

export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'RequestEntityTooLarge'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'Timeout';

export interface StatusDetails {
  group?: string;
  kind?: string;
  name?: string;
  retryAfterSeconds?: number;
  causes?: { reason?: string; message?: string; field?: string }[];
}

/** Encodes a failure Status exactly as kube-apiserver's JSON serializer lays it out (compact). */
export function statusBody(code: number, reason: StatusReason, message: string, details?: StatusDetails): Buffer {
  return Buffer.from(
    JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      details: details ?? {},
      code,
    }),
  );
}

export const STATUS_CONTENT_TYPE = 'application/json';
