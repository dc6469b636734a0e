import { DqError, PlatformError } from '../../errors/dq-error.js';

/** Retry settings. Attempts and total time both bound the work; whichever runs out first wins. */
export interface RetryOptions {
  /** Attempts including the first one (default 6). 1 disables retries. */
  maxAttempts: number;
  /** Budget in ms for all attempts and waits of one request (default 60 000). */
  maxTotalMs: number;
  /** Backoff base in ms: attempt n waits up to `baseDelayMs * 2^(n-1)` (default 200). */
  baseDelayMs: number;
  /** Upper bound of one backoff wait in ms (default 10 000). */
  maxDelayMs: number;
  /**
   * Longest `Retry-After` waited out, in ms (default 30 000). A longer one stops the run with code
   * `retry-after-too-long` (exit 75) instead: the platform asked us to come back later.
   */
  maxRetryAfterMs: number;
  /** Source of randomness in [0, 1) for the jitter (default `Math.random`). */
  random: () => number;
}

/** Defaults of {@link RetryOptions}. */
export const DEFAULT_RETRY: Readonly<RetryOptions> = {
  maxAttempts: 6,
  maxTotalMs: 60_000,
  baseDelayMs: 200,
  maxDelayMs: 10_000,
  maxRetryAfterMs: 30_000,
  random: Math.random,
};

/**
 * How to repeat a failed attempt, decided from the error alone:
 * - `never`: 4xx, local refusals, aborts, contract violations, errors of unknown origin;
 * - `retry-after`: the platform said when (429 with `Retry-After`): honour it if the policy waits
 *   that long, else the retrier stops the run;
 * - `backoff`: 5xx, 429 without `Retry-After`, timeouts, connection resets.
 */
export type RetryDecision = { kind: 'never' } | { kind: 'backoff' } | { kind: 'retry-after'; ms: number };

/** Decides whether and how `error` may be repeated (contract 7.1: 4xx repeat identically, 5xx may be retried). */
export function decideRetry(error: unknown): RetryDecision {
  // Programming errors (TypeError, RangeError) and anything foreign are never retried.
  if (!(error instanceof DqError) || !error.retriable) return { kind: 'never' };
  if (error instanceof PlatformError && error.retryAfterMs !== undefined) {
    return { kind: 'retry-after', ms: error.retryAfterMs };
  }
  return { kind: 'backoff' };
}

/**
 * Wait in ms before attempt `attempt + 1` (after `attempt` failures): exponential backoff with full
 * jitter, `random() * min(maxDelayMs, baseDelayMs * 2^(attempt-1))`, or `Retry-After` capped.
 */
export function retryDelay(decision: RetryDecision, attempt: number, options: RetryOptions): number {
  if (decision.kind === 'never') return 0;
  if (decision.kind === 'retry-after') return Math.min(Math.max(0, decision.ms), options.maxRetryAfterMs);
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(options.random() * ceiling);
}

/**
 * Parses a `Retry-After` header (delta seconds or an HTTP date) to ms; undefined if absent or
 * unreadable. `now` is the clock in ms since the epoch.
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Fills `options` with {@link DEFAULT_RETRY} and checks every value, naming the bad one. */
export function resolveRetryOptions(...layers: ReadonlyArray<Partial<RetryOptions> | undefined>): RetryOptions {
  const out: RetryOptions = { ...DEFAULT_RETRY };
  for (const layer of layers) {
    if (layer === undefined) continue;
    for (const [key, value] of Object.entries(layer)) {
      if (value !== undefined) (out as unknown as Record<string, unknown>)[key] = value;
    }
  }
  const positive: Array<keyof RetryOptions> = ['maxAttempts', 'maxTotalMs', 'baseDelayMs', 'maxDelayMs', 'maxRetryAfterMs'];
  for (const key of positive) {
    const v = out[key];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (key === 'maxAttempts' && (v < 1 || !Number.isInteger(v)))) {
      throw new RangeError(`retry.${key} must be a ${key === 'maxAttempts' ? 'positive integer' : 'non-negative number'}; got ${String(v)}`);
    }
  }
  return out;
}
