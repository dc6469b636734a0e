import type { AddressCandidate, CompanyRecord } from '../schemas/index.js';

/**
 * The engine's public contract. Every connector (CSV, Postgres, Kafka) is a source and a sink around
 * these types; nothing connector-specific belongs here.
 */

import type { AddressEndpoint, Mode, PolicyStatus, RecordStatus, ResultClass } from '../schemas/vocabularies.js';

export type { AddressEndpoint, Mode, PolicyStatus, RecordStatus, ResultClass };

/** Request fields of one record, already extracted by the connector through its mapping. */
export type EngineRecord = Readonly<Record<string, string | number | null | undefined>>;

export { ExitCode } from '../errors/exit-code.js';

/** Company search options sent as query parameters (contract 4.7); checked when the engine is created. */
export interface CompanySearchOptions {
  /** Score threshold 1–100; platform default 85. */
  minScore?: number;
  /** Maximum hits 1–50; platform default 50. */
  limit?: number;
  /** Language of messages: de | en | fr; platform default en. */
  lang?: string;
  /** Also return liquidated companies; platform default false. */
  includeDeleted?: boolean;
}

/** The error part of a record result: plain data, safe to log (never holds credentials). */
export interface RecordError {
  code: string;
  message: string;
  violations?: { fieldName: string; message: string }[];
  requestId?: string;
}

/** The outcome of one input record. */
export interface RecordResult {
  status: RecordStatus;
  resultClass?: ResultClass;
  /** Best (first) candidate, address mode. */
  address?: AddressCandidate;
  /** All candidates (class E: for review, `houseNumberChoice` kept), address mode. */
  candidates?: AddressCandidate[];
  /** Best hit, company and tr modes. */
  company?: CompanyRecord;
  /** Every hit, best first, when several came back without a clear winner (status `review`), company and tr modes. */
  companies?: CompanyRecord[];
  /** Number of hits, company and tr modes. */
  hits?: number;
  /** VAT check result, vat mode. */
  vatCode?: 'VALID_VAT_ID' | 'INVALID_VAT_ID';
  /** `X-Service-Request-Id` of the call that produced this result. */
  requestId?: string;
  /** When the platform gave this answer (ISO time); an answer from the result store keeps its own. */
  checkedAt?: string;
  error?: RecordError;
  /**
   * Where the result came from: a call of its own, a call shared with an identical input, the
   * in-run cache, the result store (an answer of an earlier run or another process), or local validation.
   */
  source: 'api' | 'dedup' | 'cache' | 'store' | 'local';
}

/** What a cache holds for one normalised input: a definitive result without its source. */
export type CachedResult = Omit<RecordResult, 'source'>;

/**
 * A store of definitive results by normalised input key. `get` and `set` may be sync or async.
 * The engine only stores definitive results (never `unavailable`).
 */
export interface ResultCache {
  get(key: string): CachedResult | undefined | Promise<CachedResult | undefined>;
  set(key: string, value: CachedResult): void | Promise<void>;
  /** Flush and release resources; called by `Engine.close()`. */
  close?(): Promise<void>;
}

/** Counts and failures of everything an engine has processed so far. */
export interface RunReport {
  records: number;
  byStatus: Record<RecordStatus, number>;
  byClass: Record<ResultClass, number>;
  /** Distinct requests sent to the platform (each may have been retried). */
  apiCalls: number;
  /** Records answered by sharing another record's call (within or across batches). */
  callsSavedByDedup: number;
  /** Records answered from the in-run result cache. */
  callsSavedByCache: number;
  /** Records answered from the result store (answers of earlier runs or other processes). */
  callsSavedByStore: number;
  /** Distinct inputs looked up in the result store (those the run's cache did not hold). */
  storeLookups: number;
  /** Of those, the ones the store answered (younger than the max age). */
  storeHits: number;
  /** storeHits ÷ storeLookups, 0 without lookups. */
  storeHitRate: number;
  /** Repeated attempts made by the transport (429, 5xx, timeouts, renewed sessions). */
  retries: number;
  /** Failed calls (unavailable) with their request ids; capped at `maxFailures` entries, oldest kept. */
  failures: { requestId?: string; code: string; message: string }[];
  /** Failures beyond the cap, counted but not listed. */
  failuresOmitted: number;
  /** Wall time during which at least one `process` call was running, in milliseconds. */
  durationMs: number;
  /**
   * Calls made over time: `counts[i]` calls ended in the `bucketSeconds` seconds starting at epoch
   * second `startSecond + i * bucketSeconds` (at most 240 buckets; longer runs get wider ones);
   * `limit` is the client-side rate limit of the endpoint the engine calls (absent when off).
   */
  callsPerSecond?: { startSecond: number; bucketSeconds: number; counts: number[]; limit?: number };
  /** The rate budget and the spending cap (`RunReportBuilder` leaves it out; the engine adds it). */
  budget?: BudgetReport;
}

/** Which rate budget the run used, and its billable calls against `maxCalls`. */
export interface BudgetReport {
  /** `shared`: the Postgres budget of every process of the account; `local`: this process's own. */
  scope: 'shared' | 'local';
  /** The account the budget belongs to (a name, or `key-` and a digest of the key: never the key). */
  account: string;
  /** Billable calls sent (retries included). */
  billableCalls: number;
  /** The spending cap, or null for none. */
  maxCalls: number | null;
}

/** Estimate of a batch without calling anything. */
export interface RunPlan {
  records: number;
  /** Distinct normalised inputs among the valid records. */
  distinct: number;
  /** Calls still needed: distinct inputs neither cached, in the result store, nor in flight. */
  calls: number;
  /** Distinct inputs the result store would answer. */
  fromStore: number;
  /** Records refused by local validation. */
  invalidInput: number;
}

/** Options of {@link Engine.plan}. */
export interface PlanOptions {
  /**
   * Keys planned by earlier calls, to estimate a source read in batches: inputs already in it are
   * left out of `distinct` and `calls`, and this call's keys are added.
   */
  seen?: Set<string>;
}

/** Options of one `process` call. */
export interface ProcessOptions {
  /**
   * Aborts the batch: queued calls are not started, the calls in flight are cut (their answers
   * lost, though the platform may have billed them), `process` rejects with the abort reason.
   */
  signal?: AbortSignal;
  /**
   * Drains the batch, the stop that pays nothing twice: calls not started yet are not started, the
   * calls in flight (and their retries) finish and their answers go to the cache and the store,
   * then `process` rejects with the drain's reason, unless every record got its answer meanwhile
   * (then it resolves as usual). A later `signal` abort still cuts the calls left.
   */
  drain?: AbortSignal;
}

/** The validation engine every connector adapts a source and a sink to. */
export interface Engine {
  /**
   * Results in input order. Rejects with a run-stop `DqError` (`isRunStop`) on 401/403 account, key,
   * service, feature or quota: no further calls are started; calls already in flight finish, and
   * their results are dropped. Later `process` calls reject with the same error.
   *
   * When the platform cannot be reached (the last calls all failed with connection errors, timeouts
   * or 5xx after their retries, none answered in between) every running call rejects with a
   * run-stop `DqError` of code `platform-unreachable`, `retriable` (exit code 75), instead of
   * marking those records `unavailable`; a later `process` call tries again. `unavailable` is left
   * for a record whose own call failed while the platform answered others.
   */
  process(records: readonly EngineRecord[], opts?: ProcessOptions): Promise<RecordResult[]>;
  /** Estimate without calling: distinct inputs, API calls needed after the cache and the store, invalid-input count. */
  plan(records: readonly EngineRecord[], options?: PlanOptions): Promise<RunPlan>;
  /**
   * Checks what the calls depend on besides the platform before any input is taken: the shared
   * rate budget's database (it answers, is PostgreSQL 12 or newer, and the user may use its
   * table). Rejects with the run stop the first billable call would have met. A long-running
   * connector calls it at start, so a wrong budget URL stops it there instead of at its first
   * message. Made once; nothing to check without a shared budget.
   */
  ready(): Promise<void>;
  /** Counts so far. */
  report(): RunReport;
  /** Stops the worker pool and closes the cache. Idempotent. */
  close(): Promise<void>;
}
