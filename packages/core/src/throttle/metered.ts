import { PlatformError } from '../errors/dq-error.js';
import type { EndpointId, Throttle } from './types.js';

/** How one attempt is metered: its endpoint's budget, the caller's signal and the longest hold a 429 may impose. */
export interface MeteredAttempt {
  endpoint: EndpointId;
  /** Aborts the wait for a slot (the attempt itself gets the same signal from the caller). */
  signal?: AbortSignal | undefined;
  /** Longest `Retry-After` (ms) a 429 may hold every sender of the endpoint back: the retry policy's `maxRetryAfterMs`. */
  maxHoldMs: number;
}

/**
 * One attempt under the rate budget, the one code path of every attempt the transport and the
 * download client make: takes a slot (`acquire`), runs `send`, and tells the budget of the
 * attempt's end once, the moment `send` settles, whatever settled it (an answer of any status, a
 * connection refused or reset, a timeout, an abort by the caller), before anything else happens.
 * Then a 429 slows the endpoint for every sender sharing the budget and holds them back for its
 * `Retry-After`, capped by `maxHoldMs`. `send` must settle as soon as the platform has answered (or
 * can no longer): it counted the request before that, so the request frees its share of the
 * limit at once. A streamed body (a download) is read after `send` returned its status and headers.
 */
export async function meteredAttempt<T>(throttle: Throttle | undefined, a: MeteredAttempt, send: () => Promise<T>): Promise<T> {
  const ticket = await throttle?.acquire(a.endpoint, a.signal);
  let result: T;
  try {
    result = await send();
  } catch (error) {
    throttle?.ended?.(a.endpoint, ticket);
    if (error instanceof PlatformError && error.status === 429) {
      throttle?.backoff(a.endpoint, error.retryAfterMs === undefined ? undefined : Math.min(error.retryAfterMs, a.maxHoldMs));
    }
    throw error;
  }
  throttle?.ended?.(a.endpoint, ticket);
  return result;
}
