import type { Engine, RecordResult, RecordStatus, ResultClass, RunReport } from '@dq/core';
import type { MappedColumn } from './preflight.js';
import { toRecord } from './row-values.js';
import type { KnownAnswer, SourceRow } from './row-values.js';

/** Rows of a process answered from what an earlier run wrote to them ({@link SourceRow.known}). */
export interface ReusedTally {
  rows: number;
  /** `accepted`, or `invalid` for a row a reviewer marked invalid. */
  byStatus: Partial<Record<RecordStatus, number>>;
  byClass: Partial<Record<ResultClass, number>>;
}

export const emptyTally = (): ReusedTally => ({ rows: 0, byStatus: {}, byClass: {} });

/** A known row's answer as the engine would have given it from the result store. */
export function knownResult(known: KnownAnswer): RecordResult {
  return {
    status: known.status as RecordStatus,
    ...(known.resultClass ? { resultClass: known.resultClass as ResultClass } : {}),
    ...(known.requestId ? { requestId: known.requestId } : {}),
    checkedAt: known.checkedAt,
    source: 'store',
  };
}

/**
 * The results of a page's rows, in order: a known row's answer is reused (no call), the others go
 * to the engine (which may answer them from the result store by their values, or call);
 * `signal` aborts the engine's work on them (its calls in flight are dropped).
 */
export async function validateRows(
  engine: Engine,
  rows: readonly SourceRow[],
  columns: readonly MappedColumn[],
  tally: ReusedTally,
  signal?: AbortSignal,
): Promise<RecordResult[]> {
  const asked: SourceRow[] = [];
  for (const row of rows) if (row.known === undefined) asked.push(row);
  const answers =
    asked.length === 0
      ? []
      : await engine.process(
          asked.map((r) => toRecord(r, columns)),
          signal ? { signal } : undefined,
        );
  if (asked.length === rows.length) return answers;
  let next = 0;
  return rows.map((row) => {
    if (row.known === undefined) return answers[next++] as RecordResult;
    const result = knownResult(row.known);
    tally.rows += 1;
    tally.byStatus[result.status] = (tally.byStatus[result.status] ?? 0) + 1;
    if (result.resultClass) tally.byClass[result.resultClass] = (tally.byClass[result.resultClass] ?? 0) + 1;
    return result;
  });
}

/**
 * The engine's run report with the reused rows counted in: as records (by status and class) and as
 * answers from the store (a store lookup that hit, a call saved), so the summary, the run report
 * and the exit code (`--max-failed` shares) cover every row of the run.
 */
export function withReused(report: RunReport, tally: ReusedTally): RunReport {
  if (tally.rows === 0) return report;
  const byClass = { ...report.byClass };
  for (const [c, n] of Object.entries(tally.byClass)) byClass[c as ResultClass] += n;
  const byStatus = { ...report.byStatus };
  for (const [st, n] of Object.entries(tally.byStatus)) byStatus[st as RecordStatus] += n;
  const storeLookups = report.storeLookups + tally.rows;
  const storeHits = report.storeHits + tally.rows;
  return {
    ...report,
    records: report.records + tally.rows,
    byStatus,
    byClass,
    callsSavedByStore: report.callsSavedByStore + tally.rows,
    storeLookups,
    storeHits,
    storeHitRate: Number((storeHits / storeLookups).toFixed(4)),
  };
}
