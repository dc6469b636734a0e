import type pg from 'pg';
import type { Mode, ResultClass } from '@dq/core';
import { ensureSchema, schemaExists, STATE_SCHEMA } from '../bookkeeping.js';
import { changedSinceRun, CleanseError } from '../errors.js';
import { inspectTable } from '../preflight.js';
import type { StatusField, TargetTable } from '../preflight.js';

/** A cleanse run as recorded in `dq_cleanse.runs`: what a review export or apply works on. */
export interface ReviewedRun {
  runId: string;
  table: string;
  key: string;
  mapping: Record<string, string>;
  mode: Mode;
  statusColumns: Partial<Record<StatusField, string>> | undefined;
  /** The run's settings that decide the answer (with the table, key and mapping: its known rows' scope). */
  country: string | undefined;
  accept: ResultClass[];
  include: string[] | undefined;
  /** The platform that answered it; undefined for a run made before dq-pg recorded it. */
  platform: string | undefined;
}

/**
 * Loads cleanse run `runId` and checks its table against the catalog with the run's own key,
 * mapping and status columns (`write`: whether UPDATE is needed). Exit 2 (`run-not-found`) for a
 * run this database does not have, `usage` for a review run or, when `table` is given, a run of
 * another table.
 */
export async function loadReviewedRun(
  client: pg.Client,
  runId: string,
  flag: string,
  options: { table?: string; write: boolean },
): Promise<{ run: ReviewedRun; target: TargetTable }> {
  if (!(await schemaExists(client))) throw new CleanseError('run-not-found', `${flag} ${runId}: this database has no dq-pg runs (no ${STATE_SCHEMA} schema)`);
  // Brings an older layout up to date (its owner), or says who must (another role).
  await ensureSchema(client);
  const { rows } = await client.query<{
    table_name: string;
    key_column: string;
    mapping: Record<string, string>;
    columns: string[];
    options: Record<string, unknown>;
    kind: string;
  }>(`SELECT table_name, key_column, mapping, columns, options, kind FROM ${STATE_SCHEMA}.runs WHERE run_id = $1`, [runId]);
  const row = rows[0];
  if (!row) throw new CleanseError('run-not-found', `${flag} ${runId}: no such run in this database; dq-pg status lists the runs`);
  if (row.kind !== 'cleanse') {
    throw new CleanseError(
      'usage',
      `${flag} ${runId}: that is a ${row.kind} run; name the cleanse run whose review rows you want (dq-pg status lists the runs)`,
    );
  }
  const run: ReviewedRun = {
    runId,
    table: row.table_name,
    key: row.key_column,
    // In the run's column order (jsonb keeps its keys in an order of its own).
    mapping: Object.fromEntries(Object.entries(row.mapping).sort(([, a], [, b]) => row.columns.indexOf(a) - row.columns.indexOf(b))),
    mode: (row.options['mode'] as Mode | undefined) ?? 'address',
    statusColumns: (row.options['statusColumns'] as ReviewedRun['statusColumns']) ?? undefined,
    country: (row.options['country'] as string | null | undefined) ?? undefined,
    accept: (row.options['accept'] as ResultClass[] | undefined) ?? [],
    include: (row.options['include'] as string[] | null | undefined) ?? undefined,
    platform: (row.options['platform'] as string | undefined) ?? undefined,
  };
  const target = await inspectTable(client, {
    table: run.table,
    key: run.key,
    map: run.mapping,
    mode: run.mode,
    write: options.write,
    ...(run.statusColumns ? { statusColumns: run.statusColumns } : {}),
  }).catch((e: unknown) => {
    throw changedSinceRun(e, runId, run.table);
  });
  if (options.table !== undefined) {
    const given = await inspectTable(client, { table: options.table, key: run.key, map: run.mapping, mode: run.mode, write: false }).catch(() => undefined);
    if (given?.qualified !== target.qualified) {
      throw new CleanseError(
        'usage',
        `--table ${options.table}: run ${runId} cleaned ${target.qualified}, not that table; name the run of ${options.table} (dq-pg status lists the runs)`,
      );
    }
  }
  return { run, target };
}

/**
 * SQL: the keys of cleanse run `run`'s review rows (`run`, `except`: SQL expressions, e.g.
 * parameters) that a person has decided since — a row decided (applied, kept or marked invalid;
 * not a conflict) by a review run other than `except` that was not rolled back and that is either
 * a review of this run, or of another run of the same table, key and mapping and was still working
 * when this run started or later. Such a decision is newer than what this run saw of the row:
 * whichever of the exports listing the row was applied first decided it, and no other export lists
 * it again or applies a decision to it. A decision that ended before this run started is older than
 * the run's own look at the row (which put the row back in review): it does not count.
 * Returns `row_key`, the deciding `run_id`, the run it reviewed (`review_of`) and what it decided
 * (`decision`: the review file's cell as `review apply` recorded it — `keep`, `invalid` or
 * `candidate <n>`, numbered in its own file — `candidate`: the candidate picked, or null — and
 * `checked_at`: when; a row decided again after a run asked anew has a row per decision).
 */
export function decidedKeysSql(run: string, except = 'NULL::text'): string {
  return `SELECT d.row_key, d.run_id, rr.review_of, d.detail ->> 'decision' AS decision, d.candidates -> 0 AS candidate, d.checked_at FROM ${STATE_SCHEMA}.runs c
  JOIN ${STATE_SCHEMA}.runs rr ON rr.kind = 'review' AND rr.state <> 'rolled-back' AND rr.run_id IS DISTINCT FROM ${except}
   AND (rr.review_of = c.run_id OR (rr.table_name = c.table_name AND rr.key_column = c.key_column AND rr.mapping = c.mapping AND rr.updated_at >= c.created_at))
  JOIN ${STATE_SCHEMA}.results d ON d.run_id = rr.run_id AND d.outcome <> 'conflict'
  WHERE c.run_id = ${run}`;
}

/**
 * SQL (parameters `$1`: a cleanse run, `$2`: keys of its review rows): the other cleanse runs of
 * the same table, key and mapping (not rolled back, oldest first) whose review is still to come
 * for some of these rows, and how many of the keys that is (`n`). A run counts for a row while it
 * holds the row as awaiting review, no review run decided the row since that run saw it
 * (`decidedKeysSql`), and no review of that run was applied to the end (a review run of it that
 * is done and not rolled back: its file came back, and a row left empty in it waits in the newer
 * exports, not in that file). An export of such a run lists the rows too; whichever file is
 * applied first decides them.
 */
export const ALSO_AWAITING_SQL = `WITH m AS (
  SELECT o.run_id, o.created_at, r.row_key FROM ${STATE_SCHEMA}.runs c
    JOIN ${STATE_SCHEMA}.runs o ON o.kind = 'cleanse' AND o.run_id <> c.run_id AND o.state <> 'rolled-back'
     AND o.table_name = c.table_name AND o.key_column = c.key_column AND o.mapping = c.mapping
    JOIN ${STATE_SCHEMA}.results r ON r.run_id = o.run_id AND r.status = 'review' AND r.row_key = ANY ($2::text[])
   WHERE c.run_id = $1
     AND NOT EXISTS (SELECT 1 FROM ${STATE_SCHEMA}.runs a WHERE a.kind = 'review' AND a.review_of = o.run_id AND a.state = 'done')
     AND NOT EXISTS (SELECT 1 FROM (${decidedKeysSql('o.run_id')}) dk WHERE dk.row_key = r.row_key))
SELECT (SELECT count(DISTINCT row_key) FROM m)::int AS n, ARRAY(SELECT run_id FROM m GROUP BY run_id, created_at ORDER BY created_at, run_id) AS runs`;
