import { ExitCode } from '@dq/core';
import { defineErrorCodes } from '@dq/core/errors';

/**
 * Stable codes of errors raised by dq-csv itself, with the exit code each leads to (platform
 * errors keep @dq/core's codes). Branch on `code`, never on the message.
 */
const CsvErrorBase = defineErrorCodes('dq-csv', {
  /** a flag is missing, unknown or has a bad value */
  usage: { exit: ExitCode.USAGE },
  /** the input file cannot be opened or read */
  'input-unreadable': { exit: ExitCode.USAGE },
  /** the output, rejects or checkpoint file cannot be written */
  'output-unwritable': { exit: ExitCode.USAGE },
  /** an output, rejects or side file would be the input, or two of them the same file */
  'path-conflict': { exit: ExitCode.USAGE },
  /** another live run is writing the same output (its lock names the pid): try again later */
  'output-locked': { exit: ExitCode.TEMPFAIL },
  /** the input has no header row (CSV) */
  'input-empty': { exit: ExitCode.USAGE },
  /** a mapped column is missing from the input, or an input column collides with a dq_ column */
  'bad-mapping': { exit: ExitCode.USAGE },
  /** the header line is longer than the record limit: probably not CSV */
  'record-too-large': { exit: ExitCode.USAGE },
  /** a JSON array input is not valid JSON (an array cannot be resynchronised after an error) */
  'invalid-json': { exit: ExitCode.USAGE },
  /** --resume without a checkpoint, or with options/input different from the checkpointed run */
  'resume-mismatch': { exit: ExitCode.USAGE },
  /** a checkpoint exists but --resume was not given: refuse to throw away paid-for work */
  'checkpoint-exists': { exit: ExitCode.USAGE },
  /** dq-csv review: the review file cannot be read, or was exported from another cleaned file */
  'review-file': { exit: ExitCode.USAGE },
});

/** The exit code of each {@link CsvError} code. */
export const csvErrorExitCodes = CsvErrorBase.codes;

/** Code of a {@link CsvError}. */
export type CsvErrorCodeName = keyof typeof csvErrorExitCodes;

/** An error of the file processor: a `DqError` whose `exitCode` is what the CLI exits with. */
export class CsvError extends CsvErrorBase {
  override readonly name = 'CsvError';
}

/** A usage error naming the flag at fault (exit code 2). */
export function usageError(flag: string, problem: string): CsvError {
  return CsvError.usage(flag, problem);
}
