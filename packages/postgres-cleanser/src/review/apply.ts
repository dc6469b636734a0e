import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { parseString } from '@fast-csv/parse';
import { createLogger, DqError, ExitCode, exitCodeFor } from '@dq/core';
import { candidateText, CANDIDATE_FIELDS, restoreCell, rowCheck, rowCheckKey } from '@dq/core/review';
import type { Logger, RecordResult } from '@dq/core';
import type pg from 'pg';
import { STATE_SCHEMA } from '../bookkeeping.js';
import { cancelStatement, connect, dbTarget, sessionLost, wasCancelled } from '../db.js';
import { CleanseError, connectionLost, isConnectionLoss, usageError } from '../errors.js';
import { PageStore } from '../page-store.js';
import type { PageCounts, PageWrite } from '../page-store.js';
import type { TargetTable } from '../preflight.js';
import { decideRow } from '../row-values.js';
import { unfitText } from '../page-plan.js';
import { finishRun, holdRun, knownScope, newRunId, openRun, stopRun } from '../runs.js';
import { REVIEW_COLUMNS } from './export.js';
import { decidedKeysSql, loadReviewedRun } from './stored-run.js';
import type { ReviewedRun } from './stored-run.js';

/** Options of {@link reviewApply} (`dq-pg review apply`). */
export interface ReviewApplyOptions {
  db: string;
  /** A review file of `dq-pg review export`, decided (also re-saved by a spreadsheet). */
  input: string;
  /** The review run to create or resume; default a new id. */
  runId?: string;
  /** Rows per page (one guarded statement each); default 500. */
  batchSize?: number;
  logger?: Logger;
  /** Stops after the page in flight is written (exit 75; rerun with the same run id). */
  signal?: AbortSignal;
  /** Cancels the page in flight once aborted (a second signal): nothing of it is written, the apply stops at once (exit 75). */
  stopNow?: AbortSignal;
}

/** A decision cell that was not applied: where it is and why. */
export interface BadDecision {
  /** Line of the file (the header is line 1; the spreadsheet's row number). */
  line: number;
  key: string;
  message: string;
}

/** What {@link reviewApply} did. */
export interface ReviewApplySummary {
  /** The review run (roll it back with `dq-pg rollback --run`); null for a file without rows (nothing done). */
  runId: string | null;
  /** The cleanse run whose review rows were decided. */
  reviewOf: string | null;
  table: string | null;
  /** Rows given the values of the candidate picked. */
  applied: number;
  /** Rows whose values were confirmed as they are (`keep`). */
  kept: number;
  /** Rows marked invalid. */
  invalid: number;
  /** Rows changed since the export: not written. */
  conflicts: number;
  conflictKeys: string[];
  /** Rows another session held locked (an open transaction) past the wait for a lock: not written; applying the file again writes them. */
  locked: number;
  lockedKeys: string[];
  /** Decision cells that are not a decision for their row (each named in `bad`). */
  badDecisions: number;
  bad: BadDecision[];
  /** Rows with an empty decision cell. */
  skipped: number;
  /** Decided rows this review run had already applied before (a rerun, a resumed run). */
  alreadyApplied: number;
  /**
   * Decided rows another review run (`runs`) decided the same way already — the same `keep`,
   * `invalid` or candidate (its fields as the file shows them): nothing written, nothing to fix.
   * A different decision for such a row is a bad decision naming that run.
   */
  sameAsApplied: { rows: number; runs: string[] };
  /** `stopped`: a signal stopped the apply part way; `error` says how far it got (rerun with the same run id to finish). */
  state: 'done' | 'stopped';
  /** Why it stopped: `interrupted` (a signal), or the failure that ended it (`db-unreachable`…). */
  error?: { code: string; message: string };
  exitCode: number;
}

type Decision = { kind: 'candidate'; n: number } | { kind: 'keep' } | { kind: 'invalid' };

/** One decided row of the file. */
interface DecidedRow {
  line: number;
  key: string;
  decision: Decision;
  /** The mapped columns' values as the file shows them (neutralisation undone), in mapping order. */
  values: string[];
  /** The row check of the values at the export; undefined in a file exported without one. */
  rowCheck: string | undefined;
  review: ReviewRow;
}

interface ReviewRow {
  resultClass: string | null;
  requestId: string | null;
  candidates: Record<string, unknown>[];
}

const MAX_LISTED = 100;

/**
 * Applies the decisions of a review file as a run of its own (kind `review`): each decided row
 * gets the candidate picked, is confirmed (`keep`) or marked `invalid`, through the cleanse's
 * guarded page statement — written only where the row still holds every value the file shows
 * (else a conflict, never overwritten), audited before/after, checkpointed per page and undone by
 * `dq-pg rollback`. Status columns of the cleanse run are set too. Rows this review run already
 * has a result for are not applied again, so a rerun with the same run id resumes. A decision cell
 * that is no decision for its row is reported with its line and key and skipped, never guessed.
 * A row another review run decided since the cleanse run saw it (an export of another night that
 * listed it too, applied first) keeps that decision: the same decision here is counted as
 * `sameAsApplied` and written nowhere; a different one is a bad decision naming that run.
 */
export async function reviewApply(options: ReviewApplyOptions): Promise<ReviewApplySummary> {
  const logger = options.logger ?? createLogger({ level: 'warn' });
  const db = dbTarget(options.db, logger.redactor);
  const batchSize = options.batchSize ?? 500;
  const file = await readReviewFile(options.input);
  if (file.runId === null) {
    // An export with nothing to review: nothing to decide, which is not an error for a scheduler.
    return {
      runId: null,
      reviewOf: null,
      table: null,
      applied: 0,
      kept: 0,
      invalid: 0,
      conflicts: 0,
      conflictKeys: [],
      locked: 0,
      lockedKeys: [],
      badDecisions: 0,
      bad: [],
      skipped: 0,
      alreadyApplied: 0,
      sameAsApplied: { rows: 0, runs: [] },
      state: 'done',
      exitCode: ExitCode.OK,
    };
  }
  const client = await connect(db, 'dq-pg', { writes: true });
  let claim: pg.Client | undefined;
  let runId: string | undefined;
  /** The counts so far, for the summary of an apply that fails part way ({@link summaryOfFailedApply}). */
  let counted: ReviewApplySummary | undefined;
  // A second signal cuts the statement under way on the writing session (from the first page on).
  let endCut: (() => void) | undefined;
  const cut = (): void => void (endCut = cancelStatement(client));
  const rerun = (id: string): string => `rerun dq-pg review apply --input ${options.input} --run-id ${id} to finish`;
  try {
    const reviewOf = file.runId;
    const { run, target } = await loadReviewedRun(client, reviewOf, `${options.input}: ${REVIEW_COLUMNS.run}`, { write: true });
    const missing = [target.key.column, ...target.columns.map((c) => c.column), REVIEW_COLUMNS.decision].filter((h) => !file.headers.includes(h));
    if (missing.length > 0) {
      throw new CleanseError('review-file', `${options.input}: no column ${missing.join(', ')}; the file must keep the columns dq-pg review export wrote`);
    }
    runId = options.runId ?? newRunId();
    const reviewRows = await loadReviewRows(client, run.runId);
    // Rows decided since the run saw them, by another review run of this run or of another run of
    // the table (an export of an earlier or later night listing the same rows): not decided again.
    // The latest decision of a row is the one that stands (the Map keeps the last).
    const decidedBefore = new Map(
      (
        await client.query<{ row_key: string; run_id: string; review_of: string; decision: string | null; candidate: unknown }>(
          `SELECT * FROM (${decidedKeysSql('$1', '$2::text')}) dk ORDER BY dk.checked_at, dk.run_id`,
          [run.runId, runId],
        )
      ).rows.map((r) => [r.row_key, { runId: r.run_id, reviewOf: r.review_of, decision: r.decision, candidate: r.candidate }]),
    );
    const { decided, bad, skipped, same } = readDecisions(file.records, run, target, reviewRows, decidedBefore);

    await holdRun(client, runId);
    const opened = await openRun(
      client,
      target,
      {
        mode: run.mode,
        country: undefined,
        accept: [],
        where: undefined,
        include: undefined,
        statusColumns: run.statusColumns,
        reviewOf: run.runId,
      },
      runId,
      batchSize,
    );
    if (opened.state === 'rolled-back') throw usageError('--run-id', `review run ${runId} was rolled back; apply the file with a new --run-id`);
    await client.query(
      `WITH r AS (INSERT INTO ${STATE_SCHEMA}.ranges (run_id, range_no) VALUES ($1, 1) ON CONFLICT DO NOTHING)
       INSERT INTO ${STATE_SCHEMA}.progress (run_id, range_no) VALUES ($1, 1) ON CONFLICT DO NOTHING`,
      [runId],
    );
    await client.query(`UPDATE ${STATE_SCHEMA}.runs SET exhausted = true WHERE run_id = $1`, [runId]);
    claim = await connect(db, 'dq-pg claim');
    await claimRun(claim, runId);

    const done = new Set(
      (await client.query<{ row_key: string }>(`SELECT row_key FROM ${STATE_SCHEMA}.results WHERE run_id = $1`, [runId])).rows.map((r) => r.row_key),
    );
    const todo = decided.filter((d) => !done.has(d.key));
    const summary: ReviewApplySummary = {
      runId,
      reviewOf: run.runId,
      table: target.qualified,
      applied: 0,
      kept: 0,
      invalid: 0,
      conflicts: 0,
      conflictKeys: [],
      locked: 0,
      lockedKeys: [],
      badDecisions: bad.length,
      bad: bad.slice(0, MAX_LISTED),
      skipped,
      alreadyApplied: decided.length - todo.length,
      sameAsApplied: { rows: same.length, runs: [...new Set(same.map((d) => d.runId))].sort() },
      state: 'done',
      exitCode: ExitCode.OK,
    };
    counted = summary;
    if (todo.length > 0) {
      await client.query(`UPDATE ${STATE_SCHEMA}.runs SET state = 'running', updated_at = now() WHERE run_id = $1`, [runId]);
      await client.query(`UPDATE ${STATE_SCHEMA}.progress SET done = false WHERE run_id = $1 AND range_no = 1`, [runId]);
    }
    // Pages in key order (the key type's order: the page statement bounds each page by its first and last key).
    const sorted =
      todo.length === 0
        ? []
        : (await client.query<{ k: string }>(`SELECT k FROM unnest($1::text[]) AS k ORDER BY k::${target.key.type}`, [todo.map((d) => d.key)])).rows.map(
            (r) => r.k,
          );
    const byKey = new Map(todo.map((d) => [d.key, d]));
    // Every row decided is recorded as known under the cleanse run's scope, as a cleanse records
    // the rows it corrects: the next cleanse of the table reuses the decision (no call, no write)
    // while the row holds the values it left, so a nightly run neither overturns nor pays for it.
    const scope = knownScope(target, {
      mode: run.mode,
      country: run.country,
      accept: run.accept,
      where: undefined,
      include: run.include,
      platform: run.platform,
    });
    const store = new PageStore(client, target, undefined, client, { scope, maxAgeMs: 0, record: 'decided' });
    const worker = `${hostname()}:${process.pid}`;
    let prevKey =
      (await client.query<{ last_key: string | null }>(`SELECT last_key FROM ${STATE_SCHEMA}.progress WHERE run_id = $1 AND range_no = 1`, [runId])).rows[0]
        ?.last_key ?? null;
    const id = runId;
    // Stopped by a signal: the pages committed are kept (results rows, audit, checkpoint), the
    // rerun with the same run id applies the rest. `underWay`: what became of the page under way.
    const stopped = async (underWay: string, record: boolean): Promise<ReviewApplySummary> => {
      const reason = options.stopNow?.aborted ? options.stopNow.reason : options.signal?.reason;
      // Rows locked by another session were not written: the rerun writes them, like the rows not reached.
      const now = summary.applied + summary.kept + summary.invalid + summary.conflicts;
      const counts = `${summary.applied} given a candidate, ${summary.kept} kept, ${summary.invalid} invalid, ${summary.conflicts} conflicts`;
      const message =
        `review run ${id} stopped${reason instanceof Error ? ` ${reason.message}` : ''}: ${now} of the ${todo.length} decided rows of ${options.input} left to apply were applied (${counts})` +
        `${summary.alreadyApplied > 0 ? `, besides ${summary.alreadyApplied} applied before` : ''}; the other ${todo.length - now} are not yet${summary.locked > 0 ? ` (${summary.locked} of them locked by another session)` : ''}${underWay}: ${rerun(id)}`;
      const error = { code: 'interrupted' as const, message };
      // Recorded as stopped while the session is there (status shows it interrupted otherwise).
      if (record) await stopRun(client, id, error).catch(() => undefined);
      return { ...summary, state: 'stopped', error, exitCode: ExitCode.TEMPFAIL };
    };
    // The session holding the review run's range row keeps a second apply of the run and a
    // rollback away; it stays idle, so its end (pg_terminate_backend, a restart) shows only here.
    const gone = (e: unknown, whose: string): unknown =>
      e === undefined ? undefined : connectionLost(e, db.where, `${whose} ended; every page committed is kept: ${rerun(id)}`);
    options.stopNow?.addEventListener('abort', cut, { once: true });
    for (let start = 0; start < sorted.length; start += batchSize) {
      if (options.signal?.aborted || options.stopNow?.aborted) return await stopped('', true);
      const lost =
        gone(sessionLost(claim), `the session holding review run ${id} (its range row)`) ?? gone(sessionLost(client), `the session writing review run ${id}`);
      if (lost !== undefined) {
        await stopRun(client, id, { code: 'db-unreachable', message: (lost as Error).message }).catch(() => undefined);
        throw lost;
      }
      const rows = sorted.slice(start, start + batchSize).map((k) => byKey.get(k) as DecidedRow);
      const last = start + batchSize >= sorted.length;
      let res: Awaited<ReturnType<typeof store.commit>>;
      const lastKey = rows.at(-1)?.key ?? prevKey;
      try {
        const { page, counts } = await planReviewPage(client, target, run, rows);
        res = await store.commit(runId, worker, page, { rangeNo: 1, prevKey, lastKey, done: last, counts });
      } catch (e) {
        if (!options.stopNow?.aborted || !(wasCancelled(e) || isConnectionLoss(e))) throw e;
        endCut?.();
        return await stopped(
          wasCancelled(e)
            ? ' (the page under way was cancelled: nothing of it was written)'
            : ' (the connection was dropped during the page under way: the server rolls it back unless its COMMIT had arrived, and the rerun finds out which)',
          wasCancelled(e),
        );
      }
      if (res.taken)
        throw new CleanseError('run-busy', `review run ${runId}: another process applied part of it meanwhile; rerun with --run-id ${runId} once it ended`);
      // The statement's conflicts include the rows another session held locked: those are not changed, only not yet written.
      const conflicts = new Set(res.conflicts);
      const locked = new Set(res.locked);
      for (const d of rows) {
        if (locked.has(d.key)) {
          summary.locked += 1;
          if (summary.lockedKeys.length < MAX_LISTED) summary.lockedKeys.push(d.key);
        } else if (conflicts.has(d.key)) {
          summary.conflicts += 1;
          if (summary.conflictKeys.length < MAX_LISTED) summary.conflictKeys.push(d.key);
        } else if (d.decision.kind === 'candidate') summary.applied += 1;
        else if (d.decision.kind === 'keep') summary.kept += 1;
        else summary.invalid += 1;
      }
      prevKey = lastKey;
    }
    try {
      await finishRun(client, runId);
    } catch (e) {
      // Cut by a second signal as the last page's run was being marked done: every page is
      // written; the rerun marks it done (and the summary says so, like any stop).
      if (!options.stopNow?.aborted || !wasCancelled(e)) throw e;
      endCut?.();
      return await stopped(' (every page is written; the run was not yet marked done)', true);
    }
    // Done, but rows need a person: a bad decision cell, a row changed since the export, or a row
    // still locked by another session, which a later apply of the file writes (exit 4).
    summary.exitCode = summary.badDecisions > 0 || summary.conflicts > 0 || summary.locked > 0 ? ExitCode.MAX_FAILED : ExitCode.OK;
    return summary;
  } catch (e) {
    const failure =
      // Cut by a second signal after the last page (the run then is not marked done yet).
      runId !== undefined && options.stopNow?.aborted && (wasCancelled(e) || isConnectionLoss(e))
        ? new DqError(
            `review run ${runId} stopped${options.stopNow.reason instanceof Error ? ` ${options.stopNow.reason.message}` : ''}: every page committed is kept: ${rerun(runId)}`,
            {
              code: 'interrupted',
              retriable: true,
              scope: 'run',
              cause: e,
            },
          )
        : connectionLost(e, db.where, runId === undefined ? 'retry later' : `every page committed is kept: ${rerun(runId)}`);
    // The counts so far go with the error: the command prints them as its summary line, like a stop.
    if (counted && typeof failure === 'object' && failure !== null) {
      const code = (failure as { code?: unknown }).code;
      failedApplies.set(failure, {
        ...counted,
        state: 'stopped',
        error: { code: typeof code === 'string' ? code : 'unexpected', message: failure instanceof Error ? failure.message : String(failure) },
        exitCode: exitCodeFor(failure),
      });
    }
    throw failure;
  } finally {
    options.stopNow?.removeEventListener('abort', cut);
    endCut?.();
    await claim?.end().catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}

/** Summaries of applies that failed part way, by the error they failed with. */
const failedApplies = new WeakMap<object, ReviewApplySummary>();

/** The summary (counts so far, `state` `stopped`, the error) of an apply that failed with `e` once it had begun, if it had. */
export function summaryOfFailedApply(e: unknown): ReviewApplySummary | undefined {
  return typeof e === 'object' && e !== null ? failedApplies.get(e) : undefined;
}

/** Holds run `runId`'s range row for this session (another apply of it, or a rollback, waits for it to end). */
async function claimRun(claim: pg.Client, runId: string): Promise<void> {
  await claim.query('BEGIN');
  try {
    await claim.query(`SELECT 1 FROM ${STATE_SCHEMA}.ranges WHERE run_id = $1 AND range_no = 1 FOR UPDATE NOWAIT`, [runId]);
  } catch (e) {
    if ((e as { code?: string }).code !== '55P03') throw e;
    throw new CleanseError('run-busy', `review run ${runId}: another dq-pg review apply is working on it; retry once it ended`, { cause: e });
  }
}

/** The review rows of cleanse run `runId` by key. */
async function loadReviewRows(client: pg.Client, runId: string): Promise<Map<string, ReviewRow>> {
  const { rows } = await client.query<{ row_key: string; result_class: string | null; request_id: string | null; candidates: unknown }>(
    `SELECT row_key, result_class, request_id, candidates FROM ${STATE_SCHEMA}.results WHERE run_id = $1 AND status = 'review'`,
    [runId],
  );
  return new Map(
    rows.map((r) => [
      r.row_key,
      {
        resultClass: r.result_class,
        requestId: r.request_id,
        candidates: Array.isArray(r.candidates) ? (r.candidates as Record<string, unknown>[]) : [],
      },
    ]),
  );
}

/** A decision another review run made for a row (see `decidedKeysSql`). */
interface PriorDecision {
  runId: string;
  reviewOf: string;
  /** As that run recorded it: `keep`, `invalid` or `candidate <n>` (numbered in its own file). */
  decision: string | null;
  /** The candidate it picked. */
  candidate: unknown;
}

/**
 * The fields that make two candidates the same choice: every field the review file shows, except a
 * company hit's `searchScore` (how well it matched that night's search, which the platform may
 * score differently another night; it is not written to the row).
 */
const IDENTITY_FIELDS = {
  address: CANDIDATE_FIELDS.address,
  company: CANDIDATE_FIELDS.company.filter((f) => f.field !== 'searchScore'),
} as const;

/**
 * Whether `decision` (of this file, for a row with `review`'s candidates) is what `prior` decided:
 * the same `keep` or `invalid`, or a candidate whose fields, as the review file shows them, are
 * the prior candidate's (the numbers may differ: each run numbers its own candidates).
 */
function sameDecision(run: ReviewedRun, decision: Decision, review: ReviewRow, prior: PriorDecision): boolean {
  if (decision.kind !== 'candidate') return prior.decision === decision.kind;
  if (!prior.decision?.startsWith('candidate ') || prior.candidate === null || prior.candidate === undefined) return false;
  const chosen = review.candidates[decision.n - 1];
  return IDENTITY_FIELDS[run.mode === 'address' ? 'address' : 'company'].every((f) => candidateText(chosen, f) === candidateText(prior.candidate, f));
}

/** A decision in words, for a message: `keep`, `invalid`, or `candidate <n>` `where` and the candidate's fields. */
function describe(run: ReviewedRun, decision: string | null, candidate: unknown, where = ''): string {
  if (!decision?.startsWith('candidate ')) return decision ?? 'a decision';
  const fields = CANDIDATE_FIELDS[run.mode === 'address' ? 'address' : 'company'].map((f) => candidateText(candidate, f)).filter((t) => t !== '');
  return `${decision}${where} (${fields.join(', ')})`;
}

/** The file's rows with a decision, the bad decision cells, how many rows had none, and the rows decided the same way already. */
function readDecisions(
  records: readonly ReviewRecord[],
  run: ReviewedRun,
  target: TargetTable,
  reviewRows: ReadonlyMap<string, ReviewRow>,
  /** Rows another review run (not rolled back) decided since the run saw them, by key. */
  decidedBefore: ReadonlyMap<string, PriorDecision>,
): { decided: DecidedRow[]; bad: BadDecision[]; skipped: number; same: { key: string; runId: string }[] } {
  const decided: DecidedRow[] = [];
  const bad: BadDecision[] = [];
  const same: { key: string; runId: string }[] = [];
  const firstLine = new Map<string, number>();
  let skipped = 0;
  records.forEach(({ line, cells: record, overflow }) => {
    const cell = restoreCell(record[REVIEW_COLUMNS.decision] ?? '').trim();
    // The key as the row check names it (a spreadsheet may have changed the key column: 00123 saved as 123).
    const check = record[REVIEW_COLUMNS.rowCheck] === undefined ? undefined : restoreCell(record[REVIEW_COLUMNS.rowCheck]!);
    const key = (check === undefined ? undefined : rowCheckKey(check)) ?? restoreCell(record[target.key.column] ?? '');
    const review = reviewRows.get(key);
    const fail = (message: string): void => void bad.push({ line, key, message });
    if (cell === '' && overflow === undefined) {
      // An empty decision cell, but something written where the export left a cell empty (a
      // company row's class, a candidate cell past the row's last hit): a decision in the wrong
      // column is named, never taken as a row left for later (README, "Review").
      const misplaced = review === undefined ? undefined : misplacedCell(record, run, review);
      if (misplaced === undefined) return void (skipped += 1);
      return fail(
        `the decision cell is empty, but column ${misplaced.column} holds ${JSON.stringify(misplaced.text)} where the export wrote nothing (a decision written in the wrong column?): write the decision in column ${REVIEW_COLUMNS.decision}, or empty that cell`,
      );
    }
    if (overflow !== undefined) {
      return fail(
        `the row has ${overflow === 1 ? 'a cell' : `${overflow} cells`} in no named column (a decision written a column too far, or a note?): write the decision in column ${REVIEW_COLUMNS.decision}, and give a column of notes a name in line 1`,
      );
    }
    if (!review)
      return fail(`no row with ${target.key.column} ${JSON.stringify(key)} awaits review in run ${run.runId}; decide only rows of the exported file`);
    const earlier = firstLine.get(key);
    if (earlier !== undefined) return fail(`the row was decided already on line ${earlier}; decide each row once`);
    const count = review.candidates.length;
    const choices = `${count > 0 ? `a candidate number (${count === 1 ? '1' : `1–${count}`}), ` : ''}keep or invalid`;
    const word = cell.toLowerCase();
    let decision: Decision;
    if (word === 'keep' || word === 'invalid') decision = { kind: word };
    else if (/^[0-9]+$/.test(word)) {
      const n = Number(word);
      if (n < 1 || n > count) return fail(`"${cell}" is not a candidate of this row: it has ${count === 0 ? 'none' : count}; write ${choices}`);
      decision = { kind: 'candidate', n };
    } else return fail(`"${cell}" is not a decision; write ${choices}`);
    // Decided since the run saw it by another review run: the same decision is applied already;
    // a different one does not overturn it.
    const other = decidedBefore.get(key);
    if (other !== undefined) {
      if (!sameDecision(run, decision, review, other)) {
        const from = other.reviewOf === run.runId ? '' : ` (it applied an export of run ${other.reviewOf}, which listed the row too)`;
        const mine = decision.kind === 'candidate' ? describe(run, `candidate ${decision.n}`, review.candidates[decision.n - 1]) : decision.kind;
        return fail(
          `review run ${other.runId} decided this row already${from}: ${describe(run, other.decision, other.candidate, ' of its file')}, not ${mine}; its decision stands: roll that run back to decide it again, or leave the cell empty`,
        );
      }
      firstLine.set(key, line);
      return void same.push({ key, runId: other.runId });
    }
    firstLine.set(key, line);
    decided.push({ line, key, decision, values: target.columns.map((c) => restoreCell(record[c.column] ?? '')), rowCheck: check, review });
  });
  return { decided, bad, skipped, same };
}

/**
 * The first cell of a review file's row that the export left empty and that holds text now: the
 * class or request id the row has none of, or a field of a candidate the row does not have (past
 * its last one, or one the candidate lacks). Those cells are the platform's answer, which nobody
 * edits; text there is a decision or a note in the wrong place. The key and mapped columns are not
 * looked at: a spreadsheet may reformat them, and the row check stands for them.
 */
function misplacedCell(record: Readonly<Record<string, string>>, run: ReviewedRun, review: ReviewRow): { column: string; text: string } | undefined {
  const fields = CANDIDATE_FIELDS[run.mode === 'address' ? 'address' : 'company'];
  const exported = (column: string): string | undefined => {
    if (column === REVIEW_COLUMNS.class) return review.resultClass ?? '';
    if (column === REVIEW_COLUMNS.requestId) return review.requestId ?? '';
    const m = /^candidate_(\d+)_(.+)$/.exec(column);
    const f = m ? fields.find((x) => x.suffix === m[2]) : undefined;
    return f === undefined ? undefined : candidateText(review.candidates[Number(m![1]) - 1], f);
  };
  for (const [column, cell] of Object.entries(record)) {
    const text = restoreCell(cell).trim();
    if (text !== '' && exported(column) === '') return { column, text };
  }
  return undefined;
}

/**
 * The page statement's input for decided rows (in key order): a row is written where its values
 * change (a candidate picked) and, with status columns, every row gets its status (updated where it differs); the guard
 * holds each row to the values the file shows. A row whose table values no longer are what the
 * file shows (or that is gone) is sent as a write guarded by the file's values, which fails: the
 * statement records it as a conflict and writes nothing to it.
 */
async function planReviewPage(
  client: pg.Client,
  target: TargetTable,
  run: ReviewedRun,
  rows: readonly DecidedRow[],
): Promise<{ page: PageWrite; counts: PageCounts }> {
  const t = 'dq_t';
  const { rows: current } = await client.query<unknown[]>({
    text: `SELECT ${t}.${target.key.quoted}::text, ${[...target.columns.map((c) => `${t}.${c.quoted}`), ...target.status.map((s) => `${t}.${s.quoted}::text`)].join(', ')}
             FROM ${target.qualified} AS ${t} WHERE ${t}.${target.key.quoted} = ANY ($1::${target.key.type}[])`,
    values: [rows.map((r) => r.key)],
    rowMode: 'array',
  });
  const m = target.columns.length;
  const now = new Map(current.map((r) => [r[0] as string, { values: r.slice(1, 1 + m) as (string | null)[], status: r.slice(1 + m) as (string | null)[] }]));
  const page: PageWrite = {
    keys: [],
    write: [],
    status: [],
    resultClass: [],
    requestId: [],
    candidates: [],
    detail: [],
    error: [],
    before: target.columns.map(() => []),
    after: target.columns.map(() => []),
    statusBefore: target.status.map(() => []),
  };
  const counts: PageCounts = { rowsRead: rows.length, unchanged: 0, accepted: 0, review: 0, invalid: 0, invalidInput: 0, unavailable: 0, apiCalls: 0 };
  for (const d of rows) {
    const held = now.get(d.key);
    // The row still holds what was exported: by its row check, as a spreadsheet may have reformatted
    // the cells a person sees (leading zeros, dates); in a file without one, cell by cell (a CSV
    // cell cannot tell NULL from '': either matches an empty cell). The guard then gets the values
    // the table holds.
    const same =
      held !== undefined &&
      (d.rowCheck !== undefined
        ? rowCheck(held.values, rowCheckKey(d.rowCheck) === undefined ? undefined : d.key) === d.rowCheck
        : d.values.every((v, i) => v === (held.values[i] ?? '')));
    // A row changed since the export is a conflict: its guard gets a value the row does not hold
    // (its first column's NULL as '', any other value as NULL), so the statement writes nothing to
    // it. Never the values the file shows: they may be what the row holds now (NULLs made empty
    // text, a value someone changed as the spreadsheet reformatted it) though it is not the row decided.
    const conflict = (values: readonly (string | null)[]): (string | null)[] => values.map((v, i) => (i > 0 ? v : v === null ? '' : null));
    const before: (string | null)[] = same ? held.values : held ? conflict(held.values) : d.values;
    let after: (string | null)[] = before;
    const chosen = d.decision.kind === 'candidate' ? (d.review.candidates[d.decision.n - 1] ?? null) : null;
    if (d.decision.kind === 'candidate' && same) {
      const result = (run.mode === 'address' ? { status: 'accepted', address: chosen } : { status: 'accepted', company: chosen }) as RecordResult;
      const decided = decideRow(run.mode, { key: d.key, values: before }, target.columns, result);
      if (decided.unfit)
        throw new CleanseError(
          'value-too-long',
          `line ${d.line}, key ${d.key}: candidate ${d.decision.n} does not fit ${unfitText(decided.unfit)}; nothing of its page was written. Widen the column, then apply again with the same --run-id, or decide this row otherwise`,
        );
      // As a cleanse decides an accepted answer: a candidate the row holds already, as its columns
      // compare (a char(n) column's padding does not count), is no change, so no UPDATE and no audit.
      if (decided.outcome === 'write') after = decided.after;
    }
    const changes = after.some((v, i) => v !== before[i]);
    const write = !same || changes;
    const status = d.decision.kind === 'invalid' ? 'invalid' : 'accepted';
    if (status === 'invalid') counts.invalid += 1;
    else {
      counts.accepted += 1;
      if (!write) counts.unchanged += 1;
    }
    page.keys.push(d.key);
    page.write.push(write);
    page.status.push(status);
    page.resultClass.push(d.review.resultClass);
    page.requestId.push(d.review.requestId);
    page.candidates.push(chosen ? JSON.stringify([chosen]) : null);
    const decision = d.decision.kind === 'candidate' ? `candidate ${d.decision.n}` : d.decision.kind;
    page.detail.push(JSON.stringify({ decision, reviewOf: run.runId, line: d.line }));
    page.error.push(null);
    target.columns.forEach((_, i) => {
      (page.before[i] as (string | null)[]).push(before[i] ?? null);
      (page.after[i] as (string | null)[]).push(same && after[i] !== before[i] ? (after[i] ?? null) : null);
    });
    target.status.forEach((_, i) => (page.statusBefore?.[i] as (string | null)[]).push(held?.status[i] ?? null));
  }
  return { page, counts };
}

/** A row of a review file: its cells by column, and its row in the spreadsheet (the header is row 1). */
interface ReviewRecord {
  line: number;
  cells: Record<string, string>;
  /** Cells that are not empty in no named column (a decision written a column too far, a note). */
  overflow?: number;
}

/** A review file read: its header, its records (blank rows left out), and the cleanse run it belongs to. */
interface ReviewFile {
  headers: string[];
  records: ReviewRecord[];
  /** Null when the file has no rows (an export with nothing to review). */
  runId: string | null;
}

/**
 * Reads a review file as written by `review export` or re-saved by a spreadsheet: UTF-8 with or
 * without a byte order mark, CRLF or LF, quoted or not, `,` (or, as some spreadsheets save it,
 * `;` or tab) between cells.
 */
async function readReviewFile(path: string): Promise<ReviewFile> {
  if (!path) throw usageError('--input', 'required: the decided review file, e.g. review.csv');
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (e) {
    throw usageError('--input', `cannot read ${path} (${(e as { code?: string }).code ?? (e as Error).message})`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new CleanseError('review-file', `${path} is not UTF-8 text; save it from the spreadsheet as "CSV UTF-8"`);
  }
  const firstLine = text.slice(0, text.search(/\r?\n|$/));
  const count = (d: string): number => firstLine.split(d).length - 1;
  const delimiter = [',', ';', '\t'].reduce((best, d) => (count(d) > count(best) ? d : best), ',');
  const rows: string[][] = [];
  await new Promise<void>((resolve, reject) => {
    parseString(text, { delimiter, ignoreEmpty: false })
      .on('data', (row: string[]) => void rows.push(row))
      .on('error', (e: Error) => reject(new CleanseError('review-file', `${path} is not a CSV file dq-pg can read (after line ${rows.length}: ${e.message})`)))
      .on('end', () => resolve());
  });
  // Header cells are neutralised like every other cell of the file (a column named -x is written '-x).
  const headers = (rows[0] ?? []).map(restoreCell);
  const records: ReviewRecord[] = [];
  rows.slice(1).forEach((row, i) => {
    // A spreadsheet may leave out the empty cells at a row's end (read as empty) or add empty
    // ones, and columns without a name. A cell in none of the named columns that is not empty (a
    // decision written a column too far, a note) makes the row a bad decision (see readDecisions).
    const cells = Object.fromEntries(headers.map((h, k) => [h, row[k] ?? '']));
    const overflow = row.filter((cell, k) => (headers[k] ?? '').trim() === '' && cell.trim() !== '').length;
    // Blank rows are no review rows, but count in the line numbers, which name a row as a spreadsheet does.
    if (overflow > 0 || row.some((cell) => cell.trim() !== '')) records.push({ line: i + 2, cells, ...(overflow > 0 ? { overflow } : {}) });
  });
  if (!headers.includes(REVIEW_COLUMNS.run)) {
    throw new CleanseError('review-file', `${path} has no ${REVIEW_COLUMNS.run} column; apply a file written by dq-pg review export`);
  }
  const ids = new Set(records.map((r) => restoreCell(r.cells[REVIEW_COLUMNS.run] ?? '')).filter((id) => id !== ''));
  if (records.length === 0) return { headers, records, runId: null };
  if (ids.size !== 1) {
    throw new CleanseError(
      'review-file',
      `${path}: ${ids.size === 0 ? 'no row names a run' : `rows name ${ids.size} different runs`} in column ${REVIEW_COLUMNS.run}; apply the rows of one export, unchanged in that column`,
    );
  }
  return { headers, records, runId: [...ids][0] as string };
}
