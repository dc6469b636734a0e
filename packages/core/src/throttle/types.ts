/** Endpoints with a rate budget of their own (contract part 8; company, phone and download are ours to set). */
export type EndpointId = 'validate' | 'batch' | 'start-session' | 'autocomplete' | 'company' | 'phone' | 'download';

/**
 * A request-rate limiter. The transport calls `acquire` before every attempt of a request (retries
 * included) and `backoff` when the platform answered 429.
 */
export interface Throttle {
  /**
   * Resolves when one request to `endpoint` may be sent; rejects if `signal` aborts first. May
   * resolve with a ticket: pass it to `answered` when the answer to that request arrives.
   */
  acquire(endpoint: EndpointId, signal?: AbortSignal): Promise<number | void>;
  /**
   * The platform answered the request sent under `ticket` (any status). The platform counted it
   * at some moment before this one, so the request a second's worth of requests later must go at
   * least one second from now; optional, and without a ticket nothing happens.
   */
  answered?(endpoint: EndpointId, ticket: number | void): void;
  /**
   * A 429 came back: slow this endpoint's shared rate down (it recovers gradually afterwards) and,
   * given `retryAfterMs`, hold every sender back that long, but never longer than `maxHoldMs`.
   */
  backoff(endpoint: EndpointId, retryAfterMs?: number): void;
}
