import { hash } from 'node:crypto';
import type { HouseNumberRange } from '../schemas/address.js';
import { neutraliseCell } from './cells.js';

/**
 * The review file people decide in a spreadsheet, as every connector writes it:
 *
 *   <the connector's leading columns>, class, request_id, row_check, candidate_1_<suffix>…, candidate_N_<suffix>…, decision
 *
 * Every cell is neutralised (see cells.ts), so the connector's `review apply` reads each cell
 * back with `restoreCell`. `row_check` ({@link rowCheck}) is what apply compares the row's values
 * with, not the leading cells a person reads: a spreadsheet that saves the file changes those
 * (postal codes and ids lose their leading zeros, dates and long numbers are reformatted). Files
 * exported before it was added have no `row_check`; apply compares their leading cells.
 */
export const REVIEW_COLUMNS = { class: 'class', requestId: 'request_id', rowCheck: 'row_check', decision: 'decision' } as const;

/**
 * The `row_check` cell of a row whose input values (as the connector reads them: a cleaned file's
 * cells, a table's columns with NULL as null) are `values`: `v1:` and 22 characters of their
 * SHA-256, base64url; with `key` (dq-pg: the row's key), then `:` and the key in base64url, which
 * {@link rowCheckKey} reads back, as a spreadsheet may have changed the key column (`00123` saved
 * as `123`). Text to a spreadsheet (it starts with a letter, holds a colon), so it comes back as
 * written.
 */
export function rowCheck(values: readonly (string | null | undefined)[], key?: string): string {
  const check = `v1:${hash('sha256', JSON.stringify(values.map((v) => v ?? null)), 'base64url').slice(0, 22)}`;
  return key === undefined ? check : `${check}:${Buffer.from(key, 'utf8').toString('base64url')}`;
}

/** The key a {@link rowCheck} made with one names; undefined for one without. */
export function rowCheckKey(check: string): string | undefined {
  const named = /^v1:[A-Za-z0-9_-]{22}:([A-Za-z0-9_-]*)$/.exec(check);
  return named ? Buffer.from(named[1]!, 'base64url').toString('utf8') : undefined;
}

/**
 * Where the fixed columns of a review file are, from its header (cells restored): the decision
 * column, the candidate columns before it, `row_check` before those when the file has one, then
 * `request_id` and `class`. Undefined when the header does not end that way.
 */
export function reviewColumnsAt(header: readonly string[]): { decision: number; rowCheck: number | undefined; requestId: number; class: number } | undefined {
  const decision = header.lastIndexOf(REVIEW_COLUMNS.decision);
  if (decision < 0) return undefined;
  let first = decision;
  while (first > 0 && /^candidate_\d+_/.test(header[first - 1]!)) first -= 1;
  const rowCheckAt = header[first - 1] === REVIEW_COLUMNS.rowCheck ? first - 1 : undefined;
  const requestId = (rowCheckAt ?? first) - 1;
  if (requestId < 1 || header[requestId] !== REVIEW_COLUMNS.requestId || header[requestId - 1] !== REVIEW_COLUMNS.class) return undefined;
  return { decision, rowCheck: rowCheckAt, requestId, class: requestId - 1 };
}

/** What the candidates of a review row are: addresses, or company hits (company and tr searches). */
export type CandidateKind = 'address' | 'company';

/** One field of a candidate as the review file shows it. */
export interface CandidateField {
  /** The candidate's property, as the platform names it (`houseNumber`). */
  readonly field: string;
  /** The column name after `candidate_<n>_`: the property in snake case (`house_number`). */
  readonly suffix: string;
}

const field = (name: string): CandidateField => ({ field: name, suffix: name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) });

/** Candidate fields in the review file's column order. */
export const CANDIDATE_FIELDS: Readonly<Record<CandidateKind, readonly CandidateField[]>> = {
  address: ['street', 'houseNumber', 'postalCode', 'locality', 'subLocality', 'country', 'addressType', 'houseNumberChoice'].map(field),
  company: ['id', 'company', 'street', 'zip', 'city', 'trCourt', 'trType', 'trNo', 'trStatus', 'searchScore'].map(field),
};

/** `candidate_<n>_<suffix>` for candidates 1 to `count`, in the review file's order. */
export function candidateColumns(count: number, fields: readonly CandidateField[]): string[] {
  const names: string[] = [];
  for (let n = 1; n <= count; n++) for (const f of fields) names.push(`candidate_${n}_${f.suffix}`);
  return names;
}

/**
 * The text of one field of a candidate: empty when missing, house-number ranges as
 * `2-10 even | 1-9 odd`, numbers as written, other non-text values as JSON.
 */
export function candidateText(candidate: unknown, f: CandidateField): string {
  const value = typeof candidate === 'object' && candidate !== null ? (candidate as Record<string, unknown>)[f.field] : undefined;
  if (value === undefined || value === null) return '';
  if (f.field === 'houseNumberChoice' && Array.isArray(value)) {
    return (value as HouseNumberRange[]).map((r) => `${r.from}-${r.to} ${r.step}`).join(' | ');
  }
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : JSON.stringify(value);
}

/** The review file's header: the connector's leading columns, then the fixed and candidate columns, neutralised. */
export function reviewHeader(leading: readonly string[], candidates: number, fields: readonly CandidateField[]): string[] {
  return [
    ...leading,
    REVIEW_COLUMNS.class,
    REVIEW_COLUMNS.requestId,
    REVIEW_COLUMNS.rowCheck,
    ...candidateColumns(candidates, fields),
    REVIEW_COLUMNS.decision,
  ].map(neutraliseCell);
}

/** One row awaiting a decision, as {@link reviewRow} writes it. */
export interface ReviewRowCells {
  /** The connector's leading cells (null and undefined are written empty). */
  readonly leading: readonly (string | null | undefined)[];
  readonly resultClass: string | null | undefined;
  readonly requestId: string | null | undefined;
  /** The row's {@link rowCheck}. */
  readonly rowCheck: string;
  /** The stored candidates, in the order the decision numbers them (1 = the first). */
  readonly candidates: readonly unknown[];
}

/**
 * A row of the review file under {@link reviewHeader}: every candidate's fields (empty past the
 * row's last candidate, up to `width` candidates), an empty decision, every cell neutralised.
 */
export function reviewRow(row: ReviewRowCells, width: number, fields: readonly CandidateField[]): string[] {
  const cells = [...row.leading, row.resultClass, row.requestId, row.rowCheck].map((v) => v ?? '');
  for (let n = 0; n < width; n++) for (const f of fields) cells.push(candidateText(row.candidates[n], f));
  cells.push('');
  return cells.map(neutraliseCell);
}
