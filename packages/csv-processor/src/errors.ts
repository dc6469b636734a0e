import { ExitCode } from '@dq/core';
import { defineErrorCodes } from '@dq/core/errors';

/**
 * An error of dq-csv itself: its stable `code` (branch on it, never on the message) and the
 * `exitCode` the CLI exits with, from this table (platform errors keep @dq/core's codes).
 */
export class CsvError extends defineErrorCodes('dq-csv', {
  /** a flag is missing, unknown or has a bad value */
  usage: { exit: ExitCode.USAGE },
  /** the input file cannot be opened or read */
  'input-unreadable': { exit: ExitCode.USAGE },
  /** the output, rejects or checkpoint file cannot be written */
  'output-unwritable': { exit: ExitCode.USAGE },
  /** an output, rejects or side file would be the input, or two of them the same file */
  'path-conflict': { exit: ExitCode.USAGE },
  /** a write to the output, rejects or checkpoint failed mid-run (disk full, file-size limit, I/O): the checkpoint is kept */
  'output-io': { exit: ExitCode.UNEXPECTED },
  /** the output or rejects file was deleted, renamed, replaced or changed by another process while the run wrote it */
  'output-changed': { exit: ExitCode.USAGE },
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
  /** the input was written to while the run read it (a writer not finished with it): the checkpoint is kept */
  'input-changed': { exit: ExitCode.TEMPFAIL },
  /** a checkpoint exists but --resume was not given: refuse to throw away paid-for work */
  'checkpoint-exists': { exit: ExitCode.USAGE },
  /** dq-csv review: the review file cannot be read, or was exported from another cleaned file */
  'review-file': { exit: ExitCode.USAGE },
}) {
  override readonly name = 'CsvError';
}

/** A usage error naming the flag at fault (exit code 2). */
export const usageError = (flag: string, problem: string): CsvError => CsvError.usage(flag, problem);
