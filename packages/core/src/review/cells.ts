/**
 * Cells of CSV files people open in a spreadsheet: quoting, and the neutralising of cells a
 * spreadsheet would run as a formula. One rule, used by every connector's output and review file.
 */

/**
 * A cell starting with `=`, `+`, `-`, `@`, tab or CR is read as a formula by a spreadsheet (the
 * OWASP CSV-injection list: `-2+3+cmd|...` is a formula as much as `=...` is), or loses its first
 * character.
 */
export const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * The cell text of `value` for a file people open in a spreadsheet: a leading `'` before a value
 * starting with `=`, `+`, `-`, `@`, tab or CR, and before one already starting with `'`, so that
 * {@link restoreCell} gives back every value exactly.
 */
export function neutraliseCell(value: string): string {
  return FORMULA_START.test(value) || value.startsWith("'") ? `'${value}` : value;
}

/** The value a cell written by {@link neutraliseCell} stands for: one leading `'` removed, if there is one. */
export function restoreCell(cell: string): string {
  return cell.startsWith("'") ? cell.slice(1) : cell;
}

/** A value as a CSV cell holds it: text as it is, numbers as JavaScript writes them, null and undefined empty. */
export type CellValue = string | number | null | undefined;

/**
 * One CSV cell: quoted (quotes doubled) when it holds the delimiter, a quote, CR or LF. With
 * `neutralise`, text is passed through {@link neutraliseCell}; numbers are left alone, they cannot
 * hold a formula (a negative longitude stays a number).
 */
export function formatCell(value: CellValue, delimiter: string, neutralise = false): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'number' ? String(value) : value;
  if (neutralise && typeof value === 'string') text = neutraliseCell(text);
  if (text.includes('"') || text.includes(delimiter) || text.includes('\n') || text.includes('\r')) {
    return `"${text.replaceAll('"', '""')}"`;
  }
  return text;
}

/** One CSV line of `cells` (see {@link formatCell}), terminated by `\n`. */
export function formatCsvLine(cells: readonly CellValue[], delimiter: string, neutralise = false): string {
  let line = '';
  for (let i = 0; i < cells.length; i++) {
    if (i > 0) line += delimiter;
    line += formatCell(cells[i], delimiter, neutralise);
  }
  return line + '\n';
}
