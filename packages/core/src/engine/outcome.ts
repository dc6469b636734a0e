import { DqError, LOCAL_CODES, TransportError, errorToData, isRunStop, rootCause } from '../errors/index.js';
import type { Candidate, CompanyRecord } from '../schemas/index.js';
import type { CallOutcome } from './messages.js';
import type { CachedResult, PolicyStatus, RecordError, RecordStatus, ResultClass } from './types.js';

type Policy = Readonly<Record<ResultClass, PolicyStatus>>;

/** A 200 address answer → policy status by result class; the first candidate is the best one. */
export function addressOutcome(body: { resultClass: ResultClass; results: Candidate[] }, requestId: string | undefined, policy: Policy): CallOutcome {
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

/**
 * How many points the best company hit must score above the next one to be taken without a
 * person looking: closer hits are too alike for an error-tolerant name search to tell apart.
 */
export const COMPANY_CLEAR_LEAD = 5;

/**
 * A 200 company or tr answer (hits come best first): no hit → invalid. One hit, or a clear
 * winner among several → accepted: the best hit is the only one fully identical to the input
 * (score 100), or leads the next by at least {@link COMPANY_CLEAR_LEAD} points. Several hits
 * without a clear winner (e.g. two companies of the same name and no zip given) → review, with
 * every hit kept in `companies` for the person who picks one. `company` is the best hit either way.
 */
export function companyOutcome(companies: CompanyRecord[], totalHits: number | undefined, requestId: string | undefined): CallOutcome {
  const best = companies[0];
  const next = companies[1];
  const clear = next === undefined || clearWinner((best as CompanyRecord).searchScore, next.searchScore);
  const result: CachedResult = {
    status: best === undefined ? 'invalid' : clear ? 'accepted' : 'review',
    hits: totalHits ?? companies.length,
  };
  if (best !== undefined) result.company = best;
  if (!clear) result.companies = companies;
  if (requestId !== undefined) result.requestId = requestId;
  return { kind: 'result', result };
}

function clearWinner(best: number, next: number): boolean {
  return (best === 100 && next < 100) || best - next >= COMPANY_CLEAR_LEAD;
}

/** A 200 vat answer: VALID_VAT_ID → accepted, INVALID_VAT_ID → invalid (syntax only, contract 4.7.3). */
export function vatOutcome(code: 'VALID_VAT_ID' | 'INVALID_VAT_ID', requestId: string | undefined): CallOutcome {
  const result: CachedResult = { status: code === 'VALID_VAT_ID' ? 'accepted' : 'invalid', vatCode: code };
  if (requestId !== undefined) result.requestId = requestId;
  return { kind: 'result', result };
}

/**
 * A failed call → its outcome (docs/architecture.md "Error handling"): run-scope errors stop the run;
 * record-scope ones make the record `invalid-input` (400 field errors, refused input) or
 * `unsupported-country` (500 country not available: the platform has no reference data for the
 * record's country); everything else that the platform or the network did (retries exhausted, a
 * body breaking the schema, an unexpected 4xx) makes it `unavailable`. The error code is the
 * underlying failure's (e.g. `field-error`, `timeout`), the message says how many attempts were
 * made. An `unavailable` outcome carries `unreachableAt` (now) when the platform gave no answer of
 * its own (see {@link unreachable}), so the engine can tell an outage from a record that failed on
 * its own. Anything that is not a `DqError` is a bug and is rethrown.
 */
export function errorOutcome(e: unknown): CallOutcome {
  if (isRunStop(e)) return { kind: 'stop', error: errorToData(e) };
  if (!(e instanceof DqError)) throw e;
  const cause = rootCause(e);
  if (cause instanceof DqError && cause.status === 429) return { kind: 'stop', error: errorToData(rateLimited(e, cause)) };
  const code = cause instanceof DqError ? cause.code : e.code;
  const requestId = e.requestId ?? (cause instanceof DqError ? cause.requestId : undefined);
  const error: RecordError = { code, message: e.message };
  if (e.violations !== undefined && e.violations.length > 0) error.violations = e.violations.map((v) => ({ ...v }));
  if (requestId !== undefined) error.requestId = requestId;
  const result: CachedResult = { status: e.scope === 'record' ? (RECORD_STATUS[code] ?? 'invalid-input') : 'unavailable', error };
  if (requestId !== undefined) result.requestId = requestId;
  if (result.status === 'unavailable' && unreachable(cause)) return { kind: 'result', result, unreachableAt: preciseNow() };
  return { kind: 'result', result };
}

/**
 * The run stop for a call the platform still refused with 429 Too Many Requests once its retries
 * (each after the pause the platform asked for) were used up. Whatever the record, it would get
 * the same answer: the account's rate limit is used by more than this run's rate budget counts
 * (another process or tool on the account, or a --rate-limit above the plan's). No record is
 * marked `unavailable` for it: the run stops, retriable (exit 75), to be continued later.
 */
function rateLimited(e: DqError, last: DqError): DqError {
  return new DqError(
    `the platform kept refusing calls for the account's rate limit (${e.message}): something besides this run is using the account's calls per second, or --rate-limit is above the plan's; no record was marked unavailable for it`,
    { code: LOCAL_CODES.rateLimited, retriable: true, scope: 'run', status: 429, requestId: e.requestId ?? last.requestId, cause: e },
  );
}

/**
 * Epoch ms with a fraction: many calls end within one millisecond, and the outage watch orders
 * their ends (failures against answers) across the engine's threads.
 */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Record-scope failures that are not about a field of the input, by code: each has a status of its own. */
const RECORD_STATUS: Partial<Record<string, RecordStatus>> = {
  'country-not-available': 'unsupported-country',
};

/**
 * Whether a failure (the last one, after retries) means the platform could not be reached: no
 * connection, a reset, a timeout, or a 5xx that is not an answer about the request itself (500
 * `country-not-available` is the platform answering that this record's country has no data).
 */
export function unreachable(cause: unknown): boolean {
  if (cause instanceof TransportError) return cause.code === 'connection-error' || cause.code === 'timeout' || cause.code === 'dns-error';
  return cause instanceof DqError && cause.status !== undefined && cause.status >= 500 && cause.code !== 'country-not-available';
}
