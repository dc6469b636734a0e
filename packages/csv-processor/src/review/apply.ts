import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { ExitCode } from '@dq/core';
import { FORMULA_START, neutraliseCell, restoreCell, REVIEW_COLUMNS, reviewColumnsAt, rowCheck } from '@dq/core/review';
import { CsvError } from '../errors.js';
import { fieldSplitter } from '../source/csv-fields.js';
import { openSource } from '../source/index.js';
import type { InputEncoding, InputFormat } from '../source/types.js';
import { openCleanedFile, type CleanedFile, type CleanedRecord } from './cleaned-file.js';
import { holdFinishedOutput, refuseSameFiles, writeAtomically } from './files.js';
import type { CellValue } from '../sink/csv-format.js';
import { NUMBER_COLUMNS } from '../sink/result-columns.js';
import { cleanedLayout, LINE_COLUMN, parseCandidates, type CleanedLayout } from './layout.js';

/** Options of {@link applyReview}. */
export interface ReviewApplyOptions {
  /** The review file with its `decision` column filled in. */
  readonly input: string;
  /** The cleaned file the review file was exported from. */
  readonly output: string;
  /** The new file: the cleaned file with the decisions applied. */
  readonly to: string;
  /** The cleaned file's delimiter; default: read from its header. */
  readonly delimiter?: string;
  /** The cleaned file's format; default from its extension. */
  readonly format?: InputFormat;
  /**
   * The cleaned file was written with `--spreadsheet-safe` (CSV): the cells apply writes are
   * neutralised like the rest of the file. A file that contradicts it (either way) is refused.
   */
  readonly spreadsheetSafe?: boolean;
  /**
   * The review file's encoding: UTF-8 as exported (default), or what a spreadsheet saved it in
   * (its plain "CSV" format is Windows-1252).
   */
  readonly encoding?: InputEncoding;
}

/** A decision that was not applied, and why. */
export interface SkippedDecision {
  /** Line of the review file (its header is line 1). */
  readonly reviewLine: number;
  /** Data row of the cleaned file it is for, when the review file says. */
  readonly row?: number;
  readonly decision: string;
  readonly reason: string;
}

/** What `review apply` did. */
export interface ReviewApplySummary {
  readonly event: 'review-apply';
  /** 0 every decision applied; 4 some decision was bad or in conflict (the rest is applied). */
  readonly exitCode: ExitCode;
  /** Rows given one of their candidates (status `accepted`). */
  readonly applied: number;
  /** Rows kept with their current values (status `kept`). */
  readonly kept: number;
  /** Rows marked invalid. */
  readonly invalid: number;
  /** Rows of the cleaned file that changed since the export: left as they are. */
  readonly conflicts: number;
  /** Decision cells that are not a decision (or not one this row can take): skipped. */
  readonly bad: number;
  /** Review rows without a decision. */
  readonly undecided: number;
  readonly conflictRows: readonly SkippedDecision[];
  readonly badDecisions: readonly SkippedDecision[];
  readonly to: string;
}

type Decision = { kind: 'candidate'; n: number } | { kind: 'keep' } | { kind: 'invalid' };

interface Pending {
  readonly reviewLine: number;
  readonly row: number;
  readonly text: string;
  readonly decision: Decision;
  /** The input cells as the review file shows them (a spreadsheet may have changed them). */
  readonly current: readonly string[];
  readonly requestId: string;
  /** The row check of the input values at the export; undefined in a file exported without one. */
  readonly rowCheck: string | undefined;
  /** Every cell of the line, restored: checked for a decision written in another column. */
  readonly cells: readonly string[];
}

/** A line of the review file without a decision, for its row: left for later, unless a cell shows a decision written elsewhere. */
interface Blank {
  readonly reviewLine: number;
  readonly row: number;
  readonly cells: readonly string[];
}

/** The review file's columns as {@link readDecisions} found them. */
interface ReviewColumns {
  /** Header cells, restored. */
  readonly header: readonly string[];
  readonly class: number;
  readonly requestId: number;
  readonly decision: number;
}

/** A decided row's new text, and where the old one ends. */
interface Replacement {
  readonly previousEnd: number;
  readonly nextOffset: number;
  readonly oldLength: number;
  readonly text: string;
}

/**
 * Writes `to`: the cleaned file with the decisions of the review file applied, every other byte
 * as it was. A candidate number writes that candidate's fields (from the cleaned file's own
 * candidates cell) into the dq_ result columns and sets `accepted`; `keep` sets `kept`;
 * `invalid` sets `invalid`; `dq_review_decision` records which. A row whose input values,
 * request id or status differ from the export's is a conflict and stays as it is; a decision
 * cell that is not a decision the row can take is bad and skipped, never guessed.
 */
export async function applyReview(options: ReviewApplyOptions): Promise<ReviewApplySummary> {
  await refuseSameFiles(
    [
      { path: options.output, label: `the cleaned file ${options.output}` },
      { path: options.input, label: `the review file ${options.input}` },
    ],
    { path: options.to, label: `--to ${options.to}` },
    '--to (a new file: the cleaned file is never changed in place)',
  );
  const lock = await holdFinishedOutput(options.output);
  try {
    return await applyTo(options);
  } finally {
    await lock.release();
  }
}

async function applyTo(options: ReviewApplyOptions): Promise<ReviewApplySummary> {
  const before = await stat(options.output).catch((err: NodeJS.ErrnoException) => {
    throw new CsvError('input-unreadable', `cannot read the cleaned file ${options.output}: ${err.code ?? err.message}`, { cause: err });
  });
  const file = await openCleanedFile(options.output, { delimiter: options.delimiter, format: options.format });
  const conflictRows: SkippedDecision[] = [];
  const badDecisions: SkippedDecision[] = [];
  const replacements: Replacement[] = [];
  let undecided = 0;
  const counts = { applied: 0, kept: 0, invalid: 0 };
  try {
    const layout = cleanedLayout(file.names, options.output);
    const inputs = file.format === 'csv' ? file.names.slice(0, file.names.indexOf('dq_status')) : undefined;
    const { pending, blanks, names, columns } = await readDecisions(
      options.input,
      options.encoding ?? 'utf8',
      layout,
      inputs,
      badDecisions,
      () => (undecided += 1),
    );
    // A cleaned file without result classes (company, tr) exported an empty class column.
    const classless = !file.names.includes('dq_result_class');
    const safe = file.format === 'csv' && options.spreadsheetSafe === true;
    const evidence = file.format === 'csv' ? new SafeEvidence(file.names) : undefined;
    for await (const record of file.records) {
      if (evidence?.open) {
        const view = file.view(record, layout.resultNames);
        if (typeof view !== 'string')
          evidence.row(
            record.row,
            file.names.map((name) => view.text(name)),
          );
      }
      const blank = blanks.get(record.row);
      if (blank) {
        blanks.delete(record.row);
        const misplaced = misplacedDecision(file, layout, record, blank.cells, columns, classless);
        if (misplaced) badDecisions.push({ reviewLine: blank.reviewLine, row: blank.row, decision: '', reason: misplaced });
        else undecided += 1;
      }
      const decided = pending.get(record.row);
      if (!decided) continue;
      pending.delete(record.row);
      const misplaced = misplacedDecision(file, layout, record, decided.cells, columns, classless);
      const outcome = misplaced ? { bad: misplaced } : decide(file, layout, names, record, decided, safe);
      if ('conflict' in outcome) conflictRows.push(skipped(decided, outcome.conflict));
      else if ('bad' in outcome) badDecisions.push(skipped(decided, outcome.bad));
      else {
        replacements.push({ previousEnd: record.previousEnd, nextOffset: record.raw.nextOffset, oldLength: record.raw.bytes.length, text: outcome.text });
        counts[decided.decision.kind === 'candidate' ? 'applied' : decided.decision.kind === 'keep' ? 'kept' : 'invalid'] += 1;
      }
    }
    evidence?.check(options.output, options.spreadsheetSafe === true);
    undecided += blanks.size;
    for (const decided of pending.values()) {
      conflictRows.push(
        skipped(decided, `the cleaned file has no data row ${decided.row}: it is not the file this review was exported from, or rows were removed since`),
      );
    }
  } finally {
    file.close();
  }
  await writeApplied(options.output, options.to, replacements, before);
  conflictRows.sort((a, b) => a.reviewLine - b.reviewLine);
  badDecisions.sort((a, b) => a.reviewLine - b.reviewLine);
  return {
    event: 'review-apply',
    exitCode: conflictRows.length > 0 || badDecisions.length > 0 ? ExitCode.MAX_FAILED : ExitCode.OK,
    ...counts,
    conflicts: conflictRows.length,
    bad: badDecisions.length,
    undecided,
    conflictRows,
    badDecisions,
    to: options.to,
  };
}

function skipped(decided: Pending, reason: string): SkippedDecision {
  return { reviewLine: decided.reviewLine, row: decided.row, decision: decided.text, reason };
}

/**
 * Reads the decisions of the review file (UTF-8 with or without BOM, UTF-16 with BOM, CRLF or LF,
 * `,` or the `;`/tab a spreadsheet may save with), checking that it was exported from a file
 * with the cleaned file's input columns.
 */
async function readDecisions(
  path: string,
  encoding: InputEncoding,
  layout: CleanedLayout,
  inputs: readonly string[] | undefined,
  bad: SkippedDecision[],
  onUndecided: () => void,
): Promise<{ pending: Map<number, Pending>; blanks: Map<number, Blank>; names: readonly string[]; columns: ReviewColumns }> {
  const delimiter = await reviewDelimiter(path);
  const source = await openSource({ path, format: 'csv', delimiter, encoding }).catch((err: unknown) => {
    if (err instanceof CsvError) throw new CsvError('review-file', `the review file ${path}: ${err.message}`, { cause: err });
    throw err;
  });
  const pending = new Map<number, Pending>();
  const blanks = new Map<number, Blank>();
  let names: string[];
  let columns: ReviewColumns;
  try {
    const header = (source.header ?? []).map(restoreCell);
    // line, <input columns>, class, request_id, [row_check], candidate_N_… (any number), decision, [columns a person added]
    const at = reviewColumnsAt(header);
    names = at ? header.slice(1, at.class) : [];
    const fits =
      header[0] === LINE_COLUMN &&
      at !== undefined &&
      (inputs ? inputs.length === names.length && inputs.every((name, i) => names[i] === name) : names.every((name) => !layout.resultNames.has(name)));
    if (!fits) {
      throw new CsvError(
        'review-file',
        `${path} is not a review file of this cleaned file: its header should be ${[LINE_COLUMN, ...(inputs ?? ['<input columns>']), REVIEW_COLUMNS.class, REVIEW_COLUMNS.requestId, REVIEW_COLUMNS.rowCheck, 'candidate_1_…', REVIEW_COLUMNS.decision].join(',')} (write one with dq-csv review export)`,
      );
    }
    columns = { header, class: at.class, requestId: at.requestId, decision: at.decision };
    const firstLine = new Map<number, number>();
    for await (const item of source.items) {
      if (item.kind === 'reject' && item.code === 'undecodable-bytes') {
        // The whole file is in another encoding, not one line: none of its decisions is applied.
        throw new CsvError(
          'review-file',
          `the review file ${path} is not UTF-8 (line ${item.line}): a spreadsheet saves its plain "CSV" format in Windows-1252; pass --encoding windows-1252 (or latin1), or save it as "CSV UTF-8"; nothing was written`,
        );
      }
      let read: readonly string[] | undefined = item.kind === 'row' ? item.cells : undefined;
      if (item.kind === 'reject') {
        // Another width than the header's: a spreadsheet may leave out the empty cells at a row's
        // end (read as empty) or add some (checked below, with the columns without a name).
        read = item.code === 'column-count' ? splitRow(item.raw, delimiter, header.length) : undefined;
        if (read === undefined) {
          bad.push({ reviewLine: item.line, decision: '', reason: `the line cannot be read (${item.reason}); fix it in the review file` });
          continue;
        }
      }
      const cells = (read ?? []).map(restoreCell);
      const text = (cells[at.decision] ?? '').trim();
      // A cell past the decision in no named column that is not empty: a decision written a column too far, or a note.
      const stray = cells.findIndex((cell, i) => i > at.decision && (header[i] ?? '').trim() === '' && cell.trim() !== '');
      if (stray >= 0) {
        bad.push({
          reviewLine: item.line,
          decision: text,
          reason: `cell ${stray + 1} (${JSON.stringify(cells[stray])}) is in no named column (a decision written a column too far, or a note?): write the decision in column ${REVIEW_COLUMNS.decision}, and give a column of notes a name in line 1`,
        });
        continue;
      }
      const lineText = cells[0] ?? '';
      const row = /^\d+$/.test(lineText) ? Number(lineText) : NaN;
      if (text === '') {
        // Checked against its row of the cleaned file (misplacedDecision), once.
        if (row >= 1 && !blanks.has(row)) blanks.set(row, { reviewLine: item.line, row, cells });
        else onUndecided();
        continue;
      }
      if (!(row >= 1)) {
        bad.push({ reviewLine: item.line, decision: text, reason: `its ${LINE_COLUMN} cell "${lineText}" is not a row number; was it edited?` });
        continue;
      }
      const decision = parseDecision(text);
      if (decision === undefined) {
        bad.push({ reviewLine: item.line, row, decision: text, reason: `"${text}" is not a decision: write a candidate number (1, 2, ...), keep or invalid` });
        continue;
      }
      const earlier = firstLine.get(row);
      if (earlier !== undefined) {
        bad.push({ reviewLine: item.line, row, decision: text, reason: `row ${row} is decided on review line ${earlier} already` });
        continue;
      }
      firstLine.set(row, item.line);
      pending.set(row, {
        reviewLine: item.line,
        row,
        text,
        decision,
        current: cells.slice(1, 1 + names.length),
        requestId: cells[at.requestId] ?? '',
        rowCheck: at.rowCheck === undefined ? undefined : (cells[at.rowCheck] ?? ''),
        cells,
      });
    }
  } finally {
    await source.close();
  }
  return { pending, blanks, names, columns };
}

/**
 * Why a line's cells look like a decision written in the wrong column: a value in a cell the
 * export left empty because the row has nothing there (the candidate columns past the row's own
 * candidates, and the class column of a file without classes). Such a decision is named, never
 * read as undecided, as one written past the last column is (docs in the package README, "Review").
 * Only against the result the line was exported with: another one (the row validated again) may
 * have fewer candidates, and is a conflict.
 */
function misplacedDecision(
  file: CleanedFile,
  layout: CleanedLayout,
  record: CleanedRecord,
  cells: readonly string[],
  columns: ReviewColumns,
  classless: boolean,
): string | undefined {
  const view = file.view(record, layout.resultNames);
  if (typeof view === 'string' || view.text('dq_request_id') !== (cells[columns.requestId] ?? '')) return undefined;
  const candidates = parseCandidates(view.text(layout.candidates));
  if (typeof candidates !== 'object') return undefined;
  for (let i = columns.class; i < columns.decision; i++) {
    const name = columns.header[i] ?? '';
    const n = /^candidate_(\d+)_/.exec(name)?.[1];
    const unused = i === columns.class ? classless : n !== undefined && Number(n) > candidates.length;
    const cell = (cells[i] ?? '').trim();
    if (unused && cell !== '') {
      const has = candidates.length === 0 ? 'no candidates' : candidates.length === 1 ? 'one candidate' : `candidates 1-${candidates.length}`;
      return `column ${name} holds ${JSON.stringify(cells[i])}, but row ${record.row} has ${i === columns.class ? 'no class' : has} (a decision written in the wrong column?): write the decision in column ${REVIEW_COLUMNS.decision}`;
    }
  }
  return undefined;
}

/** The cells of a row of another width than the header's `width`, one that is shorter made as wide with empty cells; undefined when it cannot be split. */
function splitRow(raw: string, delimiter: string, width: number): string[] | undefined {
  let cells: string[];
  try {
    cells = fieldSplitter(delimiter)(raw);
  } catch {
    return undefined;
  }
  return cells.length < width ? [...cells, ...Array<string>(width - cells.length).fill('')] : cells;
}

function parseDecision(text: string): Decision | undefined {
  // Leading zeros as a cell formatted as text keeps them (02); 0 is no candidate (apply says so).
  if (/^\d+$/.test(text)) return { kind: 'candidate', n: Number(text) };
  const word = text.toLowerCase();
  if (word === 'keep') return { kind: 'keep' };
  if (word === 'invalid') return { kind: 'invalid' };
  return undefined;
}

/** The delimiter after the review file's first header cell (`line`); `,` when none follows it. */
async function reviewDelimiter(path: string): Promise<string> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    throw new CsvError('review-file', `cannot read the review file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(64), 0, 64, 0);
    const head = buffer.subarray(0, bytesRead);
    const text =
      head[0] === 0xff && head[1] === 0xfe
        ? head.subarray(2).toString('utf16le')
        : head[0] === 0xfe && head[1] === 0xff
          ? Buffer.from(head.subarray(2)).swap16().toString('utf16le')
          : head.toString('utf8').replace(/^\uFEFF/, '');
    const match = /^"?line"?([,;\t|])/.exec(text);
    return match?.[1] ?? ',';
  } finally {
    await handle.close();
  }
}

type Outcome = { text: string } | { conflict: string } | { bad: string };

/** Equal, or the same digits but for leading zeros, which a spreadsheet drops (a postcode 01067 saved as 1067). */
function sameDigits(value: string, shown: string): boolean {
  return value === shown || (/^\d+$/.test(value) && /^\d+$/.test(shown) && value.replace(/^0+/, '') === shown.replace(/^0+/, ''));
}

function decide(file: CleanedFile, layout: CleanedLayout, names: readonly string[], record: CleanedRecord, decided: Pending, safe: boolean): Outcome {
  const view = file.view(record, layout.resultNames);
  if (typeof view === 'string') return { conflict: `row ${decided.row} of the cleaned file cannot be read: ${view}` };
  // The cells written here, neutralised as the sink writes a --spreadsheet-safe file (text only:
  // a number cannot hold a formula); the row's other cells are copied as the file has them.
  const put = (name: string, value: CellValue): void => view.set(name, safe && typeof value === 'string' ? neutraliseCell(value) : value);
  // The row's input values against those it was exported with: by the row check where the file
  // has one (the cells a person sees may have been reformatted by a spreadsheet), else cell by cell.
  const now = names.map((name) => view.text(name));
  const changed = decided.rowCheck === undefined ? now.some((v, i) => v !== decided.current[i]) : rowCheck(now) !== decided.rowCheck;
  if (changed) {
    // The review file's copy may be a spreadsheet's reformatting of the values (01067 saved as
    // 1067): where the row check tells of the change, a cell that differs only so is not named.
    const i = now.findIndex((v, k) => (decided.rowCheck === undefined ? v !== decided.current[k] : !sameDigits(v, decided.current[k] ?? '')));
    const which = i >= 0 ? `: ${names[i]} is now ${JSON.stringify(now[i])}, the review file has ${JSON.stringify(decided.current[i])}` : '';
    return {
      conflict: `row ${decided.row} of the cleaned file changed since the export${which || ` (its row_check ${decided.rowCheck} is not that of its values now)`}`,
    };
  }
  if (view.text('dq_request_id') !== decided.requestId) {
    return {
      conflict: `row ${decided.row} of the cleaned file holds another result (request id ${view.text('dq_request_id')}, the review file has ${decided.requestId})`,
    };
  }
  if (view.text('dq_status') !== 'review') {
    const earlier = view.text('dq_review_decision');
    return {
      conflict: `row ${decided.row} of the cleaned file is no longer awaiting review (dq_status ${view.text('dq_status')}${earlier ? `, decided: ${earlier}` : ''})`,
    };
  }
  const { decision } = decided;
  if (decision.kind === 'candidate') {
    const candidates = parseCandidates(view.text(layout.candidates));
    if (typeof candidates === 'string') return { conflict: `row ${decided.row} of the cleaned file: ${candidates}` };
    const candidate = candidates[decision.n - 1];
    if (candidate === undefined) {
      return {
        bad: `candidate ${decision.n} does not exist: row ${decided.row} has ${candidates.length === 0 ? 'no candidates (keep or invalid)' : candidates.length === 1 ? 'one candidate' : `candidates 1-${candidates.length}`}`,
      };
    }
    for (const [name, value] of layout.chosenValues(candidate)) put(name, value);
    put('dq_status', 'accepted');
    put('dq_review_decision', `candidate ${decision.n}`);
  } else {
    put('dq_status', decision.kind === 'keep' ? 'kept' : 'invalid');
    put('dq_review_decision', decision.kind);
  }
  return { text: view.serialise() };
}

/**
 * What a CSV cleaned file shows of how it was written. The file does not say whether it was
 * written with --spreadsheet-safe, so apply is told (its own flag) and checks the file against it:
 * a cell starting with a formula character proves it was not (a safe file has a ' before every
 * such cell: this is decisive, and ends the reading); a cell that starts with ' and then such a
 * character (or a second ') is what a safe file holds for one.
 */
/** A number as JavaScript writes one in a CSV cell. */
const NUMBER = /^-?\d+(\.\d+)?(e[+-]?\d+)?$/;

class SafeEvidence {
  /** The first cell starting with a formula character. */
  #bare: { row: number; column: string; cell: string } | undefined;
  /** The first cell that looks neutralised. */
  #neutralised: { row: number; column: string; cell: string } | undefined;
  readonly #names: readonly string[];

  constructor(names: readonly string[]) {
    this.#names = names;
    this.row(0, names);
  }

  /** Whether a further row can still change the verdict. */
  get open(): boolean {
    return this.#bare === undefined;
  }

  row(row: number, cells: readonly string[]): void {
    for (let i = 0; i < cells.length && this.#bare === undefined; i++) {
      const cell = cells[i]!;
      // A number result column holds numbers as written, also with --spreadsheet-safe: a negative
      // coordinate there is no formula left bare.
      if (row > 0 && NUMBER_COLUMNS.has(this.#names[i] ?? '') && NUMBER.test(cell)) continue;
      if (FORMULA_START.test(cell)) this.#bare = { row, column: this.#names[i] ?? String(i + 1), cell };
      else if (this.#neutralised === undefined && cell.startsWith("'") && (FORMULA_START.test(cell.slice(1)) || cell.startsWith("''"))) {
        this.#neutralised = { row, column: this.#names[i] ?? String(i + 1), cell };
      }
    }
  }

  /** Throws a usage error when the file contradicts `safe`. */
  check(path: string, safe: boolean): void {
    const where = (e: { row: number; column: string; cell: string }) =>
      `${e.row === 0 ? 'the header' : `row ${e.row}`}, column ${e.column}, holds ${JSON.stringify(e.cell.length > 24 ? `${e.cell.slice(0, 24)}…` : e.cell)}`;
    if (safe && this.#bare) {
      throw new CsvError(
        'usage',
        `--spreadsheet-safe: ${path} was not written with --spreadsheet-safe (${where(this.#bare)}, which such a file has behind a '); apply without --spreadsheet-safe, or validate again with it`,
      );
    }
    if (!safe && !this.#bare && this.#neutralised) {
      throw new CsvError(
        'usage',
        `--spreadsheet-safe: ${path} looks written with --spreadsheet-safe (${where(this.#neutralised)}): pass --spreadsheet-safe to review apply, so that the cells it writes are neutralised like the rest of the file`,
      );
    }
  }
}

/**
 * Copies the cleaned file to `to` in one sequential read, replacing only the decided records'
 * bytes (their line terminators and everything between records are copied as they are).
 * Refuses when the cleaned file changed while this ran.
 */
async function writeApplied(from: string, to: string, replacements: readonly Replacement[], before: { size: number; mtimeMs: number }): Promise<void> {
  await writeAtomically(to, async (target) => {
    const pending: Buffer[] = [];
    let buffered = 0;
    const out = async (bytes: Buffer, flush = false) => {
      if (bytes.length > 0) {
        pending.push(bytes);
        buffered += bytes.length;
      }
      if (buffered >= 1 << 20 || (flush && buffered > 0)) {
        await target.write(Buffer.concat(pending, buffered));
        pending.length = 0;
        buffered = 0;
      }
    };
    let position = 0; // of the chunk's first byte in the file
    let next = 0; // the replacement to come
    let segment: Buffer[] = []; // bytes of the decided record being read
    for await (const chunk of createReadStream(from, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
      let offset = 0;
      while (offset < chunk.length) {
        const r = replacements[next];
        const at = position + offset;
        if (r === undefined || at < r.previousEnd) {
          const n = r === undefined ? chunk.length - offset : Math.min(chunk.length - offset, r.previousEnd - at);
          await out(chunk.subarray(offset, offset + n));
          offset += n;
          continue;
        }
        const n = Math.min(chunk.length - offset, r.nextOffset - at);
        segment.push(chunk.subarray(offset, offset + n));
        offset += n;
        if (at + n === r.nextOffset) {
          await out(replaced(Buffer.concat(segment), r));
          segment = [];
          next += 1;
        }
      }
      position += chunk.length;
    }
    if (next < replacements.length) {
      throw new CsvError('input-unreadable', `${from} became shorter while the decisions were applied; nothing was written; run review apply again`);
    }
    await out(Buffer.alloc(0), true);
    const after = await stat(from);
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) {
      throw new CsvError('input-unreadable', `${from} changed while the decisions were applied; nothing was written; run review apply again`);
    }
  });
}

/**
 * A decided record's bytes from the end of the record before it: empty lines kept, the record
 * replaced, its terminator (LF, CRLF, or none at the end of the file) kept.
 */
function replaced(segment: Buffer, r: Replacement): Buffer {
  let terminator = 0;
  const last = segment[segment.length - 1];
  if (last === 0x0a) terminator = segment.length >= 2 && segment[segment.length - 2] === 0x0d ? 2 : 1;
  else if (last === 0x0d) terminator = 1;
  const end = segment.length - terminator;
  return Buffer.concat([segment.subarray(0, end - r.oldLength), Buffer.from(r.text, 'utf8'), segment.subarray(end)]);
}
