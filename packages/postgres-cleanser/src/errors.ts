import { DqError, ExitCode } from '@dq/core';
import { defineErrorCodes } from '@dq/core/errors';
import { StoreError } from '@dq/core/store';

/**
 * An error of dq-pg itself: its stable `code` (branch on it, never on the message) and the
 * `exitCode` the CLI exits with, from this table (platform errors keep @dq/core's codes).
 * Messages never hold the DB password.
 */
export class CleanseError extends defineErrorCodes('dq-pg', {
  /** a flag is missing, unknown or has a bad value */
  usage: { exit: ExitCode.USAGE },
  /** the database refused the credentials, or the database does not exist */
  'db-auth': { exit: ExitCode.USAGE },
  /** the database takes no writes for this user (a hot standby, default_transaction_read_only) and the command writes */
  'db-read-only': { exit: ExitCode.USAGE },
  /** the database server cannot be reached (refused, reset, timed out, shutting down) */
  'db-unreachable': { exit: ExitCode.TEMPFAIL },
  /** a page write still waited too long for a lock with the rows other sessions hold left out (the table itself is locked), or a rollback batch waited too long for a row */
  'db-locked': { exit: ExitCode.TEMPFAIL },
  /** the table named by --table does not exist */
  'table-not-found': { exit: ExitCode.USAGE },
  /** the table has inheritance children, a rule on UPDATE, or is published without a replica identity: dq-pg cannot write it as it is */
  'table-unsupported': { exit: ExitCode.USAGE },
  /** a column's type changed while the run worked (ALTER TABLE … TYPE): rerun with the same --run-id */
  'table-changed': { exit: ExitCode.TEMPFAIL },
  /** the key or a mapped column does not exist */
  'column-not-found': { exit: ExitCode.USAGE },
  /** the key column has no single-column unique index or primary key */
  'key-not-unique': { exit: ExitCode.USAGE },
  /** the key column is nullable and holds NULLs: those rows could not be addressed */
  'key-has-nulls': { exit: ExitCode.USAGE },
  /** a mapped column is not of a text-like type, is generated, or is the key itself */
  'column-type': { exit: ExitCode.USAGE },
  /** the --where predicate does not parse or names unknown columns */
  'where-invalid': { exit: ExitCode.USAGE },
  /** the database user may not read or update the table, or create the bookkeeping schema */
  'permission-denied': { exit: ExitCode.USAGE },
  /** --run-id names a run made with another table, key, mapping or options */
  'run-mismatch': { exit: ExitCode.USAGE },
  /** rollback of a run id that does not exist */
  'run-not-found': { exit: ExitCode.USAGE },
  /** another cleanse run of the same rows is being worked on now: join it or retry once it ended */
  'table-busy': { exit: ExitCode.TEMPFAIL },
  /** another process is applying the same review run (`dq-pg review apply`): retry once it ended */
  'run-busy': { exit: ExitCode.TEMPFAIL },
  /** a reviewer's candidate is longer than its column holds (`varchar(n)`, `char(n)`): widen the column or decide otherwise */
  'value-too-long': { exit: ExitCode.USAGE },
  /** the table refused a page's new values (constraint, trigger, type) even without the rows found refusing them; or a review apply's row */
  'write-refused': { exit: ExitCode.USAGE },
  /** the review file cannot be read: not UTF-8, not CSV, or not a file of `dq-pg review export` */
  'review-file': { exit: ExitCode.USAGE },
  /** the database server is older than dq-pg supports (README "Supported PostgreSQL versions") */
  'db-version': { exit: ExitCode.USAGE },
  /** a server setting ended a session dq-pg needs (idle_in_transaction_session_timeout shorter than a key range takes) */
  'db-setting': { exit: ExitCode.USAGE },
  /** --db goes through a connection pooler in transaction or statement mode, which does not keep the session dq-pg needs: connect directly or through session pooling */
  'db-pooler': { exit: ExitCode.USAGE },
}) {
  override readonly name = 'CleanseError';
}

/** A usage error naming the flag at fault (exit code 2). */
export const usageError = (flag: string, problem: string): CleanseError => CleanseError.usage(flag, problem);

/** Network errors of a socket to the database server. */
const UNREACHABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENETRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * node-postgres's own errors when the connection went away; they carry no code ("Connection
 * terminated unexpectedly" when the server closed the socket, the "not queryable" ones for queries
 * sent on such a client afterwards, "Query read timeout" when a query got no answer in time).
 */
const LOST_CONNECTION_MESSAGE =
  /^(Connection terminated|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|timeout expired|Query read timeout)/;

/**
 * Whether `e` means the connection to the database is lost or cannot be made: a network error,
 * SQLSTATE class 08 (connection exception) or 57P (server shutting down, crashed), or
 * node-postgres's code-less "Connection terminated…" errors. The one test dq-pg uses wherever a
 * database error is classified: every such loss ends a command with exit 75.
 */
export function isConnectionLoss(e: unknown): boolean {
  if (e instanceof CleanseError) return e.code === 'db-unreachable';
  const code = typeof (e as { code?: unknown })?.code === 'string' ? (e as { code: string }).code : '';
  if (UNREACHABLE_ERRNO.has(code) || code.startsWith('08') || code.startsWith('57P')) return true;
  // The result store's error (its own connection to this database) carries the lost connection as its cause.
  const cause = (e as { cause?: unknown })?.cause;
  if (cause !== undefined && cause !== e && e instanceof DqError && isConnectionLoss(cause)) return true;
  return code === '' && e instanceof Error && LOST_CONNECTION_MESSAGE.test(e.message);
}

/**
 * A lost connection as a {@link CleanseError} (`db-unreachable`, exit 75) saying what to do next
 * (`then`); other errors are returned unchanged. With `storeApart` (`--store` names a store apart
 * from --db: another database, a folder) the store's own error stays as it is
 * (`store-unreachable`, exit 75, naming that store): the database is not what failed.
 */
export function connectionLost(e: unknown, where: string, then = 'retry later', storeApart = false): unknown {
  if (e instanceof CleanseError || (storeApart && e instanceof StoreError) || !isConnectionLoss(e)) return e;
  const detail = (e as { code?: unknown }).code ? `${String((e as { code: unknown }).code)}: ${(e as Error).message}` : (e as Error).message;
  return new CleanseError('db-unreachable', `lost the connection to the database ${where} (${detail}); ${then}`, { cause: e });
}

/**
 * Turns a node-postgres connection failure into a {@link CleanseError}: SQLSTATE class 28 (bad
 * credentials) and 3D000 (no such database) are usage errors, network errors and class 08 / 57P
 * (server shutting down) are temporary. Anything else is returned unchanged. `where` names the
 * server as `host:port/database`, never with the password.
 */
export function connectionError(e: unknown, where: string): unknown {
  const code = typeof (e as { code?: unknown })?.code === 'string' ? (e as { code: string }).code : '';
  if (code.startsWith('28') || code === '3D000') {
    return new CleanseError('db-auth', `the database ${where} refused the connection (${code}): check the user, password and database name of --db`, {
      cause: e,
    });
  }
  if (isConnectionLoss(e)) {
    return new CleanseError('db-unreachable', `the database ${where} cannot be reached (${code || (e as Error).message}); retry later`, { cause: e });
  }
  return e;
}

/**
 * A relation or column the command uses vanished while it worked (SQLSTATE 42P01, 42703: the table
 * dropped or renamed, a column renamed): a {@link CleanseError} (`table-not-found`,
 * `column-not-found`, exit 2) quoting PostgreSQL and saying what to do next (`then`); other errors
 * are returned unchanged.
 */
export function relationGone(e: unknown, table: string, then: string): unknown {
  if (e instanceof CleanseError) return e;
  const code = (e as { code?: unknown })?.code;
  const message = (e as Error)?.message;
  if (code === '42P01')
    return new CleanseError('table-not-found', `${message}: was ${table} dropped or renamed while dq-pg worked on it? ${then}`, { cause: e });
  if (code === '42703')
    return new CleanseError('column-not-found', `${message}: was a column of ${table} dropped or renamed while dq-pg worked on it? ${then}`, { cause: e });
  return e;
}

/**
 * A column the command reads changed its type while it worked (`ALTER TABLE … ALTER COLUMN … TYPE`,
 * e.g. widened after rows were not written for `value-too-long`): the statements prepared for the
 * table's old definition no longer fit it (SQLSTATE 0A000, "cached plan must not change result
 * type"). A {@link CleanseError} (`table-changed`, exit 75) saying to rerun (`then`), which
 * checks the table anew and goes on where the run stopped; other errors are returned unchanged.
 */
export function definitionChanged(e: unknown, table: string, then: string): unknown {
  if (e instanceof CleanseError) return e;
  const { code, message } = e as { code?: unknown; message?: unknown };
  if (code !== '0A000' || typeof message !== 'string' || !/^cached plan must not change result type/.test(message)) return e;
  return new CleanseError('table-changed', `the definition of ${table} changed while dq-pg worked on it (a column's type altered: ${message}); ${then}`, {
    cause: e,
  });
}

/**
 * A column the command writes (mapped or status column) became a generated column while it worked
 * (dropped and added again as `GENERATED ALWAYS AS (…) STORED`: SQLSTATE 428C9, "can only be
 * updated to DEFAULT"): no run can write it any more, and a run keeps the mapping and status
 * columns it began with. A {@link CleanseError}
 * (`column-type`, exit 2, as the pre-flight refuses a generated column) quoting PostgreSQL and
 * saying what to do (`then`); other errors are returned unchanged.
 */
export function columnGenerated(e: unknown, table: string, then: string): unknown {
  if (e instanceof CleanseError || (e as { code?: unknown })?.code !== '428C9') return e;
  return new CleanseError(
    'column-type',
    `${(e as Error).message} (SQLSTATE 428C9): a column of ${table} that dq-pg writes (--map, --status-columns) became a generated column while dq-pg worked on it, and dq-pg cannot write a generated column. ${then}`,
    { cause: e },
  );
}

/** Codes of the pre-flight's refusals of a table as it is now. */
const TABLE_REFUSALS = new Set(['table-not-found', 'column-not-found', 'column-type', 'key-not-unique', 'key-has-nulls', 'table-unsupported']);

/**
 * The pre-flight's refusal of the table of a recorded run (`rollback`, `review export`/`apply`,
 * which take the table, key and columns from the run, not from flags), said as such: the table
 * changed since run `runId` was made on it, and what to do. The exit code stays the refusal's (2);
 * other errors are returned unchanged.
 */
export function changedSinceRun(e: unknown, runId: string, table: string): unknown {
  if (!(e instanceof CleanseError) || !TABLE_REFUSALS.has(e.code)) return e;
  // The refusal's own message names the flag a cleanse gives it (--table, --map <field>, --key).
  const reason =
    e.code === 'table-not-found' ? 'it is not in this database any more (dropped or renamed?)' : e.message.replace(/^--[a-z-]+( [A-Za-z]+)?: /, '');
  return new CleanseError(
    e.code,
    `run ${runId} was made on ${table}, which changed since: ${reason}. Give the table back the name, key and columns the run used, then run this command again`,
    { cause: e },
  );
}

/**
 * The database user lost a privilege the command needs while it worked (SQLSTATE 42501: a REVOKE
 * during a run; a row-level security policy refusing a row is the table's refusal of that row, not
 * this): a {@link CleanseError} (`permission-denied`, exit 2) quoting PostgreSQL, naming the grants
 * the README's "Database roles" lists and what to do next (`then`); other errors are returned
 * unchanged.
 */
export function privilegeLost(e: unknown, table: string, user: string, then: string): unknown {
  if (e instanceof CleanseError || (e as { code?: unknown })?.code !== '42501') return e;
  const message = (e as Error).message;
  if (/row-level security/.test(message)) return e;
  return new CleanseError(
    'permission-denied',
    `${message} (SQLSTATE 42501): the database user ${user} may no longer do what dq-pg needs; give it the grants the README lists for an ETL role ("Database roles"): GRANT SELECT, UPDATE ON ${table} TO ${user}, and on the schemas dq_cleanse and dq_store. ${then}`,
    { cause: e },
  );
}
