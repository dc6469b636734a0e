import type { Mode } from '@dq/core';

/**
 * Spreadsheet-safe cells. A cell starting with `=`, `+`, `-`, `@`, tab or CR would be read as a
 * formula (or lose its first character) when the file is opened in a spreadsheet: it gets a leading
 * `'`. So that this can be undone exactly, a cell that already starts with `'` gets one too; reading
 * a cell back removes one leading `'` whenever there is one.
 */
const RISKY = /^[=+\-@\t\r']/;

/** The cell text of `value` for a file people open in a spreadsheet (NULL and '' are both empty). */
export function neutralise(value: string | null | undefined): string {
  if (value === null || value === undefined) return '';
  return RISKY.test(value) ? `'${value}` : value;
}

/** The value a cell written by {@link neutralise} stood for (empty stays empty). */
export function restore(cell: string): string {
  return cell.startsWith("'") ? cell.slice(1) : cell;
}

/** Fields of a candidate, in the export's column order: request-field-like name → how to read it. */
export const CANDIDATE_FIELDS: Record<'address' | 'company', readonly string[]> = {
  address: ['street', 'houseNumber', 'postalCode', 'locality', 'subLocality', 'country', 'houseNumberChoice'],
  company: ['id', 'company', 'street', 'zip', 'city', 'trCourt', 'trType', 'trNo', 'trStatus', 'searchScore'],
};

/** The candidate fields of a mode (tr searches return company hits). */
export function candidateFields(mode: Mode): readonly string[] {
  return mode === 'address' ? CANDIDATE_FIELDS.address : CANDIDATE_FIELDS.company;
}

/** `houseNumber` → `house_number`. */
export function snake(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** The text of one field of a stored candidate (house number ranges as `2-10 even`). */
export function candidateText(candidate: Record<string, unknown>, field: string): string | null {
  const v = candidate[field];
  if (v === undefined || v === null) return null;
  if (field === 'houseNumberChoice' && Array.isArray(v)) {
    return v.map((r: { from?: unknown; to?: unknown; step?: unknown }) => `${String(r.from)}-${String(r.to)} ${String(r.step)}`).join('; ');
  }
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}
