import { createHash, randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type pg from 'pg';
import type { Mode, ResultClass } from '@dq/core';
import { STATE_SCHEMA } from './bookkeeping.js';
import { inTransaction } from './db.js';
import { CleanseError } from './errors.js';
import type { TargetTable } from './preflight.js';

/** Settings that decide what a run writes; every process of a run must use the same ones. */
export interface RunSettings {
  mode: Mode;
  country: string | undefined;
  /** Result classes whose corrections are written. */
  accept: readonly ResultClass[];
  where: string | undefined;
  include: readonly string[] | undefined;
  /** `--status-columns`: result → column; these columns are written and audited too. */
  statusColumns?: Readonly<Record<string, string>> | undefined;
  /** For a review run (`dq-pg review apply`): the run whose review rows it decides. */
  reviewOf?: string | undefined;
  /**
   * The platform that answers (`answeringPlatform` of @dq/core: host and path of `--base-url`, or
   * of `--realtime-url` in the company modes). Undefined only for a run made before it was recorded.
   */
  platform?: string | undefined;
  /**
   * `--store off`: the run keeps no answer (a choice about where addresses are kept). Recorded so
   * that `dq-pg status` prints it in the command that resumes the run; not part of what a process
   * joining the run must match (a run whose store is down may go on with `--store off`).
   */
  storeOff?: boolean | undefined;
}

/** A run as stored in `dq_cleanse.runs`. */
export interface RunRecord {
  runId: string;
  state: 'running' | 'stopped' | 'done' | 'rolled-back';
  /** Rows per claimed key range, fixed when the run was created. */
  rangeRows: number;
  /** Whether this call created the run. */
  created: boolean;
}

/** A new run id: `r` + UTC time to the second + 6 random hex digits, e.g. `r20250101T120000-1a2b3c`. */
export function newRunId(now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, '');
  return `r${stamp}-${randomBytes(3).toString('hex')}`;
}

function describe(target: TargetTable, settings: RunSettings): Record<string, unknown> {
  return {
    table: target.qualified,
    key: target.key.column,
    mapping: Object.fromEntries(target.columns.map((c) => [c.field, c.column])),
    mode: settings.mode,
    country: settings.country ?? null,
    accept: [...settings.accept].sort(),
    where: settings.where ?? null,
    include: settings.include ? [...settings.include].sort() : null,
    // Only when given, so that runs made without status columns keep the settings hash they had.
    ...(settings.statusColumns ? { statusColumns: settings.statusColumns } : {}),
    ...(settings.reviewOf ? { kind: 'review', reviewOf: settings.reviewOf } : {}),
    // Last, and only when known, so that the hash of a run made before it was recorded can be
    // told from it ({@link openRun}).
    ...(settings.platform !== undefined ? { platform: settings.platform } : {}),
    ...(settings.storeOff ? { storeOff: true } : {}),
  };
}

/** The flag of each setting {@link describe} records, for messages. */
const SETTING_FLAGS: Record<string, string> = {
  table: '--table',
  key: '--key',
  mapping: '--map',
  mode: '--mode',
  country: '--country',
  accept: '--accept',
  where: '--where',
  include: '--include',
  statusColumns: '--status-columns',
  reviewOf: 'review run of',
};

/** The hash of a run's settings as {@link describe} gives them, which `dq_cleanse.runs` keeps. */
function optionsHash(options: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(options)).digest('hex');
}

/**
 * `value` with the keys of every object in sorted order: the same settings give the same hash
 * whatever the order of `--map` or `--status-columns`. Not for {@link knownScope}, whose hashes
 * name the rows recorded already.
 */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
  );
}

/**
 * The scope of the rows a cleanse run records as known (`dq_cleanse.known`): the table, its key,
 * the mapping and the settings that decide the platform's answer and what is written (mode,
 * country, accepted classes, included extras, the platform that answers). Not `--where` (it selects
 * rows, it does not change their answers) nor the status columns. A later run reuses a known row's
 * answer only within the same scope: a run against the platform never takes the rows a run against
 * the sandbox corrected for checked.
 */
export function knownScope(target: TargetTable, settings: RunSettings): string {
  const d = describe(target, settings);
  const scope = {
    table: d['table'],
    key: d['key'],
    mapping: d['mapping'],
    mode: d['mode'],
    country: d['country'],
    accept: d['accept'],
    include: d['include'],
    ...('platform' in d ? { platform: d['platform'] } : {}),
  };
  return optionsHash(scope);
}

/**
 * The scopes a run looks its known rows up under: its own ({@link knownScope}), then the scope the
 * same settings had before the platform was part of it, so that the rows runs of an earlier dq-pg
 * recorded stay known (docs/architecture.md "Reruns").
 */
export function knownScopes(target: TargetTable, settings: RunSettings): [string, string] {
  return [knownScope(target, settings), knownScope(target, { ...settings, platform: undefined })];
}

/**
 * Creates run `runId`, or joins it when it exists (resume, or another process of the same run).
 * Joining checks that table, key, mapping and every setting in {@link RunSettings} are the same:
 * a run is one pass with one meaning. `rangeRows` is only used when the run is created.
 *
 * @throws CleanseError `run-mismatch` naming what differs.
 */
export async function openRun(client: pg.Client, target: TargetTable, settings: RunSettings, runId: string, rangeRows: number): Promise<RunRecord> {
  const options = describe(target, settings);
  const hash = optionsHash(canonical(options) as Record<string, unknown>);
  const inserted = await client.query(
    `INSERT INTO ${STATE_SCHEMA}.runs (run_id, table_name, key_column, key_type, mapping, columns, options, options_hash, range_rows, state, kind, review_of)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'running', $10, $11) ON CONFLICT (run_id) DO NOTHING`,
    [
      runId,
      target.qualified,
      target.key.column,
      target.key.type,
      JSON.stringify(options['mapping']),
      [...target.columns, ...target.status].map((c) => c.column),
      JSON.stringify(options),
      hash,
      rangeRows,
      settings.reviewOf ? 'review' : 'cleanse',
      settings.reviewOf ?? null,
    ],
  );
  const { rows } = await client.query<{
    options: Record<string, unknown>;
    options_hash: string;
    state: RunRecord['state'];
    range_rows: number;
    key_type: string;
  }>(`SELECT options, options_hash, state, range_rows, key_type FROM ${STATE_SCHEMA}.runs WHERE run_id = $1`, [runId]);
  const row = rows[0];
  if (!row) throw new Error(`run ${runId} vanished right after it was created`);
  // Compared as values, not by hash: jsonb gives the stored mapping's keys back in an order of its
  // own (which `dq-pg status` prints in the resume command), and a run made by an earlier dq-pg
  // hashed them in the order of its --map. A run made before the platform was recorded is resumed
  // on any platform, as it was before.
  const differs = [...new Set([...Object.keys(options), ...Object.keys(row.options)])].filter(
    (k) => k !== 'storeOff' && !(k === 'platform' && !('platform' in row.options)) && !isDeepStrictEqual(options[k] ?? null, row.options[k] ?? null),
  );
  if (differs.length > 0) {
    const named = (k: string) => (k === 'platform' ? (settings.mode === 'address' ? '--base-url' : '--realtime-url') : (SETTING_FLAGS[k] ?? k));
    throw new CleanseError(
      'run-mismatch',
      `--run-id ${runId}: that run was made with different ${differs.map(named).join(', ')} (${differs.map((k) => `${k}=${JSON.stringify(row.options[k] ?? null)}`).join('; ')}); use the same settings to resume it, or a new run id`,
    );
  }
  // The run's key ranges and checkpoints are keys in the order of the type they were cut in: under
  // a type that orders keys otherwise (bigint → text: '10' < '9') its ranges would overlap and miss
  // rows. A widening that keeps the order (integer → bigint, varchar(10) → text) goes on.
  if (row.state !== 'done' && row.state !== 'rolled-back' && keyOrder(row.key_type) !== keyOrder(target.key.type)) {
    throw new CleanseError(
      'run-mismatch',
      `--run-id ${runId}: the key ${target.key.column} of ${target.qualified} was ${row.key_type} when that run began and is ${target.key.type} now, which orders its values otherwise: the run's key ranges and checkpoints no longer fit it. Start a new run (another --run-id): the answers this run bought come from the result store, not bought again (unless --store off)`,
    );
  }
  let state = row.state;
  if (state === 'stopped') {
    await client.query(`UPDATE ${STATE_SCHEMA}.runs SET state = 'running', last_error = NULL, updated_at = now() WHERE run_id = $1 AND state = 'stopped'`, [
      runId,
    ]);
    state = 'running';
  }
  return { runId, state, rangeRows: row.range_rows, created: (inserted.rowCount ?? 0) > 0 };
}

/** A key type's sort order: types that order every value alike (the integers; text and varchar) map to one name. */
function keyOrder(type: string): string {
  const base = type.replace(/\(.*\)$/, '').trim();
  if (base === 'smallint' || base === 'integer' || base === 'bigint') return 'integer';
  if (base === 'character varying' || base === 'text') return 'text';
  return base;
}

/**
 * First key of the advisory lock a process holds (shared, for its whole session) while it works
 * on a run; the second is `hashtext(run_id)`. `status` reads `pg_locks` (readable by every role) to
 * tell a run being worked on from one whose processes died: row locks on the claimed ranges are
 * invisible to other sessions.
 */
export const RUN_LOCK_CLASS = 1685147719;

/**
 * Takes this session's share of run `runId`'s lock; it goes when the connection does, however it
 * ends. A rollback of the run holds the lock alone ({@link holdRunAlone}): while it works, a
 * process starting on the run stops at once (`run-busy`, exit 75) instead of writing rows behind
 * the rollback's back; rerun afterwards, it finds the run rolled back and does nothing.
 *
 * @throws CleanseError `run-busy` while a rollback of the run is in progress.
 */
export async function holdRun(client: pg.Client, runId: string): Promise<void> {
  const { rows } = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock_shared(${RUN_LOCK_CLASS}, hashtext($1)) AS ok`, [runId]);
  if (rows[0]?.ok !== true)
    throw new CleanseError(
      'run-busy',
      `run ${runId} is being rolled back by another dq-pg process; rerun once the rollback ended (a rolled-back run is not written again)`,
    );
}

/**
 * Takes run `runId`'s lock alone for this session (a rollback): false when any process holds a
 * share of it ({@link holdRun}: a cleanse or review apply working on the run, from its start to
 * its end, also between two ranges) or another rollback holds it.
 */
export async function holdRunAlone(client: pg.Client, runId: string): Promise<boolean> {
  const { rows } = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${RUN_LOCK_CLASS}, hashtext($1)) AS ok`, [runId]);
  return rows[0]?.ok === true;
}

/**
 * First key of the advisory lock (a transaction's, second key `hashtext` of the table's qualified
 * name) under which a cleanse process opens its run and checks that no other run works on the same
 * rows ({@link refuseOverlap}): two processes starting together see each other.
 */
const TABLE_LOCK_CLASS = RUN_LOCK_CLASS + 1;

/** What decides which rows a cleanse run reads and which answers it buys; `accept` only decides what it writes. */
const OVERLAP_KEYS = ['mapping', 'mode', 'country', 'include', 'where'] as const;

/**
 * Opens run `runId` as {@link openRun} does, in one transaction with the check that no other
 * cleanse run of the same table, mapping, settings and `--where` is being worked on now by a live
 * process: it would buy the same answers (an answer reaches the result store only once it has
 * arrived) and find the rows the other corrected changed under it. Processes of the same run id
 * share the work as before; a run over other rows (another `--where`) goes on beside it.
 * The process must hold its run already ({@link holdRun}).
 *
 * @throws CleanseError `table-busy` (exit 75) naming the live run; nothing is created or changed.
 */
export async function openRunAlone(client: pg.Client, target: TargetTable, settings: RunSettings, runId: string, rangeRows: number): Promise<RunRecord> {
  return inTransaction(client, async () => {
    await client.query(`SELECT pg_advisory_xact_lock(${TABLE_LOCK_CLASS}, hashtext($1))`, [target.qualified]);
    const run = await openRun(client, target, settings, runId, rangeRows);
    if (run.state === 'running') {
      const { rows } = await client.query<{ run_id: string }>(
        `SELECT r.run_id FROM ${STATE_SCHEMA}.runs r
          WHERE r.table_name = $1 AND r.run_id <> $2 AND r.kind = 'cleanse' AND r.state = 'running'
            AND ${OVERLAP_KEYS.map((k) => `r.options -> '${k}' IS NOT DISTINCT FROM $3::jsonb -> '${k}'`).join(' AND ')}
            AND ${runHeldSql('r')}
          ORDER BY r.created_at LIMIT 1`,
        [target.qualified, runId, JSON.stringify(describe(target, settings))],
      );
      const other = rows[0]?.run_id;
      if (other !== undefined) {
        throw new CleanseError(
          'table-busy',
          `run ${other} is cleansing ${target.qualified} now (a dq-pg process works on it) with the same mapping, settings and --where, and a second run would buy the same answers again; join it with --run-id ${other} (the processes of one run share the table), or rerun once it has ended: the rows it checked are then answered from the result store`,
        );
      }
    }
    return run;
  });
}

/** SQL: whether a live session holds run `<alias>.run_id` (see {@link RUN_LOCK_CLASS}). */
export function runHeldSql(alias: string, alone = false): string {
  return `EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND l.classid = ${RUN_LOCK_CLASS}::oid AND l.objid::bigint = (hashtext(${alias}.run_id)::bigint & 4294967295)${alone ? ` AND l.mode = 'ExclusiveLock'` : ''})`;
}

/** Marks the run done when its key space is exhausted and every range is done; returns whether it is. */
export async function finishRun(client: pg.Client, runId: string): Promise<boolean> {
  const res = await client.query(
    `UPDATE ${STATE_SCHEMA}.runs r SET state = 'done', updated_at = now()
      WHERE r.run_id = $1 AND r.exhausted AND r.state IN ('running', 'done')
        AND NOT EXISTS (SELECT 1 FROM ${STATE_SCHEMA}.progress p WHERE p.run_id = r.run_id AND NOT p.done)`,
    [runId],
  );
  return (res.rowCount ?? 0) > 0;
}

/** Records why a run stopped (quota, credentials, service down); a later cleanse with its id resumes it. */
export async function stopRun(client: pg.Client, runId: string, error: { code: string; message: string; requestId?: string }): Promise<void> {
  await client.query(`UPDATE ${STATE_SCHEMA}.runs SET state = 'stopped', last_error = $2, updated_at = now() WHERE run_id = $1 AND state = 'running'`, [
    runId,
    JSON.stringify(error),
  ]);
}

/** The counts of a whole run, over every process and attempt of it (its `progress` rows, as `dq-pg status` sums them). */
export interface RunTotals {
  rows: number;
  written: number;
  unchanged: number;
  conflicts: number;
  accepted: number;
  review: number;
  invalid: number;
  /** Invalid input and unsupported countries: the data, not the platform, is the cause. */
  invalidInput: number;
  unavailable: number;
  apiCalls: number;
}

/** {@link RunTotals} of run `runId` as committed so far. */
export async function runTotals(client: pg.Client, runId: string): Promise<RunTotals> {
  const { rows } = await client.query<RunTotals>(
    `SELECT COALESCE(sum(rows_read), 0)::float8 AS rows, COALESCE(sum(written), 0)::float8 AS written,
            COALESCE(sum(unchanged), 0)::float8 AS unchanged, COALESCE(sum(conflicts), 0)::float8 AS conflicts,
            COALESCE(sum(accepted), 0)::float8 AS accepted, COALESCE(sum(review), 0)::float8 AS review,
            COALESCE(sum(invalid), 0)::float8 AS invalid, COALESCE(sum(invalid_input), 0)::float8 AS "invalidInput",
            COALESCE(sum(unavailable), 0)::float8 AS unavailable, COALESCE(sum(api_calls), 0)::float8 AS "apiCalls"
       FROM ${STATE_SCHEMA}.progress WHERE run_id = $1`,
    [runId],
  );
  return rows[0] as RunTotals;
}
