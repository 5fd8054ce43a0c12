// What mvproxy's own calls (discovery, probes, Leases) ask of an HTTP client: the part of undici's
// Dispatcher.request they used, so a test may still hand an undici Pool where an OwnDispatcher is
// expected. The client is upstream/own-client.ts; here so that aggregation/, off the request path,
// may name the type without importing a stage.
import type { IncomingHttpHeaders } from 'node:http';

export interface OwnRequestOptions {
  path: string;
  method: string;
  headers?: Record<string, string | string[] | undefined> | null;
  body?: string | Buffer | null;
  /** Milliseconds from the request's start to the response head. */
  headersTimeout?: number;
  /** Milliseconds the response body may stay silent (reset by every byte). */
  bodyTimeout?: number;
  signal?: AbortSignal | null;
}

export interface OwnResponseBody extends AsyncIterable<Buffer> {
  text(): Promise<string>;
  json(): Promise<unknown>;
  arrayBuffer(): Promise<ArrayBuffer>;
  /** Reads and drops the body; one longer than DUMP_LIMIT_BYTES closes its connection instead. */
  dump(): Promise<void>;
  destroy(err?: Error): unknown;
}

export interface OwnResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: OwnResponseBody;
}

export interface OwnDispatcher {
  request(o: OwnRequestOptions): Promise<OwnResponse>;
  /** New requests fail; the ones in flight finish, then the connections close. */
  close(): Promise<void>;
  /** Everything ends now, in-flight requests with an error. */
  destroy(): Promise<void>;
}
