export {
  DqError,
  PlatformError,
  LocalValidationError,
  ContractError,
  TransportError,
  RetriesExhaustedError,
  isRunStop,
  isRetriable,
} from './dq-error.js';
export type { Violation, DqErrorFields, PlatformErrorFields, TransportErrorCode } from './dq-error.js';
export { PROBLEMS, LOCAL_CODES, isKnownProblem } from './problem-table.js';
export type { ErrorScope, ProblemRow, ProblemCode, ProblemFragment, DqErrorCode } from './problem-table.js';
export { decodeErrorAnswer } from './decode.js';
export type { ErrorAnswer } from './decode.js';
export { errorToData, errorFromData, rootCause } from './error-data.js';
export type { ErrorData, ErrorKind } from './error-data.js';
export { abortedError } from './aborted.js';
export { ExitCode } from './exit-code.js';
export { defineErrorCodes, hasExitCode } from './error-codes.js';
export type { ErrorCodeSpec, ErrorCodeTable, CodedError, CodedErrorClass, CodedErrorFields } from './error-codes.js';
