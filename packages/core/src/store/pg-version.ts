import { shownUrl } from '../log/redact-url.js';

/**
 * The oldest PostgreSQL major version the connectors' SQL runs on (README, dq-pg section,
 * "Supported PostgreSQL versions").
 */
export const MIN_POSTGRES_MAJOR = 12;
const MIN_VERSION_NUM = MIN_POSTGRES_MAJOR * 10_000;

/** A Postgres URL with its password replaced by `***`, safe to print. */
export function redactUrl(url: string): string {
  return shownUrl(url, 'postgres://…');
}

/** Something that runs one query: a pg Client or Pool. */
interface Queryable {
  query<R extends object>(sql: string): Promise<{ rows: R[] }>;
}

/** `server_version_num` as people write it: 110022 → `11.22`, 90624 → `9.6.24`. */
function versionText(num: number): string {
  if (num >= 100_000) return `${Math.floor(num / 10_000)}.${num % 10_000}`;
  return `${Math.floor(num / 10_000)}.${Math.floor(num / 100) % 100}.${num % 100}`;
}

/**
 * Asks the server its version; undefined when it is {@link MIN_POSTGRES_MAJOR} or later, else the
 * one-line refusal to show the user: `<tool> needs PostgreSQL 12 or later; the server at <where> is
 * 11.22 (server_version_num 110022)`. `where` names the server without its password.
 */
export async function postgresVersionProblem(db: Queryable, tool: string, where: string): Promise<string | undefined> {
  const { rows } = await db.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`);
  const num = Number(rows[0]?.v);
  if (!Number.isInteger(num) || num >= MIN_VERSION_NUM) return undefined;
  return `${tool} needs PostgreSQL ${MIN_POSTGRES_MAJOR} or later; the server at ${where} is ${versionText(num)} (server_version_num ${num})`;
}

/**
 * Why this user's sessions on the server cannot write, or undefined when they can: the server is a
 * hot standby, or `default_transaction_read_only` is on (for the user, the database or the server).
 * `who` is the database user. One query; the result store and dq-pg both ask it before they write.
 */
export async function readOnlySessions(db: Queryable): Promise<{ why: string; who: string } | undefined> {
  const { rows } = await db.query<{ ro: string; standby: boolean; who: string }>(
    `SELECT current_setting('transaction_read_only') AS ro, pg_is_in_recovery() AS standby, current_user AS who`,
  );
  const row = rows[0];
  if (row?.ro !== 'on') return undefined;
  return { why: row.standby ? 'the server is a hot standby' : 'default_transaction_read_only is on', who: row.who };
}

/** Lock modes that hold back the reads or writes of the store's and the budget's tables. */
const BLOCKING_MODES = ['ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock'];
/** How long the question who holds a lock may take: a server that stopped answering would not say. */
const LOCK_QUESTION_MS = 1_000;

/**
 * The other sessions holding `table` locked against this user's queries while a query waits for it
 * (a `LOCK TABLE`, an `ALTER TABLE` or `TRUNCATE` left open), e.g. `pid 4711 (user etl,
 * AccessExclusiveLock, transaction open since 2026-12-07T06:00:00.000Z)`, or holding rows of it
 * that a query on it waits for (`row locks`: a long `DELETE`, one left open); undefined when none does,
 * or when the server does not answer within a second. A query that ran out of time (the pool's
 * query limit, see createBoundedPool) asks it, so that the run's last line says what it waited on
 * rather than that the database cannot be reached (docs/architecture.md, "The result store" and
 * "The rate budget and the spending cap").
 */
export async function lockHolders(db: Queryable, table: string): Promise<string | undefined> {
  const asked = db
    .query<{ pid: number; mode: string; who: string | null; since: Date | null }>(
      `SELECT l.pid, l.mode, a.usename AS who, a.xact_start AS since, 0 AS rank
       FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.relation = to_regclass('${table}') AND l.granted AND l.pid <> pg_backend_pid()
         AND l.mode IN (${BLOCKING_MODES.map((m) => `'${m}'`).join(', ')})
         AND EXISTS (SELECT 1 FROM pg_locks w WHERE w.relation = l.relation AND NOT w.granted)
       UNION ALL
       SELECT b.pid, 'row locks' AS mode, a.usename AS who, a.xact_start AS since, 1 AS rank
       FROM pg_locks w CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS b(pid) LEFT JOIN pg_stat_activity a ON a.pid = b.pid
       WHERE w.relation = to_regclass('${table}') AND w.granted AND b.pid <> pg_backend_pid()
       ORDER BY pid, rank`,
    )
    .then(
      ({ rows }) => rows,
      () => [],
    );
  let timer: NodeJS.Timeout | undefined;
  const rows = await Promise.race([asked, new Promise<[]>((resolve) => (timer = setTimeout(() => resolve([]), LOCK_QUESTION_MS)))]);
  clearTimeout(timer);
  // A session listed for its table lock is not listed again for the rows it holds.
  const seen = new Set<number>();
  const holders = rows.filter((r) => !seen.has(r.pid) && seen.add(r.pid));
  if (holders.length === 0) return undefined;
  return holders
    .map((r) => `pid ${r.pid} (${[r.who && `user ${r.who}`, r.mode, r.since && `transaction open since ${r.since.toISOString()}`].filter(Boolean).join(', ')})`)
    .join(', ');
}

/** Whether `e` is the pg client giving up on a query that got no answer within its `query_timeout`. */
export function isQueryTimeout(e: unknown): boolean {
  return e instanceof Error && (e as { code?: unknown }).code === undefined && e.message === 'Query read timeout';
}
