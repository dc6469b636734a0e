import { ContractError, DqError, LocalValidationError, PlatformError, RetriesExhaustedError, TransportError } from './dq-error.js';
import type { TransportErrorCode } from './dq-error.js';
import type { Violation } from './dq-error.js';
import type { ErrorScope } from './problem-table.js';

/** Which class an {@link ErrorData} is rebuilt as. */
export type ErrorKind = 'DqError' | 'PlatformError' | 'LocalValidationError' | 'ContractError' | 'TransportError' | 'RetriesExhaustedError' | 'Error';

/**
 * An error as plain, structured-clone-safe data, to cross worker threads (`postMessage` drops the
 * class, `code` and `retriable` of custom errors). Rebuild with {@link errorFromData}.
 */
export interface ErrorData {
  kind: ErrorKind;
  message: string;
  code: string;
  retriable: boolean;
  scope: ErrorScope;
  status?: number;
  requestId?: string;
  violations?: Violation[];
  problemType?: string;
  title?: string;
  retryAfterMs?: number;
  attempts?: number;
  cause?: ErrorData;
}

const MAX_CAUSE_DEPTH = 5;

/** Turns any thrown value into plain data; non-dq errors become kind `Error`, code `unexpected`. */
export function errorToData(e: unknown, depth = 0): ErrorData {
  if (!(e instanceof DqError)) {
    const data: ErrorData = {
      kind: 'Error',
      message: e instanceof Error ? e.message : String(e),
      code: 'unexpected',
      retriable: false,
      scope: 'request',
    };
    if (e instanceof Error && e.cause !== undefined && depth < MAX_CAUSE_DEPTH) data.cause = errorToData(e.cause, depth + 1);
    return data;
  }
  const data: ErrorData = {
    kind: kindOf(e),
    message: e.message,
    code: e.code,
    retriable: e.retriable,
    scope: e.scope,
  };
  if (e.status !== undefined) data.status = e.status;
  if (e.requestId !== undefined) data.requestId = e.requestId;
  if (e.violations !== undefined) data.violations = e.violations.map((v) => ({ ...v }));
  if (e instanceof PlatformError) {
    if (e.problemType !== undefined) data.problemType = e.problemType;
    if (e.title !== undefined) data.title = e.title;
    if (e.retryAfterMs !== undefined) data.retryAfterMs = e.retryAfterMs;
  }
  if (e instanceof RetriesExhaustedError) data.attempts = e.attempts;
  if (e.cause !== undefined && depth < MAX_CAUSE_DEPTH) data.cause = errorToData(e.cause, depth + 1);
  return data;
}

/** Rebuilds an error from {@link errorToData} output with its class, code, retriable and scope. */
export function errorFromData(d: ErrorData): Error {
  const cause = d.cause === undefined ? undefined : errorFromData(d.cause);
  const common = { status: d.status, requestId: d.requestId, violations: d.violations, cause };
  switch (d.kind) {
    case 'PlatformError':
      return new PlatformError(d.message, {
        ...common,
        status: d.status ?? 0,
        code: d.code,
        retriable: d.retriable,
        scope: d.scope,
        problemType: d.problemType,
        title: d.title,
        retryAfterMs: d.retryAfterMs,
      });
    case 'LocalValidationError':
      return new LocalValidationError(d.message, d.violations ?? []);
    case 'ContractError':
      return new ContractError(d.message, { ...common, scope: d.scope });
    case 'TransportError':
      return new TransportError(d.message, { code: d.code as TransportErrorCode, retriable: d.retriable, cause });
    case 'RetriesExhaustedError':
      return new RetriesExhaustedError(d.message, {
        attempts: d.attempts ?? 0,
        cause,
        status: d.status,
        requestId: d.requestId,
      });
    case 'DqError':
      return new DqError(d.message, { ...common, code: d.code, retriable: d.retriable, scope: d.scope });
    case 'Error':
      return cause === undefined ? new Error(d.message) : new Error(d.message, { cause });
  }
}

function kindOf(e: DqError): ErrorKind {
  if (e instanceof PlatformError) return 'PlatformError';
  if (e instanceof LocalValidationError) return 'LocalValidationError';
  if (e instanceof ContractError) return 'ContractError';
  if (e instanceof TransportError) return 'TransportError';
  if (e instanceof RetriesExhaustedError) return 'RetriesExhaustedError';
  return 'DqError';
}

/** The innermost cause that is a {@link DqError} below a retries-exhausted wrapper, else `e` itself. */
export function rootCause(e: unknown): unknown {
  return e instanceof RetriesExhaustedError && e.cause !== undefined ? e.cause : e;
}
