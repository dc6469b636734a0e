/**
 * Review files as people and spreadsheets make them, for the review round-trip tests of dq-csv and
 * dq-pg: hostile cell values, a strict CSV reader, the ways a spreadsheet saves a file back, and
 * decision cells with what each must come to. Every draw comes from a seeded {@link Rand}.
 */
import type { Rand } from './random.js';

const PIECES: readonly string[] = [
  'a',
  'Z',
  '7',
  '0',
  ' ',
  '  ',
  '"',
  '""',
  ',',
  ';',
  '\t',
  '\r',
  '\n',
  '\r\n',
  "'",
  "''",
  '=',
  '+',
  '-',
  '@',
  '=1+2',
  '-2+3+cmd|x',
  'ä',
  'ß',
  '😀',
  'e\u0301',
  '\u00a0',
  '\u200f',
  'שלום',
  '\uFEFF',
];

/** A value a file may hold: empty, only spaces, leading formula characters or quotes, line breaks, unicode, very long. */
export function hostileText(r: Rand): string {
  if (r.chance(0.1)) return '';
  if (r.chance(0.05)) return ' '.repeat(r.int(1, 3));
  let value = '';
  for (let k = r.int(1, 5); k > 0; k--) value += r.pick(PIECES);
  if (r.chance(0.15)) value = `${r.pick(['=', '+', '-', '@', '\t', '\r', "'", "''"])}${value}`;
  if (r.chance(0.1)) value += '  ';
  if (r.chance(0.03)) value = value.repeat(Math.ceil(3000 / value.length));
  return value;
}

/** A strict RFC 4180 reader (any of CRLF, LF or CR ends a record outside quotes); blank lines are rows of one empty cell. */
export function parseCsv(text: string, delimiter: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let i = 0;
  let quoted = false;
  while (i < text.length) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i += 2;
      } else if (ch === '"') {
        quoted = false;
        i += 1;
      } else {
        cell += ch;
        i += 1;
      }
    } else if (ch === '"' && cell === '') {
      quoted = true;
      i += 1;
    } else if (ch === delimiter) {
      row.push(cell);
      cell = '';
      i += 1;
    } else if (ch === '\r' || ch === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i += ch === '\r' && text[i + 1] === '\n' ? 2 : 1;
    } else {
      cell += ch;
      i += 1;
    }
  }
  if (cell !== '' || row.length > 0) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** How a spreadsheet saves the file back. */
export interface Save {
  bom: boolean;
  delimiter: ',' | ';';
  eol: '\r\n' | '\n';
  quoteAll: boolean;
  shuffle: boolean;
  /** Cells of digits only written as numbers (leading zeros gone). */
  numbers: boolean;
  /** An empty column after the last one (header and rows). */
  extraColumn: boolean;
  /** Blank rows: in the middle and at the end. */
  blankInMiddle: boolean;
  blankAtEnd: boolean;
  /** A row's empty cells at its end left out (as some spreadsheets do past the first rows). */
  dropTrailing: boolean;
}

/** A way of saving drawn at random. */
export function randomSave(r: Rand): Save {
  return {
    bom: r.chance(0.5),
    delimiter: r.pick([',', ';'] as const),
    eol: r.pick(['\r\n', '\n'] as const),
    quoteAll: r.chance(0.5),
    shuffle: r.chance(0.5),
    numbers: r.chance(0.5),
    extraColumn: r.chance(0.3),
    blankInMiddle: r.chance(0.4),
    blankAtEnd: r.chance(0.4),
    dropTrailing: r.chance(0.3),
  };
}

/** As a spreadsheet saves it: BOM, CRLF, quotes where needed. */
export const EXCEL: Save = {
  bom: true,
  delimiter: ',',
  eol: '\r\n',
  quoteAll: false,
  shuffle: false,
  numbers: false,
  extraColumn: false,
  blankInMiddle: false,
  blankAtEnd: false,
  dropTrailing: false,
};

/**
 * The file's text as `save` writes `rows` (the rows as they stand: `shuffle`, `numbers`, the extra
 * column and the blank rows are the caller's to apply). With `dropTrailing`, a row's empty cells
 * at its end are left out, in rows with a line break in a cell too unless `multiLineWhole`.
 */
export function formatCsv(rows: readonly (readonly string[])[], save: Save, multiLineWhole = false): string {
  const cell = (v: string) =>
    save.quoteAll || v.includes('"') || v.includes(save.delimiter) || v.includes('\r') || v.includes('\n') ? `"${v.replaceAll('"', '""')}"` : v;
  // A blank row is an empty line, also where every other cell is quoted.
  const line = (row: readonly string[]) => {
    let cells = [...row];
    if (save.dropTrailing && !(multiLineWhole && row.some((v) => /[\r\n]/.test(v)))) while (cells.length > 1 && cells.at(-1) === '') cells = cells.slice(0, -1);
    return cells.length === 1 && cells[0] === '' ? '' : cells.map(cell).join(save.delimiter);
  };
  return `${save.bom ? '\uFEFF' : ''}${rows.map(line).join(save.eol)}${save.eol}`;
}

/** What a decision cell must come to; `Empty` names what a connector calls a row left for later. */
export type Expected<Empty extends string> =
  { kind: 'applied'; n: number } | { kind: 'kept' } | { kind: 'invalid' } | { kind: 'conflict' } | { kind: 'bad'; message: string } | { kind: Empty };

/**
 * A decision cell as a person (or a spreadsheet) writes it for a row with `count` candidates, and
 * what it must come to: `empty` for none, `outOfRange` the words that name a candidate number the
 * row does not have.
 */
export function randomDecision<Empty extends string>(r: Rand, count: number, empty: Empty, outOfRange: string): { cell: string; expected: Expected<Empty> } {
  const roll = r();
  if (roll < 0.2) return { cell: r.pick(['', ' ', '  ']), expected: { kind: empty } };
  if (roll < 0.5 && count > 0) {
    const n = r.int(1, count);
    return { cell: r.pick([`${n}`, ` ${n} `, `0${n}`, `'${n}`, `${n}\u00a0`]), expected: { kind: 'applied', n } };
  }
  if (roll < 0.65) return { cell: r.pick(['keep', 'KEEP', 'Keep ', ' keep', "'keep"]), expected: { kind: 'kept' } };
  if (roll < 0.75) return { cell: r.pick(['invalid', 'INVALID', 'Invalid ']), expected: { kind: 'invalid' } };
  const bad = r.pick(['kep', '2.0', '1,5', 'first', '+1', '0', '١', `${count + 1}`, `${count + 10}`, '=1']);
  return { cell: bad, expected: { kind: 'bad', message: /^\d+$/.test(bad) ? outOfRange : 'is not a decision' } };
}

/** What a review test has made of the exported rows before a person saves the file. */
export interface EditedReview<Empty extends string> {
  /** The exported header and rows, decision cells filled in. */
  readonly header: readonly string[];
  readonly rows: readonly string[][];
  /** Column of the decision cells. */
  readonly decision: number;
  /** What each row (by identity) must come to; the entry of a row listed twice may change here. */
  readonly expected: Map<string[], { expected: Expected<Empty> }>;
  /** A copy of the `duplicated` row with another decision, placed after it unless shuffled before. */
  readonly duplicate?: { readonly copy: string[]; readonly duplicated: string[]; readonly message: string } | undefined;
  /** A row of no review, placed anywhere. */
  readonly stranger?: string[] | undefined;
  /** A row with one cell more, `cell`, past the last column. */
  readonly spill?: { readonly row: string[]; readonly cell: string } | undefined;
  /** As {@link formatCsv}'s `multiLineWhole`. */
  readonly multiLineWhole?: boolean;
}

/** A review file as `save` writes it back, and where each row ended up. */
export interface SavedReview {
  readonly text: string;
  /** The rows in the order they were written (the duplicate and the stranger included). */
  readonly body: readonly string[][];
  /** The file's rows, header first, as written; `origin[i]` is the row `lines[i]` came from (undefined: the header or a blank row). */
  readonly lines: readonly string[][];
  readonly origin: readonly (string[] | undefined)[];
}

/**
 * The edited review file saved by a spreadsheet as `save` says: the duplicate and the stranger
 * placed, rows shuffled, digit-only cells (not the decision) made numbers, an extra empty column, a
 * blank row in the middle and at the end. When the copy of a row ends up before the row itself, the
 * copy decides it (keeping it, unless the row had become a conflict) and the row itself is the
 * duplicate, named with the duplicate's `message`: `expected` is changed so.
 */
export function saveReview<Empty extends string>(r: Rand, save: Save, review: EditedReview<Empty>): SavedReview {
  const { duplicate, stranger, spill, expected } = review;
  let body: string[][] = [...review.rows];
  if (duplicate) body.splice(r.int(body.indexOf(duplicate.duplicated) + 1, body.length), 0, duplicate.copy);
  if (stranger) body.splice(r.int(0, body.length), 0, stranger);
  if (save.shuffle) body = r.shuffle(body);
  if (duplicate && body.indexOf(duplicate.copy) < body.indexOf(duplicate.duplicated)) {
    const first = expected.get(duplicate.duplicated)!.expected;
    expected.get(duplicate.copy)!.expected = first.kind === 'conflict' ? first : { kind: 'kept' };
    expected.get(duplicate.duplicated)!.expected = { kind: 'bad', message: duplicate.message };
  }
  const reformat = (row: string[]) =>
    row
      .map((cell, i) => (save.numbers && i !== review.decision && /^\d{1,15}$/.test(cell) ? String(Number(cell)) : cell))
      .concat(row === spill?.row ? [spill.cell] : save.extraColumn ? [''] : []);
  const lines: string[][] = [review.header.concat(save.extraColumn ? [''] : []), ...body.map(reformat)];
  const origin: (string[] | undefined)[] = [undefined, ...body];
  if (save.blankInMiddle && body.length > 1) {
    const at = r.int(2, lines.length - 1);
    lines.splice(at, 0, ['']);
    origin.splice(at, 0, undefined);
  }
  let text = formatCsv(lines, save, review.multiLineWhole);
  if (save.blankAtEnd) text += save.eol;
  return { text, body, lines, origin };
}
