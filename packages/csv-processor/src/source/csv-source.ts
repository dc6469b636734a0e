import type { Readable } from 'node:stream';
import { stat } from 'node:fs/promises';
import { CsvError } from '../errors.js';
import { fieldSplitter } from './csv-fields.js';
import { bomLength, lossyDecode, recordDecoder } from './decode.js';
import { inputBytes, laterUtf8Refusal } from './input-bytes.js';
import { DEFAULT_MAX_RECORD_BYTES, frameRecords, type FramerOptions, type RawRecord } from './framer.js';
import type { Source, SourceItem, SourceOptions, SourcePosition } from './types.js';

/**
 * Opens a CSV file: reads the header row, then (from `options.start` when resuming) yields each
 * record as a row or, when it cannot be parsed, a reject naming its line and the reason.
 */
export async function openCsvSource(options: SourceOptions): Promise<Source> {
  const delimiter = options.delimiter ?? ',';
  const input = await inputBytes(options.path, options.encoding ?? 'utf8', await sizeOf(options), options.file);
  const { encoding, totalBytes } = input;
  const decode = recordDecoder(encoding);
  const split = fieldSplitter(delimiter);
  // Latin-1 or Windows-1252 over a plain ASCII start: UTF-8 further on stops the read before its record.
  const utf8Watch = input.utf8Watch?.();
  const refuseUtf8 = (record: RawRecord): void => {
    const found = utf8Watch?.(record.bytes, record.tooLarge !== undefined);
    if (found) throw laterUtf8Refusal(options.path, encoding, found, record.line + found.line - 1);
  };

  let stream: Readable = input.stream();
  let fields: number | undefined; // the header's, once read
  const framing: FramerOptions = {
    quotes: true,
    delimiter,
    maxRecordBytes: options.maxRecordBytes,
    // A multi-line record whose quotes do not split it into fields was framed from a quote that
    // opens no real field: its lines are framed again one by one. One that splits, but not into the
    // header's width, is either a real record of another width (a field with line breaks and one
    // field too many or too few), rejected whole, or the work of a stray quote that swallowed the
    // lines up to a later one: then its first line alone, that quote taken as a plain character,
    // has the header's width (a quoted field holding a line break leaves its first line short).
    // Framed again, a real record's later lines would each be read as a row of their own: a
    // record the file does not hold, paid for and written to the output.
    isRow: (bytes: Buffer) => {
      const text = decode(bytes);
      // The header (read before its width is known) and an undecodable record: one record each.
      if (fields === undefined || text === undefined) return true;
      let width: number;
      try {
        width = split(text).length;
      } catch {
        return false;
      }
      return width === fields || plainWidth(bytes.subarray(0, bytes.indexOf(0x0a)), delimiter) !== fields;
    },
    reopen: (offset: number) => {
      stream.destroy();
      stream = input.stream(offset);
      return stream;
    },
  };
  const headerFrames = frameRecords(stream, framing);
  const first = await headerFrames.next().catch((err: unknown) => {
    if (err instanceof CsvError) throw err;
    throw new CsvError('input-unreadable', `cannot read ${options.path}: ${(err as Error).message}`, { cause: err });
  });
  if (first.done) {
    stream.destroy();
    throw new CsvError('input-empty', `${options.path} is empty: a header row naming the columns is needed`);
  }
  const headerRecord = first.value;
  // A header record running on past a CR outside quotes: the file's lines end in CR alone.
  const crLines = !headerRecord.bytes.includes(0) && bareCr(headerRecord.bytes.subarray(bomLength(headerRecord.bytes)), delimiter);
  const crLineEnds = () =>
    new CsvError(
      'input-unreadable',
      `the header row of ${options.path} runs on past a carriage return (CR) outside quotes: the file's lines end in a CR alone (as classic Mac OS and Excel's "CSV (Macintosh)" write them), where dq-csv reads lines ending in LF or CRLF; save the file with those (Windows or Unix line ends) and run again (a CR inside a column name needs the name quoted)`,
    );
  if (headerRecord.tooLarge && crLines) {
    stream.destroy();
    throw crLineEnds();
  }
  if (headerRecord.tooLarge) {
    stream.destroy();
    throw new CsvError(
      'record-too-large',
      `the header row of ${options.path} is ${headerRecord.tooLarge.length} bytes long, over the limit of ${maxRecordBytes(options)} bytes: is the input really CSV, with this --delimiter?`,
    );
  }
  try {
    refuseUtf8(headerRecord);
  } catch (err) {
    stream.destroy();
    throw err;
  }
  if (headerRecord.bytes.includes(0)) {
    stream.destroy();
    throw new CsvError(
      'input-unreadable',
      `the header row of ${options.path} holds NUL bytes: the file looks like UTF-16 without a byte order mark; save it as UTF-8 (or as UTF-16 with a byte order mark) and run again`,
    );
  }
  const headerText = decode(headerRecord.bytes.subarray(bomLength(headerRecord.bytes)));
  if (headerText === undefined) {
    stream.destroy();
    throw new CsvError('input-unreadable', `the header row of ${options.path} is not valid UTF-8: try --encoding latin1 or windows-1252`);
  }
  let header: string[];
  try {
    header = split(headerText);
  } catch (err) {
    stream.destroy();
    if (crLines) throw crLineEnds();
    throw new CsvError('input-empty', `the header row of ${options.path} cannot be parsed: ${(err as Error).message}`, { cause: err });
  }

  fields = header.length;
  let frames: AsyncGenerator<RawRecord> = headerFrames;
  let records = 0; // data records handed out; the header is not one
  if (options.start && options.start.records > 0) {
    stream.destroy();
    await headerFrames.return(undefined);
    stream = input.stream(options.start.offset);
    frames = frameRecords(stream, { ...framing, startOffset: options.start.offset, startLine: options.start.line });
    records = options.start.records;
  }

  async function* items(): AsyncGenerator<SourceItem> {
    try {
      for await (const record of frames) {
        refuseUtf8(record);
        records += 1;
        const position: SourcePosition = { records, offset: record.nextOffset, line: record.endLine + 1 };
        if (record.tooLarge) {
          yield reject(record, position, 'record-too-large', tooLargeReason(record, options));
          continue;
        }
        const text = decode(record.bytes);
        if (text === undefined) {
          yield reject(
            record,
            position,
            'undecodable-bytes',
            `bytes that are not valid UTF-8; if the file is Latin-1 or Windows-1252, pass --encoding latin1 or --encoding windows-1252`,
          );
          continue;
        }
        let cells: string[];
        try {
          cells = split(text);
        } catch (err) {
          const detail = record.unclosedQuote
            ? 'a quote opening a field on this line is not closed on it, nor on a later line into one row; the lines after it are read on their own'
            : (err as Error).message;
          yield reject(record, position, 'broken-quoting', `broken quoting: ${detail}`);
          continue;
        }
        if (cells.length !== header.length) {
          yield reject(record, position, 'column-count', `expected ${header.length} fields as in the header, found ${cells.length}`);
          continue;
        }
        yield { kind: 'row', line: record.line, cells, position };
      }
    } finally {
      stream.destroy();
    }
  }

  function reject(record: RawRecord, position: SourcePosition, code: Parameters<typeof rejectOf>[0], reason: string): SourceItem {
    return rejectOf(code, reason, record, position, lossyDecode(record.bytes, encoding));
  }

  return {
    format: 'csv',
    header,
    totalBytes,
    items: items(),
    close: async () => {
      stream.destroy();
    },
  };
}

/**
 * Whether `bytes` (a record, without its line terminator) holds a CR outside quoted fields that is
 * not its last byte: where a file whose lines end in CR alone has its line ends. Quotes as the
 * framer and the field splitter take them: a `"` opens a field only as its first byte.
 */
function bareCr(bytes: Buffer, delimiter: string): boolean {
  const d = delimiter.charCodeAt(0);
  let inQuote = false;
  let fieldStart = true;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inQuote) {
      if (b === 0x22) {
        if (bytes[i + 1] === 0x22) i++;
        else inQuote = false;
      }
      continue;
    }
    if (b === 0x22 && fieldStart) inQuote = true;
    else if (b === 0x0d && i + 1 < bytes.length) return true;
    fieldStart = b === d;
  }
  return false;
}

/** Fields of one line split at every `delimiter` (an ASCII character), quotes taken as plain characters. */
function plainWidth(line: Buffer, delimiter: string): number {
  const d = delimiter.charCodeAt(0);
  let width = 1;
  for (const byte of line) if (byte === d) width += 1;
  return width;
}

/** Largest record of `options`, in bytes. */
export function maxRecordBytes(options: SourceOptions): number {
  return options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
}

/** Why a record that is too large is rejected, and what the rejects file holds of it. */
export function tooLargeReason(record: RawRecord, options: SourceOptions): string {
  const { length, offset } = record.tooLarge!;
  return `the record at byte offset ${offset} is ${length} bytes long, over the limit of ${maxRecordBytes(options)} bytes; raw holds only its first ${record.bytes.length} bytes`;
}

function rejectOf(
  code: 'column-count' | 'broken-quoting' | 'undecodable-bytes' | 'record-too-large',
  reason: string,
  record: RawRecord,
  position: SourcePosition,
  raw: string,
): SourceItem {
  const lines = record.endLine > record.line ? ` (lines ${record.line}-${record.endLine})` : '';
  return { kind: 'reject', line: record.line, code, reason: reason + lines, raw, position };
}

/** Size of the source's input in bytes: of its open `file`, else of the file at its `path`. */
export async function sizeOf(options: Pick<SourceOptions, 'path' | 'file'>): Promise<number> {
  return options.file ? (await options.file.stat()).size : fileSize(options.path);
}

/** Size of the file at `path` in bytes; a CsvError naming the path when it cannot be read. */
export async function fileSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    throw new CsvError('input-unreadable', `cannot read the input ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
}
