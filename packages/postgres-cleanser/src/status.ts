import type pg from 'pg';
import { createLogger } from '@dq/core';
import type { Logger } from '@dq/core';
import { schemaExists, STATE_SCHEMA } from './bookkeeping.js';
import { connect, dbTarget } from './db.js';
import { connectionLost } from './errors.js';

/** One run as `dq-pg status` shows it; counts are over all processes of the run. */
export interface RunStatus {
  runId: string;
  table: string;
  state: string;
  createdAt: string;
  updatedAt: string;
  /** Claimed key ranges so far, and how many are done. */
  ranges: number;
  rangesDone: number;
  rows: number;
  written: number;
  unchanged: number;
  conflicts: number;
  accepted: number;
  review: number;
  invalid: number;
  invalidInput: number;
  unavailable: number;
  apiCalls: number;
  /** Audit rows restored by rollback, and rows rollback left alone because they changed again. */
  restored: number;
  rollbackConflicts: number;
  lastError: { code: string; message: string; requestId?: string } | null;
}

/** Lists the runs recorded in this database (oldest first), or only `runId`. */
export async function status(options: { db: string; runId?: string; logger?: Logger }): Promise<RunStatus[]> {
  const logger = options.logger ?? createLogger({ level: 'warn' });
  const target = dbTarget(options.db, logger.redactor);
  const client = await connect(target);
  try {
    if (!(await schemaExists(client))) return [];
    return await readStatus(client, options.runId);
  } catch (e) {
    throw connectionLost(e, target.where);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function readStatus(client: pg.Client, runId: string | undefined): Promise<RunStatus[]> {
  const { rows } = await client.query<Record<string, unknown>>(
    `SELECT r.run_id, r.table_name, r.state, r.created_at, r.updated_at, r.last_error,
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
  return rows.map((r) => ({
    runId: r['run_id'] as string,
    table: r['table_name'] as string,
    state: r['state'] as string,
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
  }));
}
