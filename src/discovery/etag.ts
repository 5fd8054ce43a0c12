// The discovery ETag (kubernetes/apiserver pkg/endpoints/discovery/aggregated/etag.go
// `calculateETag` + `ServeHTTPWithETag`; docs/kubernetes-mvp.md §5.2).
//
// Upstream: fmt.Sprintf("%X", sha512.Sum512(json.Marshal(list))) quoted with strconv.Quote.
// The hex digits never need escaping, so the quoting is plain double quotes. We hash our own
// compact JSON encoding of the list (aggregation/codec/json.ts); the value is opaque to clients, which only
// echo it back in If-None-Match (compared by exact string equality).

import { createHash } from 'node:crypto';

/** `"<UPPERCASE HEX SHA-512 of jsonCompact>"`, quotes included, ready for the ETag header. */
export function discoveryETag(jsonCompact: Buffer | string): string {
  const hex = createHash('sha512').update(jsonCompact).digest('hex').toUpperCase();
  return `"${hex}"`;
}
