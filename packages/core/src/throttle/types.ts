/** Endpoints with a rate budget of their own (contract part 8; company, phone and download are ours to set). */
export type EndpointId =
  | 'validate'
  | 'batch'
  | 'start-session'
  | 'autocomplete'
  | 'company'
  | 'phone'
  | 'download';

/**
 * A request-rate limiter. The transport calls `acquire` before every attempt of a request (retries
 * included) and `backoff` when the platform answered 429.
 */
export interface Throttle {
  /** Resolves when one request to `endpoint` may be sent; rejects if `signal` aborts first. */
  acquire(endpoint: EndpointId, signal?: AbortSignal): Promise<void>;
  /**
   * A 429 came back: slow this endpoint's shared rate down (it recovers gradually afterwards) and,
   * given `retryAfterMs`, hold every sender back that long, but never longer than `maxHoldMs`.
   */
  backoff(endpoint: EndpointId, retryAfterMs?: number): void;
}
