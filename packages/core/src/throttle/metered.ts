import { PlatformError } from '../errors/dq-error.js';
import type { EndpointId, Throttle } from './types.js';

/** How one attempt is metered: its endpoint's budget, the caller's signal and the longest hold a 429 may impose. */
export interface MeteredAttempt {
  endpoint: EndpointId;
  /** Aborts the wait for a slot (the attempt itself gets the same signal from the caller). */
  signal?: AbortSignal | undefined;
  /** Longest `Retry-After` (ms) a 429 may hold every sender of the endpoint back: the retry policy's `maxRetryAfterMs`. */
  maxHoldMs: number;
  /**
   * Whether a failure of `send` means its request never went out (its connection was never made):
   * the attempt is then not counted as sent ({@link failedUnsent}, the spending cap's count).
   */
  neverSent?: (error: unknown) => boolean;
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
  let ticket: number | void;
  try {
    ticket = await throttle?.acquire(a.endpoint, a.signal);
  } catch (error) {
    if (typeof error === 'object' && error !== null) refusedUnsent.add(error);
    throw error;
  }
  let result: T;
  try {
    result = await send();
  } catch (error) {
    const unsent = a.neverSent?.(error) === true;
    if (unsent && typeof error === 'object' && error !== null) refusedUnsent.add(error);
    throttle?.ended?.(a.endpoint, ticket, unsent);
    if (error instanceof PlatformError && error.status === 429) {
      throttle?.backoff(a.endpoint, error.retryAfterMs === undefined ? undefined : Math.min(error.retryAfterMs, a.maxHoldMs));
    }
    throw error;
  }
  throttle?.ended?.(a.endpoint, ticket);
  return result;
}

/**
 * Errors of attempts whose request did not go out: the budget refused them (the spending cap, a
 * shared budget that cannot be used, a wait aborted), or their connection was never made. A
 * refusal error is made for the attempt it refuses; only a budget that failed to open hands one
 * error to every waiting attempt, and those are first attempts (an attempt that went out had found
 * the budget open).
 */
const refusedUnsent = new WeakSet<object>();

/**
 * Whether `error`, the failure of an attempt or of a whole request, means that it did not go out:
 * the budget refused it or its connection was never made ({@link meteredAttempt}), and for a
 * request, no earlier attempt was sent either ({@link requestUnsent}). Such a request is not a call
 * made (the run report's `apiCalls`).
 */
export function failedUnsent(error: unknown): boolean {
  return typeof error === 'object' && error !== null && refusedUnsent.has(error);
}

/**
 * Records whether any attempt of the request that failed with `error` went out: one that did makes
 * the request a call sent although its last attempt did not go out (a 5xx, then the spending cap);
 * none that did makes it a call not sent whatever its last error (retries given up on a refused
 * connection).
 */
export function requestUnsent(error: unknown, anySent: boolean, attempts?: number): void {
  if (typeof error !== 'object' || error === null) return;
  if (anySent) refusedUnsent.delete(error);
  else refusedUnsent.add(error);
  if (attempts !== undefined) requestAttempts.set(error, attempts);
}

/** Attempts made by the request that failed with an error (see {@link attemptsMade}). */
const requestAttempts = new WeakMap<object, number>();

/**
 * The attempts the request that failed with `error` made, whatever ended it (retries used up, a
 * non-retriable answer after a retried one, an abort): the run report's `retries` counts them.
 */
export function attemptsMade(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null ? requestAttempts.get(error) : undefined;
}
