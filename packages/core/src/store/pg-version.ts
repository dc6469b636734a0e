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
