import pg from 'pg';
import type { Redactor } from '@dq/core';
import { DB_CONNECT_TIMEOUT_MS, DB_QUERY_TIMEOUT_MS, endOrDrop, postgresVersionProblem, readOnlySessions } from '@dq/core/store';
import { CleanseError, connectionError, usageError } from './errors.js';

/** A connection string checked and described without its password. */
export interface DbTarget {
  url: string;
  /** `host:port/database`, safe to print. */
  where: string;
}

/**
 * Checks a `postgres://` URL, registers its password with `redactor` (so no log line or error
 * message shows it) and describes it without the password.
 */
export function dbTarget(url: string | undefined, redactor?: Redactor): DbTarget {
  if (!url) throw usageError('--db', 'required: the database URL, e.g. postgres://user@host:5432/db (or set DQ_DATABASE_URL)');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usageError('--db', 'is not a URL of the form postgres://user:password@host:port/database');
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw usageError('--db', `scheme "${parsed.protocol}" is not postgres: or postgresql:`);
  }
  if (parsed.password) {
    redactor?.add(parsed.password);
    redactor?.add(decodeURIComponent(parsed.password));
  }
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || '(default)';
  return { url, where: `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}/${database}` };
}

/** Options of {@link connect}. */
export interface ConnectOptions {
  /**
   * Longest wait for one query in ms (default 30 s); 0 for none, for the commands whose single
   * statements may rightly run for minutes over a large table (`init`'s layout upgrades,
   * `rollback`, `status`, `report`).
   */
  queryTimeoutMs?: number;
  /**
   * The command writes to the database (cleanse, review apply, rollback, init): a server whose
   * sessions of this user are read-only (a hot standby, `default_transaction_read_only`) is
   * refused (`db-read-only`, exit 2) before any work, rather than failing at the first write.
   */
  writes?: boolean;
}

/** Servers (by URL) whose version this process has checked already: one query per server, not per connection. */
const versionChecked = new Set<string>();

/**
 * Opens one connection (application name `dq-pg`); connection failures become CleanseErrors. A
 * query that gets no answer for 30 s (a frozen server, a network partition) fails as a lost
 * connection, and so does a connection not made within 15 s; `?query_timeout=<ms>` in the URL sets
 * another limit. A server older than PostgreSQL 12 is refused (`db-version`, exit 2) before any work
 * (README, dq-pg section).
 */
export async function connect(target: DbTarget, applicationName = 'dq-pg', options: ConnectOptions = {}): Promise<pg.Client> {
  const queryTimeoutMs = options.queryTimeoutMs ?? DB_QUERY_TIMEOUT_MS;
  const client = new pg.Client({
    connectionString: target.url,
    application_name: applicationName,
    ...(queryTimeoutMs > 0 ? { query_timeout: queryTimeoutMs } : {}),
    connectionTimeoutMillis: DB_CONNECT_TIMEOUT_MS,
    keepAlive: true,
  });
  // An idle client whose server goes away emits 'error'; the next query then fails and is handled there.
  client.on('error', () => undefined);
  try {
    await client.connect();
    if (!versionChecked.has(target.url)) {
      const tooOld = await postgresVersionProblem(client, 'dq-pg', target.where);
      if (tooOld !== undefined) throw new CleanseError('db-version', `${tooOld}; upgrade the server`);
      versionChecked.add(target.url);
    }
    if (options.writes) await refuseReadOnly(client, target);
  } catch (e) {
    await client.end().catch(() => undefined);
    throw connectionError(e, target.where);
  }
  return client;
}

/**
 * Throws `db-read-only` when this user's sessions on the server cannot write: the server is a hot
 * standby, or `default_transaction_read_only` is on (for the user, the database or the server).
 */
async function refuseReadOnly(client: pg.Client, target: DbTarget): Promise<void> {
  const readOnly = await readOnlySessions(client);
  if (!readOnly) return;
  throw new CleanseError(
    'db-read-only',
    `the database ${target.where} is read-only for user ${readOnly.who} (${readOnly.why}), and this command writes to it; point --db at the primary, or have default_transaction_read_only turned off for the user`,
  );
}

/**
 * Closes `client`; when the server does not take the goodbye within 5 s (it stopped answering),
 * its socket is dropped, so that a frozen server does not keep the process alive.
 */
export async function disconnect(client: pg.Client): Promise<void> {
  await endOrDrop(
    () => client.end(),
    () => (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy(),
  );
}

/** Runs `fn` inside BEGIN … COMMIT, rolling back when it throws. */
export async function inTransaction<T>(client: pg.Client, fn: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const out = await fn();
    await client.query('COMMIT');
    return out;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/** Quotes an SQL identifier (doubling embedded quotes), whatever characters it holds. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * SQL: whether the column value `held` is exactly `value` (text, cast to the column's `type`),
 * character for character: both as text under collation "C", so that a `citext` column or a
 * case-insensitive collation does not take `Berlin` for `BERLIN` (an edit since the read would be
 * overwritten), while `char(n)` padding still compares as the type does (its text drops it).
 */
export function holdsExactly(held: string, value: string, type: string): string {
  return `(${held})::text COLLATE "C" IS NOT DISTINCT FROM (${value})::${type}::text COLLATE "C"`;
}
