import { createReadStream } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { CsvError } from '../errors.js';
import { fieldSplitter, type FieldSplitter } from '../source/csv-fields.js';
import { bomLength } from '../source/decode.js';
import { frameRecords, type RawRecord } from '../source/framer.js';

/** One data record of a cleaned file, with where it lies, so it can be copied or replaced exactly. */
export interface CleanedRecord {
  /** Data row number: 1 is the record right under the header. */
  readonly row: number;
  /** Physical line on which it starts. */
  readonly line: number;
  readonly raw: RawRecord;
  /** Byte offset just after the previous record's terminator (empty lines between them lie here). */
  readonly previousEnd: number;
}

/** A cleaned file opened for reading: its header, delimiter and records in order. */
export interface CleanedFile {
  readonly path: string;
  readonly header: readonly string[];
  readonly delimiter: string;
  readonly records: AsyncGenerator<CleanedRecord>;
  /** The record's cells, or why they cannot be read. */
  cells(record: CleanedRecord): string[] | string;
  close(): void;
}

/**
 * Opens a finished dq-csv output (UTF-8, as dq-csv writes it). The delimiter is the one given,
 * else the character written before `dq_status` in the header (dq-csv puts the result columns
 * after the input's), else `,`.
 */
export async function openCleanedFile(path: string, delimiter?: string): Promise<CleanedFile> {
  const stream = createReadStream(path);
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  });
  await opened.catch((err: NodeJS.ErrnoException) => {
    throw new CsvError('input-unreadable', `cannot read ${path}: ${err.code ?? err.message}`, { cause: err });
  });
  const frames = frameRecords(stream, { quotes: true });
  const first = await frames.next().catch((err: Error) => {
    throw new CsvError('input-unreadable', `cannot read ${path}: ${err.message}`, { cause: err });
  });
  if (first.done) {
    stream.destroy();
    throw new CsvError('input-empty', `${path} is empty: expected the output of dq-csv validate`);
  }
  const headerBytes = first.value.bytes.subarray(bomLength(first.value.bytes));
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
  async function* records(): AsyncGenerator<CleanedRecord> {
    let row = 0;
    let previousEnd = first.value!.nextOffset;
    for await (const raw of frames) {
      row += 1;
      yield { row, line: raw.line, raw, previousEnd };
      previousEnd = raw.nextOffset;
    }
  }
  return {
    path,
    header,
    delimiter: sep,
    records: records(),
    cells(record) {
      const { raw } = record;
      if (raw.tooLarge) return `it is ${raw.tooLarge.length} bytes long, over the record limit`;
      if (raw.unclosedQuote) return 'a quote in it is never closed';
      if (!isUtf8(raw.bytes)) return 'it is not valid UTF-8';
      let cells: string[];
      try {
        cells = split(raw.bytes.toString('utf8'));
      } catch (err) {
        return `it cannot be parsed: ${(err as Error).message}`;
      }
      if (cells.length !== header.length) return `it has ${cells.length} fields, the header ${header.length}`;
      return cells;
    },
    close() {
      stream.destroy();
    },
  };
}
