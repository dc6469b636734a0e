import { DqError, TransportError, errorToData, isRunStop, rootCause } from '../errors/index.js';
import type { Candidate, CompanyRecord } from '../schemas/index.js';
import type { CallOutcome } from './messages.js';
import type { CachedResult, PolicyStatus, RecordError, ResultClass } from './types.js';

type Policy = Readonly<Record<ResultClass, PolicyStatus>>;

/** A 200 address answer → policy status by result class; the first candidate is the best one. */
export function addressOutcome(
  body: { resultClass: ResultClass; results: Candidate[] },
  requestId: string | undefined,
  policy: Policy,
): CallOutcome {
  const result: CachedResult = {
    status: policy[body.resultClass],
    resultClass: body.resultClass,
    candidates: body.results,
  };
  const best = body.results[0];
  if (best !== undefined) result.address = best;
  if (requestId !== undefined) result.requestId = requestId;
  return { kind: 'result', result };
}

/** A 200 company or tr answer: any hit → accepted (best hit first, contract 4.7.2), none → invalid. */
export function companyOutcome(
  companies: CompanyRecord[],
  totalHits: number | undefined,
  requestId: string | undefined,
): CallOutcome {
  const result: CachedResult = {
    status: companies.length > 0 ? 'accepted' : 'invalid',
    hits: totalHits ?? companies.length,
  };
  const best = companies[0];
  if (best !== undefined) result.company = best;
  if (requestId !== undefined) result.requestId = requestId;
  return { kind: 'result', result };
}

/** A 200 vat answer: VALID_VAT_ID → accepted, INVALID_VAT_ID → invalid (syntax only, contract 4.7.3). */
export function vatOutcome(code: 'VALID_VAT_ID' | 'INVALID_VAT_ID', requestId: string | undefined): CallOutcome {
  const result: CachedResult = { status: code === 'VALID_VAT_ID' ? 'accepted' : 'invalid', vatCode: code };
  if (requestId !== undefined) result.requestId = requestId;
  return { kind: 'result', result };
}

/**
 * A failed call → its outcome (ARCHITECTURE.md "Error handling"): run-scope errors stop the run;
 * record-scope ones (400 field errors, refused input) make the record `invalid-input`; everything
 * else that the platform or the network did (retries exhausted, 500 country not available, a body
 * breaking the schema, an unexpected 4xx) makes it `unavailable`. The error code is the underlying
 * failure's (e.g. `country-not-available`, `timeout`), the message says how many attempts were made.
 * An `unavailable` outcome carries `unreachableAt` (now) when the platform gave no answer of its own
 * (see {@link unreachable}), so the engine can tell an outage from a record that failed on its own.
 * Anything that is not a `DqError` is a bug and is rethrown.
 */
export function errorOutcome(e: unknown): CallOutcome {
  if (isRunStop(e)) return { kind: 'stop', error: errorToData(e) };
  if (!(e instanceof DqError)) throw e;
  const cause = rootCause(e);
  const code = cause instanceof DqError ? cause.code : e.code;
  const requestId = e.requestId ?? (cause instanceof DqError ? cause.requestId : undefined);
  const error: RecordError = { code, message: e.message };
  if (e.violations !== undefined && e.violations.length > 0) error.violations = e.violations.map((v) => ({ ...v }));
  if (requestId !== undefined) error.requestId = requestId;
  const result: CachedResult = { status: e.scope === 'record' ? 'invalid-input' : 'unavailable', error };
  if (requestId !== undefined) result.requestId = requestId;
  if (result.status === 'unavailable' && unreachable(cause)) return { kind: 'result', result, unreachableAt: Date.now() };
  return { kind: 'result', result };
}

/**
 * Whether a failure (the last one, after retries) means the platform could not be reached: no
 * connection, a reset, a timeout, or a 5xx that is not an answer about the request itself (500
 * `country-not-available` is the platform answering that this record's country has no data).
 */
export function unreachable(cause: unknown): boolean {
  if (cause instanceof TransportError) return cause.code === 'connection-error' || cause.code === 'timeout' || cause.code === 'dns-error';
  return cause instanceof DqError && cause.status !== undefined && cause.status >= 500 && cause.code !== 'country-not-available';
}
