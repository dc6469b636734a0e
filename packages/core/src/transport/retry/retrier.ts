import { DqError, RetriesExhaustedError } from '../../errors/dq-error.js';
import { LOCAL_CODES } from '../../errors/problem-table.js';
import { abortedError } from '../../errors/aborted.js';
import { sleep as abortableSleep } from '../../throttle/sleep.js';
import { decideRetry, resolveRetryOptions, retryDelay } from './policy.js';
import type { RetryDecision, RetryOptions } from './policy.js';

/** What one attempt is told about its place in the sequence. */
export interface AttemptInfo {
  /** 1 for the first attempt. */
  attempt: number;
  /** Ms left of the total budget; an attempt should not run longer. */
  remainingMs: number;
}

/** Reported before each wait. */
export interface RetryEvent {
  /** The attempt that just failed (1-based). */
  attempt: number;
  error: unknown;
  decision: RetryDecision;
  delayMs: number;
}

/** Options of one {@link retry} run. */
export interface RetryRunOptions extends Partial<RetryOptions> {
  /** Aborts the run, a pending wait included. */
  signal?: AbortSignal;
  /** Called before each wait (logging, throttle backoff). */
  onRetry?: (event: RetryEvent) => void;
  /**
   * Clock in ms for the time budget (default the monotonic clock, `performance.now`: an NTP step
   * or a clock set by hand during a wait neither ends the retries at once nor prolongs them).
   */
  now?: () => number;
}

/** Milliseconds on the monotonic clock: intervals only, unaffected by changes of the wall clock. */
const monotonicNow = (): number => performance.now();

/**
 * The one retrier of the repo. Runs `attempt` until it succeeds, fails with a non-retriable error
 * (rethrown as is), or attempts or total time run out — then throws a non-retriable
 * {@link RetriesExhaustedError} keeping the last failure as `cause`. Waits are abortable. With
 * `maxAttempts: 1` every failure is rethrown as is.
 */
export function retry<T>(attempt: (info: AttemptInfo) => Promise<T>, options: RetryRunOptions = {}): Promise<T> {
  const { signal, onRetry, now, ...rest } = options;
  return retryResolved(attempt, resolveRetryOptions(rest), { signal, onRetry, now });
}

/** The first attempt a caller made itself, failing with `error`. */
export interface FailedFirst {
  error: unknown;
  /**
   * When it started, in ms on the run's `now` clock when one is given, else on the wall clock
   * (`Date.now()`); with `elapsedMs` it is not needed.
   */
  started?: number;
  /** How long it took, in ms measured on a monotonic clock (`performance.now()`): preferred to `started`. */
  elapsedMs?: number;
}

/**
 * {@link retry} with options already checked by `resolveRetryOptions`: the transport resolves its
 * policy once instead of once per request. With `run.failed` the first attempt was already made
 * (failing with `error`) by the caller, which keeps a call that succeeds the first time off the
 * retry machinery altogether.
 */
export async function retryResolved<T>(
  attempt: (info: AttemptInfo) => Promise<T>,
  policy: Readonly<RetryOptions>,
  run: Pick<RetryRunOptions, 'signal' | 'onRetry' | 'now'> & { failed?: FailedFirst },
): Promise<T> {
  const { signal, onRetry, failed } = run;
  const now = run.now ?? monotonicNow;
  const started = startOf(failed, run.now !== undefined, policy, now());
  const tryOnce = (n: number): Promise<T> => {
    throwIfAborted(signal);
    // Whole milliseconds (the monotonic clock has fractions): callers hand it to timers that take integers only.
    return attempt({ attempt: n, remainingMs: Math.max(0, Math.floor(policy.maxTotalMs - (now() - started))) });
  };
  let error: unknown;
  if (failed !== undefined) error = failed.error;
  else {
    try {
      return await tryOnce(1);
    } catch (e) {
      error = e;
    }
  }
  for (let n = 1; ; n++) {
    if (signal?.aborted) throw abortedError(signal, error);
    const decision = decideRetry(error);
    // With retries switched off (maxAttempts 1) the caller gets the failure itself.
    if (decision.kind === 'never' || policy.maxAttempts === 1) throw error;
    // The platform asked for a longer pause than this policy waits: no retry can succeed before
    // then, and every other request to that endpoint would get the same answer. Stop the run
    // (exit 75, checkpoint kept) instead of holding every caller for that long.
    if (decision.kind === 'retry-after' && decision.ms > policy.maxRetryAfterMs) {
      // The time to come back is told on the wall clock (a date the user compares with theirs).
      throw comeBackLater(error, decision.ms, policy.maxRetryAfterMs, Date.now());
    }
    const delayMs = retryDelay(decision, n, policy);
    const elapsed = now() - started;
    if (n >= policy.maxAttempts || elapsed + delayMs >= policy.maxTotalMs) {
      throw exhausted(error, n, Math.round(elapsed), n >= policy.maxAttempts ? 'attempts' : 'time');
    }
    onRetry?.({ attempt: n, error, decision, delayMs });
    await sleep(delayMs, signal);
    try {
      return await tryOnce(n + 1);
    } catch (e) {
      error = e;
    }
  }
}

/**
 * The start of the retry run on the `now` clock (read as `nowMs`): the caller's first attempt, if
 * any, counted from its monotonic `elapsedMs`, or its `started`. A wall-clock `started` (the clock
 * of `now` is monotonic) gives the first attempt's length only as the wall clock saw it: a step of
 * that clock during the attempt is taken as at most the whole time budget, never less than nothing.
 */
function startOf(failed: FailedFirst | undefined, ownClock: boolean, policy: Readonly<RetryOptions>, nowMs: number): number {
  if (failed === undefined) return nowMs;
  if (failed.elapsedMs !== undefined) return nowMs - Math.max(0, failed.elapsedMs);
  if (failed.started === undefined) return nowMs;
  if (ownClock) return failed.started;
  return nowMs - Math.min(Math.max(0, Date.now() - failed.started), policy.maxTotalMs);
}

/**
 * The run stop for a `Retry-After` longer than the policy's `maxRetryAfterMs`: scope `run`, code
 * `retry-after-too-long` (exit code 75: worth a rerun after the time it names).
 */
export function comeBackLater(error: unknown, waitMs: number, maxMs: number, nowMs: number): DqError {
  const last = error instanceof DqError ? error : undefined;
  const at = new Date(nowMs + waitMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const answer = `HTTP ${last?.status ?? '?'}, Retry-After ${seconds(waitMs)}, request id ${last?.requestId ?? 'none'}`;
  return new DqError(
    `the platform asked us to come back at ${at} (${answer}), later than the retry policy waits (${seconds(maxMs)}); the run stops here: run it again after that time`,
    { code: LOCAL_CODES.retryAfterTooLong, retriable: false, scope: 'run', status: last?.status, requestId: last?.requestId, cause: error },
  );
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

function exhausted(error: unknown, attempts: number, elapsedMs: number, limit: 'attempts' | 'time'): RetriesExhaustedError {
  const last = error instanceof DqError ? error : undefined;
  const why = limit === 'attempts' ? `after ${attempts} attempts` : `after ${attempts} attempts, ${elapsedMs} ms: the retry time budget is used up`;
  const what = error instanceof Error ? error.message : String(error);
  return new RetriesExhaustedError(`Gave up ${why}; try again later. Last failure: ${what}`, {
    attempts,
    cause: error,
    status: last?.status,
    requestId: last?.requestId,
  });
}

/** Resolves after `ms`; rejects with an `aborted` {@link TransportError} as soon as `signal` fires. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return abortableSleep(ms, signal).catch(() => {
    throw abortedError(signal);
  });
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortedError(signal);
}
