import { createHash } from 'node:crypto';
import { DqError, LOCAL_CODES } from '../errors/index.js';
import type { ThrottleOptions } from './limits.js';
import type { PgThrottle } from './pg.js';
import type { EndpointId, Throttle } from './types.js';

/**
 * Endpoints whose calls the platform may bill (docs/platform-contract.md, part 8 and the prepaid
 * plans): address validation, batch/sync and autocomplete are counted against a plan's quota, and
 * each company search is a paid search. start-session, phone describe and downloads are not.
 */
export const BILLABLE_ENDPOINTS: ReadonlySet<EndpointId> = new Set<EndpointId>(['validate', 'batch', 'autocomplete', 'company']);

/** Error code of the run stop raised when `--max-calls` is used up (exit code 5). */
export const MAX_CALLS_REACHED = LOCAL_CODES.maxCallsReached;
/** Error code of the run stop raised when the shared budget's database cannot be reached (exit code 75). */
export const BUDGET_UNREACHABLE = LOCAL_CODES.budgetUnreachable;

/**
 * The account a shared budget belongs to, when the user names none: a digest of the platform's
 * base URL and the API key, so every process using the same key against the same platform shares
 * one budget, and the key itself is stored nowhere (only 16 hex digits of its SHA-256).
 */
export function accountOf(apiKey: string, baseUrl: string): string {
  return `key-${createHash('sha256')
    .update(`${baseUrl.replace(/\/+$/, '')}\n${apiKey}`)
    .digest('hex')
    .slice(0, 16)}`;
}

/**
 * A digest of the API key alone, to tell that processes under different accounts of a shared
 * budget use the same key (see {@link checkSharedKey}): 16 hex digits of the SHA-256 of a fixed
 * label and the key, so neither the key nor an account's digest can be read from it.
 */
export function keyIdOf(apiKey: string): string {
  return createHash('sha256').update(`dq-connectors api key\n${apiKey}`).digest('hex').slice(0, 16);
}

/**
 * A count of billable calls shared by every thread holding `buffer` (an engine and its workers),
 * and the most that may be sent (`max`, 0 = no cap). A call is counted when it is about to be sent,
 * after the rate budget let it go, so the cap stops the run before call `max + 1`.
 */
export interface CallCounter {
  readonly buffer: SharedArrayBuffer;
  readonly max: number;
}

/** A new counter at 0 with the cap `max` (0 = none). */
export function createCallCounter(max = 0): CallCounter {
  if (!Number.isInteger(max) || max < 0) throw new RangeError(`max calls must be an integer ≥ 0; got ${max}`);
  return { buffer: new SharedArrayBuffer(8), max };
}

/** Billable calls sent so far (never more than the cap). */
export function callsSent(counter: CallCounter): number {
  const n = Number(Atomics.load(new BigInt64Array(counter.buffer), 0));
  return counter.max > 0 ? Math.min(n, counter.max) : n;
}

/** Where a throttle's rate budget lives: this process only, or a Postgres table shared by every process of `account`. */
export interface BudgetSpec {
  /** `postgres://…` of the shared budget; undefined: the budget of this process only. */
  url?: string;
  /** Account the shared budget belongs to (see {@link accountOf}). */
  account: string;
  /** The API key's digest ({@link keyIdOf}): the budget records that the key is in use under `account`. */
  keyId?: string;
}

/** A throttle that may own connections: `close` releases them. */
export interface ClosableThrottle extends Throttle {
  close(): Promise<void>;
}

/**
 * The throttle of one engine thread: `local` (the process's shared-memory budget) or, with a
 * `spec.url`, the Postgres budget shared by every process of the account, opened on first use.
 * Each billable call then takes one from `counter`; the call past the cap is not sent: it fails
 * with a run stop `max-calls-reached`. A Postgres budget that cannot be reached stops the run
 * with `budget-unreachable` (exit 75), rather than sending without it; one on a server older than
 * PostgreSQL 12 with `budget-db-version` (exit 2).
 */
export function createBudgetThrottle(local: Throttle, spec: BudgetSpec, counter: CallCounter, options: ThrottleOptions): ClosableThrottle {
  const url = spec.url;
  let shared: Promise<PgThrottle> | undefined;
  const open = (): Promise<PgThrottle> =>
    // pg is an optional peer dependency of core: loaded only when a shared budget is asked for.
    (shared ??= import('./pg.js')
      .then(({ createPgThrottle }) => createPgThrottle({ ...options, connectionString: url, account: spec.account, keyId: spec.keyId }))
      .catch((err: unknown) => {
        shared = undefined;
        throw openError(err);
      }));
  const count = new BigInt64Array(counter.buffer);
  const take = (endpoint: EndpointId): void => {
    if (!BILLABLE_ENDPOINTS.has(endpoint)) return;
    const before = Number(Atomics.add(count, 0, 1n));
    if (counter.max > 0 && before >= counter.max) {
      // Not sent: the count stays at the calls that went out.
      Atomics.sub(count, 0, 1n);
      throw new DqError(`the spending cap was reached: ${counter.max} billable calls sent (--max-calls)`, {
        code: MAX_CALLS_REACHED,
        retriable: false,
        scope: 'run',
      });
    }
  };
  /** An attempt that took a call from the count but never went out (no connection) gives it back. */
  const giveBack = (endpoint: EndpointId, unsent: boolean | undefined): void => {
    if (unsent === true && BILLABLE_ENDPOINTS.has(endpoint)) Atomics.sub(count, 0, 1n);
  };
  const capped = (): void => {
    if (counter.max > 0 && Number(Atomics.load(count, 0)) >= counter.max) {
      throw new DqError(`the spending cap was reached: ${counter.max} billable calls sent (--max-calls)`, {
        code: MAX_CALLS_REACHED,
        retriable: false,
        scope: 'run',
      });
    }
  };
  if (url === undefined) {
    return {
      async acquire(endpoint, signal) {
        if (BILLABLE_ENDPOINTS.has(endpoint)) capped();
        const ticket = await local.acquire(endpoint, signal);
        take(endpoint);
        return ticket;
      },
      ended(endpoint, ticket, unsent) {
        local.ended?.(endpoint, ticket, unsent);
        giveBack(endpoint, unsent);
      },
      backoff: (endpoint, retryAfterMs) => local.backoff(endpoint, retryAfterMs),
      close: async () => undefined,
    };
  }
  let throttle: PgThrottle | undefined;
  return {
    async acquire(endpoint, signal) {
      if (BILLABLE_ENDPOINTS.has(endpoint)) capped();
      if (options.limits?.[endpoint] === 0) {
        // No limit for this endpoint (--rate-limit 0): nothing to share, no connection to open.
        await local.acquire(endpoint, signal);
        take(endpoint);
        return;
      }
      throttle ??= await open();
      let ticket: number | void;
      try {
        ticket = await throttle.acquire(endpoint, signal);
      } catch (err) {
        if (err instanceof DqError && err.code === 'throttle-store-failed') throw budgetError(err);
        throw err;
      }
      take(endpoint);
      return ticket;
    },
    ended(endpoint, ticket, unsent) {
      throttle?.ended?.(endpoint, ticket, unsent);
      giveBack(endpoint, unsent);
    },
    backoff(endpoint, retryAfterMs) {
      // The backoff state lives in the shared row: a 429 seen here slows every process of the account.
      throttle?.backoff(endpoint, retryAfterMs);
    },
    async close() {
      const t = shared;
      shared = undefined;
      if (t) await (await t.catch(() => undefined))?.close();
    },
  };
}

/**
 * Opens the shared budget of `spec` once and closes it again: checks, before a run takes any input,
 * that its database answers, is new enough and lets the user use the budget's table. Rejects with
 * the error the run's first billable call would have stopped it with (`budget-unreachable`,
 * `budget-db-version`, `budget-permission-denied`, `budget-db-config`). Nothing to check without a URL, or when
 * `endpoint` has no limit (`--rate-limit 0`: the budget is never used).
 */
export async function probeBudget(spec: BudgetSpec, endpoint: EndpointId, options: ThrottleOptions): Promise<void> {
  if (spec.url === undefined || options.limits?.[endpoint] === 0) return;
  const { createPgThrottle } = await import('./pg.js');
  let throttle: PgThrottle;
  try {
    throttle = await createPgThrottle({ ...options, connectionString: spec.url, account: spec.account });
  } catch (err) {
    throw openError(err);
  }
  await throttle.close();
}

/**
 * Warns, through `warn`, when the API key of `spec` is in use now under another account of the
 * same shared budget (README, "One rate budget per account"): a process given `--account` and
 * one not, or the same key through two base URLs, pace two rows, each at the whole limit, and the
 * platform answers the excess with 429s. Which row this process uses does not change, and the
 * run goes on. Nothing to check without a shared budget, a key digest, or a limit for `endpoint`;
 * a database where the check cannot be made (see `otherAccountsOfKey`) gives no warning.
 */
export async function checkSharedKey(
  spec: BudgetSpec,
  endpoint: EndpointId,
  options: ThrottleOptions,
  warn: (message: string, fields: Record<string, unknown>) => void,
): Promise<void> {
  if (spec.url === undefined || spec.keyId === undefined || options.limits?.[endpoint] === 0) return;
  let others: string[];
  try {
    const { otherAccountsOfKey } = await import('./pg.js');
    others = await otherAccountsOfKey(spec.url, spec.account, spec.keyId);
  } catch {
    return;
  }
  const other = others[0];
  if (other === undefined) return;
  const also = others.length > 1 ? ` (and ${others.slice(1).join(', ')})` : '';
  warn(
    `the API key of this run is in use right now under another account of the shared rate budget, ${other}${also}, while this run uses ${spec.account}: each account's budget allows the whole rate limit, so together they may send up to twice it and meet 429s; give every process using this key the same --account (or none, on the same base URL)`,
    { code: 'budget-key-shared', account: spec.account, otherAccounts: others },
  );
}

/**
 * SQLSTATEs (besides class 28, a refused user or password) of a budget database that answered and
 * refused what it was given: no such database, a read-only server or session, a dq_throttle that
 * is another application's table.
 */
const CONFIG_SQLSTATES: ReadonlySet<string> = new Set(['3D000', '25006', '42809']);

/**
 * The stop of a budget that could not be opened. A server too old for the budget's SQL is no
 * outage (a rerun would fail the same way), and a table another session keeps locked is named as
 * such (see `createPgThrottle`): both are kept as they are; any other failure is {@link budgetError}'s.
 */
function openError(err: unknown): DqError {
  const kept: ReadonlySet<unknown> = new Set([LOCAL_CODES.budgetDbVersion, LOCAL_CODES.budgetUnreachable]);
  return err instanceof DqError && kept.has(err.code) ? err : budgetError(err);
}

function budgetError(err: unknown): DqError {
  const code = (err as { code?: unknown }).code ?? (err as { cause?: { code?: unknown } }).cause?.code;
  if (code === '42501') {
    // Not a failure a retry cures: the database user lacks a grant.
    return new DqError(
      "the database user may not use the shared rate budget's table dq_throttle: create it once as its owner (dq-pg init does), then GRANT SELECT, INSERT, UPDATE ON dq_throttle TO the user (and SELECT, INSERT, UPDATE, DELETE ON dq_throttle_keys, for the check that its API key is not in use under another account); or run with --budget off to use a budget of this process only",
      { code: LOCAL_CODES.budgetPermissionDenied, retriable: false, scope: 'run', cause: err },
    );
  }
  if (typeof code === 'string' && (code.startsWith('28') || CONFIG_SQLSTATES.has(code))) {
    // The server answered, and refused this configuration: a retry would be refused the same way.
    const pgError = (err as { code?: unknown }).code === code ? err : (err as { cause?: unknown }).cause;
    return new DqError(
      `the shared rate budget's database refused it: ${(pgError as Error).message} (${code}); fix --budget / --account-db (its user, password or database, a server that takes writes), or run with --budget off to use a budget of this process only`,
      { code: LOCAL_CODES.budgetDbConfig, retriable: false, scope: 'run', cause: err },
    );
  }
  const detail = typeof code === 'string' && code !== 'throttle-store-failed' ? ` (${code})` : '';
  return new DqError(
    `the shared rate budget's database could not be reached${detail}; --budget off runs with a budget of this process only instead`,
    // Not retriable by the retrier (every call would wait on the same database); exit 75 all the same.
    { code: BUDGET_UNREACHABLE, retriable: false, scope: 'run', cause: err },
  );
}
