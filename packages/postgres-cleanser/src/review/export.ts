import { format } from '@fast-csv/format';
import { createLogger, DqError } from '@dq/core';
import { writeWholeFile, WholeFileError } from '@dq/core/files';
import { CANDIDATE_FIELDS, REVIEW_COLUMNS as FILE_COLUMNS, reviewHeader, reviewRow, rowCheck } from '@dq/core/review';
import type { Logger, ResultClass } from '@dq/core';
import { STATE_SCHEMA } from '../bookkeeping.js';
import { cancelStatement, connect, dbTarget, keyFromText, wasCancelled } from '../db.js';
import { CleanseError, connectionLost, isConnectionLoss, usageError } from '../errors.js';
import { ALSO_AWAITING_SQL, decidedKeysSql, loadReviewedRun } from './stored-run.js';

/** Options of {@link reviewExport} (`dq-pg review export`). */
export interface ReviewExportOptions {
  db: string;
  /** The cleanse run whose review rows are exported. */
  runId: string;
  /** Result classes to export (address runs); default D and E. */
  classes?: readonly ResultClass[];
  /** When given, the run must be of this table. */
  table?: string;
  /** The CSV file to write (replaced atomically). */
  output: string;
  logger?: Logger;
  /** Stops the export once aborted (SIGINT, SIGTERM): the statement under way is cancelled, the file is not written (exit 75). */
  signal?: AbortSignal;
}

/** What {@link reviewExport} wrote. */
export interface ReviewExportSummary {
  runId: string;
  table: string;
  output: string;
  /** Rows written, one per row awaiting a decision. */
  rows: number;
  /** Candidate sets per row in the file (the widest row's count). */
  candidates: number;
  /** Review rows of the run whose table row no longer exists: not exported. */
  missing: number;
  /**
   * Rows of the file whose decision other runs of the table (same key and mapping) still wait for
   * too: each of `runs` (oldest first) holds them as awaiting review, nobody decided them since,
   * and no review of that run has been applied yet, so an export of it lists them as well. Deciding
   * a row in either file is safe: the decision applied first stands; applying the other file counts
   * the same decision as applied already and refuses a different one by name (exit 4).
   */
  alsoAwaiting: { rows: number; runs: string[] };
  exitCode: number;
}

/** Fixed columns of the review file besides the key and the mapped columns: `run_id` first, then @dq/core's. */
export const REVIEW_COLUMNS = { run: 'run_id', ...FILE_COLUMNS } as const;

/**
 * Writes one CSV row per row of cleanse run `runId` that awaits a decision: status `review`, of
 * the given classes, not decided by a review run since (`decidedKeysSql`: also one that applied
 * an export of another run of the table). Each row has the run id, the key, the mapped
 * columns as the table holds them now, the class, the request id, every stored candidate as a
 * numbered set of fields, and an empty `decision` column. The file is for spreadsheets: UTF-8 with
 * a byte order mark, CRLF, every cell quoted, and cells that would start a formula neutralised
 * (@dq/core's `reviewRow`; `review apply` undoes exactly that). With nothing to review it writes the header
 * only and returns `rows: 0` (exit 0).
 */
export async function reviewExport(options: ReviewExportOptions): Promise<ReviewExportSummary> {
  const logger = options.logger ?? createLogger({ level: 'warn' });
  const db = dbTarget(options.db, logger.redactor);
  if (!options.output) throw usageError('--output', 'required: the CSV file to write, e.g. review.csv');
  const client = await connect(db);
  // A signal cancels the statement under way; the file is then left as it was.
  let endCut: (() => void) | undefined;
  const cut = (): void => void (endCut = cancelStatement(client));
  options.signal?.addEventListener('abort', cut, { once: true });
  const stopped = (): DqError => {
    const reason = options.signal?.reason instanceof Error ? ` ${options.signal.reason.message}` : '';
    return new DqError(
      `review export of run ${options.runId} stopped${reason}: ${options.output} was not written (left as it was); run the same command again to write it`,
      {
        code: 'interrupted',
        retriable: true,
        scope: 'run',
      },
    );
  };
  try {
    if (options.signal?.aborted) throw stopped();
    const { run, target } = await loadReviewedRun(client, options.runId, '--run', { ...(options.table ? { table: options.table } : {}), write: false });
    const byClass = run.mode === 'address';
    if (!byClass && options.classes)
      throw usageError('--classes', `run ${run.runId} is a ${run.mode} run; its review rows have no result class (leave --classes out)`);
    const classes = options.classes ?? ['D', 'E'];
    const fixed = Object.values(REVIEW_COLUMNS) as string[];
    for (const name of [target.key.column, ...target.columns.map((c) => c.column)]) {
      if (fixed.includes(name) || name.startsWith('candidate_')) {
        throw new CleanseError(
          'usage',
          `column "${name}" of ${target.qualified} has the name of a column of the review file; review export cannot tell them apart`,
        );
      }
    }
    const t = 'dq_t';
    const k = `${t}.${target.key.quoted}`;
    const select = `FROM ${STATE_SCHEMA}.results r JOIN ${target.qualified} AS ${t} ON ${k} = ${keyFromText('r.row_key', target.key.type)}
      WHERE r.run_id = $1 AND r.status = 'review' AND ($2::text[] IS NULL OR r.result_class = ANY ($2))
        AND r.row_key NOT IN (SELECT dk.row_key FROM (${decidedKeysSql('$1')}) dk)`;
    const params = [run.runId, byClass ? classes : null];
    const { rows } = await client.query<unknown[]>({
      text: `SELECT r.row_key, r.result_class, r.request_id, r.candidates, ${target.columns.map((c) => `${t}.${c.quoted}`).join(', ')} ${select} ORDER BY ${k}`,
      values: params,
      rowMode: 'array',
    });
    const missing = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${STATE_SCHEMA}.results r WHERE r.run_id = $1 AND r.status = 'review' AND ($2::text[] IS NULL OR r.result_class = ANY ($2))
          AND NOT EXISTS (SELECT 1 FROM ${target.qualified} AS ${t} WHERE ${k} = ${keyFromText('r.row_key', target.key.type)})`,
      params,
    );
    // Rows an export of another run still to be applied (an earlier night's, say) lists as well:
    // said, not left out — a row left out because some older file lists it would wait for a file
    // that may never come back.
    const also = await client.query<{ n: number; runs: string[] }>(ALSO_AWAITING_SQL, [run.runId, rows.map((r) => r[0] as string)]);
    if (options.signal?.aborted) throw stopped();
    const widest = rows.reduce<number>((m, r) => Math.max(m, Array.isArray(r[3]) ? r[3].length : 0), 0);
    const fields = CANDIDATE_FIELDS[run.mode === 'address' ? 'address' : 'company'];
    await writeCsv(
      options.output,
      reviewHeader([REVIEW_COLUMNS.run, target.key.column, ...target.columns.map((c) => c.column)], widest, fields),
      rows.map((r) =>
        reviewRow(
          {
            leading: [run.runId, r[0] as string, ...target.columns.map((_, i) => r[4 + i] as string | null)],
            resultClass: r[1] as string | null,
            requestId: r[2] as string | null,
            // What review apply compares the row with (a spreadsheet may reformat the cells above).
            // and the row's key, should the spreadsheet change the key column.
            rowCheck: rowCheck(
              target.columns.map((_, i) => r[4 + i] as string | null),
              r[0] as string,
            ),
            candidates: Array.isArray(r[3]) ? r[3] : [],
          },
          widest,
          fields,
        ),
      ),
      options.signal,
      stopped,
    );
    return {
      runId: run.runId,
      table: target.qualified,
      output: options.output,
      rows: rows.length,
      candidates: widest,
      missing: missing.rows[0]?.n ?? 0,
      alsoAwaiting: { rows: also.rows[0]?.n ?? 0, runs: also.rows[0]?.runs ?? [] },
      exitCode: 0,
    };
  } catch (e) {
    if (options.signal?.aborted && (wasCancelled(e) || isConnectionLoss(e))) throw stopped();
    throw connectionLost(e, db.where);
  } finally {
    options.signal?.removeEventListener('abort', cut);
    endCut?.();
    await client.end().catch(() => undefined);
  }
}

/**
 * Writes the file whole (core's writeWholeFile: a temporary name renamed into place, so a reader
 * never sees half a file; a device written in place; a result store's file refused).
 */
async function writeCsv(path: string, header: string[], rows: string[][], signal: AbortSignal | undefined, stopped: () => Error): Promise<void> {
  try {
    await writeWholeFile(path, async (handle) => {
      const csv = format({
        headers: header,
        writeBOM: true,
        rowDelimiter: '\r\n',
        quoteColumns: true,
        quoteHeaders: true,
        includeEndRowDelimiter: true,
        alwaysWriteHeaders: true,
      });
      // Written through the handle itself: a stream made on it would keep the handle from closing.
      const written = (async () => {
        for await (const chunk of csv) await handle.write(chunk as Buffer);
      })();
      for (const row of rows) csv.write(row);
      csv.end();
      await written;
      // Stopped by a signal meanwhile: the temporary file is removed, the file at `path` stays as it was.
      if (signal?.aborted) throw stopped();
    });
  } catch (e) {
    if (e instanceof WholeFileError) throw usageError('--output', e.message);
    throw e;
  }
}
