import { z } from 'zod';
import { PlatformError } from './dq-error.js';
import type { Violation } from './dq-error.js';
import { PROBLEMS, isKnownProblem } from './problem-table.js';
import type { ErrorScope, ProblemCode } from './problem-table.js';

const problemBody = z.looseObject({
  type: z.string(),
  title: z.string().optional(),
  status: z.number().optional(),
  violations: z.array(z.looseObject({ fieldName: z.string(), message: z.string() })).optional(),
});

const companyEnvelope = z.looseObject({
  status: z.number(),
  error: z.string().optional(),
  message: z.string().optional(),
  path: z.string().optional(),
  timestamp: z.union([z.string(), z.number()]).optional(),
});

/** What the transport knows about one error answer. */
export interface ErrorAnswer {
  /** HTTP status code. */
  status: number;
  /** Body parsed as JSON, or its text when it was not JSON, or undefined when empty. */
  body: unknown;
  /** `X-Service-Request-Id` of the answer. */
  requestId?: string | undefined;
  /** `Retry-After` in milliseconds, already parsed. */
  retryAfterMs?: number | undefined;
  /** Removes credentials from text taken from the answer (default: identity). */
  redact?: ((text: string) => string) | undefined;
}

/**
 * Turns an HTTP error answer into a {@link PlatformError}: a problem+json body (7.1) by its type
 * fragment, a company envelope (2.4) by its status, anything else by status alone. A problem type
 * we do not know is not retriable on a 4xx (it would repeat identically). A 5xx that is none of
 * the contract's rows — an unlisted problem type such as `#service-unavailable`, a body that is not
 * JSON (a proxy's HTML page), an empty or truncated body, JSON of another shape — is what the
 * contract's retry rule is about (5xx may be retried after some time): code `server-error`,
 * retried with backoff, and once the retries are used up the record is `unavailable` with that
 * code and the status in its message.
 */
export function decodeErrorAnswer(answer: ErrorAnswer): PlatformError {
  const redact = answer.redact ?? ((text: string) => text);
  const { status, requestId, retryAfterMs } = answer;
  const base = { status, requestId, retryAfterMs };

  const problem = problemBody.safeParse(answer.body);
  if (problem.success) {
    const fragment = problemFragment(problem.data.type);
    const title = problem.data.title === undefined ? undefined : redact(problem.data.title);
    const violations: Violation[] | undefined = problem.data.violations?.map((v) => ({
      fieldName: v.fieldName,
      message: redact(v.message),
    }));
    if (isKnownProblem(fragment)) {
      const row = PROBLEMS[fragment];
      return new PlatformError(message(row.title, fragment, status, requestId, violations), {
        ...base,
        code: fragment,
        retriable: row.retriable,
        scope: row.scope,
        problemType: problem.data.type,
        title,
        violations,
      });
    }
    if (status >= 500) return serverError(base, title, problem.data.type);
    return new PlatformError(message(title ?? 'Unknown problem', fragment, status, requestId, violations), {
      ...base,
      code: 'unknown-problem',
      retriable: false,
      scope: fallbackScope(status),
      problemType: problem.data.type,
      title,
      violations,
    });
  }

  const envelope = companyEnvelope.safeParse(answer.body);
  if (envelope.success && (envelope.data.error !== undefined || envelope.data.message !== undefined)) {
    const code = companyCode(status);
    const detail = envelope.data.message ?? envelope.data.error ?? '';
    const title = redact(detail);
    if (code !== undefined) {
      const row = PROBLEMS[code];
      return new PlatformError(message(`${row.title}: ${title}`, code, status, requestId), {
        ...base,
        code,
        retriable: row.retriable,
        scope: row.scope,
        problemType: envelope.data.error,
        title,
      });
    }
    return httpError(status, base, title);
  }

  return httpError(status, base, undefined);
}

type AnswerBase = { status: number; requestId: string | undefined; retryAfterMs: number | undefined };

/** A 5xx outside the contract's rows: the platform (or a proxy before it) is temporarily unable to answer. */
function serverError(base: AnswerBase, title: string | undefined, problemType?: string): PlatformError {
  const text = title === undefined || title === '' ? 'Server error' : title;
  return new PlatformError(message(text, 'server-error', base.status, base.requestId), {
    ...base,
    code: 'server-error',
    retriable: true,
    scope: 'request',
    problemType,
    title,
  });
}

function httpError(status: number, base: AnswerBase, title: string | undefined): PlatformError {
  if (status >= 500) return serverError(base, title);
  const text = title === undefined || title === '' ? `HTTP ${status}` : `HTTP ${status}: ${title}`;
  return new PlatformError(message(text, 'http-error', status, base.requestId), {
    ...base,
    code: 'http-error',
    retriable: status === 429,
    scope: fallbackScope(status),
    title,
  });
}

/** `https://docs.example/location/problems#field-error` → `field-error`; a bare fragment stays. */
export function problemFragment(type: string): string {
  const hash = type.lastIndexOf('#');
  return hash === -1 ? type : type.slice(hash + 1);
}

function companyCode(status: number): ProblemCode | undefined {
  if (status === 400) return 'company-bad-request';
  if (status === 401) return 'company-unauthorized';
  if (status === 403) return 'company-forbidden';
  if (status >= 500) return 'company-server-error';
  return undefined;
}

// An unrecognised 401/403 still means the credentials or the account are refused: stop the run
// rather than fail every record one by one.
function fallbackScope(status: number): ErrorScope {
  return status === 401 || status === 403 ? 'run' : 'request';
}

/** What a person should do about the failures that need one. */
const HINTS: Partial<Record<string, string>> = {
  'field-error': 'correct the named fields of this record',
  'country-not-available': 'the platform has no reference data for this country: check the country code, or the countries of the plan',
  'no-auth-data': 'set the API key (DQ_API_KEY or --api-key)',
  'api-key-invalid': 'check the API key in the customer portal',
  'origin-invalid': 'whitelist the Origin domain in the account',
  'account-disabled': 'contact the platform about the account',
  'service-disabled': 'enable this service in the plan',
  'feature-disabled': 'enable this feature in the plan',
  'quota-expired': 'renew the prepaid plan',
  'quota-exhausted': 'buy more requests or wait for the next plan period',
  'not-found': 'check the base URL',
  'company-bad-request': 'correct the query parameters or body',
  'company-unauthorized': 'check the API key',
  'company-forbidden': 'enable the service or raise the request limit of the account',
};

function message(title: string, code: string, status: number, requestId: string | undefined, violations?: readonly Violation[]): string {
  const fields = violations?.length ? `; fields: ${violations.map((v) => `${v.fieldName} (${v.message})`).join(', ')}` : '';
  const hint = HINTS[code] === undefined ? '' : `; ${HINTS[code]}`;
  return `${title} [${code}, HTTP ${status}, request id ${requestId ?? 'none'}]${fields}${hint}`;
}
