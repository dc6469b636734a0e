import { DqError } from './dq-error.js';
import type { DqErrorFields } from './dq-error.js';
import { ExitCode } from './exit-code.js';

/** One error code of a package: the exit code it leads to, and whether a later run may succeed. */
export interface ErrorCodeSpec {
  readonly exit: ExitCode;
  /** Default: true exactly when `exit` is 75 (temporarily unavailable). */
  readonly retriable?: boolean;
}

/** A package's error codes; every table has `usage` (a flag or setting at fault, exit 2). */
export type ErrorCodeTable = Readonly<Record<string, ErrorCodeSpec>> & { readonly usage: ErrorCodeSpec };

/** Fields a package error may carry besides its code. */
export type CodedErrorFields = Omit<DqErrorFields, 'code' | 'retriable'> & { retriable?: boolean };

/** A {@link DqError} whose code comes from a package's {@link ErrorCodeTable}, with the exit code it leads to. */
export interface CodedError<C extends string> extends DqError {
  readonly code: C;
  /** What the CLI exits with when this error ends the run. */
  readonly exitCode: ExitCode;
}

/** The class {@link defineErrorCodes} returns; connectors extend it to name their error. */
export interface CodedErrorClass<C extends string> {
  new (code: C, message: string, fields?: CodedErrorFields): CodedError<C>;
  /** The package's error codes and their exit codes. */
  readonly codes: Readonly<Record<C, ErrorCodeSpec>>;
  /** A `usage` error naming the flag at fault: `<flag>: <problem> (see <tool> --help)` (exit 2). */
  usage<E>(this: new (code: C, message: string) => E, flag: string, problem: string): E;
}

/**
 * Defines a package's error codes once, e.g.
 * `defineErrorCodes('dq-csv', { usage: { exit: 2 }, 'output-locked': { exit: 75 } })`, and returns
 * the error class built on them: `new (class CsvError extends base)(code, message)` is a `DqError`
 * with that code, its `exitCode` and `retriable` taken from the table. `exitCodeFor` (core) reads
 * `exitCode`, so a package needs no exit-code function of its own.
 */
export function defineErrorCodes<const T extends ErrorCodeTable>(tool: string, codes: T): CodedErrorClass<keyof T & string> {
  type C = keyof T & string;
  class PackageError extends DqError implements CodedError<C> {
    static readonly codes = codes;
    declare readonly code: C;
    readonly exitCode: ExitCode;

    constructor(code: C, message: string, fields: CodedErrorFields = {}) {
      const spec = codes[code] as ErrorCodeSpec;
      // Not scope `run`: that marks the platform's credential/quota stops.
      super(message, { ...fields, code, retriable: fields.retriable ?? spec.retriable ?? spec.exit === ExitCode.TEMPFAIL });
      this.exitCode = spec.exit;
    }

    static usage<E>(this: new (code: C, message: string) => E, flag: string, problem: string): E {
      return new this('usage' as C, `${flag}: ${problem} (see ${tool} --help)`);
    }
  }
  return PackageError;
}

/** Whether `e` is a package error of {@link defineErrorCodes} (it carries its own exit code). */
export function hasExitCode(e: unknown): e is DqError & { exitCode: ExitCode } {
  return e instanceof DqError && typeof (e as { exitCode?: unknown }).exitCode === 'number';
}
