import { createConnection } from 'node:net';
import pg from 'pg';
import type { Redactor } from '@dq/core';
import { DB_CONNECT_TIMEOUT_MS, DB_QUERY_TIMEOUT_MS, endOrDrop, postgresVersionProblem, readOnlySessions } from '@dq/core/store';
import { CleanseError, connectionError, usageError } from './errors.js';

/** A connection string checked and described without its password. */
export interface DbTarget {
  url: string;
  /** `host:port/database`, safe to print. */
  where: string;
  /** The user name of the URL, for messages (`the user of --db` when the URL names none). */
  user: string;
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
    // A raw "%" (e.g. in "50%off") is not percent-encoding: node-postgres could not read the URL either.
    redactor?.add(decoded(parsed.password, 'the password', '(the password is not shown)'));
  }
  const user = decoded(parsed.username, 'the user name', parsed.username) || 'the user of --db';
  const database = decoded(parsed.pathname.replace(/^\//, ''), 'the database name', parsed.pathname) || '(default)';
  const queryTimeout = parsed.searchParams.get('query_timeout');
  // node-postgres takes the URL's query_timeout over dq-pg's own and waits no time at all for a
  // value that is not a number of milliseconds: every query would fail as a lost connection.
  if (queryTimeout !== null && !/^[1-9][0-9]*$/.test(queryTimeout)) {
    throw usageError(
      '--db',
      `?query_timeout=${queryTimeout} in the URL is not a number of milliseconds: give a whole number from 1 (e.g. ?query_timeout=60000 for a minute), or leave the parameter out for dq-pg's own limits`,
    );
  }
  return { url, where: `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}/${database}`, user };
}

/** `text` of the URL percent-decoded; a malformed escape is a usage error naming `what` (never showing a password). */
function decoded(text: string, what: string, shown: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw usageError(
      '--db',
      `${what} in the URL ${shown} holds a "%" that is not percent-encoding: write each "%" in it as %25 (and other reserved characters such as @ : / # ? as %40 %3A %2F %23 %3F)`,
    );
  }
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

/** SQLSTATE idle_in_transaction_session_timeout: the server ended a session left idle in a transaction. */
const IDLE_IN_TRANSACTION_TIMEOUT = '25P03';
/** Connections the server ended for `idle_in_transaction_session_timeout` (see {@link endedBySetting}). */
const endedIdleInTransaction = new WeakSet<pg.Client>();

/**
 * Whether the server ended `client`'s session for `idle_in_transaction_session_timeout` (SQLSTATE
 * 25P03, sent before it closes the connection; the next query only says the connection is gone).
 */
export function endedBySetting(client: pg.Client): boolean {
  return endedIdleInTransaction.has(client);
}

/** Why a connection's session ended under dq-pg (see {@link sessionLost}). */
const lostSessions = new WeakMap<pg.Client, unknown>();
/** Connections dq-pg closes itself ({@link disconnect}): their end is no loss. */
const closing = new WeakSet<pg.Client>();

/**
 * The error that ended `client`'s session, once node-postgres has reported it (undefined while the
 * session lasts). An idle connection's end shows nowhere else until its next query: a session
 * terminated by the server (`pg_terminate_backend`, a restart, a timeout) sends its error to the
 * idle client, which emits it, and a socket that closes ends the client. dq-pg asks before it
 * starts work that needs a session it holds without querying it: a range's claim, the run's hold
 * (README "What a run does").
 */
export function sessionLost(client: pg.Client): unknown {
  return lostSessions.get(client);
}

/** Servers (by URL) whose version this process has checked already: one query per server, not per connection. */
const versionChecked = new Set<string>();
/** URLs this process found to reach a session of its own (see {@link refuseTransactionPooling}): checked once per URL. */
const poolerChecked = new Set<string>();

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
  // An idle client whose server goes away emits 'error' (node-postgres takes no query on it after
  // that); the next query then fails and is handled there, and work that only holds the session
  // asks sessionLost first.
  client.on('error', (e: unknown) => {
    if ((e as { code?: unknown }).code === IDLE_IN_TRANSACTION_TIMEOUT) endedIdleInTransaction.add(client);
    if (!lostSessions.has(client)) lostSessions.set(client, e);
  });
  client.on('end', () => {
    if (!closing.has(client) && !lostSessions.has(client)) lostSessions.set(client, new Error('Connection terminated unexpectedly'));
  });
  try {
    await client.connect();
    if (!versionChecked.has(target.url)) {
      const tooOld = await postgresVersionProblem(client, 'dq-pg', target.where);
      if (tooOld !== undefined) throw new CleanseError('db-version', `${tooOld}; upgrade the server`);
      versionChecked.add(target.url);
    }
    if (!poolerChecked.has(target.url)) {
      await refuseTransactionPooling(client, target, applicationName);
      poolerChecked.add(target.url);
    }
    if (options.writes) await refuseReadOnly(client, target);
    await client.query(sessionSettings(client));
  } catch (e) {
    await client.end().catch(() => undefined);
    throw connectionError(e, target.where);
  }
  return client;
}

/**
 * The settings every dq-pg session runs with, whatever the database's or the role's defaults:
 *
 * - READ COMMITTED. The guarded page write, the range claims and the checkpoints are built for it
 *   (README "What a run does"): under a `default_transaction_isolation` of `repeatable read` or
 *   `serializable`, dq-pg's own range workers would abort each other's transactions with
 *   serialization failures.
 * - `statement_timeout` just past dq-pg's own query timeout (none for the commands that give a
 *   query as long as it takes). dq-pg bounds its statements itself: page-sized statements, a
 *   lock wait of its own after which rows held by another session become conflicts, and a query
 *   timeout after which the database counts as unreachable. A database default meant for
 *   application queries would cancel a page write while it waits for a row lock (ending a run
 *   that would go on), or a rollback of a large table; the server still stops a statement dq-pg
 *   gave up waiting for.
 */
function sessionSettings(client: pg.Client): string {
  const queryTimeout = Number((client as unknown as { connectionParameters?: { query_timeout?: unknown } }).connectionParameters?.query_timeout);
  const statementTimeout = Number.isFinite(queryTimeout) && queryTimeout > 0 ? Math.floor(queryTimeout) + 1_000 : 0;
  return `SET default_transaction_isolation = 'read committed'; SET statement_timeout = ${statementTimeout}; ${KEY_TEXT_SETTINGS}`;
}

/**
 * How values print as text in every dq-pg session, whatever the server, the database, the role or
 * the URL's `options` set: the key is read as text, stored as text in the bookkeeping (ranges,
 * checkpoints, results, audit, known rows) and cast back to its type by the resume, the rerun and
 * the rollback, maybe in another session. Each is pinned to a form that reads back exactly under
 * any setting and prints the same value alike in every session: `DateStyle` ISO (only the output
 * style: its field order, which decides how an ambiguous date in `--where` reads, is kept),
 * `IntervalStyle` postgres, `extra_float_digits` 3 (shortest exact: with 0 or less a float prints
 * rounded, and two keys print alike), `bytea_output` hex, and `TimeZone` UTC (a `timestamptz`
 * prints in the session's zone: after a change of the setting the same row's key is another text,
 * which the next run's known rows and a rollback's audit do not find). So `--where` reads a time
 * without a zone as UTC (README "Keys").
 */
export const KEY_TEXT_SETTINGS = `SET DateStyle = 'ISO'; SET IntervalStyle = 'postgres'; SET extra_float_digits = 3; SET bytea_output = 'hex'; SET TimeZone = 'UTC'`;

/** The server process of `client`'s session now. */
async function backendPid(client: pg.Client): Promise<number> {
  return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? -1;
}

/** Whether each of two connections met one server process only, and not the other's. */
function ownSessions(seen: { mine: Set<number>; other: Set<number> }): boolean {
  return seen.mine.size === 1 && seen.other.size <= 1 && ![...seen.mine].some((p) => seen.other.has(p));
}

/** Longest wait of the pooler check's second connection for a server session (see {@link refuseTransactionPooling}). */
const POOLER_PROBE_MS = 5_000;

/**
 * Throws `db-pooler` (exit 2) when `client` reaches PostgreSQL through a connection pooler in
 * transaction or statement mode (PgBouncer `pool_mode = transaction`, the default of many managed
 * poolers): between two transactions such a pooler hands the server session to other clients and
 * gives this one any other. dq-pg needs a session of its own for as long as a connection lasts: a
 * process holds its run's lock (a session-level advisory lock) from start to end, a rollback
 * holds it alone, and its settings and prepared statements live in the session (README, dq-pg
 * section, "Connection poolers"). Through such a pooler two processes could each believe they
 * hold a run, or a rollback run beside a cleanse: refused before any work.
 *
 * A direct connection (or a proxy passing the protocol through) is told at once: the process id
 * the server gave at login is the session's `pg_backend_pid()`; a pooler answers the login itself
 * with an id of its own. Then a second connection, in turns with this one, keeps a transaction
 * open while the other runs a statement: with a session of its own each connection meets one
 * server process only, another than the other's; a pooler that hands sessions around shows a
 * connection two of them, or both connections the same one. A second connection that gets no
 * server session within {@link POOLER_PROBE_MS} means the pooler keeps this one's session bound
 * to it (session pooling with every server connection in use): no refusal.
 */
async function refuseTransactionPooling(client: pg.Client, target: DbTarget, applicationName: string): Promise<void> {
  const first = await backendPid(client);
  if ((client as unknown as { processID?: unknown }).processID === first) return;
  const other = new pg.Client({
    connectionString: target.url,
    application_name: applicationName,
    query_timeout: POOLER_PROBE_MS,
    connectionTimeoutMillis: DB_CONNECT_TIMEOUT_MS,
  });
  other.on('error', () => undefined);
  const seen: { mine: Set<number>; other: Set<number>; refused?: string } = { mine: new Set([first]), other: new Set() };
  // The connection asked last: a timeout of the second one's is an answer, of this one's a loss.
  let asked = client;
  const ask = async (c: pg.Client, sql: string): Promise<number> => {
    asked = c;
    await c.query(sql);
    return backendPid(c);
  };
  try {
    await other.connect();
    // Turns: one connection inside a transaction (its server session held), the other outside.
    // It ends at the first proof: with one server connection, the connection outside would wait for ever on the one inside.
    for (const [held, free, heldSeen, freeSeen] of [
      [other, client, seen.other, seen.mine],
      [client, other, seen.mine, seen.other],
    ] as const) {
      heldSeen.add(await ask(held, 'BEGIN'));
      if (!ownSessions(seen)) break;
      freeSeen.add(await ask(free, 'SELECT 1'));
      await ask(held, 'COMMIT');
      if (!ownSessions(seen)) break;
      freeSeen.add(await ask(free, 'SELECT 1'));
    }
  } catch (e) {
    const message = e instanceof Error ? e.message : '';
    // PgBouncer in statement mode refuses the transaction itself.
    if (/statement pooling mode/i.test(message)) seen.refused = message;
    // The second connection got no server session in time: the pooler keeps this one's bound to it.
    else if (asked === other && /^(Query read timeout|timeout expired)/.test(message)) return;
    else throw e;
  } finally {
    await endOrDrop(
      () => other.end(),
      () => (other as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy(),
    );
  }
  if (seen.refused === undefined && ownSessions(seen)) return;
  throw new CleanseError(
    'db-pooler',
    `the database ${target.where} (--db) is reached through a connection pooler in transaction or statement mode (PgBouncer pool_mode = transaction, the default of many managed poolers): ${
      seen.refused !== undefined
        ? `it refused a transaction (${seen.refused})`
        : seen.mine.size > 1
          ? `one dq-pg connection ran its transactions in ${seen.mine.size} server sessions`
          : 'two dq-pg connections ran in one server session'
    }, and dq-pg needs a session of its own for as long as it works (its run's lock, its settings; README "Connection poolers"); connect --db directly to PostgreSQL (its own port, usually 5432) or through a pool in session mode (PgBouncer pool_mode = session); the result store and the shared rate budget may stay behind the pooler`,
  );
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
  closing.add(client);
  await endOrDrop(
    () => client.end(),
    () => (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy(),
  );
}

/**
 * Cuts the statement `client` runs now, as psql's Ctrl-C does: a CancelRequest on a connection of
 * its own (no login: the server matches the session's process id and secret key). The statement
 * fails with SQLSTATE 57014 (`query_canceled`, see {@link wasCancelled}) and its transaction is
 * rolled back; a session between statements ignores the request. When the statement has not
 * ended `dropAfterMs` later (the request did not reach the server, say), the client's socket is
 * dropped: the server rolls back what was not committed once it notices, and the statement fails
 * here as a lost connection. Returns what stops that timer: call it once the statement has ended.
 */
export function cancelStatement(client: pg.Client, dropAfterMs = 3_000): () => void {
  const { processID, secretKey, host, port } = client as unknown as { processID?: unknown; secretKey?: unknown; host: string; port: number };
  if (typeof processID === 'number' && typeof secretKey === 'number') {
    const request = Buffer.alloc(16);
    request.writeInt32BE(16, 0);
    request.writeInt32BE(80877102, 4);
    request.writeInt32BE(processID, 8);
    request.writeInt32BE(secretKey, 12);
    const socket = host.startsWith('/') ? createConnection(`${host}/.s.PGSQL.${port}`) : createConnection(port, host);
    socket.setTimeout(dropAfterMs, () => socket.destroy());
    socket.on('error', () => undefined);
    socket.on('connect', () => socket.end(request));
  }
  const drop = setTimeout(() => (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy(), dropAfterMs);
  drop.unref();
  return () => clearTimeout(drop);
}

/** Whether `e` is the error of a statement cut by {@link cancelStatement} (SQLSTATE 57014). */
export function wasCancelled(e: unknown): boolean {
  return (e as { code?: unknown })?.code === '57014';
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
 * SQL: the key value of its stored text `text` (a `row_key` of the bookkeeping, collation "C"), of
 * the key's SQL `type`. The text is given the default collation first: cast to a text key column's
 * type it would keep "C", which a column of another collation (`text COLLATE "de-x-icu"`, a domain
 * with one) cannot be compared with ("could not determine which collation to use").
 */
export function keyFromText(text: string, type: string): string {
  return `(${text} COLLATE "default")::${type}`;
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
