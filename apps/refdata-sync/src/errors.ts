import { ExitCode } from '@dq/core';
import { defineErrorCodes } from '@dq/core/errors';

/** Codes of errors raised by dq-refdata itself; exit codes of all others come from core's `exitCodeFor`. */
const RefdataErrorBase = defineErrorCodes('dq-refdata', {
  /** bad flags, config or path combinations: nothing was requested */
  usage: { exit: ExitCode.USAGE },
  /** another live sync holds the target's lock: try again later */
  'lock-held': { exit: ExitCode.TEMPFAIL },
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
