import { writeToBuffer } from '@fast-csv/format';
import { reviewHeader, reviewRow, rowCheck } from '@dq/core/review';
import { CsvError } from '../errors.js';
import type { InputFormat } from '../source/types.js';
import { openCleanedFile } from './cleaned-file.js';
import { holdFinishedOutput, writeFileAtomically } from './files.js';
import { cleanedLayout, LINE_COLUMN, parseCandidates } from './layout.js';

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
  /** The cleaned file's format; default from its extension. */
  readonly format?: InputFormat;
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
 * row number, every input column as it is in the cleaned file, class, request id, the row check of
 * its input values (what apply compares the row with), each candidate
 * as a numbered set of fields, and an empty `decision` column. Values a spreadsheet would run as a
 * formula (and values starting with `'`) get a leading `'`, which `review apply` takes off again.
 */
export async function exportReview(options: ReviewExportOptions): Promise<ReviewExportSummary> {
  const classes = new Set(options.classes ?? ['D', 'E']);
  const lock = await holdFinishedOutput(options.input);
  try {
    return await exportFrom(options, classes);
  } finally {
    await lock.release();
  }
}

async function exportFrom(options: ReviewExportOptions, classes: ReadonlySet<string>): Promise<ReviewExportSummary> {
  const file = await openCleanedFile(options.input, { delimiter: options.delimiter, format: options.format });
  const rows: { row: number; inputs: Map<string, string>; resultClass: string; requestId: string; candidates: unknown[] }[] = [];
  const inputNames = new Map<string, true>();
  const byClass: Record<string, number> = {};
  let widest = 0;
  let layout;
  try {
    layout = cleanedLayout(file.names, options.input);
    for await (const record of file.records) {
      const view = file.view(record, layout.resultNames);
      if (typeof view === 'string') {
        throw new CsvError(
          'input-unreadable',
          `row ${record.row} (line ${record.line}, byte offset ${record.previousEnd}) of ${options.input} cannot be read: ${view}; was the file edited? Fix that row or run dq-csv validate again`,
        );
      }
      if (view.text('dq_status') !== 'review') continue;
      const resultClass = view.text('dq_result_class');
      if (layout.mode === 'address' && !classes.has(resultClass)) continue;
      const candidates = parseCandidates(view.text(layout.candidates));
      if (typeof candidates === 'string') {
        throw new CsvError(
          'input-unreadable',
          `row ${record.row} (line ${record.line}) of ${options.input} is a review row but ${candidates}; was the file edited? Run dq-csv validate again`,
        );
      }
      widest = Math.max(widest, candidates.length);
      byClass[resultClass || '-'] = (byClass[resultClass || '-'] ?? 0) + 1;
      const inputs = new Map<string, string>();
      for (const name of view.inputNames()) {
        inputNames.set(name, true);
        inputs.set(name, view.text(name));
      }
      rows.push({ row: record.row, inputs, resultClass, requestId: view.text('dq_request_id'), candidates });
    }
  } finally {
    file.close();
  }
  // CSV: the header's input columns, also when no row is exported; JSON: every key seen, in order.
  const names = file.format === 'csv' ? file.names.slice(0, file.names.indexOf('dq_status')) : [...inputNames.keys()];
  const { fields } = layout;
  const header = reviewHeader([LINE_COLUMN, ...names], widest, fields);
  const lines = rows.map(({ row, inputs, ...rest }) => {
    // As review apply reads the row back (a missing JSON key is an empty value).
    const values = names.map((name) => inputs.get(name) ?? '');
    return reviewRow({ leading: [String(row), ...values], rowCheck: rowCheck(values), ...rest }, widest, fields);
  });
  // RFC 4180: CRLF line ends, quotes only where needed; a BOM so spreadsheets read it as UTF-8.
  const bytes = await writeToBuffer([header, ...lines], { writeBOM: true, rowDelimiter: '\r\n', includeEndRowDelimiter: true });
  await writeFileAtomically(options.output, bytes);
  return { event: 'review-export', mode: layout.mode, rows: rows.length, byClass, candidateColumns: widest, output: options.output };
}
