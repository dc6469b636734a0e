/** Endpoints with a rate budget of their own (contract part 8; company, phone and download are ours to set). */
export type EndpointId = 'validate' | 'batch' | 'start-session' | 'autocomplete' | 'company' | 'phone' | 'download';

/**
 * A request-rate limiter. The transport calls `acquire` before every attempt of a request (retries
 * included), `ended` when that attempt ends, and `backoff` when the platform answered 429.
 */
export interface Throttle {
  /**
   * Resolves when one request to `endpoint` may be sent; rejects if `signal` aborts first. May
   * resolve with a ticket: pass it to `ended` when that attempt ends.
   */
  acquire(endpoint: EndpointId, signal?: AbortSignal): Promise<number | void>;
  /**
   * The attempt sent under `ticket` ended, whatever the outcome: an answer (any status), a network
   * error (connection refused or reset, socket hang up), a timeout or an abort by the caller. Told
   * once per ticket, the moment the attempt ends. If the platform counted the request, it did so
   * before now (an answer comes after the count; nothing sent on a connection arrives after that
   * connection is gone), so the request a second's worth of requests later must go at least one
   * second from now. The request still counts against the rate: nothing is handed back. A streamed
   * answer (a download) ends its attempt when its status and headers arrive: what then happens to
   * the body changes nothing the platform counted. Optional, and without a ticket nothing happens.
   * `meteredAttempt` (throttle/metered.ts) is the one caller. `unsent`: the attempt failed before
   * its request went out (its connection was never made), so the platform did not count it.
   */
  ended?(endpoint: EndpointId, ticket: number | void, unsent?: boolean): void;
  /**
   * A 429 came back: slow this endpoint's shared rate down (it recovers gradually afterwards) and,
   * given `retryAfterMs`, hold every sender back that long, but never longer than `maxHoldMs`.
   */
  backoff(endpoint: EndpointId, retryAfterMs?: number): void;
}
