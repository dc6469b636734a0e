import type pg from 'pg';
import type { Mode, ResultClass } from '@dq/core';
import { ensureSchema, schemaExists, STATE_SCHEMA } from '../bookkeeping.js';
import { CleanseError } from '../errors.js';
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
  };
  const target = await inspectTable(client, {
    table: run.table,
    key: run.key,
    map: run.mapping,
    mode: run.mode,
    write: options.write,
    ...(run.statusColumns ? { statusColumns: run.statusColumns } : {}),
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
 * SQL (parameter `$1`: the cleanse run): the keys of the run's review rows that a review run has
 * decided — applied, kept or marked invalid, not a conflict, and not rolled back since.
 */
export const DECIDED_KEYS_SQL = `SELECT d.row_key FROM ${STATE_SCHEMA}.results d JOIN ${STATE_SCHEMA}.runs rr ON rr.run_id = d.run_id
  WHERE rr.kind = 'review' AND rr.review_of = $1 AND rr.state <> 'rolled-back' AND d.outcome <> 'conflict'`;
