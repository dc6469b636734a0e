import type { Mode, RecordResult } from '@dq/core';
import type { PageCounts, PageWrite } from './page-store.js';
import type { MappedColumn } from './preflight.js';
import { decideRow, reviewCandidates, resultDetail } from './row-values.js';
import type { RowDecision, SourceRow, UnfitValue } from './row-values.js';

/** A page with its engine results turned into what to write and what to count. */
export interface PagePlan {
  write: PageWrite;
  decisions: RowDecision[];
  counts: PageCounts;
  /** Rows whose corrected values differ from the stored ones. */
  changes: number;
  /** Rows not written because a correction is longer than its column holds: key and columns. */
  unfit: { key: string; columns: string[] }[];
}

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

/**
 * Builds the page write from rows and their results (same order). `apiCalls` is what the engine
 * spent on this page. Arrays are sized up front and filled by index: this runs for every row.
 */
export function planPage(
  mode: Mode,
  columns: readonly MappedColumn[],
  rows: readonly SourceRow[],
  results: readonly RecordResult[],
  apiCalls: number,
  /** Status columns of the table (`--status-columns`): their values as read go to the audit. */
  statusColumns = 0,
): PagePlan {
  const n = rows.length;
  if (results.length !== n) throw new Error(`the engine returned ${results.length} results for ${n} rows`);
  const sized = <T>(): T[] => new Array<T>(n);
  const write: PageWrite = {
    keys: sized(),
    write: sized(),
    status: sized(),
    resultClass: sized(),
    requestId: sized(),
    checkedAt: sized(),
    candidates: sized(),
    detail: sized(),
    error: sized(),
    before: columns.map(() => sized()),
    after: columns.map(() => sized()),
    statusBefore: Array.from({ length: statusColumns }, () => sized()),
  };
  const counts: PageCounts = { rowsRead: n, unchanged: 0, accepted: 0, review: 0, invalid: 0, invalidInput: 0, unavailable: 0, apiCalls };
  const decisions = sized<RowDecision>();
  let changes = 0;
  const unfit: PagePlan['unfit'] = [];
  for (let i = 0; i < n; i += 1) {
    const row = rows[i] as SourceRow;
    const result = results[i] as RecordResult;
    // A known row holds the values its answer (or a reviewer's decision) left in it: nothing to
    // change or write; an `invalid` decision keeps the row as it is, like an invalid answer.
    const decision: RowDecision = row.known
      ? { outcome: result.status === 'accepted' ? 'unchanged' : 'kept', after: row.values }
      : decideRow(mode, row, columns, result);
    decisions[i] = decision;
    const writes = decision.outcome === 'write';
    if (writes) changes += 1;
    else if (decision.outcome === 'unchanged') counts.unchanged += 1;
    // An unsupported country is counted with invalid input: the data, not the platform, is the cause.
    if (result.status === 'invalid-input' || result.status === 'unsupported-country') counts.invalidInput += 1;
    else counts[result.status] += 1;
    write.keys[i] = row.key;
    write.write[i] = writes;
    write.status[i] = result.status;
    write.resultClass[i] = result.resultClass ?? null;
    write.requestId[i] = result.requestId ?? result.error?.requestId ?? null;
    write.checkedAt![i] = result.checkedAt ?? null;
    write.candidates[i] = row.known ? row.known.candidates : json(reviewCandidates(result));
    write.detail[i] = row.known ? row.known.detail : json(resultDetail(result));
    write.error[i] = decision.unfit ? json(unfitError(decision.unfit)) : json(result.error);
    if (decision.unfit) unfit.push({ key: row.key, columns: decision.unfit.map((u) => u.column) });
    for (let c = 0; c < columns.length; c += 1) {
      const before = row.values[c] ?? null;
      const after = decision.after[c] ?? null;
      (write.before[c] as (string | null)[])[i] = before;
      // null = keep the value read (a correction never writes NULL: see decideRow); an unchanged
      // value is not sent twice.
      (write.after[c] as (string | null)[])[i] = writes && after !== before ? after : null;
    }
    for (let s = 0; s < statusColumns; s += 1) (write.statusBefore?.[s] as (string | null)[])[i] = row.status?.[s] ?? null;
  }
  return { write, decisions, counts, changes, unfit };
}

/** Which columns a correction does not fit, and by how much. */
export function unfitText(unfit: readonly UnfitValue[]): string {
  return unfit.map((u) => `${u.column} (${u.length} ${u.unit ?? 'characters'}, the column holds ${u.maxLength}: ${u.type})`).join(', ');
}

/** The results row's error of a row whose correction does not fit its columns (`value-too-long`). */
function unfitError(unfit: readonly UnfitValue[]): { code: string; message: string } {
  return {
    code: 'value-too-long',
    message: `the correction does not fit ${unfitText(unfit)}; the row was not written. Widen the column, then run again with a new run id (the answer is reused from the result store)`,
  };
}
