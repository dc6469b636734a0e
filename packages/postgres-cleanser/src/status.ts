import type pg from 'pg';
import { createLogger } from '@dq/core';
import type { Logger } from '@dq/core';
import { schemaExists, STATE_SCHEMA } from './bookkeeping.js';
import { connect, dbTarget } from './db.js';
import { CleanseError, connectionLost } from './errors.js';
import { runHeldSql } from './runs.js';
import type { RunTotals } from './runs.js';

/** One run as `dq-pg status` shows it; counts are over all processes of the run. */
export interface RunStatus extends RunTotals {
  runId: string;
  /** `cleanse`, or `review` for a `dq-pg review apply` (which `rollback` undoes like a cleanse). */
  kind: string;
  table: string;
  /**
   * `running` (a live process works on it), `interrupted` (recorded as running, but no process
   * holds it any more: killed, or its database connection was lost), `stopped` (quota, key,
   * platform down, signal, a failure such as a table changed under the run: see `lastError`), `done`, `rolled-back`.
   */
  state: string;
  /** For an interrupted or stopped run: the command that resumes it (add --db and the API settings). */
  resume?: string;
  createdAt: string;
  updatedAt: string;
  /** Claimed key ranges so far, and how many are done. */
  ranges: number;
  rangesDone: number;
  /** Audit rows restored by rollback, and rows rollback left alone because they changed again. */
  restored: number;
  rollbackConflicts: number;
  /**
   * A rollback begun but not finished (the run is not `rolled-back` yet): `running` while a
   * `dq-pg rollback` holds the run, `unfinished` when it stopped part way (a signal, a lost
   * connection, a lock); `finish` is the command that completes it.
   */
  rollback?: { state: 'running' | 'unfinished'; finish: string };
  lastError: { code: string; message: string; requestId?: string } | null;
}

/** Lists the runs recorded in this database (oldest first), or only `runId`. */
export async function status(options: { db: string; runId?: string; logger?: Logger }): Promise<RunStatus[]> {
  const logger = options.logger ?? createLogger({ level: 'warn' });
  const target = dbTarget(options.db, logger.redactor);
  const client = await connect(target, 'dq-pg', { queryTimeoutMs: 0 });
  try {
    const runs = (await schemaExists(client)) ? await readStatus(client, options.runId) : [];
    if (options.runId !== undefined && runs.length === 0) {
      throw new CleanseError('run-not-found', `--run ${options.runId}: no run ${options.runId} in this database; dq-pg status lists the runs`);
    }
    return runs;
  } catch (e) {
    throw connectionLost(e, target.where);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function readStatus(client: pg.Client, runId: string | undefined): Promise<RunStatus[]> {
  const { rows } = await client.query<Record<string, unknown>>(
    `SELECT r.run_id, r.table_name, r.state, r.created_at, r.updated_at, r.last_error, r.key_column, r.options, ${runHeldSql('r')} AS held,
            ${runHeldSql('r', true)} AS held_alone,
            COALESCE(to_jsonb(r) ->> 'kind', 'cleanse') AS kind,
            count(p.range_no)::int AS ranges, (count(p.range_no) FILTER (WHERE p.done))::int AS ranges_done,
            COALESCE(sum(p.rows_read), 0)::float8 AS rows, COALESCE(sum(p.written), 0)::float8 AS written,
            COALESCE(sum(p.unchanged), 0)::float8 AS unchanged, COALESCE(sum(p.conflicts), 0)::float8 AS conflicts,
            COALESCE(sum(p.accepted), 0)::float8 AS accepted, COALESCE(sum(p.review), 0)::float8 AS review,
            COALESCE(sum(p.invalid), 0)::float8 AS invalid, COALESCE(sum(p.invalid_input), 0)::float8 AS invalid_input,
            COALESCE(sum(p.unavailable), 0)::float8 AS unavailable, COALESCE(sum(p.api_calls), 0)::float8 AS api_calls,
            (SELECT count(*) FROM ${STATE_SCHEMA}.results a WHERE a.run_id = r.run_id AND a.rollback = 'restored')::float8 AS restored,
            (SELECT count(*) FROM ${STATE_SCHEMA}.results a WHERE a.run_id = r.run_id AND a.rollback = 'conflict')::float8 AS rollback_conflicts
       FROM ${STATE_SCHEMA}.runs r LEFT JOIN ${STATE_SCHEMA}.progress p ON p.run_id = r.run_id
      WHERE $1::text IS NULL OR r.run_id = $1
      GROUP BY r.run_id ORDER BY r.created_at, r.run_id`,
    [runId ?? null],
  );
  return rows.map((r) => {
    const stored = r['state'] as string;
    const state = stored === 'running' && r['held'] !== true ? 'interrupted' : stored;
    const kind = r['kind'] as string;
    // No command to resume a run being rolled back: the rollback is finished first.
    const resume =
      (state === 'interrupted' || state === 'stopped') && r['held_alone'] !== true && !begunRollback(r)
        ? kind === 'review'
          ? `dq-pg review apply --input <the review file> --run-id ${shellWord(r['run_id'] as string)}`
          : resumeCommand(r['run_id'] as string, r['table_name'] as string, r['key_column'] as string, r['options'] as Record<string, unknown>)
        : undefined;
    // A rollback holds the run alone while it works; one that stopped part way left rows restored
    // (or left as conflicts) and the run not marked rolled back.
    const rollbackState = r['held_alone'] === true ? ('running' as const) : begunRollback(r) ? ('unfinished' as const) : undefined;
    const rollback = rollbackState ? { state: rollbackState, finish: `dq-pg rollback --run ${shellWord(r['run_id'] as string)}` } : undefined;
    return {
      runId: r['run_id'] as string,
      kind,
      table: r['table_name'] as string,
      state,
      ...(resume ? { resume } : {}),
      ...(rollback ? { rollback } : {}),
      createdAt: (r['created_at'] as Date).toISOString(),
      updatedAt: (r['updated_at'] as Date).toISOString(),
      ranges: r['ranges'] as number,
      rangesDone: r['ranges_done'] as number,
      rows: r['rows'] as number,
      written: r['written'] as number,
      unchanged: r['unchanged'] as number,
      conflicts: r['conflicts'] as number,
      accepted: r['accepted'] as number,
      review: r['review'] as number,
      invalid: r['invalid'] as number,
      invalidInput: r['invalid_input'] as number,
      unavailable: r['unavailable'] as number,
      apiCalls: r['api_calls'] as number,
      restored: r['restored'] as number,
      rollbackConflicts: r['rollback_conflicts'] as number,
      lastError: (r['last_error'] as RunStatus['lastError']) ?? null,
    };
  });
}

/** Whether a rollback of the run restored rows (or left some as conflicts) and has not marked it rolled back. */
function begunRollback(r: Record<string, unknown>): boolean {
  return r['state'] !== 'rolled-back' && ((r['restored'] as number) > 0 || (r['rollback_conflicts'] as number) > 0);
}

/** A shell word: as is when plain, else in single quotes. */
function shellWord(text: string): string {
  return /^[A-Za-z0-9_.,:=@%/+-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The `dq-pg cleanse` command with the settings a run was made with (a run only resumes with the same ones). */
function resumeCommand(runId: string, table: string, key: string, options: Record<string, unknown>): string {
  // A column holding a comma, a quote at its start or spaces at its ends is quoted as --map reads it.
  const pairs = (o: unknown): string =>
    Object.entries((o ?? {}) as Record<string, string>)
      .map(([f, c]) => `${f}=${/,|^"|^\s|\s$/.test(c) ? `"${c.replace(/"/g, '""')}"` : c}`)
      .join(',');
  const args = ['dq-pg', 'cleanse', '--table', table, '--key', key, '--map', pairs(options['mapping'])];
  if (options['mode'] && options['mode'] !== 'address') args.push('--mode', String(options['mode']));
  if (typeof options['country'] === 'string') args.push('--country', options['country']);
  if (Array.isArray(options['accept'])) args.push('--accept', options['accept'].join(','));
  if (typeof options['where'] === 'string') args.push('--where', options['where']);
  if (Array.isArray(options['include'])) args.push('--include', options['include'].join(','));
  if (options['statusColumns']) args.push('--status-columns', pairs(options['statusColumns']));
  if (options['storeOff'] === true) args.push('--store', 'off');
  args.push('--run-id', runId);
  return args.map(shellWord).join(' ');
}
