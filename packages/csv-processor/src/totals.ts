import { zeroByClass, zeroByStatus } from '@dq/core/engine';
import type { RecordResult, RunReport } from '@dq/core';

/**
 * Counts of a whole file, added up over the runs that a resume joins together: the engine's
 * {@link RunReport} counts (summed over the runs), with the file's rows and rejects.
 */
export interface RunTotals extends Pick<
  RunReport,
  | 'byStatus'
  | 'byClass'
  | 'apiCalls'
  | 'callsSavedByDedup'
  | 'callsSavedByCache'
  | 'callsSavedByStore'
  | 'storeLookups'
  | 'storeHits'
  | 'retries'
  | 'durationMs'
> {
  /** Output rows (= input rows that could be parsed). */
  rows: number;
  /** Input records sent to the rejects file. */
  rejects: number;
  /** Number of runs (1 + resumes). */
  runs: number;
}

/** Totals with every count at zero. */
export function emptyTotals(): RunTotals {
  return {
    rows: 0,
    rejects: 0,
    byStatus: zeroByStatus(),
    byClass: zeroByClass(),
    apiCalls: 0,
    callsSavedByDedup: 0,
    callsSavedByCache: 0,
    callsSavedByStore: 0,
    storeLookups: 0,
    storeHits: 0,
    retries: 0,
    durationMs: 0,
    runs: 0,
  };
}

/** Adds one written result to `totals` (in place). */
export function countResult(totals: RunTotals, result: RecordResult): void {
  totals.rows += 1;
  // `?? 0`: totals of a checkpoint written before a status existed lack its count.
  totals.byStatus[result.status] = (totals.byStatus[result.status] ?? 0) + 1;
  if (result.resultClass) totals.byClass[result.resultClass] += 1;
}

/** `base` (earlier runs) plus this run's engine counters and duration. */
export function withEngineReport(base: RunTotals, counted: RunTotals, report: RunReport | undefined, durationMs: number): RunTotals {
  return {
    ...counted,
    apiCalls: base.apiCalls + (report?.apiCalls ?? 0),
    callsSavedByDedup: base.callsSavedByDedup + (report?.callsSavedByDedup ?? 0),
    callsSavedByCache: base.callsSavedByCache + (report?.callsSavedByCache ?? 0),
    // `?? 0`: totals of a checkpoint written before the store existed lack these counts.
    callsSavedByStore: (base.callsSavedByStore ?? 0) + (report?.callsSavedByStore ?? 0),
    storeLookups: (base.storeLookups ?? 0) + (report?.storeLookups ?? 0),
    storeHits: (base.storeHits ?? 0) + (report?.storeHits ?? 0),
    retries: base.retries + (report?.retries ?? 0),
    durationMs: base.durationMs + durationMs,
    runs: base.runs + 1,
  };
}

/** Share of failed input: rejects plus records that stayed `unavailable`, over all input records. */
export function failedShare(totals: RunTotals): number {
  const input = totals.rows + totals.rejects;
  return input === 0 ? 0 : (totals.rejects + totals.byStatus.unavailable) / input;
}
