import type { AddressCandidate, CompanyRecord, EngineRecord, Mode, RecordResult } from '@dq/core';
import type { MappedColumn } from './preflight.js';

/** One row as read: its key as text and the mapped columns' values in mapping order. */
export interface SourceRow {
  key: string;
  values: (string | null)[];
  /** The status columns' values as text (`--status-columns`, in their order); absent without. */
  status?: (string | null)[];
  /**
   * The answer a cleanse run got for this row when it still holds exactly the values that run
   * wrote to it, or the decision a review run recorded for the values it left in it (see
   * {@link KnownRows} in page-store.ts); absent otherwise.
   */
  known?: KnownAnswer;
}

/** A row's answer as the results table keeps it: reused, with no call and no write. */
export interface KnownAnswer {
  status: string;
  resultClass: string | null;
  requestId: string | null;
  /** When the platform gave the answer (ISO time). */
  checkedAt: string;
  /** JSON texts, as stored. */
  candidates: string | null;
  detail: string | null;
}

/** What a page does with one row. */
export type RowOutcome = 'write' | 'unchanged' | 'kept';

/** The decision for one row: its new values (same order as the mapping) and what to store about it. */
export interface RowDecision {
  outcome: RowOutcome;
  after: (string | null)[];
  /** Corrections the row's columns are too short for: the row is `kept` as it is, not written. */
  unfit?: UnfitValue[];
}

/** A corrected value longer than its column's declared length (`varchar(n)`, `char(n)`). */
export interface UnfitValue {
  column: string;
  type: string;
  /** The corrected value's length in characters (trailing spaces not counted, as PostgreSQL drops them). */
  length: number;
  maxLength: number;
  /** What `length` and `maxLength` count: characters, or bytes for a `name` column. */
  unit?: 'bytes';
}

/**
 * The length PostgreSQL checks a value against `varchar(n)`/`char(n)` with: characters (code
 * points), trailing spaces beyond `n` being dropped rather than refused.
 */
function storedLength(value: string): number {
  return [...value.replace(/ +$/u, '')].length;
}

/** The engine record of a row: request field → column value (NULL stays absent). */
export function toRecord(row: SourceRow, columns: readonly MappedColumn[]): EngineRecord {
  const record: Record<string, string | null> = {};
  columns.forEach((c, i) => (record[c.field] = row.values[i] ?? null));
  return record;
}

const join = (...parts: (string | undefined)[]): string | undefined => {
  const present = parts.filter((p): p is string => p !== undefined && p.trim() !== '');
  return present.length === 0 ? undefined : present.join(' ');
};

function addressValue(field: string, c: AddressCandidate): string | undefined {
  switch (field) {
    case 'addressLine':
      return join(c.street, c.houseNumber);
    case 'localityLine':
      return join(c.postalCode, c.locality);
    default:
      return (c as Record<string, unknown>)[field] as string | undefined;
  }
}

function companyValue(field: string, c: CompanyRecord): string | undefined {
  const v = (c as Record<string, unknown>)[field];
  return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
}

/** The corrected value of a request field from an accepted result, or undefined when it has none. */
function correctedValue(mode: Mode, field: string, result: RecordResult): string | undefined {
  if (mode === 'address') return result.address ? addressValue(field, result.address) : undefined;
  if (mode === 'company' || mode === 'tr') return result.company ? companyValue(field, result.company) : undefined;
  // vat: the check says valid or not; there is nothing to correct.
  return undefined;
}

/**
 * Decides a row (docs/architecture.md "Result policy"): only `accepted` results overwrite, field by field
 * from the best candidate; a field the result has no value for keeps its value, and an empty value
 * never replaces a NULL. A row whose values would not change is `unchanged` and is not written.
 */
export function decideRow(mode: Mode, row: SourceRow, columns: readonly MappedColumn[], result: RecordResult): RowDecision {
  if (result.status !== 'accepted') return { outcome: 'kept', after: row.values };
  const after = columns.map((c, i) => {
    const before = row.values[i] ?? null;
    const corrected = correctedValue(mode, c.field, result);
    if (corrected === undefined || (corrected === '' && before === null)) return before;
    return corrected;
  });
  const changed = after.some((v, i) => !sameValue(columns[i], v, row.values[i] ?? null));
  if (!changed) return { outcome: 'unchanged', after };
  // A correction the column is too short for would fail the page's statement: the row keeps its
  // values (all of them, never half a correction) and says why.
  const unfit: UnfitValue[] = [];
  columns.forEach((c, i) => {
    const v = after[i];
    if (v === null || v === undefined || v === (row.values[i] ?? null)) return;
    if (c.maxLength !== undefined) {
      const length = storedLength(v);
      if (length > c.maxLength) unfit.push({ column: c.column, type: c.type, length, maxLength: c.maxLength });
    }
    // A `name` column cuts a longer value without an error: the correction would be stored cut off.
    if (c.maxBytes !== undefined) {
      const length = Buffer.byteLength(v, 'utf8');
      if (length > c.maxBytes) unfit.push({ column: c.column, type: c.type, length, maxLength: c.maxBytes, unit: 'bytes' });
    }
  });
  if (unfit.length > 0) return { outcome: 'kept', after: row.values, unfit };
  return { outcome: 'write', after };
}

/**
 * Whether `a` and `b` are the same value of `column` as the column compares them: a `char(n)`
 * column pads what it stores with spaces and ignores trailing spaces when comparing, so `'2700 '`
 * read is the answer `'2700'` (writing it would store `'2700 '` again, on every run).
 */
function sameValue(column: MappedColumn | undefined, a: string | null, b: string | null): boolean {
  if (a === b) return true;
  if (a === null || b === null || column?.padded !== true) return false;
  return a.replace(TRAILING_SPACES, '') === b.replace(TRAILING_SPACES, '');
}

const TRAILING_SPACES = / +$/u;

/** Candidates kept for review (D: the suggestion, E: every candidate with `houseNumberChoice`, company: every hit). */
export function reviewCandidates(result: RecordResult): unknown[] | null {
  if (result.companies) return result.companies;
  if (result.resultClass === 'E' && result.candidates) return result.candidates;
  if (result.resultClass === 'D' && result.address) return [result.address];
  return null;
}

/** Mode-specific findings besides candidates: hits and best company, or the VAT code. */
export function resultDetail(result: RecordResult): Record<string, unknown> | null {
  if (result.vatCode !== undefined) return { vatCode: result.vatCode };
  if (result.hits !== undefined) return { hits: result.hits, ...(result.company ? { company: result.company } : {}) };
  return null;
}
