/** A cell value as the sinks see it: CSV writes it as text, JSON keeps its type. */
export type CellValue = string | number | null | undefined;

// Cells a spreadsheet may run as a formula (the OWASP CSV-injection list): `-` too, since
// `-2+3+cmd|...` is a formula as much as `=...` is.
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * Formats one CSV line (terminated by `\n`). Cells holding the delimiter, a quote, CR or LF are
 * quoted with doubled quotes. With `neutralise` (--spreadsheet-safe), text cells that a
 * spreadsheet would run as a formula are prefixed with `'`; numbers (result columns such as a
 * negative longitude) are left alone, they cannot hold a formula.
 */
export function formatCsvLine(cells: readonly CellValue[], delimiter: string, neutralise = false): string {
  let line = '';
  for (let i = 0; i < cells.length; i++) {
    if (i > 0) line += delimiter;
    line += formatCell(cells[i], delimiter, neutralise);
  }
  return line + '\n';
}

/** One CSV cell, neutralised (when asked) and quoted as needed. */
export function formatCell(value: CellValue, delimiter: string, neutralise = false): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'number' ? String(value) : value;
  if (neutralise && typeof value === 'string' && FORMULA_START.test(text)) text = `'${text}`;
  if (text.includes('"') || text.includes(delimiter) || text.includes('\n') || text.includes('\r')) {
    return `"${text.replaceAll('"', '""')}"`;
  }
  return text;
}
