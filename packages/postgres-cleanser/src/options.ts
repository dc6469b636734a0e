import type { BudgetReport, EngineConfig, Logger, Mode, RecordStatus, ResultClass, RunReport } from '@dq/core';
import type { EngineFlagSettings } from '@dq/core/cli';
import type { RunTotals } from './runs.js';

/** Options of {@link cleanse} (the `dq-pg cleanse` flags). */
export interface CleanseOptions {
  /** `postgres://user:password@host:port/db`; the password is never logged. */
  db: string;
  /** `table` or `schema.table`. */
  table: string;
  /** Key column; default the single-column primary key. Must be unique and not NULL. */
  key?: string;
  /** Request field → column; default the mode's fields that have a column of that name. */
  map?: Readonly<Record<string, string>>;
  /** SQL predicate selecting the rows to clean (the caller's own SQL, run as given). */
  where?: string;
  /**
   * Columns of the table that receive each row's result besides the side table: `status`,
   * `class`, `requestId`, `checkedAt` → column name. Then every row of the run is updated (its
   * status, and its corrections if any), not only the rows with corrections. Fixed when a run is created.
   */
  statusColumns?: Readonly<Partial<Record<'status' | 'class' | 'requestId' | 'checkedAt', string>>>;
  /** Default `address`. */
  mode?: Mode;
  /** Country for address rows without one. */
  country?: string;
  /** Result classes whose corrections are written; default A, B, C (docs/architecture.md result policy). */
  accept?: readonly ResultClass[];
  /** Address `_options.include` values. */
  include?: string[];
  /** Rows per page (one API batch, one transaction); default 1000. */
  batchSize?: number;
  /** Pages per claimed key range (the unit several processes share out); default 10. Fixed when a run is created. */
  pagesPerClaim?: number;
  /**
   * Range workers in this process, each claiming key ranges on connections of its own (3 per
   * worker); default {@link DEFAULT_WORKERS}. The same as that many processes, sharing one engine.
   */
  workers?: number;
  /**
   * Read and validate the next page while the previous one is written; default false. With it, a
   * crash repeats the calls of up to two pages per worker instead of one. It pays off only where
   * this process and PostgreSQL have idle cores to overlap on (pg-cleanse benchmark).
   */
  readAhead?: boolean;
  /** Read and validate, write nothing at all (not even bookkeeping); report what would change. */
  dryRun?: boolean;
  /** Run to create or resume; default a new id. */
  runId?: string;
  /** Platform address API host. */
  baseUrl: string;
  /** Company service host; default `baseUrl`. */
  realtimeUrl?: string;
  apiKey: string;
  /** Engine settings passed through (threads, concurrency, rate limits, retry, timeouts, cache). */
  engine?: Partial<Omit<EngineConfig, 'mode' | 'baseUrl' | 'realtimeUrl' | 'apiKey' | 'defaultCountry' | 'include' | 'policy' | 'logger'>> &
    Pick<EngineFlagSettings, 'store' | 'maxAgeMs'>;
  /** Largest share (0–1) of unavailable rows before the exit code is 4; default 0. */
  maxFailed?: number;
  logger?: Logger;
  /**
   * Stops: no page is started after it, and the pages under way are written once their calls
   * end; calls still going on 10 s later (`STOP_GRACE_MS`) are cut, and their page is not written.
   */
  signal?: AbortSignal;
  /**
   * Ends the run at once (the CLI's second SIGINT/SIGTERM): the calls of the pages under way are
   * cut and those pages are not written; exit 75, the run resumes with its id.
   */
  stopNow?: AbortSignal;
  /** Dry-run only: receives each row whose values would change. */
  onChange?: (change: RowChange) => void;
  /** Receives the counts after every committed page. */
  onPage?: (progress: CleanseProgress) => void;
  /**
   * Receives advice on the mapping (columns that look like fields left unmapped; a first page of
   * only invalid-input rows); default: logged as a warning.
   */
  onHint?: (text: string) => void;
  /** Write the run report (one HTML page) here when the run ends (the CLI's --report). */
  report?: string;
  /** Called with the engine's run report (calls per second included) before the engine closes. */
  onEngineReport?: (report: RunReport) => void;
}

/** A row a run would change (dry-run) with values per column. */
export interface RowChange {
  key: string;
  resultClass?: ResultClass;
  before: Record<string, string | null>;
  after: Record<string, string | null>;
}

/** Counts of what this process did so far. */
export interface CleanseProgress {
  rows: number;
  written: number;
  unchanged: number;
  conflicts: number;
  byStatus: Record<RecordStatus, number>;
  apiCalls: number;
  /** Records answered by sharing the call of an identical input (this process). */
  callsSavedByDedup: number;
  /** Records answered by this process's cache of answers (an input seen on an earlier page). */
  callsSavedByCache: number;
  /** Records answered from the result store: answers bought by earlier runs or other processes. */
  callsSavedByStore: number;
  /** Share of the inputs looked up in the result store that it answered. */
  storeHitRate: number;
  /** Attempts beyond the first of the calls this process made (5xx, timeouts, resets retried). */
  retries: number;
  /** Where the time went, in milliseconds: reading pages, validating them (engine), writing them. */
  timings: { readMs: number; validateMs: number; writeMs: number };
}

/** What {@link cleanse} did, with the exit code for the CLI. */
export interface CleanseSummary extends CleanseProgress {
  runId: string;
  table: string;
  dryRun: false;
  /**
   * State of the run afterwards: `done`, `running` (other processes still hold ranges), `stopped`;
   * `interrupted` when the run failed and the database could not even record that (it was lost).
   */
  state: 'done' | 'running' | 'stopped' | 'interrupted' | 'rolled-back';
  exitCode: number;
  /** Keys of rows not written because someone changed them after they were read (first 100). */
  conflictKeys: string[];
  /**
   * Accepted rows of this process the table could not take: a correction longer than its column
   * (`value-too-long`) or refused by a constraint or trigger (`write-refused`); left as they are.
   */
  notWritten: number;
  /** Their keys (first 100); the reasons are in `dq_cleanse.results.error`. */
  notWrittenKeys: string[];
  /**
   * The counts of the whole run, every process and attempt of it (as `dq-pg status` shows them),
   * when this process saw it end or ran out of ranges; the exit code is judged on these.
   */
  runTotals?: RunTotals;
  error?: { code: string; message: string; requestId?: string };
  /** The rate budget this process used (shared or local) and its billable calls against --max-calls. */
  budget?: BudgetReport;
}

/**
 * What a dry run found: the counts of a run, except that nothing was written, so `wouldWrite`
 * (rows whose values would change) stands where a run has `written`, and there are no conflicts.
 */
export interface DryRunSummary extends Omit<CleanseProgress, 'written' | 'conflicts'> {
  runId: null;
  table: string;
  dryRun: true;
  state: 'dry-run';
  /** Rows a run with these settings would write (each printed as a `change` line). */
  wouldWrite: number;
  exitCode: number;
  /** Set when a signal stopped the dry run before the end of the selection (exit 75). */
  error?: { code: string; message: string };
}

/** Default rows per page. */
export const DEFAULT_BATCH_SIZE = 1000;
/** Default pages per claimed range. */
export const DEFAULT_PAGES_PER_CLAIM = 10;
/** Default range workers per process. */
export const DEFAULT_WORKERS = 4;
