// Why getting a discovery document failed: thrown by the fetch (snapshot/fetch.ts) and by the
// decoder (decode.ts), on the main thread or in the merge worker (merge.worker.ts carries the code
// back), and read by the publisher to count and log the failure.

import type { ErrorCode } from '../api/errors';

/** Why a discovery fetch failed: one of the MVP_ERR_DISCOVERY_* codes, each one's meaning its entry in api/errors.ts. */
export type DiscoveryErrorCode =
  | typeof ErrorCode.MVP_ERR_DISCOVERY_STATUS
  | typeof ErrorCode.MVP_ERR_DISCOVERY_NOT_AGGREGATED
  | typeof ErrorCode.MVP_ERR_DISCOVERY_TOO_LARGE
  | typeof ErrorCode.MVP_ERR_DISCOVERY_DECODE
  | typeof ErrorCode.MVP_ERR_DISCOVERY_OVER_LIMIT
  | typeof ErrorCode.MVP_ERR_DISCOVERY_TRANSPORT;

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
