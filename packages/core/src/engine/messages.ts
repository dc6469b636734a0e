/**
 * Plain-data messages between the engine and its worker threads. Class instances lose their class
 * across `postMessage`, so errors travel as `ErrorData` and are rebuilt with `errorFromData`.
 */
import type { ErrorData } from '../errors/index.js';
import type { RequestFields } from './record-mapping.js';
import type { AddressEndpoint, CachedResult, CompanySearchOptions, Mode, PolicyStatus, ResultClass } from './types.js';
import type { EngineRetryOptions } from './config.js';
import type { BudgetSpec, CallCounter, EndpointId } from '../throttle/index.js';

/** What every worker of one engine is started with (piscina `workerData`). */
export interface WorkerInit {
  mode: Mode;
  addressEndpoint: AddressEndpoint;
  baseUrl: string;
  realtimeUrl: string | undefined;
  /** Sent as `Authorization: Bearer`; never logged. */
  apiKey: string;
  include: string[] | undefined;
  company: CompanySearchOptions;
  timeoutMs: number;
  retry: EngineRetryOptions | undefined;
  policy: Record<ResultClass, PolicyStatus>;
  /** HTTP calls one worker keeps in flight (its share of the engine's `concurrency`). */
  concurrency: number;
  /** The engine's shared throttle state (`createSharedThrottle().buffer`). */
  throttle: SharedArrayBuffer;
  /** The rate budget shared by every process of the account (Postgres URL), when there is one. */
  budget: BudgetSpec;
  /** Rate limits and longest Retry-After hold, for the Postgres budget (the shared-memory one carries its own). */
  budgetOptions: { limits: Partial<Record<EndpointId, number>>; maxHoldMs: number | undefined };
  /** Billable calls sent by every thread of the engine, and the spending cap (0: none). */
  calls: CallCounter;
  /**
   * With a result store: `[0]` counts answers whose store write is not yet committed (the engine
   * keeps it); a call waits while it is at `storeBacklogLimit`, so a store that stalls holds the
   * calls back instead of letting the run buy answers it cannot keep.
   */
  storeBacklog?: SharedArrayBuffer;
  storeBacklogLimit?: number;
  /** Minimum level of the worker's log lines (redacted, relayed to the engine's logger). */
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** BroadcastChannel the worker's log lines go to (see log-relay.ts). */
  logChannel: string;
}

/** Values of `CallTask.control[0]`. */
export const Control = { RUN: 0, STOP: 1, ABORT: 2 } as const;

/** Value of `CallTask.control[1]` once the batch drains (see ProcessOptions.drain). */
export const DRAINING = 1;

/** One chunk of distinct requests for a worker to call concurrently. */
export interface CallTask {
  /**
   * Shared with the engine (backed by a SharedArrayBuffer): the engine sets `[0]` to STOP or ABORT
   * and the worker starts no further call of this batch and cuts those in flight; a worker that
   * meets a run-stop error sets STOP itself so its siblings stop at once. `[1]` is set to
   * {@link DRAINING} when the batch drains: no further call is started, those in flight finish.
   */
  control: Int32Array;
  requests: RequestFields[];
}

/** What became of one request of a task. */
export type CallOutcome =
  /**
   * A definitive or `unavailable` result of a request that was sent; `unreachableAt` (epoch ms) when
   * it is `unavailable` because the platform could not be reached (connection, timeout, 5xx).
   */
  | { kind: 'result'; result: CachedResult; unreachableAt?: number }
  /** A run-scope error: the whole run must stop. */
  | { kind: 'stop'; error: ErrorData }
  /** Not started because the batch was stopped or aborted. */
  | { kind: 'skipped' };

/** A worker's answer to a {@link CallTask}, outcomes in request order. */
export interface TaskResult {
  outcomes: CallOutcome[];
  /** Requests actually sent (first attempts). */
  calls: number;
  /** Extra attempts made by the worker's transport since its previous answer. */
  retries: number;
  /** Requests the platform answered (any answer, errors included), and when the last of them ended (epoch ms). */
  answered: number;
  lastAnswerAt: number;
  /**
   * When each answered request ended that ended after the task's first request that could not
   * reach the platform (ascending; absent when none failed so): the outage watch tells from them
   * whether the failures came in a row.
   */
  answeredAfterFailure?: number[];
  /** Calls sent, by the epoch second their attempts ended: `[second, count]` pairs. */
  callSeconds?: [number, number][];
}
