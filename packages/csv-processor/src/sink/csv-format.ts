/** CSV cells and lines as every connector writes them (quoting, --spreadsheet-safe neutralising): @dq/core's. */
export { formatCell, formatCsvLine, type CellValue } from '@dq/core/review';
