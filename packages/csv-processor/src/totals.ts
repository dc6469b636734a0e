import { emptyRunReport } from '@dq/core/engine';
import type { RecordResult, RunReport } from '@dq/core';

/**
 * The engine's counters that a resume adds up over the runs (with `durationMs`); their meaning is
 * {@link RunReport}'s.
 */
const SUMMED = ['apiCalls', 'callsSavedByDedup', 'callsSavedByCache', 'callsSavedByStore', 'storeLookups', 'storeHits', 'retries', 'durationMs'] as const;

/**
 * Counts of a whole file, added up over the runs that a resume joins together: the engine's
 * {@link RunReport} counts (summed over the runs), with the file's rows and rejects.
 */
export type RunTotals = Pick<RunReport, 'byStatus' | 'byClass' | (typeof SUMMED)[number]> & {
  /** Output rows (= input rows that could be parsed). */
  rows: number;
  /** Input records sent to the rejects file. */
  rejects: number;
  /** Number of runs (1 + resumes). */
  runs: number;
};

/** Totals with every count at zero. */
export function emptyTotals(): RunTotals {
  const { byStatus, byClass, ...report } = emptyRunReport();
  return {
    rows: 0,
    rejects: 0,
    byStatus,
    byClass,
    ...(Object.fromEntries(SUMMED.map((key) => [key, report[key]])) as Pick<RunReport, (typeof SUMMED)[number]>),
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
  const totals: RunTotals = { ...counted, runs: base.runs + 1 };
  // `?? 0`: totals of a checkpoint written before a counter existed (the store's) lack it.
  for (const key of SUMMED) totals[key] = (base[key] ?? 0) + (key === 'durationMs' ? durationMs : (report?.[key] ?? 0));
  return totals;
}

/** Share of failed input: rejects plus records that stayed `unavailable`, over all input records. */
export function failedShare(totals: RunTotals): number {
  const input = totals.rows + totals.rejects;
  return input === 0 ? 0 : (totals.rejects + totals.byStatus.unavailable) / input;
}
