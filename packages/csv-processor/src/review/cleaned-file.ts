import { createReadStream } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { CsvError } from '../errors.js';
import { formatFromPath } from '../options.js';
import { formatCsvLine, type CellValue } from '../sink/csv-format.js';
import { fieldSplitter, type FieldSplitter } from '../source/csv-fields.js';
import { bomLength } from '../source/decode.js';
import { frameRecords, type RawRecord } from '../source/framer.js';
import { jsonKeys, parseJson, stringifyJson } from '../source/lossless-json.js';
import type { InputFormat } from '../source/types.js';

/** One data record of a cleaned file, with where it lies, so it can be copied or replaced exactly. */
export interface CleanedRecord {
  /** Data row number: 1 is the first row (CSV: under the header; JSON: the first element). */
  readonly row: number;
  /** Physical line on which it starts. */
  readonly line: number;
  readonly raw: RawRecord;
  /** Byte offset just after the previous record's terminator (empty lines between them lie here). */
  readonly previousEnd: number;
}

/** One row's values by column (CSV) or key (JSON), as text; and the row written back. */
export interface RowView {
  /** The value as text: CSV cells as they are, JSON strings as they are, other JSON values as JSON, missing or null as ''. */
  text(name: string): string;
  /** The row's own (input) columns, in order: every name but the dq-csv result columns. */
  inputNames(): readonly string[];
  /** Sets a result column (JSON: typed, null for none). */
  set(name: string, value: CellValue): void;
  /** The record as it is to be written back, without its line terminator. */
  serialise(): string;
}

/** A cleaned file opened for reading. */
export interface CleanedFile {
  readonly path: string;
  readonly format: InputFormat;
  /** CSV: the header; JSON: the keys of the first row. */
  readonly names: readonly string[];
  /** CSV delimiter. */
  readonly delimiter: string;
  readonly records: AsyncGenerator<CleanedRecord>;
  /** The record's values, or why they cannot be read. `resultNames`: the dq-csv result columns. */
  view(record: CleanedRecord, resultNames: ReadonlySet<string>): RowView | string;
  close(): void;
}

/**
 * Opens a finished dq-csv output (UTF-8, as dq-csv writes it): CSV; NDJSON (one object per line);
 * or a JSON array as dq-csv writes it, one element per line. The format is the one given, else
 * the extension's. The CSV delimiter is the one given, else the character written before
 * `dq_status` in the header (dq-csv puts the result columns after the input's), else `,`.
 */
export async function openCleanedFile(path: string, options: { delimiter?: string; format?: InputFormat } = {}): Promise<CleanedFile> {
  const format = options.format ?? formatFromPath(path);
  const stream = createReadStream(path);
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  }).catch((err: NodeJS.ErrnoException) => {
    throw new CsvError('input-unreadable', `cannot read ${path}: ${err.code ?? err.message}`, { cause: err });
  });
  // The delimiter is the one given, else known once the header is read (openCsv): only a quote
  // right after it opens a quoted field.
  let delimiter = options.delimiter ?? ',';
  const frames = frameRecords(stream, { quotes: format === 'csv', delimiter: () => delimiter });
  const next = () =>
    frames.next().catch((err: Error) => {
      throw new CsvError('input-unreadable', `cannot read ${path}: ${err.message}`, { cause: err });
    });
  const first = await next();
  if (first.done) {
    stream.destroy();
    throw new CsvError('input-empty', `${path} is empty: expected the output of dq-csv validate`);
  }
  const firstBytes = first.value.bytes.subarray(bomLength(first.value.bytes));
  if (format === 'csv') {
    const file = openCsv(path, stream, frames, first.value, firstBytes, options.delimiter);
    delimiter = file.delimiter;
    return file;
  }
  const file = openJson(path, format, stream, frames, first.value, firstBytes);
  try {
    await file.peek();
  } catch (err) {
    file.close();
    throw err;
  }
  return file;
}

function openCsv(
  path: string,
  stream: NodeJS.ReadableStream & { destroy(): void },
  frames: AsyncGenerator<RawRecord>,
  headerRecord: RawRecord,
  headerBytes: Buffer,
  delimiter?: string,
): CleanedFile {
  if (!isUtf8(headerBytes)) {
    stream.destroy();
    throw new CsvError('input-unreadable', `the header row of ${path} is not UTF-8: expected the output of dq-csv validate`);
  }
  const headerText = headerBytes.toString('utf8');
  const at = headerText.indexOf('dq_status');
  const sep = delimiter ?? (at > 0 ? headerText[at - 1]! : ',');
  const split: FieldSplitter = fieldSplitter(sep);
  let header: string[];
  try {
    header = split(headerText);
  } catch (err) {
    stream.destroy();
    throw new CsvError('input-unreadable', `the header row of ${path} cannot be parsed: ${(err as Error).message}`, { cause: err });
  }
  const index = new Map(header.map((name, i) => [name, i] as const));
  const inputs = header.slice(0, Math.max(0, header.indexOf('dq_status')));
  return {
    path,
    format: 'csv',
    names: header,
    delimiter: sep,
    records: numbered(frames, headerRecord.nextOffset),
    view(record) {
      const bytes = readable(record.raw);
      if (typeof bytes === 'string') return bytes;
      let cells: CellValue[];
      try {
        cells = split(bytes.toString('utf8'));
      } catch (err) {
        return `it cannot be parsed: ${(err as Error).message}`;
      }
      if (cells.length !== header.length) return `it has ${cells.length} fields, the header ${header.length}`;
      return {
        text: (name) => String(cells[index.get(name) ?? -1] ?? ''),
        inputNames: () => inputs,
        set: (name, value) => {
          const i = index.get(name);
          if (i !== undefined) cells[i] = value;
        },
        serialise: () => formatCsvLine(cells, sep).slice(0, -1),
      };
    },
    close: () => stream.destroy(),
  };
}

function openJson(
  path: string,
  format: InputFormat,
  stream: NodeJS.ReadableStream & { destroy(): void },
  frames: AsyncGenerator<RawRecord>,
  first: RawRecord,
  firstBytes: Buffer,
): CleanedFile & { peek(): Promise<void> } {
  const array = format === 'json';
  if (array && firstBytes.toString('utf8').trim() !== '[') {
    stream.destroy();
    throw new CsvError(
      'input-unreadable',
      `${path} does not start with a line holding only "[": review reads a JSON array as dq-csv validate writes it, one element per line`,
    );
  }
  // The first row's keys name the columns (mode detection); read it now, hand it out first.
  async function* rows(): AsyncGenerator<RawRecord> {
    if (!array) yield first;
    for await (const raw of frames) {
      if (array && raw.bytes.toString('utf8').trim() === ']') continue;
      yield raw;
    }
  }
  const records = numbered(rows(), array ? first.nextOffset : 0);
  const parse = (raw: RawRecord): { object: Record<string, unknown>; comma: boolean } | string => {
    const bytes = readable(raw);
    if (typeof bytes === 'string') return bytes;
    let text = bytes.toString('utf8').replace(/^\uFEFF/, '');
    const comma = array && text.endsWith(',');
    if (comma) text = text.slice(0, -1);
    let value: unknown;
    try {
      value = parseJson(text);
    } catch (err) {
      return `it is not valid JSON: ${(err as Error).message}`;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'it is not a JSON object';
    return { object: value as Record<string, unknown>, comma };
  };
  const peeked: CleanedRecord[] = [];
  const file: CleanedFile & { peek(): Promise<void> } = {
    path,
    format,
    names: [],
    delimiter: ',',
    records: (async function* () {
      yield* peeked.splice(0);
      yield* records;
    })(),
    view(record, resultNames) {
      const parsed = parse(record.raw);
      if (typeof parsed === 'string') return parsed;
      const { object, comma } = parsed;
      return {
        text: (name) => {
          const value = object[name];
          return value === undefined || value === null ? '' : typeof value === 'string' ? value : stringifyJson(value);
        },
        inputNames: () => jsonKeys(object).filter((name) => !resultNames.has(name)),
        set: (name, value) => {
          object[name] = value ?? null;
        },
        serialise: () => stringifyJson(object) + (comma ? ',' : ''),
      };
    },
    close: () => stream.destroy(),
    async peek() {
      const head = await records.next();
      if (head.done) return;
      peeked.push(head.value);
      const parsed = parse(head.value.raw);
      if (typeof parsed === 'string') {
        throw new CsvError('input-unreadable', `row 1 (line ${head.value.line}) of ${path} cannot be read: ${parsed}`);
      }
      (file as { names: readonly string[] }).names = jsonKeys(parsed.object);
    },
  };
  return file;
}

async function* numbered(frames: AsyncIterable<RawRecord>, start: number): AsyncGenerator<CleanedRecord> {
  let row = 0;
  let previousEnd = start;
  for await (const raw of frames) {
    row += 1;
    yield { row, line: raw.line, raw, previousEnd };
    previousEnd = raw.nextOffset;
  }
}

function readable(raw: RawRecord): Buffer | string {
  if (raw.tooLarge) return `it is ${raw.tooLarge.length} bytes long, over the record limit`;
  if (raw.unclosedQuote) return 'a quote in it is never closed';
  if (!isUtf8(raw.bytes)) return 'it is not valid UTF-8';
  return raw.bytes;
}
