import type pg from 'pg';
import { inTransaction } from './db.js';
import { CleanseError } from './errors.js';

/** Schema holding dq-pg's runs, key ranges, progress, per-row results and audit. */
export const STATE_SCHEMA = 'dq_cleanse';

/** SQLSTATE raised when a page's checkpoint no longer stands where its reader left it. */
export const RANGE_TAKEN = 'DQ001';

/**
 * Version of the bookkeeping layout this dq-pg writes, kept in `schema_version`. A run only reads
 * it; DDL runs only when it is missing or older (so a role that does not own the schema, with the
 * grants the README lists, can run every command). 1: the layout before versioning; 2: the audit
 * covers every row a run updated (status columns included), not only rows with corrections; 3: runs
 * have a `kind` (`cleanse`, or `review` for a `dq-pg review apply`) and `review_of` (the run whose
 * review rows a review run decided); 4: `known`, per table row, the run whose results row holds the
 * values a cleanse run last wrote to it and the answer they came from, or the values a review run
 * left in it and the decision (a later run reuses that answer or decision while the row still
 * holds those values: docs/architecture.md "Reruns").
 */
export const SCHEMA_VERSION = 4;

/**
 * Bookkeeping tables, created when missing. Keys are stored as text (the key column's text form)
 * and cast back to the real type in SQL. The audit (before/after of every row written) lives
 * in the results row of the written row, so a page inserts one row per row; `audit` is a view of
 * it. `before`/`after` are `text[]` in the order of `runs.columns` (the mapped columns, then the
 * status columns), not jsonb: building a jsonb object per row cost about as much as the guarded
 * update itself (pg-cleanse benchmark); the view turns them into objects keyed by column name.
 * Keys use the "C" collation: plain byte order, the cheapest to index. No foreign keys: their KEY
 * SHARE locks would make page commits of several processes wait on the run row. `known` points,
 * per row of a cleaned table and per scope (`knownScope` in runs.ts: (table, key, mapping and the
 * settings that decide the answer and what is written)), at the results row of the run that last
 * wrote corrections to it or decided it in a review: its `after` values and its answer.
 */
const TABLES = `
CREATE TABLE IF NOT EXISTS ${STATE_SCHEMA}.runs (
  run_id       text PRIMARY KEY,
  table_name   text NOT NULL,
  key_column   text NOT NULL,
  key_type     text NOT NULL,
  mapping      jsonb NOT NULL,
  columns      text[] NOT NULL,
  options      jsonb NOT NULL,
  options_hash text NOT NULL,
  range_rows   integer NOT NULL,
  state        text NOT NULL,
  frontier     text,
  exhausted    boolean NOT NULL DEFAULT false,
  last_error   jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS ${STATE_SCHEMA}.ranges (
  run_id   text NOT NULL,
  range_no integer NOT NULL,
  lo       text,
  hi       text,
  PRIMARY KEY (run_id, range_no)
);
CREATE TABLE IF NOT EXISTS ${STATE_SCHEMA}.progress (
  run_id        text NOT NULL,
  range_no      integer NOT NULL,
  last_key      text,
  done          boolean NOT NULL DEFAULT false,
  worker        text,
  rows_read     bigint NOT NULL DEFAULT 0,
  written       bigint NOT NULL DEFAULT 0,
  unchanged     bigint NOT NULL DEFAULT 0,
  conflicts     bigint NOT NULL DEFAULT 0,
  accepted      bigint NOT NULL DEFAULT 0,
  review        bigint NOT NULL DEFAULT 0,
  invalid       bigint NOT NULL DEFAULT 0,
  invalid_input bigint NOT NULL DEFAULT 0,
  unavailable   bigint NOT NULL DEFAULT 0,
  api_calls     bigint NOT NULL DEFAULT 0,
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, range_no)
);
CREATE TABLE IF NOT EXISTS ${STATE_SCHEMA}.results (
  run_id         text COLLATE "C" NOT NULL,
  row_key        text COLLATE "C" NOT NULL,
  status         text NOT NULL,
  result_class   text,
  outcome        text NOT NULL,
  request_id     text,
  candidates     jsonb,
  detail         jsonb,
  error          jsonb,
  checked_at     timestamptz NOT NULL,
  worker         text NOT NULL,
  before         text[],
  after          text[],
  rollback       text,
  rolled_back_at timestamptz,
  PRIMARY KEY (run_id, row_key)
);
CREATE TABLE IF NOT EXISTS ${STATE_SCHEMA}.known (
  scope    text COLLATE "C" NOT NULL,
  row_key  text COLLATE "C" NOT NULL,
  run_id   text COLLATE "C" NOT NULL,
  PRIMARY KEY (scope, row_key)
);
CREATE TABLE IF NOT EXISTS ${STATE_SCHEMA}.schema_version (version integer NOT NULL);
ALTER TABLE ${STATE_SCHEMA}.runs ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'cleanse';
ALTER TABLE ${STATE_SCHEMA}.runs ADD COLUMN IF NOT EXISTS review_of text;`;

/** Objects replaced (not only created) when the version changes: only the schema's owner may. */
const OBJECTS = `
CREATE OR REPLACE VIEW ${STATE_SCHEMA}.audit AS
  SELECT a.run_id, a.row_key, jsonb_object(r.columns, a.before) AS before, jsonb_object(r.columns, a.after) AS after,
         a.request_id, a.checked_at AS at, a.rollback, a.rolled_back_at
    FROM ${STATE_SCHEMA}.results a JOIN ${STATE_SCHEMA}.runs r ON r.run_id = a.run_id
   WHERE a.before IS NOT NULL;
CREATE OR REPLACE FUNCTION ${STATE_SCHEMA}.range_taken(run text, range_no integer) RETURNS integer
  LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'key range % of run % was taken over by another process', range_no, run USING ERRCODE = '${RANGE_TAKEN}';
END $$;`;

/** The stored layout version: null without a schema, 1 for a schema from before versioning. */
async function storedVersion(client: pg.Client): Promise<number | null> {
  const { rows } = await client.query<{ runs: boolean; versioned: boolean }>(
    `SELECT to_regclass('${STATE_SCHEMA}.runs') IS NOT NULL AS runs, to_regclass('${STATE_SCHEMA}.schema_version') IS NOT NULL AS versioned`,
  );
  if (!rows[0]?.runs) return null;
  if (!rows[0].versioned) return 1;
  const v = await client.query<{ version: number }>(`SELECT max(version) AS version FROM ${STATE_SCHEMA}.schema_version`);
  return v.rows[0]?.version ?? 1;
}

/**
 * Makes sure the bookkeeping schema is there at {@link SCHEMA_VERSION}. When it is (every run but
 * the first after an install or upgrade), nothing but a version read is sent: no DDL, so a role
 * that does not own the schema runs with the grants the README lists. Otherwise what is missing is
 * created, or an older layout migrated, under an advisory lock so that processes starting together
 * do not race. Returns the version.
 */
export async function ensureSchema(client: pg.Client): Promise<number> {
  const seen = await storedVersion(client);
  const version = seen !== null && seen >= SCHEMA_VERSION ? seen : await migrate(client, seen);
  await checkGrants(client);
  return version;
}

/**
 * Refuses, before any work, a user that lacks the README's grants on a table of the bookkeeping
 * schema — typically one that `dq-pg init` added when it upgraded the layout (`ON ALL TABLES`
 * covers only the tables there when it ran), which would otherwise fail mid-run.
 */
async function checkGrants(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ name: string; user: string }>(
    `SELECT c.relname AS name, current_user AS user FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = '${STATE_SCHEMA}' AND c.relkind = 'r'
        AND NOT (has_table_privilege(c.oid, 'SELECT') AND has_table_privilege(c.oid, 'INSERT') AND has_table_privilege(c.oid, 'UPDATE'))
      ORDER BY c.relname`,
  );
  if (rows.length === 0) return;
  const tables = rows.map((r) => `${STATE_SCHEMA}.${r.name}`).join(', ');
  throw new CleanseError(
    'permission-denied',
    `the database user ${rows[0]?.user} may not SELECT, INSERT and UPDATE ${tables}: have the schema's owner grant it again what the README lists (GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA ${STATE_SCHEMA} TO ${rows[0]?.user}; needed again after "dq-pg init" upgraded the layout)`,
  );
}

/** Creates the schema, or migrates an older layout, under an advisory lock (see {@link ensureSchema}). */
async function migrate(client: pg.Client, seen: number | null): Promise<number> {
  try {
    return await inTransaction(client, async () => {
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('${STATE_SCHEMA}'))`);
      const found = await storedVersion(client);
      if (found !== null && found >= SCHEMA_VERSION) return found;
      const schema = await client.query(`SELECT 1 FROM pg_namespace WHERE nspname = '${STATE_SCHEMA}'`);
      // CREATE SCHEMA IF NOT EXISTS checks the database's CREATE privilege even when the schema exists.
      if (schema.rowCount === 0) await client.query(`CREATE SCHEMA ${STATE_SCHEMA}`);
      await client.query(TABLES);
      await client.query(OBJECTS);
      await client.query(`TRUNCATE ${STATE_SCHEMA}.schema_version`);
      await client.query(`INSERT INTO ${STATE_SCHEMA}.schema_version (version) VALUES (${SCHEMA_VERSION})`);
      return SCHEMA_VERSION;
    });
  } catch (e) {
    if ((e as { code?: string }).code === '42501') {
      const what =
        seen === null
          ? `may not create schema ${STATE_SCHEMA}`
          : `may not upgrade schema ${STATE_SCHEMA} from layout version ${seen} to ${SCHEMA_VERSION} (only its owner may)`;
      throw new CleanseError(
        'permission-denied',
        `the database user ${what}: run "dq-pg init" once as the schema's owner (or a role with CREATE on the database), then grant this user what the README lists (${(e as Error).message})`,
        { cause: e },
      );
    }
    throw e;
  }
}
/** Whether the bookkeeping schema exists (status and rollback do not create it). */
export async function schemaExists(client: pg.Client): Promise<boolean> {
  const { rows } = await client.query<{ ok: boolean }>(`SELECT to_regclass('${STATE_SCHEMA}.runs') IS NOT NULL AS ok`);
  return rows[0]?.ok === true;
}
