import type pg from 'pg';
import { DqError } from '../errors/index.js';
import type { CachedResult } from '../engine/types.js';
import { pgStoreError, STORE_UNREACHABLE, StoreError } from './errors.js';
import { MissedKeys, storeKey } from './key.js';
import { RECORD_STATUSES, RESULT_CLASSES } from '../schemas/vocabularies.js';
import { isQueryTimeout, lockHolders, postgresVersionProblem, readOnlySessions } from './pg-version.js';
import type { ResultStore, StoreInfo } from './types.js';
import { MAX_AGE_MS } from './age.js';

/** Schema of the shared result store. */
export const STORE_SCHEMA = 'dq_store';
/**
 * Layout version of the store's table, kept in `dq_store.schema_version`. 1: `result` was `jsonb`,
 * which reorders an answer's object keys (and drops duplicate ones), so an answer read back was
 * equal in value but not in bytes; 2: `result` is `json`, kept as written (byte-exact reruns).
 */
export const STORE_SCHEMA_VERSION = 2;

const TABLES = `
CREATE TABLE IF NOT EXISTS ${STORE_SCHEMA}.results (
  key        text COLLATE "C" PRIMARY KEY,
  result     json NOT NULL,
  checked_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS results_checked_at ON ${STORE_SCHEMA}.results (checked_at);
CREATE TABLE IF NOT EXISTS ${STORE_SCHEMA}.schema_version (version integer NOT NULL);`;

/** A Postgres connection the store may use: a pool, or one client it does not own. */
export type PgQueryable = Pick<pg.Pool, 'query'>;

/** Options of {@link openPgStore}. */
export interface PgStoreOptions {
  /** The database (a pool or a client); it is not closed by the store unless `owned`. */
  db: PgQueryable & { end?: () => Promise<void> };
  /** Close `db` when the store is closed. */
  owned: boolean;
  /** How to close an owned `db`; default `db.end()`. */
  end?: () => Promise<void>;
  /** Printed location (a URL without its password). */
  location: string;
  maxAgeMs: number;
  /**
   * The command the owner of an older store runs to upgrade it, named in the error a role that
   * may not upgrade it gets; default `dq-store init --store <location>`.
   */
  initCommand?: string;
}

/**
 * The shared result store: one table `dq_store.results` in a Postgres database every process and
 * machine of an account can reach. Lookups are one `= ANY($1)` query per engine batch; the answers
 * stored in one engine step are written with one upsert (the later check wins). The schema is
 * created when missing, under an advisory lock; when it is there only its version is read (no DDL
 * on a normal run).
 */
export async function openPgStore(options: PgStoreOptions): Promise<ResultStore> {
  const { location, maxAgeMs } = options;
  const db = serialised(options.db);
  try {
    const tooOld = await postgresVersionProblem(options.db, 'the result store', location);
    if (tooOld !== undefined) throw new StoreError('usage', `${tooOld}; upgrade the server or pass --store off`);
    await ensureStoreSchema(options.db);
  } catch (e) {
    if (options.owned) await options.db.end?.().catch(() => undefined);
    throw e instanceof StoreError ? e : storeSchemaError(location, e, options.initCommand ?? `dq-store init --store ${location}`);
  }
  /**
   * Why answers cannot be written to this database (a hot standby, a role whose sessions are
   * read-only, or one without INSERT and UPDATE on the table): every lookup fails with it, before a call is bought that the store could not keep
   * (and before a rerun buys the same answers again). Reading it (`info`) still works.
   */
  let readOnly: StoreError | undefined;
  try {
    readOnly = await readOnlyProblem(options.db, location);
  } catch (e) {
    if (options.owned) await options.db.end?.().catch(() => undefined);
    throw storeError(location, e);
  }
  /** Answers stored in this engine step, written by one upsert. */
  let queued: Map<string, { json: string; at: string }> | undefined;
  let flushing: Promise<void> | undefined;
  let closed: Promise<void> | undefined;
  const missed = new MissedKeys();
  /**
   * The first error that said the database cannot be reached. From then on every lookup and write
   * fails with it at once: a run stops on a store failure, and against a server that stopped
   * answering each later query would otherwise wait out a connection or query timeout of its own
   * before the run could end (one per write the answers still arriving queue up).
   */
  let unreachable: StoreError | undefined;
  const failed = async (e: unknown): Promise<StoreError> => {
    // A query that ran out of time may have waited for a lock another session holds on the table:
    // then the error names that session rather than calling the database unreachable.
    const holders = isQueryTimeout(e) && 'totalCount' in options.db ? await lockHolders(options.db, `${STORE_SCHEMA}.results`) : undefined;
    const error = holders === undefined ? storeError(location, e) : lockedError(location, holders, e);
    if (error.code === STORE_UNREACHABLE) unreachable ??= error;
    return error;
  };
  const flush = async (batch: Map<string, { json: string; at: string }>): Promise<void> => {
    const keys: string[] = [];
    const values: string[] = [];
    const ages: number[] = [];
    // Check times go in on the database's clock, the one clock every process and machine sharing
    // the store reads alike (README "The result store"): an answer checked `age` ms ago by this
    // process's clock is stored as checked `age` ms before the database's clock. A machine whose
    // clock is hours or days off then neither hides its answers from the others (stamped in the
    // future, or long past) nor keeps them in use past anyone's --max-age.
    const written = Date.now();
    for (const [key, { json, at }] of batch) {
      keys.push(key);
      values.push(json);
      const checked = Date.parse(at);
      ages.push(Number.isFinite(checked) ? Math.min(Math.max(0, written - checked), MAX_AGE_MS) : 0);
    }
    if (unreachable) throw unreachable;
    try {
      await db.query(
        `INSERT INTO ${STORE_SCHEMA}.results (key, result, checked_at)
         SELECT key, result, ${DB_NOW} - age * interval '1 millisecond' FROM unnest($1::text[], $2::json[], $3::float8[]) AS u(key, result, age)
         ON CONFLICT (key) DO UPDATE SET result = EXCLUDED.result, checked_at = EXCLUDED.checked_at
          WHERE ${STORE_SCHEMA}.results.checked_at <= EXCLUDED.checked_at OR ${STORE_SCHEMA}.results.checked_at > ${FUTURE}`,
        [keys, values, ages],
      );
    } catch (e) {
      throw await failed(e);
    }
  };

  const store: ResultStore = {
    location,
    async get(key) {
      return (await store.getMany([key])).get(key);
    },
    async getMany(keys) {
      if (readOnly) throw readOnly;
      const found = new Map<string, CachedResult>();
      if (maxAgeMs <= 0 || keys.length === 0) return found;
      const byStored = new Map<string, string>();
      for (const key of keys) byStored.set(storeKey(key), key);
      if (unreachable) throw unreachable;
      let rows: { key: string; result: unknown }[];
      try {
        ({ rows } = await db.query<{ key: string; result: unknown }>(
          `SELECT key, result FROM ${STORE_SCHEMA}.results
            WHERE key = ANY($1::text[]) AND checked_at > ${DB_NOW} - $2::float8 * interval '1 millisecond' AND checked_at <= ${FUTURE}`,
          [[...byStored.keys()], maxAgeMs],
        ));
      } catch (e) {
        throw await failed(e);
      }
      for (const row of rows) {
        const key = byStored.get(row.key);
        // An entry edited into another shape is no answer: its input is bought again, and the entry replaced.
        if (key !== undefined && isStoredAnswer(row.result)) found.set(key, row.result);
      }
      if (found.size < byStored.size) for (const [stored, key] of byStored) if (!found.has(key)) missed.missed(key, stored);
      return found;
    },
    set(key, value) {
      if (closed) return Promise.reject(new DqError(`the result store ${location} is closed`, { code: 'store-closed', retriable: false }));
      if (readOnly) return Promise.reject(readOnly);
      if (queued === undefined) {
        const batch = new Map<string, { json: string; at: string }>();
        queued = batch;
        // Answers stored in this engine step, and while the previous upsert runs, go in one
        // upsert; their sets all resolve when it is committed.
        const previous = flushing;
        flushing = (async () => {
          await new Promise<void>((resolve) => setImmediate(resolve));
          if (previous) await previous.catch(() => undefined);
          queued = undefined;
          await flush(batch);
        })();
      }
      queued.set(missed.take(key), { json: JSON.stringify(value), at: value.checkedAt ?? new Date().toISOString() });
      return flushing as Promise<void>;
    },
    async info(): Promise<StoreInfo> {
      let rows: { entries: string; oldest: Date | null; newest: Date | null; bytes: string }[];
      try {
        ({ rows } = await db.query<{ entries: string; oldest: Date | null; newest: Date | null; bytes: string }>(
          `SELECT count(*) AS entries, min(checked_at) AS oldest, max(checked_at) AS newest,
                  pg_total_relation_size('${STORE_SCHEMA}.results') AS bytes FROM ${STORE_SCHEMA}.results`,
        ));
      } catch (e) {
        throw await failed(e);
      }
      const row = rows[0]!;
      const info: StoreInfo = { location, bytes: Number(row.bytes), entries: Number(row.entries) };
      if (row.oldest) info.oldest = row.oldest.toISOString();
      if (row.newest) info.newest = row.newest.toISOString();
      return info;
    },
    async prune(olderThanMs) {
      // The database's clock, as the check times are written (an entry no run would use, dated
      // beyond the day of slack in the future, goes too: it holds personal data to no purpose).
      // Its errors, as a run's, say what to do (the grant a role lacks, the session holding a lock)
      // and a database that went away is exit 75, not 2.
      try {
        const { rowCount } = await db.query(
          `DELETE FROM ${STORE_SCHEMA}.results WHERE checked_at < ${DB_NOW} - $1::float8 * interval '1 millisecond' OR checked_at > ${FUTURE}`,
          [olderThanMs],
        );
        return rowCount ?? 0;
      } catch (e) {
        throw await failed(e);
      }
    },
    async clear() {
      try {
        const { rowCount } = await db.query(`DELETE FROM ${STORE_SCHEMA}.results`);
        return rowCount ?? 0;
      } catch (e) {
        throw await failed(e);
      }
    },
    close() {
      closed ??= (async () => {
        await flushing?.catch(() => undefined);
        if (options.owned) await (options.end ?? options.db.end?.bind(options.db))?.();
      })();
      return closed;
    },
  };
  return store;
}

/**
 * `db` for the store's queries: a pool as it is (its connections run them side by side); one
 * client with its queries one after another (a client runs one query at a time, and pg no longer
 * queues them for the caller).
 */
function serialised(db: PgQueryable): PgQueryable {
  if ('totalCount' in db) return db;
  let last: Promise<unknown> = Promise.resolve();
  const query = (...args: unknown[]): Promise<unknown> => {
    const next = last.then(() => (db.query as (...a: unknown[]) => Promise<unknown>)(...args));
    last = next.catch(() => undefined);
    return next;
  };
  return { query: query as PgQueryable['query'] };
}

/**
 * Creates the store's schema when it is missing, or upgrades an older layout; when it is current,
 * only reads its version: no DDL on a normal run, so a role with only SELECT/INSERT/UPDATE/DELETE
 * on the table can use it. Creating or upgrading happens once, under an advisory lock (openers
 * starting together wait, then find it done); upgrading layout 1 turns `result` from `jsonb` into
 * `json`, which keeps every entry's value (the key order jsonb dropped is not restored). Only the
 * table's owner may upgrade: another role gets an error naming the layout versions.
 */
export async function ensureStoreSchema(db: PgQueryable): Promise<void> {
  const seen = await storedVersion(db);
  // A newer layout may keep answers in a way this version would misread, or overwrite: not used.
  if (seen > STORE_SCHEMA_VERSION) throw new NewerLayout(seen);
  if (seen === STORE_SCHEMA_VERSION) return;
  // One connection for the transaction: a pool hands out a client, a client is used as it is.
  const pool = db as Partial<pg.Pool>;
  const connection: PgQueryable & { release?: () => void } = typeof pool.connect === 'function' && 'totalCount' in pool ? await pool.connect() : db;
  // Waiting for the lock while another process upgrades, and rewriting a large table, may take
  // longer than a store query is otherwise allowed (`query_timeout`): these wait as long as needed.
  const client: PgQueryable = {
    query: ((text: string) => connection.query({ text, query_timeout: UPGRADE_TIMEOUT_MS } as pg.QueryConfig)) as PgQueryable['query'],
  };
  try {
    await client.query('BEGIN');
    try {
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('${STORE_SCHEMA}'))`);
      if ((await storedVersion(client)) < STORE_SCHEMA_VERSION) {
        const schema = await client.query(`SELECT 1 FROM pg_namespace WHERE nspname = '${STORE_SCHEMA}'`);
        // CREATE SCHEMA IF NOT EXISTS checks the database's CREATE privilege even when the schema exists.
        if (schema.rowCount === 0) {
          await client.query(`CREATE SCHEMA ${STORE_SCHEMA}`).catch(async (e: unknown) => {
            if ((e as { code?: unknown }).code !== '42501') throw e;
            // Named with the grant that is missing (a role without CREATE on the database).
            await client.query('ROLLBACK').catch(() => undefined);
            const { rows } = await client
              .query<{ user: string; db: string }>('SELECT current_user AS user, current_database() AS db')
              .catch(() => ({ rows: [] as { user: string; db: string }[] }));
            throw new CreateDenied(rows[0]?.user ?? '(this user)', rows[0]?.db ?? '(this database)', e);
          });
        } else await refuseForeignTable(client);
        await client.query(TABLES);
        // Layout 1 → 2: the answers as json (the value of each entry is kept).
        const column = await client.query<{ type: string }>(
          `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = '${STORE_SCHEMA}.results'::regclass AND attname = 'result'`,
        );
        if (column.rows[0]?.type === 'jsonb') await client.query(`ALTER TABLE ${STORE_SCHEMA}.results ALTER COLUMN result TYPE json USING result::json`);
        await client.query(`TRUNCATE ${STORE_SCHEMA}.schema_version`);
        await client.query(`INSERT INTO ${STORE_SCHEMA}.schema_version (version) VALUES (${STORE_SCHEMA_VERSION})`);
      }
      await client.query('COMMIT');
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (seen > 0 && (e as { code?: unknown }).code === '42501') {
        const { rows } = await client.query<{ user: string }>('SELECT current_user AS user').catch(() => ({ rows: [] as { user: string }[] }));
        throw new UpgradeDenied(rows[0]?.user ?? '(this user)', seen, e);
      }
      throw e;
    }
  } finally {
    connection.release?.();
  }
}

/** Longest wait of a query creating or upgrading the store (a day: as long as it takes). */
const UPGRADE_TIMEOUT_MS = 86_400_000;

/** The store's layout is newer than this version knows. */
class NewerLayout extends Error {
  constructor(readonly seen: number) {
    super(`${STORE_SCHEMA} has layout version ${seen}, made by a newer version of dq-connectors; this version knows layout ${STORE_SCHEMA_VERSION}`);
  }
}

/** A role that does not own the store tried to upgrade its older layout. */
class UpgradeDenied extends Error {
  readonly code = '42501';
  constructor(
    readonly user: string,
    seen: number,
    override readonly cause: unknown,
  ) {
    super(`may not upgrade schema ${STORE_SCHEMA} from layout version ${seen} to ${STORE_SCHEMA_VERSION} (only the owner of ${STORE_SCHEMA}.results may)`);
  }
}

/** A role without CREATE on the database tried to create the store's schema. */
class CreateDenied extends Error {
  readonly code = '42501';
  constructor(
    readonly user: string,
    readonly database: string,
    override readonly cause: unknown,
  ) {
    super(`may not create schema ${STORE_SCHEMA} in database ${database}`);
  }
}

async function storedVersion(db: PgQueryable): Promise<number> {
  const { rows } = await db.query<{ versioned: boolean }>(`SELECT to_regclass('${STORE_SCHEMA}.schema_version') IS NOT NULL AS versioned`);
  if (!rows[0]?.versioned) return 0;
  const v = await db.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${STORE_SCHEMA}.schema_version`);
  return v.rows[0]?.version ?? 0;
}

/**
 * The error of {@link ensureStoreSchema} for the store at `location` (a URL without its password):
 * a role that may not upgrade an older layout is told to have its owner run `initCommand`.
 */
export function storeSchemaError(location: string, cause: unknown, initCommand: string): StoreError {
  if (cause instanceof ForeignTable) {
    return new StoreError(
      'usage',
      `the result store ${location} cannot be used: ${STORE_SCHEMA}.results there is not a result store (it lacks the column${cause.missing.length > 1 ? 's' : ''} ${cause.missing.join(', ')}: another application's table?) and was left as it is; point --store at another database, or pass --store off`,
    );
  }
  if (cause instanceof NewerLayout) {
    return new StoreError(
      'usage',
      `the result store ${location} cannot be used: ${cause.message}; upgrade dq-connectors here to the version the other runs of this store use, or point --store at another database, or pass --store off`,
    );
  }
  if (cause instanceof CreateDenied) {
    const quoted = (name: string) => (/^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`);
    return new StoreError(
      'store-permission-denied',
      `the result store ${location} cannot be created: the database user ${cause.user} ${cause.message}; GRANT CREATE ON DATABASE ${quoted(cause.database)} TO ${quoted(cause.user)} (as the database's owner), or have a role that may create schemas there run "${initCommand}" once, then rerun, or pass --store off`,
      { cause: cause.cause },
    );
  }
  if (!(cause instanceof UpgradeDenied)) return storeError(location, cause);
  return new StoreError(
    'store-permission-denied',
    `the result store ${location} cannot be used: the database user ${cause.user} ${cause.message}; have the owner of schema ${STORE_SCHEMA} run "${initCommand}" once (as that role), then rerun, or pass --store off`,
    { cause: cause.cause },
  );
}

function storeError(location: string, cause: unknown): StoreError {
  // A server that turned read-only under a run (a failover left it a standby): as at the start.
  if ((cause as { code?: unknown } | null)?.code === READ_ONLY_SQLSTATE) return readOnlyError(location, 'the database is read-only', cause);
  return pgStoreError(location, cause, STORE_SCHEMA);
}

/** SQLSTATE of a write refused by a read-only transaction (a standby, `default_transaction_read_only`). */
const READ_ONLY_SQLSTATE = '25006';

/** The store's columns a run reads and writes. */
const STORE_COLUMNS = ['key', 'result', 'checked_at'];

/** A `dq_store.results` that lacks the store's columns: not ours, and not to be touched. */
class ForeignTable extends Error {
  constructor(readonly missing: string[]) {
    super(`${STORE_SCHEMA}.results lacks ${missing.join(', ')}`);
  }
}

/** Throws {@link ForeignTable} when `dq_store.results` exists without the store's columns. */
async function refuseForeignTable(db: PgQueryable): Promise<void> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT attname AS name FROM pg_attribute WHERE attrelid = to_regclass('${STORE_SCHEMA}.results') AND attnum > 0 AND NOT attisdropped`,
  );
  if (rows.length === 0) return;
  const missing = STORE_COLUMNS.filter((c) => !rows.some((r) => r.name === c));
  if (missing.length > 0) throw new ForeignTable(missing);
}

/**
 * The error for a store on a server whose sessions of this user are read-only (a hot standby, or
 * `default_transaction_read_only`), or whose table this user may not write to; undefined when it
 * takes this user's writes.
 */
async function readOnlyProblem(db: PgQueryable, location: string): Promise<StoreError | undefined> {
  const readOnly = await readOnlySessions(db);
  if (readOnly) return readOnlyError(location, `sessions of the database user ${readOnly.who} are read-only (${readOnly.why})`);
  // A role that may read the answers but not write them would buy answers it cannot keep.
  const { rows } = await db.query<{ writes: boolean; who: string }>(
    `SELECT has_table_privilege('${STORE_SCHEMA}.results', 'INSERT') AND has_table_privilege('${STORE_SCHEMA}.results', 'UPDATE') AS writes, current_user AS who`,
  );
  const row = rows[0];
  if (row === undefined || row.writes) return undefined;
  return new StoreError(
    'store-permission-denied',
    `the result store ${location} cannot be used: the database user ${row.who} may read ${STORE_SCHEMA}.results but not write to it, so the answers a run buys could not be kept there; GRANT SELECT, INSERT, UPDATE, DELETE ON ${STORE_SCHEMA}.results TO ${row.who} (as its owner), or pass --store off`,
  );
}

/**
 * The latest check time (SQL, on the database's clock) an entry may have and still be taken for a
 * run's: check times are written on the database's clock, so one later than a day ahead of it was
 * not written by a run (edited by hand, or by a version that wrote its own machine's time): it is
 * neither used nor kept.
 */
const FUTURE = `statement_timestamp() + interval '1 day'`;

/**
 * The database's time now (SQL): the start of the statement, not of its transaction (a connection
 * the store shares may have one open).
 */
const DB_NOW = 'statement_timestamp()';

/** Statuses of the answers the engine stores: a definitive one, never `unavailable`. */
const STORED_STATUSES: ReadonlySet<unknown> = new Set(RECORD_STATUSES.filter((s) => s !== 'unavailable'));

/**
 * Whether a stored `result` has the shape of an answer the engine stored (an object with its
 * status, and a result class if any): one edited by hand into another (JSON null, a string, an
 * object without a status) is not used, rather than taken for an answer.
 */
function isStoredAnswer(value: unknown): value is CachedResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { status, resultClass } = value as { status?: unknown; resultClass?: unknown };
  return STORED_STATUSES.has(status) && (resultClass === undefined || (RESULT_CLASSES as readonly unknown[]).includes(resultClass));
}

/** The error of a store query that waited for a lock `holders` keep on the store's table. */
function lockedError(location: string, holders: string, cause: unknown): StoreError {
  return new StoreError(
    STORE_UNREACHABLE,
    `the result store ${location} cannot be used now: its table ${STORE_SCHEMA}.results is locked by another session, ${holders}, and a query waited for it longer than the query limit; end that transaction (or wait for it), then rerun`,
    { cause },
  );
}

function readOnlyError(location: string, why: string, cause?: unknown): StoreError {
  return new StoreError(
    'store-permission-denied',
    `the result store ${location} cannot be used: ${why}, so the answers a run buys could not be kept there; point --store at a database that takes writes (the primary), or pass --store off`,
    cause === undefined ? undefined : { cause },
  );
}
