/** CSV cells and lines as every connector writes them (quoting, --spreadsheet-safe neutralising): @dq/core's. */
import { formatCsvLine } from '@dq/core/review';

export { formatCell, formatCsvLine, type CellValue } from '@dq/core/review';

/**
 * The output's header line. A first name that starts with U+FEFF (an input with a second byte
 * order mark after its first: the reader drops one, the other is part of the name) is quoted:
 * written bare at the start of the file, it would be read back as the file's byte order mark and
 * the name would lose it.
 */
export function formatHeaderLine(names: readonly string[], delimiter: string, neutralise = false): string {
  const line = formatCsvLine(names, delimiter, neutralise);
  if (!line.startsWith('\uFEFF')) return line;
  // Not quoted, so the cell holds no quote, delimiter or line break: it ends at the first delimiter.
  const end = names.length > 1 ? line.indexOf(delimiter) : line.length - 1;
  return `"${line.slice(0, end)}"${line.slice(end)}`;
}
