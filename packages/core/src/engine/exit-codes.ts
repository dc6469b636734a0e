import { DqError, isRunStop, LOCAL_CODES } from '../errors/index.js';
import { BUDGET_UNREACHABLE, MAX_CALLS_REACHED } from '../throttle/budget.js';
import { ExitCode } from './types.js';
import type { RunReport } from './types.js';

/**
/**
 * The exit code for an error that ended a run (the README's exit code table): 5 when the spending
 * cap (`maxCalls`) was reached, 3 when credentials,
 * account or quota stopped it, 2 for bad configuration, 75 when the platform could not be reached
 * (a retriable run stop such as the engine's `platform-unreachable`, or a connection failure; also
 * the shared rate budget's database) or
 * asked us to come back later than the retry policy waits, 1 for anything else.
 */
export function exitCodeForError(e: unknown): ExitCode {
  if (isRunStop(e)) {
    if (e.code === MAX_CALLS_REACHED) return ExitCode.MAX_CALLS;
    if (e.code === LOCAL_CODES.budgetPermissionDenied) return ExitCode.USAGE;
    return e.retriable || e.code === LOCAL_CODES.retryAfterTooLong || e.code === BUDGET_UNREACHABLE ? ExitCode.TEMPFAIL : ExitCode.STOP;
  }
  if (e instanceof DqError) {
    if (e.code === 'config-invalid') return ExitCode.USAGE;
    if (e.code === 'connection-error' || e.code === 'timeout' || e.code === 'dns-error') return ExitCode.TEMPFAIL;
  }
  return ExitCode.UNEXPECTED;
}

/** Options of {@link exitCodeForReport}. */
export interface ExitPolicy {
  /** Largest acceptable share (0–1) of `unavailable` records; default 0 (any failure counts). */
  maxFailed?: number;
}

/**
 * The exit code of a run that completed: 75 when every record that needed the platform came back
 * `unavailable` (the platform was down: worth a retry by the scheduler), 4 when the share of
 * `unavailable` records passed `maxFailed`, else 0. Invalid input and an unsupported country are
 * findings about the data, not failures.
 */
export function exitCodeForReport(report: RunReport, { maxFailed = 0 }: ExitPolicy = {}): ExitCode {
  const failed = report.byStatus.unavailable;
  if (failed === 0) return ExitCode.OK;
  const answerable = report.records - report.byStatus['invalid-input'] - report.byStatus['unsupported-country'];
  if (failed >= answerable) return ExitCode.TEMPFAIL;
  return failed / report.records > maxFailed ? ExitCode.MAX_FAILED : ExitCode.OK;
}
