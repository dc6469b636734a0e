import type { Mode, RecordResult } from '@dq/core';
import type { PageCounts, PageWrite } from './page-store.js';
import type { MappedColumn } from './preflight.js';
import { decideRow, reviewCandidates, resultDetail } from './row-values.js';
import type { RowDecision, SourceRow } from './row-values.js';

/** A page with its engine results turned into what to write and what to count. */
export interface PagePlan {
  write: PageWrite;
  decisions: RowDecision[];
  counts: PageCounts;
  /** Rows whose corrected values differ from the stored ones. */
  changes: number;
}

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

/**
 * Builds the page write from rows and their results (same order). `apiCalls` is what the engine
 * spent on this page.
 */
export function planPage(
  mode: Mode,
  columns: readonly MappedColumn[],
  rows: readonly SourceRow[],
  results: readonly RecordResult[],
  apiCalls: number,
): PagePlan {
  const write: PageWrite = {
    keys: [], write: [], status: [], resultClass: [], requestId: [], candidates: [], detail: [], error: [],
    before: columns.map(() => []), after: columns.map(() => []),
  };
  const counts: PageCounts = { rowsRead: rows.length, unchanged: 0, accepted: 0, review: 0, invalid: 0, invalidInput: 0, unavailable: 0, apiCalls };
  const decisions: RowDecision[] = [];
  let changes = 0;
  rows.forEach((row, i) => {
    const result = results[i];
    if (!result) throw new Error(`the engine returned ${results.length} results for ${rows.length} rows`);
    const decision = decideRow(mode, row, columns, result);
    decisions.push(decision);
    if (decision.outcome === 'write') changes += 1;
    if (decision.outcome === 'unchanged') counts.unchanged += 1;
    if (result.status === 'invalid-input') counts.invalidInput += 1;
    else counts[result.status] += 1;
    write.keys.push(row.key);
    write.write.push(decision.outcome === 'write');
    write.status.push(result.status);
    write.resultClass.push(result.resultClass ?? null);
    write.requestId.push(result.requestId ?? result.error?.requestId ?? null);
    write.candidates.push(json(reviewCandidates(result)));
    write.detail.push(json(resultDetail(result)));
    write.error.push(json(result.error));
    columns.forEach((_, c) => {
      write.before[c]?.push(row.values[c] ?? null);
      write.after[c]?.push(decision.outcome === 'write' ? (decision.after[c] ?? null) : null);
    });
  });
  return { write, decisions, counts, changes };
}
