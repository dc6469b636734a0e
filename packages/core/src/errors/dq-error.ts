import type { ErrorScope } from './problem-table.js';

/** One rejected input field, as in the contract's `violations` (7.1) or found by local validation. */
export interface Violation {
  /** Input field name, or a pseudo name such as `localityIdentificationSet`. */
  fieldName: string;
  message: string;
}

/** Fields every {@link DqError} can carry besides its message. */
export interface DqErrorFields {
  /** Stable machine-readable code; branch on this, never on the message. */
  code: string;
  /** Whether repeating the same request later may succeed. */
  retriable: boolean;
  /** How far the failure reaches (default `request`). */
  scope?: ErrorScope;
  /** HTTP status of the answer, when there was one. */
  status?: number;
  /** `X-Service-Request-Id` of the answer, when there was one. */
  requestId?: string;
  violations?: readonly Violation[];
  cause?: unknown;
}

/**
 * Base of every error raised by dq code. Carries a stable `code`, `retriable`, `scope` and, for
 * platform answers, `status` and `requestId`. Messages never contain credentials.
 */
export class DqError extends Error {
  override name = 'DqError';
  readonly code: string;
  readonly retriable: boolean;
  readonly scope: ErrorScope;
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  readonly violations: readonly Violation[] | undefined;

  constructor(message: string, fields: DqErrorFields) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.code = fields.code;
    this.retriable = fields.retriable;
    this.scope = fields.scope ?? 'request';
    this.status = fields.status;
    this.requestId = fields.requestId;
    this.violations = fields.violations;
  }
}

/** Extra fields of an error answer from the platform. */
export interface PlatformErrorFields extends DqErrorFields {
  status: number;
  /** Problem `type` URI (7.1), or the envelope's `error` text (2.4). */
  problemType?: string;
  /** Problem `title` (7.1) or envelope `message` (2.4), credentials removed. */
  title?: string;
  /** Wait asked for by a `Retry-After` header, in milliseconds. */
  retryAfterMs?: number;
}

/** The platform answered with an error status (problem+json, company envelope, or anything else). */
export class PlatformError extends DqError {
  override name = 'PlatformError';
  declare readonly status: number;
  readonly problemType: string | undefined;
  readonly title: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(message: string, fields: PlatformErrorFields) {
    super(message, fields);
    this.problemType = fields.problemType;
    this.title = fields.title;
    this.retryAfterMs = fields.retryAfterMs;
  }
}

/** Input refused locally, before any request was sent; `violations` name the fields. */
export class LocalValidationError extends DqError {
  override name = 'LocalValidationError';
  declare readonly violations: readonly Violation[];

  constructor(message: string, violations: readonly Violation[]) {
    super(message, { code: 'local-validation', retriable: false, scope: 'record', violations });
  }
}

/** The platform answered 2xx but the body breaks the contract's schema. */
export class ContractError extends DqError {
  override name = 'ContractError';
  constructor(message: string, fields: Omit<DqErrorFields, 'code' | 'retriable'>) {
    super(message, { ...fields, code: 'contract-violation', retriable: false });
  }
}

/** Codes of {@link TransportError}. */
export type TransportErrorCode = 'timeout' | 'connection-error' | 'dns-error' | 'aborted';

/** No usable answer: timeout, socket reset/refused, DNS failure, or the caller aborted. */
export class TransportError extends DqError {
  override name = 'TransportError';
  declare readonly code: TransportErrorCode;
  constructor(message: string, fields: { code: TransportErrorCode; retriable: boolean; cause?: unknown }) {
    super(message, { ...fields, scope: 'request' });
  }
}

/**
 * The retrier gave up (attempts or total time used up). Never retriable, so an outer retrier does
 * not multiply attempts; `cause` is the last failure, whose status and request id it repeats.
 */
export class RetriesExhaustedError extends DqError {
  override name = 'RetriesExhaustedError';
  /** Attempts made, the first one included. */
  readonly attempts: number;

  constructor(message: string, fields: { attempts: number; cause: unknown; status?: number; requestId?: string }) {
    super(message, {
      code: 'retries-exhausted',
      retriable: false,
      scope: 'request',
      status: fields.status,
      requestId: fields.requestId,
      cause: fields.cause,
    });
    this.attempts = fields.attempts;
  }
}

/** Whether `e` stops the whole run (credentials, account, service, feature, quota: exit code 3). */
export function isRunStop(e: unknown): e is DqError {
  return e instanceof DqError && e.scope === 'run';
}

/** Whether repeating the request later may succeed. Anything not a {@link DqError} is not. */
export function isRetriable(e: unknown): boolean {
  return e instanceof DqError && e.retriable;
}
