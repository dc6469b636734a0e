/** A cell value as the sinks see it: CSV writes it as text, JSON keeps its type. */
export type CellValue = string | number | null | undefined;

// Spreadsheet formula triggers (OWASP CSV injection) besides `-`, which would mangle negative
// numbers such as longitudes; `-` alone cannot start a formula without one of these.
const FORMULA_START = /^[=+@\t\r]/;

/**
 * Formats one CSV line (terminated by `\n`). Cells holding the delimiter, a quote, CR or LF are
 * quoted with doubled quotes; cells that a spreadsheet would run as a formula are prefixed with
 * `'` (unless `neutralise` is false: for writing test inputs).
 */
export function formatCsvLine(cells: readonly CellValue[], delimiter: string, neutralise = true): string {
  let line = '';
  for (let i = 0; i < cells.length; i++) {
    if (i > 0) line += delimiter;
    line += formatCell(cells[i], delimiter, neutralise);
  }
  return line + '\n';
}

/** One CSV cell, neutralised and quoted as needed. */
export function formatCell(value: CellValue, delimiter: string, neutralise = true): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'number' ? String(value) : value;
  if (neutralise && FORMULA_START.test(text)) text = `'${text}`;
  if (text.includes('"') || text.includes(delimiter) || text.includes('\n') || text.includes('\r')) {
    return `"${text.replaceAll('"', '""')}"`;
  }
  return text;
}
