import type pg from 'pg';
import { createLogger, ExitCode } from '@dq/core';
import type { Logger } from '@dq/core';
import { schemaExists, STATE_SCHEMA } from './bookkeeping.js';
import { cancelStatement, connect, dbTarget, holdsExactly, inTransaction, quoteIdent, wasCancelled } from './db.js';
import { changedSinceRun, CleanseError, connectionLost, isConnectionLoss, usageError } from './errors.js';
import { inspectTable } from './preflight.js';
import { holdRunAlone } from './runs.js';
import { lockWaitMs, refusalText, refusedByTable, writeTransaction } from './page-store.js';
import type { TargetTable } from './preflight.js';

/** Options of {@link rollback}. */
export interface RollbackOptions {
  db: string;
  runId: string;
  /** Audit rows restored per statement; default 1000. */
  batchSize?: number;
  logger?: Logger;
  /** Starts no new batch once aborted (SIGINT, SIGTERM): the batch under way commits, the rollback stops (exit 75; rerun to finish). */
  signal?: AbortSignal;
  /** Cancels the batch under way once aborted (a second signal): nothing of it is restored, the rollback stops at once. */
  stopNow?: AbortSignal;
}

/** What {@link rollback} did. */
export interface RollbackSummary {
  runId: string;
  table: string;
  /** Rows given back their values from before the run. */
  restored: number;
  /** Rows changed again after the run: left as they are and reported. */
  conflicts: number;
  /** Keys of those rows (first 100). */
  conflictKeys: string[];
  /**
   * Of the conflicts, rows whose old values the table refuses now (a constraint, a trigger raising
   * or storing other values): not changed since the run; each is named on stderr with its reason.
   */
  refused: number;
  /**
   * `done`: every audited row was restored or left as a conflict, and the run is marked rolled
   * back; `stopped`: a signal stopped the rollback part way (`error` says how far it got), the
   * batches before it are kept, and the same command finishes it.
   */
  state: 'done' | 'stopped';
  error?: { code: 'interrupted'; message: string };
  exitCode: number;
}

/** A column the run wrote and audited: mapped or status column. */
export interface AuditedColumn {
  column: string;
  quoted: string;
  type: string;
}

/**
 * The batch restore: audit rows not yet restored, in key order after `$2`, set back to their
 * `before` values, but only where every audited column still holds the run's `after` value and no
 * later run (`$5`: the runs of the table made after this one) has written the row and not been
 * rolled back itself; every audit row of the batch is marked `restored` or `conflict`. A row can
 * hold the run's values again because a later run wrote them (the row's edit undone by hand, then
 * corrected again): giving it the run's old values would undo that run's correction and leave its
 * audit wrong. `columns` must be in the order of the run's `columns` (the order of the
 * `before`/`after` arrays): the mapped columns, then the status columns, which the run wrote on
 * every row it updated. Keys in `$4` (rows the table refuses to take their old values back) are
 * left as they are and marked `conflict`.
 */
export function rollbackSql(target: Pick<TargetTable, 'key' | 'qualified'> & { columns: readonly AuditedColumn[] }): string {
  const { key, qualified, columns } = target;
  const set = columns.map((c, i) => `${c.quoted} = a.before[${i + 1}]::${c.type}`).join(', ');
  const guard = columns.map((c, i) => holdsExactly(`t.${c.quoted}`, `a.after[${i + 1}]`, c.type)).join(' AND ');
  // Per audited column, whether the row now holds exactly its `before` value: RETURNING shows the
  // row as stored, after the table's BEFORE UPDATE triggers (one that trims or upper-cases stores
  // another value than the one restored).
  const exact = columns.map((c, i) => holdsExactly(`t.${c.quoted}`, `a.before[${i + 1}]`, c.type)).join(', ');
  // `key_text`: the key's text in the default collation, so that it casts to a text key of any
  // collation (keyFromText in db.ts) while the comparison keeps the column's, and its index.
  return `WITH a AS (
  SELECT row_key, row_key COLLATE "default" AS key_text, before, after FROM ${STATE_SCHEMA}.results
   WHERE run_id = $1 AND ($2::text IS NULL OR row_key > $2) AND before IS NOT NULL AND rollback IS DISTINCT FROM 'restored'
   ORDER BY row_key LIMIT $3),
upd AS (
  UPDATE ${qualified} AS t SET ${set} FROM a
   WHERE t.${key.quoted} = a.key_text::${key.type} AND ${guard} AND a.row_key <> ALL ($4::text[])
     AND NOT EXISTS (SELECT 1 FROM ${STATE_SCHEMA}.results o
                      WHERE o.run_id = ANY ($5::text[]) AND o.row_key = a.row_key AND o.before IS NOT NULL
                        AND o.rollback IS DISTINCT FROM 'restored')
  RETURNING t.${key.quoted}::text COLLATE "C" AS k, ARRAY[${exact}]::bool[] AS exact),
mark AS (
  UPDATE ${STATE_SCHEMA}.results au SET rollback = CASE WHEN upd.k IS NULL THEN 'conflict' ELSE 'restored' END,
         -- A row left as a conflict keeps its answer in use: where it still holds what the run
         -- wrote, a later run takes that answer instead of buying it again (page-store.ts).
         rolled_back_at = CASE WHEN upd.k IS NULL THEN au.rolled_back_at ELSE now() END
    FROM a LEFT JOIN upd ON upd.k = a.row_key
   WHERE au.run_id = $1 AND au.row_key = a.row_key)
SELECT (SELECT max(row_key) FROM a) AS last, (SELECT count(*) FROM upd)::int AS restored,
       ARRAY(SELECT a.row_key FROM a WHERE NOT EXISTS (SELECT 1 FROM upd WHERE upd.k = a.row_key) ORDER BY a.row_key) AS conflicts,
       (SELECT COALESCE(json_agg(json_build_object('key', upd.k, 'exact', upd.exact) ORDER BY upd.k), '[]') FROM upd WHERE false = ANY (upd.exact)) AS altered`;
}

/**
 * Restores the values a run overwrote, from its audit: a row changed again since the run
 * wrote it is not clobbered but reported as a conflict (and tried again by a later rollback).
 * Refuses while a process is still working on the run.
 */
export async function rollback(options: RollbackOptions): Promise<RollbackSummary> {
  const logger = options.logger ?? createLogger({ level: 'warn' });
  const batchSize = options.batchSize ?? 1000;
  if (!options.runId) throw usageError('--run', 'required: the id of the run to roll back (see dq-pg status)');
  const db = dbTarget(options.db, logger.redactor);
  const client = await connect(db, 'dq-pg', { queryTimeoutMs: 0, writes: true });
  let stopCut = (): void => undefined;
  try {
    const run = await loadRun(client, options.runId);
    const inspected = await inspectTable(client, {
      table: run.table_name,
      key: run.key_column,
      map: run.mapping,
      mode: run.mode,
      write: true,
      ...(run.status ? { statusColumns: run.status } : {}),
    }).catch((e: unknown) => {
      throw changedSinceRun(e, options.runId, run.table_name);
    });
    const target = { ...inspected, columns: run.columns.map((name) => columnNamed(inspected, name)) };
    await refuseIfActive(client, options.runId);
    const later = await laterRuns(client, options.runId, run.table_name);
    const sql = rollbackSql(target);
    let last: string | null = null;
    let restored = 0;
    let conflicts = 0;
    const conflictKeys: string[] = [];
    const refusedKeys: { key: string; reason: string }[] = [];
    const refusedSet = new Set<string>();
    const lockWait = lockWaitMs(client);
    const { rows: left } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${STATE_SCHEMA}.results WHERE run_id = $1 AND before IS NOT NULL AND rollback IS DISTINCT FROM 'restored'`,
      [options.runId],
    );
    const toRestore = left[0]?.n ?? 0;
    /** The conflicts that are rows changed since the run: the others are rows the table refused. */
    const changed = (): number => conflicts - refusedKeys.length;
    // The rows left as they are, on stderr: those the table refuses with their reason, then those
    // changed since the run. Only rows of committed batches: their audit rows are marked `conflict`.
    const reportLeft = (): void => {
      if (refusedKeys.length > 0)
        logger.warn('rows whose old values the table refuses (constraint, trigger) were not restored; they count as conflicts', {
          runId: options.runId,
          rows: refusedKeys.slice(0, 20),
          count: refusedKeys.length,
        });
      if (changed() > 0)
        logger.warn('rows changed after the run (by hand, or written by a later run) were not restored', {
          runId: options.runId,
          count: changed(),
          keys: conflictKeys.filter((k) => !refusedSet.has(k)).slice(0, 20),
        });
    };
    /** The summary with the counts so far. */
    const summary = (state: RollbackSummary['state'], exitCode: number, error?: RollbackSummary['error']): RollbackSummary => ({
      runId: options.runId,
      table: target.qualified,
      restored,
      conflicts,
      conflictKeys,
      refused: refusedKeys.length,
      state,
      ...(error ? { error } : {}),
      exitCode,
    });
    // Stopped by a signal: the batches committed are kept (their audit rows marked), the rest is
    // what the same command does when run again. `underWay`: what became of the batch under way.
    const stopped = (underWay: string): RollbackSummary => {
      const untried = Math.max(0, toRestore - restored - conflicts);
      const reason = options.stopNow?.aborted ? options.stopNow.reason : options.signal?.reason;
      // The conflicts as the complete rollback reports them: changed since the run, or refused by the table.
      const kinds = [
        ...(changed() > 0 ? [`${changed()} changed since the run`] : []),
        ...(refusedKeys.length > 0 ? [`${refusedKeys.length} whose old values the table refuses, named above`] : []),
      ];
      const message =
        `rollback of run ${options.runId} stopped${reason instanceof Error ? ` ${reason.message}` : ''}: ${restored} of the ${toRestore} audited rows left to restore were restored` +
        `${conflicts > 0 ? `, ${conflicts} left as conflicts (${kinds.join(', ')})` : ''}, ${untried} not yet${underWay}; the run is not marked rolled back: rerun dq-pg rollback --run ${options.runId} to finish`;
      reportLeft();
      return summary('stopped', ExitCode.TEMPFAIL, { code: 'interrupted', message });
    };
    // A second signal cuts the statement under way: its transaction is rolled back by the server.
    let endCut: (() => void) | undefined;
    const cut = (): void => void (endCut = cancelStatement(client));
    options.stopNow?.addEventListener('abort', cut, { once: true });
    stopCut = () => {
      options.stopNow?.removeEventListener('abort', cut);
      endCut?.();
    };
    for (;;) {
      if (options.signal?.aborted || options.stopNow?.aborted) return stopped('');
      // Each batch in a transaction of its own that waits at most a few seconds for a row lock (a
      // session holding a row of the batch ends the command with exit 75, nothing of the batch
      // restored) and that only the COMMIT keeps: a rollback killed meanwhile leaves nothing
      // running that would commit by itself later.
      // A batch in which the table stored other values than the old ones (a BEFORE UPDATE trigger
      // that trims, upper-cases, …) is not committed: those rows would not be given back what they
      // held, while counted as restored. They are left as they are, as conflicts, naming the columns.
      const batch = (skip: string[]): Promise<pg.QueryResult<BatchRow>> =>
        inWriteTransaction(client, lockWait, async () => {
          const out = await client.query<BatchRow>({ name: 'dq_rollback', text: sql, values: [options.runId, last, batchSize, skip, later] });
          const altered = out.rows[0]?.altered ?? [];
          if (altered.length > 0) throw new AlteredRestores(altered);
          return out;
        });
      let res: Awaited<ReturnType<typeof batch>>;
      // The rows of this batch the table refuses: counted once the batch has committed (a batch
      // cancelled by a second signal marks none of its rows).
      const batchRefused: { key: string; reason: string }[] = [];
      try {
        const skip: string[] = [];
        let probed = false;
        for (;;) {
          try {
            res = await batch(skip);
            break;
          } catch (e) {
            if (e instanceof AlteredRestores) {
              const triggers = await updateTriggers(client, target.qualified);
              for (const row of e.rows) {
                batchRefused.push({ key: row.key, reason: alteredReason(target, row.exact, triggers, options.runId) });
                skip.push(row.key);
              }
              continue;
            }
            // The table refuses a row's old values (a CHECK constraint added since, a unique value another
            // row holds now, a trigger): those rows are found one by one and left, as conflicts.
            if (!refusedByTable(e) || probed) throw e;
            probed = true;
            const refused = await refusedRestores(client, target, options.runId, last, batchSize, lockWait);
            if (refused.length === 0) throw e;
            batchRefused.push(...refused);
            skip.push(...refused.map((r) => r.key));
          }
        }
      } catch (e) {
        if (options.stopNow?.aborted && (wasCancelled(e) || isConnectionLoss(e)))
          return stopped(
            wasCancelled(e)
              ? ' (the batch under way was cancelled: nothing of it was restored)'
              : ' (the connection was dropped during the batch under way: the server rolls that batch back unless its COMMIT had arrived, and the rerun finds out which)',
          );
        if ((e as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw e;
        throw new CleanseError(
          'db-locked',
          `${target.qualified} (a row of the batch after key ${last ?? '(the first)'}, or the table) stayed locked by another session for more than ${lockWait} ms (pg_locks names the session holding it); nothing of that batch was restored, the ${restored} rows before it are: rerun dq-pg rollback --run ${options.runId} once the lock is released`,
          { cause: e },
        );
      }
      const r = res.rows[0];
      if (!r || r.last === null) break;
      restored += r.restored;
      conflicts += r.conflicts.length;
      for (const row of batchRefused) {
        if (refusedSet.has(row.key)) continue;
        refusedSet.add(row.key);
        refusedKeys.push(row);
      }
      for (const k of r.conflicts) if (conflictKeys.length < 100) conflictKeys.push(k);
      last = r.last;
    }
    try {
      // Rows the run recorded as known without updating them (a review run's keep or invalid): their
      // decision is withdrawn too, so a later run checks them again.
      await client.query(
        `UPDATE ${STATE_SCHEMA}.results SET rolled_back_at = now() WHERE run_id = $1 AND before IS NULL AND after IS NOT NULL AND rolled_back_at IS NULL`,
        [options.runId],
      );
      await client.query(`UPDATE ${STATE_SCHEMA}.runs SET state = 'rolled-back', updated_at = now() WHERE run_id = $1`, [options.runId]);
    } catch (e) {
      if (options.stopNow?.aborted && (wasCancelled(e) || isConnectionLoss(e))) return stopped('');
      throw e;
    }
    // The rows the table refused are conflicts too, but named with their reason, not as changed.
    reportLeft();
    // Done, but not everything: rows changed since the run need a person (exit 4, as for failed records).
    return summary('done', conflicts > 0 ? ExitCode.MAX_FAILED : ExitCode.OK);
  } catch (e) {
    // Each batch commits on its own and restored rows are marked: a rerun goes on from there.
    throw connectionLost(e, db.where, `rerun dq-pg rollback --run ${options.runId} to finish`);
  } finally {
    stopCut();
    await client.end().catch(() => undefined);
  }
}

/**
 * The audit rows of the batch after `last` whose `before` values the table refuses: each is
 * restored on its own (under the rollback's guard) under a savepoint, in key order, in a
 * transaction that is rolled back.
 */
async function refusedRestores(
  client: pg.Client,
  target: Pick<TargetTable, 'key' | 'qualified'> & { columns: readonly AuditedColumn[] },
  runId: string,
  last: string | null,
  batchSize: number,
  lockWait: number,
): Promise<{ key: string; reason: string }[]> {
  const { key, qualified, columns } = target;
  const set = columns.map((c, i) => `${c.quoted} = ($2::text[])[${i + 1}]::${c.type}`).join(', ');
  const guard = columns.map((c, i) => holdsExactly(c.quoted, `($3::text[])[${i + 1}]`, c.type)).join(' AND ');
  const probe = `UPDATE ${qualified} SET ${set} WHERE ${key.quoted} = $1::${key.type} AND ${guard}`;
  const refused: { key: string; reason: string }[] = [];
  await client.query(writeTransaction(lockWait));
  try {
    const { rows } = await client.query<{ row_key: string; before: string[]; after: string[] }>(
      `SELECT row_key, before, after FROM ${STATE_SCHEMA}.results
        WHERE run_id = $1 AND ($2::text IS NULL OR row_key > $2) AND before IS NOT NULL AND rollback IS DISTINCT FROM 'restored'
        ORDER BY row_key LIMIT $3`,
      [runId, last, batchSize],
    );
    for (const row of rows) {
      await client.query('SAVEPOINT dq_probe');
      try {
        await client.query(probe, [row.row_key, row.before, row.after]);
        await client.query('RELEASE SAVEPOINT dq_probe');
      } catch (e) {
        if (!refusedByTable(e)) throw e;
        await client.query('ROLLBACK TO SAVEPOINT dq_probe');
        refused.push({ key: row.row_key, reason: refusalText(e) });
      }
    }
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
  }
  return refused;
}

/** The row {@link rollbackSql} returns. */
interface BatchRow {
  last: string | null;
  restored: number;
  conflicts: string[];
  /** Rows restored whose table stored another value than the old one in a column (`exact` per audited column). */
  altered: { key: string; exact: boolean[] }[];
}

/** A batch's rows that the table stored other values in than the old ones restored: the batch is not committed. */
class AlteredRestores extends Error {
  constructor(readonly rows: { key: string; exact: boolean[] }[]) {
    super(`${rows.length} rows restored with other values than their old ones`);
  }
}

/** The enabled row-level BEFORE UPDATE triggers of `qualified`, by name: what may store another value than the one restored. */
async function updateTriggers(client: pg.Client, qualified: string): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT tgname::text AS name FROM pg_trigger
      WHERE tgrelid = $1::regclass AND NOT tgisinternal AND tgenabled <> 'D' AND (tgtype & 1) <> 0 AND (tgtype & 2) <> 0 AND (tgtype & 16) <> 0
      ORDER BY tgname`,
    [qualified],
  );
  return rows.map((r) => r.name);
}

/** Why a row was not restored: the table stored other values than the old ones in `exact`'s false columns, and what to do. */
function alteredReason(target: { qualified: string; columns: readonly AuditedColumn[] }, exact: boolean[], triggers: string[], runId: string): string {
  const columns = target.columns.filter((_, i) => exact[i] === false).map((c) => c.column);
  const by = triggers.length > 0 ? `its BEFORE UPDATE trigger${triggers.length > 1 ? 's' : ''} ${triggers.join(', ')}` : 'a trigger';
  const disable =
    triggers.length > 0
      ? triggers.map((t) => `ALTER TABLE ${target.qualified} DISABLE TRIGGER ${quoteIdent(t)}`).join('; ')
      : `ALTER TABLE ${target.qualified} DISABLE TRIGGER USER`;
  return `the table (${by}) stores other values than the row held before the run in column${columns.length > 1 ? 's' : ''} ${columns.join(', ')}, so the row was left as the run wrote it; to restore it exactly, disable the trigger for the rollback (${disable}), rerun dq-pg rollback --run ${runId}, then enable it again`;
}

/** SQLSTATE lock_not_available: a lock wait passed `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Runs `fn` in a {@link writeTransaction} (lock waits bounded, constraints checked per statement),
 * committed when it returns; rolled back when the server answered with an error (a lost connection
 * has nothing to roll back: the server does that).
 */
async function inWriteTransaction<T>(client: pg.Client, lockWait: number, fn: () => Promise<T>): Promise<T> {
  await client.query(writeTransaction(lockWait));
  try {
    const out = await fn();
    await client.query('COMMIT');
    return out;
  } catch (e) {
    if (!isConnectionLoss(e)) await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/** The mapped or status column `name` of the inspected table (the run's settings name exactly these). */
function columnNamed(target: TargetTable, name: string): AuditedColumn {
  const column = [...target.columns, ...target.status].find((c) => c.column === name);
  if (!column)
    throw new CleanseError(
      'column-not-found',
      `the run's audit has column ${name}, which the run's mapping no longer resolves to; was the table altered since the run?`,
    );
  return column;
}

/** The runs over `table` made after run `runId` (cleanse and review runs alike): their writes come after its. */
async function laterRuns(client: pg.Client, runId: string, table: string): Promise<string[]> {
  const { rows } = await client.query<{ run_id: string }>(
    `SELECT run_id FROM ${STATE_SCHEMA}.runs
      WHERE table_name = $1 AND run_id <> $2 AND created_at > (SELECT created_at FROM ${STATE_SCHEMA}.runs WHERE run_id = $2)`,
    [table, runId],
  );
  return rows.map((r) => r.run_id);
}

interface StoredRun {
  table_name: string;
  key_column: string;
  mapping: Record<string, string>;
  /** Mapped columns in the order of the audit's before/after arrays. */
  columns: string[];
  mode: 'address';
  /** `--status-columns` of the run, when it had any. */
  status: Record<string, string> | null;
}

async function loadRun(client: pg.Client, runId: string): Promise<StoredRun> {
  if (!(await schemaExists(client))) throw new CleanseError('run-not-found', `--run ${runId}: this database has no dq-pg runs (no ${STATE_SCHEMA} schema)`);
  const { rows } = await client.query<StoredRun>(
    `SELECT table_name, key_column, mapping, columns, options ->> 'mode' AS mode, options -> 'statusColumns' AS status FROM ${STATE_SCHEMA}.runs WHERE run_id = $1`,
    [runId],
  );
  const run = rows[0];
  if (!run) throw new CleanseError('run-not-found', `--run ${runId}: no such run; dq-pg status lists the runs`);
  return run;
}

/**
 * A process working on the run (holding its share of the run's lock from start to end, or, for a
 * dq-pg of an older version, a range of it) would race the rollback: refused. The run's lock is
 * then held alone until the rollback ends, so a cleanse or review apply of the run started
 * meanwhile stops at once (`run-busy`) rather than writing rows the rollback has passed already.
 */
async function refuseIfActive(client: pg.Client, runId: string): Promise<void> {
  if (!(await holdRunAlone(client, runId)))
    throw new CleanseError('usage', `--run ${runId}: a dq-pg process is still working on this run; stop it (or let it finish) before rolling back`);
  await inTransaction(client, async () => {
    try {
      await client.query(`SELECT 1 FROM ${STATE_SCHEMA}.ranges WHERE run_id = $1 FOR UPDATE NOWAIT`, [runId]);
    } catch (e) {
      if ((e as { code?: string }).code !== '55P03') throw e;
      throw new CleanseError('usage', `--run ${runId}: a dq-pg cleanse process is still working on this run; stop it (or let it finish) before rolling back`, {
        cause: e,
      });
    }
  });
}
