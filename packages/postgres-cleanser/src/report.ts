import { resolve } from 'node:path';
import type pg from 'pg';
import { checkWholeFileTarget, WholeFileError } from '@dq/core/files';
import { writeReport } from '@dq/core/report';
import type { RunReport } from '@dq/core';
import type { CodeGroup, FieldCorrections, ReportDetails } from '@dq/core/report';
import { schemaExists, STATE_SCHEMA } from './bookkeeping.js';
import { connect, dbTarget } from './db.js';
import { CleanseError, connectionLost, usageError } from './errors.js';
import type { Logger } from '@dq/core';
import { status } from './status.js';

/** Examples per field or code, request ids per code, conflict keys listed. */
const EXAMPLES = 5;
const REQUEST_IDS = 10;
const KEYS = 10;

/**
 * The run report's details of a dq-pg run, read from the bookkeeping schema: result classes,
 * corrections per column from the audit's before/after, the review queue by class, failures by
 * code with request ids, and conflicts. Covers every process and every resume of the run.
 */
export async function readRunDetails(client: pg.Client, runId: string): Promise<{ details: ReportDetails; byStatus: Record<string, number> }> {
  const S = STATE_SCHEMA;
  const counts = await client.query<{ status: string; result_class: string | null; n: number }>(
    `SELECT status, result_class, count(*)::int AS n FROM ${S}.results WHERE run_id = $1 GROUP BY 1, 2`,
    [runId],
  );
  const byStatus: Record<string, number> = { accepted: 0, review: 0, invalid: 0, 'invalid-input': 0, 'unsupported-country': 0, unavailable: 0 };
  const byClass: Record<string, number> = { A: 0, B: 0, C: 0, D: 0, E: 0, F: 0 };
  const review: Record<string, number> = {};
  for (const r of counts.rows) {
    byStatus[r.status] = (byStatus[r.status] ?? 0) + r.n;
    if (r.result_class) byClass[r.result_class] = (byClass[r.result_class] ?? 0) + r.n;
    if (r.status === 'review') review[r.result_class ?? '-'] = (review[r.result_class ?? '-'] ?? 0) + r.n;
  }

  // Corrections: mapped columns whose audited value changed (status columns are not corrections).
  const changes = await client.query<{
    field: string;
    col: string;
    changed: number;
    keys: string[];
    before: (string | null)[];
    after: (string | null)[];
    rows: number;
  }>(
    `WITH run AS (SELECT columns, mapping FROM ${S}.runs WHERE run_id = $1),
          cols AS (SELECT m.key AS field, m.value AS col, array_position(run.columns, m.value) AS i FROM run, jsonb_each_text(run.mapping) m),
          diff AS (SELECT c.field, c.col, a.row_key, a.before[c.i] AS b, a.after[c.i] AS af,
                          row_number() OVER (PARTITION BY c.col ORDER BY a.row_key) AS n
                     FROM ${S}.results a CROSS JOIN cols c
                    WHERE a.run_id = $1 AND a.before IS NOT NULL AND c.i IS NOT NULL AND a.before[c.i] IS DISTINCT FROM a.after[c.i])
     SELECT field, col, count(*)::int AS changed,
            array_agg(row_key ORDER BY n) FILTER (WHERE n <= ${EXAMPLES}) AS keys,
            array_agg(b ORDER BY n) FILTER (WHERE n <= ${EXAMPLES}) AS before,
            array_agg(af ORDER BY n) FILTER (WHERE n <= ${EXAMPLES}) AS after,
            (SELECT count(DISTINCT row_key) FROM diff)::int AS rows
       FROM diff GROUP BY field, col ORDER BY changed DESC, col`,
    [runId],
  );
  const keyColumn = (await client.query<{ key_column: string }>(`SELECT key_column FROM ${S}.runs WHERE run_id = $1`, [runId])).rows[0]?.key_column ?? 'key';
  const where = (key: string) => `${keyColumn}=${key}`;
  const fields: FieldCorrections[] = changes.rows.map((r) => ({
    field: `${r.field} (${r.col})`,
    changed: r.changed,
    examples: r.keys.map((k, i) => ({ where: where(k), before: r.before[i] ?? null, after: r.after[i] ?? null })),
  }));

  const reviewRows = await client.query<{ row_key: string; result_class: string | null; request_id: string | null }>(
    `SELECT row_key, result_class, request_id FROM ${S}.results WHERE run_id = $1 AND status = 'review' ORDER BY row_key LIMIT ${EXAMPLES}`,
    [runId],
  );

  // Failures: rows the platform could not answer or the local checks refused, and accepted rows
  // the table could not take (a correction too long for its column, a constraint refusing it).
  const failed = await client.query<{ code: string; n: number; ids: string[] | null; keys: string[]; messages: (string | null)[] }>(
    `SELECT COALESCE(error->>'code', status) AS code, count(*)::int AS n,
            (array_agg(DISTINCT request_id) FILTER (WHERE request_id IS NOT NULL))[1:${REQUEST_IDS}] AS ids,
            (array_agg(row_key ORDER BY row_key))[1:${EXAMPLES}] AS keys,
            (array_agg(error->>'message' ORDER BY row_key))[1:${EXAMPLES}] AS messages
       FROM ${S}.results WHERE run_id = $1 AND (status IN ('unavailable', 'invalid-input') OR (outcome = 'kept' AND status = 'accepted' AND error IS NOT NULL))
      GROUP BY 1 ORDER BY 2 DESC, 1`,
    [runId],
  );
  const failures: CodeGroup[] = failed.rows.map((r) => ({
    code: r.code,
    count: r.n,
    requestIds: r.ids ?? [],
    examples: r.keys.map((k, i) => ({ where: where(k), text: r.messages[i] ?? r.code })),
  }));

  const conflicts = await client.query<{ row_key: string }>(
    `SELECT row_key FROM ${S}.results WHERE run_id = $1 AND outcome = 'conflict' ORDER BY row_key LIMIT ${KEYS}`,
    [runId],
  );
  const conflictCount =
    (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${S}.results WHERE run_id = $1 AND outcome = 'conflict'`, [runId])).rows[0]?.n ?? 0;

  return {
    byStatus,
    details: {
      byClass,
      corrections: {
        fields,
        rows: changes.rows[0]?.rows ?? 0,
        note: 'From the audit: the values this run wrote, before → after (rows changed since are not counted again).',
      },
      review: {
        count: byStatus['review'] ?? 0,
        byClass: review,
        command: `dq-pg review export --run ${runId} --output review.csv`,
        examples: reviewRows.rows.map((r) => ({
          where: where(r.row_key),
          text: `class ${r.result_class ?? '-'}`,
          ...(r.request_id ? { requestId: r.request_id } : {}),
        })),
      },
      failures,
      conflicts: {
        count: conflictCount,
        command: `dq-pg status --run ${runId}  (the keys: SELECT row_key FROM ${S}.results WHERE run_id = '${runId}' AND outcome = 'conflict')`,
        keys: conflicts.rows.map((r) => r.row_key),
      },
    },
  };
}

/** Refuses, before any work, a report path the report could not be written to at the end (its folder missing, a folder, a result store's file). */
export async function checkReportPath(path: string, flag: string): Promise<void> {
  try {
    await checkWholeFileTarget(resolve(path));
  } catch (e) {
    if (e instanceof WholeFileError) throw usageError(flag, e.message);
    throw e;
  }
}

/**
 * The report of a cleanse that just ended: its numbers are its summary's (the object printed as
 * the JSON summary line); the details come from the bookkeeping schema, the calls per second from
 * the engine's run report.
 */
export async function reportAfterCleanse(
  path: string,
  db: string,
  summary: Record<string, unknown>,
  engine: RunReport | undefined,
  logger: Logger,
  options: { detailsMayFail?: boolean } = {},
): Promise<{ detailsUnread?: unknown }> {
  const runId = summary['runId'];
  let details: ReportDetails = {};
  let detailsUnread: unknown;
  if (typeof runId === 'string') {
    try {
      // After a failure the database may stall: its statements then get the usual timeout.
      const client = await connect(dbTarget(db, logger.redactor), 'dq-pg', options.detailsMayFail ? {} : { queryTimeoutMs: 0 });
      try {
        details = (await readRunDetails(client, runId)).details;
      } finally {
        await client.end().catch(() => undefined);
      }
    } catch (e) {
      // A run that failed for its database: the report has its summary, without the corrections.
      if (!options.detailsMayFail) throw e;
      detailsUnread = e;
    }
  }
  if (engine?.callsPerSecond) details = { ...details, rate: engine.callsPerSecond };
  await writeReport(
    path,
    {
      tool: 'dq-pg cleanse',
      subject: String(summary['table'] ?? ''),
      ...(typeof runId === 'string' ? { run: runId } : {}),
      generatedAt: new Date().toISOString(),
      summary,
      details,
    },
    (t) => logger.redactor.redact(t),
  );
  return detailsUnread === undefined ? {} : { detailsUnread };
}

/**
 * `dq-pg report --run <id> --output <file>`: the report of a recorded run, from the database
 * alone (every process and resume of the run). Returns the summary object it rendered (printed
 * as one JSON line): the run's counts as `dq-pg status` has them, `byStatus` from its results.
 */
export async function reportOfRun(options: { db: string; runId: string; output: string; logger: Logger }): Promise<Record<string, unknown>> {
  const [run] = await status({ db: options.db, runId: options.runId, logger: options.logger });
  if (!run) throw new CleanseError('run-not-found', `--run ${options.runId}: no such run; dq-pg status lists the runs`);
  const target = dbTarget(options.db, options.logger.redactor);
  const client = await connect(target, 'dq-pg', { queryTimeoutMs: 0 });
  try {
    if (!(await schemaExists(client))) throw new CleanseError('run-not-found', `--run ${options.runId}: no dq-pg runs in this database`);
    const { details, byStatus } = await readRunDetails(client, options.runId);
    const summary = {
      type: 'report',
      runId: run.runId,
      table: run.table,
      state: run.state,
      rows: run.rows,
      written: run.written,
      unchanged: run.unchanged,
      conflicts: run.conflicts,
      apiCalls: run.apiCalls,
      byStatus,
      ...(run.lastError ? { error: run.lastError } : {}),
      output: options.output,
    };
    await writeReport(
      options.output,
      {
        tool: 'dq-pg report',
        subject: run.table,
        run: run.runId,
        generatedAt: new Date().toISOString(),
        summary,
        details: {
          ...details,
          notes: ['Calls per second are kept only by the process that made them: pass --report to dq-pg cleanse to have them in its report.'],
        },
      },
      (t) => options.logger.redactor.redact(t),
    );
    return summary;
  } catch (e) {
    throw connectionLost(e, target.where);
  } finally {
    await client.end().catch(() => undefined);
  }
}
