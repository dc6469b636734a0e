import { ExitCode } from '@dq/core';

/**
 * Stable codes of errors raised by dq-csv itself, with the exit code each leads to (platform
 * errors keep @dq/core's codes). Branch on `code`, never on the message.
 */
export const csvErrorExitCodes = {
  /** a flag is missing, unknown or has a bad value */
  usage: ExitCode.USAGE,
  /** the input file cannot be opened or read */
  'input-unreadable': ExitCode.USAGE,
  /** the output, rejects or checkpoint file cannot be written */
  'output-unwritable': ExitCode.USAGE,
  /** an output, rejects or side file would be the input, or two of them the same file */
  'path-conflict': ExitCode.USAGE,
  /** another live run is writing the same output (its lock names the pid): try again later */
  'output-locked': ExitCode.TEMPFAIL,
  /** the input has no header row (CSV) */
  'input-empty': ExitCode.USAGE,
  /** a mapped column is missing from the input, or an input column collides with a dq_ column */
  'bad-mapping': ExitCode.USAGE,
  /** the header line is longer than the record limit: probably not CSV */
  'record-too-large': ExitCode.USAGE,
  /** a JSON array input is not valid JSON (an array cannot be resynchronised after an error) */
  'invalid-json': ExitCode.USAGE,
  /** --resume without a checkpoint, or with options/input different from the checkpointed run */
  'resume-mismatch': ExitCode.USAGE,
  /** a checkpoint exists but --resume was not given: refuse to throw away paid-for work */
  'checkpoint-exists': ExitCode.USAGE,
  /** dq-csv review: the review file cannot be read, or was exported from another cleaned file */
  'review-file': ExitCode.USAGE,
} as const satisfies Record<string, ExitCode>;

/** Code of a {@link CsvError}. */
export type CsvErrorCodeName = keyof typeof csvErrorExitCodes;

/** An error of the file processor. `exitCode` is what the CLI exits with. */
export class CsvError extends Error {
  override readonly name = 'CsvError';
  readonly code: CsvErrorCodeName;
  readonly exitCode: ExitCode;

  constructor(code: CsvErrorCodeName, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.exitCode = csvErrorExitCodes[code];
  }
}

/** A usage error naming the flag at fault (exit code 2). */
export function usageError(flag: string, problem: string): CsvError {
  return new CsvError('usage', `${flag}: ${problem} (see dq-csv --help)`);
}
