import { DqError, ExitCode, exitCodeForError } from '@dq/core';

/** Bad flags, config or path combinations: nothing was requested (exit code 2). */
export class UsageError extends DqError {
  override name = 'UsageError';
  constructor(message: string) {
    super(message, { code: 'usage', retriable: false });
  }
}

/** Another live sync holds the target's lock (exit code 75: try again later). */
export class LockHeldError extends DqError {
  override name = 'LockHeldError';
  constructor(message: string) {
    super(message, { code: 'lock-held', retriable: true });
  }
}

/**
 * The process exit code for a failure (the repository's exit-code table, applied to downloads):
 * 2 usage/config or refused path combination; 3 credentials, account or service refused
 * (401/403: a person must act); 75 service unavailable, the platform asking us to come back later
 * than the retry policy waits (a 429's long Retry-After), retries used up or target locked by
 * another sync (a later run may succeed); 1 checksum mismatch, a 404 for a subscribed artifact, or
 * anything unexpected.
 */
export function exitCodeFor(error: unknown): number {
  if (!(error instanceof DqError)) return ExitCode.UNEXPECTED;
  if (error.code === 'usage' || error.code === 'local-validation') return ExitCode.USAGE;
  if (error.scope === 'run') return exitCodeForError(error); // 3, or 75 for a stop the platform lifts by itself
  if (error.status === 401 || error.status === 403) return ExitCode.STOP;
  if (error.code === 'lock-held' || error.code === 'retries-exhausted' || error.retriable) return ExitCode.TEMPFAIL;
  if (error.code === 'timeout' || error.code === 'connection-error' || error.code === 'dns-error') return ExitCode.TEMPFAIL;
  return ExitCode.UNEXPECTED;
}
