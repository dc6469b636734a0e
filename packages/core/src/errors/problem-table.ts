/**
 * The contract's error rows (docs/platform-contract.md, 7.1 and 7.2) in one table. Address-API rows are keyed
 * by their problem type fragment (`{docs_url}/location/problems#<fragment>`, fragments from
 * docs/platform-contract.md); company-envelope rows (2.4) by a `company-*` code of our own.
 *
 * `scope` says how far a failure reaches:
 * - `record`: only the input that caused it (the engine marks the record `invalid-input`, or
 *   `unsupported-country` for a country the platform has no reference data for);
 * - `request`: this call failed, the run goes on (retried if `retriable`, else `unavailable`);
 * - `run`: credentials, account, plan or quota — every further call fails the same way, so the
 *   engine stops the whole run (exit code 3).
 */
export const PROBLEMS = {
  'field-error': { status: 400, title: 'Field Validation Error', scope: 'record', retriable: false },
  'no-auth-data': { status: 401, title: 'No authorization header present', scope: 'run', retriable: false },
  'api-key-invalid': { status: 401, title: 'API Key Invalid', scope: 'run', retriable: false },
  'origin-invalid': { status: 401, title: 'Origin Invalid', scope: 'run', retriable: false },
  'missing-session-token': { status: 401, title: 'Missing Session Token', scope: 'request', retriable: false },
  'invalid-session-token': { status: 401, title: 'Invalid Session Token', scope: 'request', retriable: false },
  'account-disabled': { status: 403, title: 'Account Disabled', scope: 'run', retriable: false },
  'service-disabled': { status: 403, title: 'Service Disabled', scope: 'run', retriable: false },
  'feature-disabled': { status: 403, title: 'Feature Disabled', scope: 'run', retriable: false },
  'quota-expired': { status: 403, title: 'Quota Expired', scope: 'run', retriable: false },
  'quota-exhausted': { status: 403, title: 'Quota Exhausted', scope: 'run', retriable: false },
  // Retriable only through a new session (the retrier renews once); never repeated as is.
  'expired-session-token': { status: 403, title: 'Expired Session Token', scope: 'request', retriable: false },
  'not-found': { status: 404, title: 'Not Found', scope: 'request', retriable: false },
  'method-not-allowed': { status: 405, title: 'Method Not Allowed', scope: 'request', retriable: false },
  'unsupported-media-type': { status: 415, title: 'Unsupported Media Type', scope: 'request', retriable: false },
  'too-many-requests': { status: 429, title: 'Too Many Requests', scope: 'request', retriable: true },
  'internal-error': { status: 500, title: 'Internal Error', scope: 'request', retriable: true },
  // An answer about the record's country, not a server failure: the same country gets the same
  // answer on every attempt, so it is not repeated and the record gets a status of its own.
  'country-not-available': { status: 500, title: 'Country not available', scope: 'record', retriable: false },

  'company-bad-request': { status: 400, title: 'Invalid parameters or body', scope: 'record', retriable: false },
  'company-unauthorized': { status: 401, title: 'Authorization missing or invalid', scope: 'run', retriable: false },
  'company-forbidden': {
    status: 403,
    title: 'Service not enabled or maximum number of requests reached',
    scope: 'run',
    retriable: false,
  },
  'company-server-error': { status: 500, title: 'Unknown server error', scope: 'request', retriable: true },
} as const satisfies Record<string, ProblemRow>;

/** How far a failure reaches: one record, one request, or the whole run. */
export type ErrorScope = 'record' | 'request' | 'run';

/** One row of {@link PROBLEMS}. */
export interface ProblemRow {
  readonly status: number;
  readonly title: string;
  readonly scope: ErrorScope;
  readonly retriable: boolean;
}

/** Codes of the contract's error rows. */
export type ProblemCode = keyof typeof PROBLEMS;

/** Address-API problem type fragments (7.1); the company rows are not problem types. */
export type ProblemFragment = Exclude<ProblemCode, `company-${string}`>;

/** Whether `fragment` is one of the contract's known problem types. */
export function isKnownProblem(fragment: string): fragment is ProblemFragment {
  return Object.hasOwn(PROBLEMS, fragment) && !fragment.startsWith('company-');
}

/** Codes for failures that are not rows of the contract (HTTP answers outside it, local failures). */
export const LOCAL_CODES = {
  /** problem+json on a 4xx with a type fragment the contract does not list */
  unknownProblem: 'unknown-problem',
  /** HTTP error answer (not 5xx) without a recognisable body */
  httpError: 'http-error',
  /** 5xx answer that is none of the contract's rows (unlisted problem type, a proxy's page, no body): retried */
  serverError: 'server-error',
  /** a 2xx answer whose body breaks the schema */
  contractViolation: 'contract-violation',
  /** input refused locally before anything was sent */
  localValidation: 'local-validation',
  /** no response within the per-request timeout */
  timeout: 'timeout',
  /** socket reset, refused or closed before a full response */
  connection: 'connection-error',
  /** host name could not be resolved */
  dns: 'dns-error',
  /** the caller's AbortSignal fired */
  aborted: 'aborted',
  /** the retrier gave up; `cause` holds the last failure */
  retriesExhausted: 'retries-exhausted',
  /** a Retry-After longer than the retry policy waits: the run stops (exit 75) until that time */
  retryAfterTooLong: 'retry-after-too-long',
  /**
   * a call still refused with 429 once its retries were used up: the account's rate limit is used
   * by more than this run's budget knows of; the run stops (exit 75), no record is marked for it
   */
  rateLimited: 'rate-limited',
  /** the spending cap (`maxCalls`) was reached: the run stops (exit 5) before the next billable call */
  maxCallsReached: 'max-calls-reached',
  /** the shared rate budget's database could not be reached: the run stops (exit 75) */
  budgetUnreachable: 'budget-unreachable',
  /** the database user lacks the grants on the shared rate budget's table: the run stops (exit 2) */
  budgetPermissionDenied: 'budget-permission-denied',
  /**
   * the shared rate budget's database refused this configuration (a wrong user or password, a
   * database that does not exist, a read-only server, a dq_throttle that is not the budget's): the
   * run stops (exit 2) before any call; a retry would fail the same way
   */
  budgetDbConfig: 'budget-db-config',
  /** the shared rate budget's server is older than PostgreSQL 12: the run stops (exit 2) before any call */
  budgetDbVersion: 'budget-db-version',
  /** the platform answered 404 or 405 to a call: the URL it went to is wrong (--base-url, --realtime-url); the run stops (exit 2) */
  platformUrlUnknown: 'platform-url-unknown',
} as const;

/** Every code a {@link DqError} raised by core can carry. */
export type DqErrorCode = ProblemCode | (typeof LOCAL_CODES)[keyof typeof LOCAL_CODES];
