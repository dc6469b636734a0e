import { ExitCode } from '@dq/core';
import { defineErrorCodes } from '@dq/core/errors';

/** Codes of errors raised by dq-refdata itself; exit codes of all others come from core's `exitCodeFor`. */
const RefdataErrorBase = defineErrorCodes('dq-refdata', {
  /** bad flags, config or path combinations: nothing was requested */
  usage: { exit: ExitCode.USAGE },
  /** another live sync holds the target's lock: try again later */
  'lock-held': { exit: ExitCode.TEMPFAIL },
  /** the target's file system is full (or a quota or file-size limit was reached): a person must free space */
  'target-full': { exit: ExitCode.UNEXPECTED },
  /** the target cannot be written (read-only file system, permissions): configuration */
  'target-not-writable': { exit: ExitCode.USAGE },
  /** the sync was stopped (SIGTERM, SIGINT, an aborted signal): run it again, it resumes */
  interrupted: { exit: ExitCode.TEMPFAIL },
});

/** Bad flags, config or path combinations: nothing was requested (exit code 2). */
export class UsageError extends RefdataErrorBase {
  override name = 'UsageError';
  constructor(message: string) {
    super('usage', message);
  }
}

/** Another live sync holds the target's lock (exit code 75: try again later). */
export class LockHeldError extends RefdataErrorBase {
  override name = 'LockHeldError';
  constructor(message: string) {
    super('lock-held', message);
  }
}

/** A file of the target could not be written: the file system is full or the target not writable. */
export class TargetError extends RefdataErrorBase {
  override name = 'TargetError';
  constructor(code: 'target-full' | 'target-not-writable', message: string, cause: unknown) {
    super(code, message, { cause });
  }
}

/** The sync was stopped by its signal (SIGTERM, SIGINT); the next sync resumes (exit code 75). */
export class InterruptedError extends RefdataErrorBase {
  override name = 'InterruptedError';
  constructor(message: string, cause: unknown) {
    super('interrupted', message, { cause });
  }
}
