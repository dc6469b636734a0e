import { writeToBuffer } from '@fast-csv/format';
import { CsvError } from '../errors.js';
import { openCleanedFile } from './cleaned-file.js';
import { writeFileAtomically } from './files.js';
import { CLASS_COLUMN, cleanedLayout, DECISION_COLUMN, LINE_COLUMN, neutralise, parseCandidates, REQUEST_ID_COLUMN } from './layout.js';

/** Options of {@link exportReview}. */
export interface ReviewExportOptions {
  /** A finished `dq-csv validate` output (CSV). */
  readonly input: string;
  /** The review file to write (CSV, UTF-8 with BOM, CRLF). */
  readonly output: string;
  /** Result classes to export (address mode); default D and E. Company review rows have no class and are always exported. */
  readonly classes?: readonly string[];
  /** The cleaned file's delimiter; default: read from its header. */
  readonly delimiter?: string;
}

/** What an export wrote. */
export interface ReviewExportSummary {
  readonly event: 'review-export';
  readonly mode: 'address' | 'company';
  /** Rows written to the review file. */
  readonly rows: number;
  /** Review rows by class (address mode; company rows count under `-`). */
  readonly byClass: Record<string, number>;
  /** Candidate sets per row in the file (the widest row's count). */
  readonly candidateColumns: number;
  readonly output: string;
}

/**
 * Writes one row per record awaiting a decision (status `review`, class in `classes`): its data
 * row number, every input column as it is in the cleaned file, class, request id, each candidate
 * as a numbered set of fields, and an empty `decision` column. Values a spreadsheet would run as a
 * formula (and values starting with `'`) get a leading `'`, which `review apply` takes off again.
 */
export async function exportReview(options: ReviewExportOptions): Promise<ReviewExportSummary> {
  const classes = new Set(options.classes ?? ['D', 'E']);
  const file = await openCleanedFile(options.input, options.delimiter);
  const rows: string[][] = [];
  const byClass: Record<string, number> = {};
  let widest = 0;
  let layout;
  try {
    layout = cleanedLayout(file.header, options.input);
    for await (const record of file.records) {
      const cells = file.cells(record);
      if (typeof cells === 'string') {
        throw new CsvError('input-unreadable', `row ${record.row} (line ${record.line}, byte offset ${record.previousEnd}) of ${options.input} cannot be read: ${cells}; was the file edited? Fix that row or run dq-csv validate again`);
      }
      if (cells[layout.status] !== 'review') continue;
      const resultClass = layout.resultClass >= 0 ? cells[layout.resultClass]! : '';
      if (layout.mode === 'address' && !classes.has(resultClass)) continue;
      const candidates = parseCandidates(cells[layout.candidates]);
      if (typeof candidates === 'string') {
        throw new CsvError('input-unreadable', `row ${record.row} (line ${record.line}) of ${options.input} is a review row but ${candidates}; was the file edited? Run dq-csv validate again`);
      }
      widest = Math.max(widest, candidates.length);
      byClass[resultClass || '-'] = (byClass[resultClass || '-'] ?? 0) + 1;
      rows.push([
        String(record.row),
        ...cells.slice(0, layout.inputColumns),
        resultClass,
        cells[layout.requestId] ?? '',
        ...candidates.flatMap((c) => layout!.candidateCells(c)),
      ]);
    }
  } finally {
    file.close();
  }
  const candidateHeader: string[] = [];
  for (let n = 1; n <= widest; n++) for (const suffix of layout.fieldSuffixes) candidateHeader.push(`candidate_${n}_${suffix}`);
  const header = [LINE_COLUMN, ...file.header.slice(0, layout.inputColumns), CLASS_COLUMN, REQUEST_ID_COLUMN, ...candidateHeader, DECISION_COLUMN];
  const width = header.length;
  const padded = rows.map((row) => {
    const out = row.map(neutralise);
    while (out.length < width - 1) out.push('');
    out.push('');
    return out;
  });
  // RFC 4180: CRLF line ends, quotes only where needed; a BOM so spreadsheets read it as UTF-8.
  const bytes = await writeToBuffer([header.map(neutralise), ...padded], { writeBOM: true, rowDelimiter: '\r\n', includeEndRowDelimiter: true });
  await writeFileAtomically(options.output, bytes);
  return { event: 'review-export', mode: layout.mode, rows: rows.length, byClass, candidateColumns: widest, output: options.output };
}
