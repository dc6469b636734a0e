import { hasExitCode } from '../errors/error-codes.js';
import { DqError, isRunStop, LOCAL_CODES } from '../errors/index.js';
import { ExitCode } from '../errors/exit-code.js';
import { BUDGET_UNREACHABLE, MAX_CALLS_REACHED } from '../throttle/budget.js';
import type { RunReport } from './types.js';

/** A run that completed, as {@link exitCodeFor} judges it. */
export interface RunOutcome {
  report: Pick<RunReport, 'records' | 'byStatus'>;
  /** Largest acceptable share (0–1) of failed records; default 0 (any failure counts). */
  maxFailed?: number;
  /** Input records that could not even be read (a connector's rejects): failed, beside `report.records`. */
  rejects?: number;
}

/** Options of {@link exitCodeForReport}. */
export type ExitPolicy = Omit<RunOutcome, 'report'>;

const TEMPORARY_CODES = new Set(['connection-error', 'timeout', 'dns-error', 'retries-exhausted', 'lock-held', 'aborted']);

/**
 * The one mapping of the README's exit code table, for every CLI of the project: an error that
 * ended a run, or a {@link RunOutcome} (a run that completed).
 *
 * Errors: a package error (`defineErrorCodes`) exits with its own code; 2 for bad usage or
 * configuration (`usage`, `config-invalid`, `local-validation`, a shared budget the role may not use or on a server older than PostgreSQL 12, a platform URL that answers 404/405); 3 when credentials, account or quota
 * stopped the run (a non-retriable run stop, or a 401/403); 5 when the spending cap (--max-calls) was
 * reached; 75 when a later run may succeed (a retriable run stop such as `platform-unreachable`, the
 * platform asking us to come back later than the retry policy waits, connection failures (also to
 * the shared rate budget's database), retries
 * used up, a lock held by another run, a run interrupted by its signal, any retriable error); 1 for
 * anything else.
 *
 * Completed runs: 75 when every record that needed the platform came back `unavailable` (the
 * platform was down), 4 when the share of failed records (`unavailable`, and the rejects of input
 * that could not be read) passed `maxFailed`, else 0. Invalid
 * input and an unsupported country are findings about the data, not failures.
 */
export function exitCodeFor(ended: unknown): ExitCode {
  if (isRunOutcome(ended)) return exitCodeForReport(ended.report, ended);
  const e = ended;
  if (hasExitCode(e)) return e.exitCode;
  if (isRunStop(e)) {
    if (e.code === MAX_CALLS_REACHED) return ExitCode.MAX_CALLS;
    if (
      e.code === LOCAL_CODES.budgetPermissionDenied ||
      e.code === LOCAL_CODES.budgetDbConfig ||
      e.code === LOCAL_CODES.budgetDbVersion ||
      e.code === LOCAL_CODES.platformUrlUnknown
    ) {
      return ExitCode.USAGE;
    }
    return e.retriable || e.code === LOCAL_CODES.retryAfterTooLong || e.code === BUDGET_UNREACHABLE ? ExitCode.TEMPFAIL : ExitCode.STOP;
  }
  if (!(e instanceof DqError)) return ExitCode.UNEXPECTED;
  if (e.code === 'usage' || e.code === 'config-invalid' || e.code === 'local-validation') return ExitCode.USAGE;
  if (e.code === 'max-calls-reached') return ExitCode.MAX_CALLS;
  if (e.status === 401 || e.status === 403) return ExitCode.STOP;
  if (e.retriable || TEMPORARY_CODES.has(e.code)) return ExitCode.TEMPFAIL;
  return ExitCode.UNEXPECTED;
}

/** {@link exitCodeFor} of an error (kept for callers that hold one). */
export function exitCodeForError(e: unknown): ExitCode {
  return exitCodeFor(e);
}

/** {@link exitCodeFor} of a completed run's report. */
export function exitCodeForReport(report: RunOutcome['report'], { maxFailed = 0, rejects = 0 }: ExitPolicy = {}): ExitCode {
  const unavailable = report.byStatus.unavailable;
  if (unavailable === 0 && rejects === 0) return ExitCode.OK;
  const answerable = report.records - report.byStatus['invalid-input'] - (report.byStatus['unsupported-country'] ?? 0);
  if (unavailable > 0 && unavailable >= answerable) return ExitCode.TEMPFAIL;
  return (unavailable + rejects) / (report.records + rejects) > maxFailed ? ExitCode.MAX_FAILED : ExitCode.OK;
}

function isRunOutcome(x: unknown): x is RunOutcome {
  return typeof x === 'object' && x !== null && !(x instanceof Error) && typeof (x as RunOutcome).report?.byStatus === 'object';
}
