// Why getting a discovery document failed: thrown by the fetch (snapshot/fetch.ts) and by the
// decoder (decode.ts), on the main thread or in the merge worker (merge.worker.ts carries the code
// back), and read by the publisher to count and log the failure.

/**
 * Why a discovery fetch failed. STATUS: an answer other than 200 (or a 304 with nothing cached);
 * NOT_AGGREGATED: a 200 that is not aggregated discovery by its Content-Type; TOO_LARGE: a body
 * over MAX_DISCOVERY_BODY_BYTES (decode.ts); DECODE: a body Kubernetes' decoder would refuse
 * (decode.ts); OVER_LIMIT: a peer's document listing more groups, versions or resources than
 * decode.ts PEER_DISCOVERY_LIMITS allow; TRANSPORT: no answer (connect, TLS, timeout, reset).
 */
export type DiscoveryErrorCode =
  | 'MVP_ERR_DISCOVERY_STATUS'
  | 'MVP_ERR_DISCOVERY_NOT_AGGREGATED'
  | 'MVP_ERR_DISCOVERY_TOO_LARGE'
  | 'MVP_ERR_DISCOVERY_DECODE'
  | 'MVP_ERR_DISCOVERY_OVER_LIMIT'
  | 'MVP_ERR_DISCOVERY_TRANSPORT';

export class DiscoveryFetchError extends Error {
  constructor(
    readonly code: DiscoveryErrorCode,
    message: string,
    /** The HTTP status the server answered (absent: no answer). */
    readonly status?: number,
  ) {
    super(message);
  }
}
