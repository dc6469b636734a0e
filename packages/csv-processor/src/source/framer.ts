/**
 * Splits a byte stream into raw records: one per line, except that a newline inside a quoted CSV
 * field belongs to the record. Works on bytes, not text: quote, CR, LF and the (ASCII) delimiter
 * never occur inside a multi-byte UTF-8 sequence, so framing is the same for UTF-8, Latin-1 and
 * Windows-1252, and each record's exact byte offset is known (the checkpoint stores it).
 *
 * Quoting follows RFC 4180 as spreadsheets write it: a `"` opens a quoted field only as the first
 * byte of a field (at the start of the record or just after a delimiter). A `"` anywhere else in
 * an unquoted field is a literal character (`Monitor 24" Zoll`, as Excel exports inch marks) and
 * never hides a newline; the field splitter (csv-fields.ts) applies the same rule.
 */

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
/** A first line holding only the byte order mark and a CR (`\uFEFF\r\r\n`): blank, like a CR-only line. */
const BOM_CR = Buffer.from([0xef, 0xbb, 0xbf, CR]);

/** One raw record as framed from the input. */
export interface RawRecord {
  /** Record bytes without the line terminator (CRLF or LF). */
  readonly bytes: Buffer;
  /** Physical line (1-based) on which the record starts. */
  readonly line: number;
  /** Physical line on which the record ends (> line when a quoted field holds newlines). */
  readonly endLine: number;
  /** Byte offset just after the record's line terminator: where the next record starts. */
  readonly nextOffset: number;
  /**
   * Set when a quote opened on this line is never closed, or closes into a record that does not
   * make one row: the line is given back alone (its quoting is broken) and the lines after it are
   * framed again, each judged on its own.
   */
  readonly unclosedQuote?: true;
  /**
   * Set when the record is longer than `maxRecordBytes` (its line terminator not counted): its
   * full length and start offset; `bytes` then holds only its first {@link OVERSIZED_SAMPLE_BYTES}
   * bytes (the rest was not kept).
   */
  readonly tooLarge?: { readonly length: number; readonly offset: number };
}

/** Default largest record, in bytes. */
export const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;

/** Bytes kept of a record that is too large, to show in the rejects file. */
export const OVERSIZED_SAMPLE_BYTES = 1024;

/** Options of {@link frameRecords}. */
export interface FramerOptions {
  /** Treat `"` at the start of a field as a quote that may hide newlines (CSV). Off for NDJSON. */
  readonly quotes: boolean;
  /**
   * CSV field delimiter, one ASCII character (default `,`): a quote opens a field only after it.
   * A function when it is known only once the header is read (review files).
   */
  readonly delimiter?: string | (() => string);
  /** Byte offset of the first byte the stream delivers. Default 0. */
  readonly startOffset?: number;
  /** Line number of the first record the stream delivers. Default 1. */
  readonly startLine?: number;
  /**
   * Largest record in bytes, its line terminator not counted (default 1 MiB). A longer record is
   * read through to its end (a quoted field up to its closing quote) without being kept and given
   * back with `tooLarge` set, so memory stays bounded.
   */
  readonly maxRecordBytes?: number;
  /**
   * Whether the bytes of a multi-line record (within `maxRecordBytes`) make exactly one row. When
   * not, the record was framed from a quote that is not what it looks like: its first line is
   * given back alone (`unclosedQuote`) and framing starts again on its second line.
   */
  readonly isRow?: (bytes: Buffer) => boolean;
  /**
   * The input again from `offset`. A quoted record too large to keep whose quote turns out never
   * closed, or closed into a broken field, is then handled like a short one: its first line given
   * back alone and the input read again from its second line. Without it such a record is one
   * `tooLarge` record.
   */
  readonly reopen?: (offset: number) => AsyncIterable<Buffer>;
}

/** The first line of a record past maxRecordBytes. */
interface FirstLine {
  readonly bytes: Buffer;
  readonly length: number;
  readonly next: number;
}

/** A record past maxRecordBytes being read through. */
interface Skipped {
  /** Its first bytes dropped so far, up to {@link OVERSIZED_SAMPLE_BYTES}, for the rejects file. */
  head: Buffer;
  readonly line: number;
  readonly offset: number;
  /**
   * Its first line, once its end is known, when the record spans lines: the line's length (without
   * terminator), its bytes (only the first {@link OVERSIZED_SAMPLE_BYTES} when it is itself over
   * the limit) and where the line after it starts.
   */
  first?: FirstLine;
  /** Bytes and LFs dropped so far, and the last byte dropped. */
  bytes: number;
  lf: number;
  lastByte: number | undefined;
}

/**
 * Frames records from `chunks`. Empty lines (no bytes, only CR, or only the UTF-8 byte order mark
 * at the start of the input) are skipped but counted in line numbers.
 */
export async function* frameRecords(chunks: AsyncIterable<Buffer>, options: FramerOptions): AsyncGenerator<RawRecord> {
  const maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  const delimiterOption = options.delimiter ?? ',';
  const delimiter = typeof delimiterOption === 'function' ? () => delimiterOption().charCodeAt(0) : () => delimiterOption.charCodeAt(0);
  let source = chunks[Symbol.asyncIterator]();
  let pending: Buffer = Buffer.alloc(0);
  let pendingOffset = options.startOffset ?? 0; // absolute offset of pending[0]
  let line = options.startLine ?? 1;
  // Scan state of the record at pending[0], kept across chunks so a long record is not rescanned.
  let scan = 0;
  let inQuote = false;
  let newlines = 0; // LFs inside quoted fields
  let broken = false; // a quoted field closed before something other than a delimiter or line end
  let skip: Skipped | undefined;
  let restart: { offset: number; line: number } | undefined;
  // Absolute offset of the next quote at or after the last search (-1: none up to `quoteSearched`),
  // so a chunk of many short records is not searched to its end once per record.
  let nextQuote = -1;
  let quoteSearched = -1;

  function quoteFrom(from: number): number {
    const at = pendingOffset + from;
    if (nextQuote >= at) return nextQuote - pendingOffset;
    if (nextQuote === -1 && quoteSearched === pendingOffset + pending.length && quoteSearched >= at) return -1;
    const q = pending.indexOf(QUOTE, from);
    nextQuote = q === -1 ? -1 : pendingOffset + q;
    quoteSearched = pendingOffset + pending.length;
    return q;
  }

  /** Whether pending[i] is the first byte of a field. */
  function fieldStart(i: number): boolean {
    if (i === 0) return skip ? skip.lastByte === delimiter() : true;
    if (pending[i - 1] === delimiter()) return true;
    // The header's first field, after the byte order mark.
    return i === 3 && !skip && pendingOffset === 0 && pending.subarray(0, 3).equals(BOM);
  }

  function* drain(final: boolean): Generator<RawRecord> {
    for (;;) {
      let end = -1;
      while (scan < pending.length) {
        if (inQuote) {
          const q = pending.indexOf(QUOTE, scan);
          newlines += countLf(pending, scan, q === -1 ? pending.length : q);
          if (q === -1) {
            scan = pending.length;
            break;
          }
          if (q + 1 === pending.length && !final) {
            scan = q; // a doubled quote or the closing one: the next chunk tells
            break;
          }
          if (pending[q + 1] === QUOTE) {
            scan = q + 2;
            continue;
          }
          inQuote = false;
          scan = q + 1;
          const after = pending[scan];
          if (after !== undefined && after !== delimiter() && after !== CR && after !== LF) broken = true;
        } else {
          const lf = pending.indexOf(LF, scan);
          const q = options.quotes ? quoteFrom(scan) : -1;
          if (q !== -1 && (lf === -1 || q < lf)) {
            if (fieldStart(q)) inQuote = true;
            scan = q + 1;
          } else if (lf !== -1) {
            end = lf;
            break;
          } else {
            scan = pending.length;
          }
        }
      }
      if (end === -1) {
        if (!final) {
          // A record past the limit (a CR that may end it allowed) is read on without being kept.
          if (skip || pending.length > maxRecordBytes + 1) dropScanned();
          return;
        }
        if (pending.length === 0 && !skip) return;
        end = pending.length;
      }
      yield* complete(end);
      if (restart) return;
    }
  }

  /** Gives back the record pending[0..end) (end: its LF, or the end of the input). */
  function* complete(end: number): Generator<RawRecord> {
    if (skip) {
      const first = inQuote || broken ? firstLine(end) : undefined;
      if (first && options.reopen) {
        // Its first line alone is given back, as too large itself when it is: it costs no later line.
        const { line: startLine, offset } = skip;
        skip = undefined;
        restart = { offset: first.next, line: startLine + 1 };
        yield first.length > maxRecordBytes
          ? { bytes: first.bytes, line: startLine, endLine: startLine, nextOffset: first.next, tooLarge: { length: first.length, offset } }
          : { bytes: first.bytes, line: startLine, endLine: startLine, nextOffset: first.next, unclosedQuote: true };
        return;
      }
      yield* emitTooLarge(end);
      return;
    }
    if (newlines > 0) {
      const length = end > 0 && pending[end - 1] === CR ? end - 1 : end;
      const judged = length <= maxRecordBytes && options.isRow !== undefined;
      if (inQuote || broken || (judged && !options.isRow!(pending.subarray(0, length)))) {
        // The record's first line holds a quote still open at its end: that line alone is broken,
        // and the lines after it are framed again as if it were not there.
        nextQuote = -1;
        quoteSearched = -1;
        yield* emit(pending.indexOf(LF), true);
        return;
      }
    }
    yield* emit(end, inQuote);
  }

  /** Drops the scanned bytes of a record that is too large, keeping its first bytes aside. */
  function dropScanned(): void {
    if (!skip) {
      skip = { head: Buffer.alloc(0), line, offset: pendingOffset, bytes: 0, lf: 0, lastByte: undefined };
    }
    if (scan === 0) return;
    skip.first = firstLine(scan);
    // However the input was chunked, the sample is the record's first bytes, as many as it keeps.
    if (skip.head.length < OVERSIZED_SAMPLE_BYTES) {
      skip.head = Buffer.concat([skip.head, pending.subarray(0, Math.min(scan, OVERSIZED_SAMPLE_BYTES - skip.head.length))]);
    }
    skip.bytes += scan;
    skip.lf += countLf(pending, 0, scan);
    skip.lastByte = pending[scan - 1];
    pending = pending.subarray(scan);
    pendingOffset += scan;
    scan = 0;
  }

  /**
   * The first line of the record being read through, when its LF is among the bytes dropped so far
   * or in pending[0..upTo), else undefined (the record is one line so far). Call before dropping.
   */
  function firstLine(upTo: number): FirstLine | undefined {
    if (!skip) return undefined;
    if (skip.first || skip.lf > 0) return skip.first;
    const lf = pending.indexOf(LF);
    if (lf === -1 || lf >= upTo) return undefined;
    const cr = lf > 0 ? pending[lf - 1] === CR : skip.lastByte === CR;
    const length = skip.bytes + lf - (cr ? 1 : 0);
    // A line within the limit is all pending (the first drop takes more than the limit of it); of
    // a longer one, its first bytes: those dropped so far, then the pending ones.
    const bytes =
      length <= maxRecordBytes
        ? Buffer.from(pending.subarray(0, length))
        : Buffer.concat([skip.head, pending.subarray(0, OVERSIZED_SAMPLE_BYTES)]).subarray(0, Math.min(length, OVERSIZED_SAMPLE_BYTES));
    return { bytes, length, next: pendingOffset + lf + 1 };
  }

  function* emitTooLarge(end: number): Generator<RawRecord> {
    const started = skip!;
    skip = undefined;
    const next = Math.min(end + 1, pending.length);
    const lines = started.lf + countLf(pending, 0, end);
    const cr = end > 0 ? pending[end - 1] === CR : started.lastByte === CR;
    const length = started.bytes + end - (cr ? 1 : 0);
    const head = Buffer.concat([started.head, pending.subarray(0, Math.max(0, Math.min(end, OVERSIZED_SAMPLE_BYTES - started.head.length)))]);
    const record: RawRecord = {
      bytes: head.subarray(0, length), // not the CR of its terminator
      line: started.line,
      endLine: started.line + lines,
      nextOffset: pendingOffset + next,
      tooLarge: { length, offset: started.offset },
    };
    line = started.line + lines + (end < pending.length ? 1 : 0);
    advance(next);
    yield record;
  }

  function* emit(end: number, unclosedQuote: boolean): Generator<RawRecord> {
    const next = Math.min(end + 1, pending.length);
    const stop = end > 0 && pending[end - 1] === CR ? end - 1 : end;
    const atStart = pendingOffset === 0;
    const lines = countLf(pending, 0, end);
    const tooLarge = stop > maxRecordBytes;
    const bytes = tooLarge ? Buffer.from(pending.subarray(0, Math.min(stop, OVERSIZED_SAMPLE_BYTES))) : pending.subarray(0, stop);
    const record: RawRecord = {
      bytes,
      line,
      endLine: line + lines,
      nextOffset: pendingOffset + next,
      ...(unclosedQuote && !tooLarge ? { unclosedQuote: true as const } : {}),
      ...(tooLarge ? { tooLarge: { length: stop, offset: pendingOffset } } : {}),
    };
    line += lines + (end < pending.length ? 1 : 0);
    advance(next);
    const empty = bytes.length === 0 || (bytes.length === 1 && bytes[0] === CR) || (atStart && (bytes.equals(BOM) || bytes.equals(BOM_CR)));
    if (!empty) yield record;
  }

  function advance(next: number): void {
    pending = pending.subarray(next);
    pendingOffset += next;
    scan = 0;
    inQuote = false;
    newlines = 0;
    broken = false;
  }

  try {
    for (;;) {
      const chunk = await source.next();
      if (chunk.done) {
        yield* drain(true);
        if (!restart) return;
      } else {
        pending = pending.length === 0 ? chunk.value : Buffer.concat([pending, chunk.value]);
        yield* drain(false);
        if (!restart) continue;
        await source.return?.();
      }
      // Read the input again from the line after a broken quoted record too large to have kept.
      source = options.reopen!(restart.offset)[Symbol.asyncIterator]();
      pending = Buffer.alloc(0);
      pendingOffset = restart.offset;
      line = restart.line;
      restart = undefined;
      advance(0);
      nextQuote = -1;
      quoteSearched = -1;
    }
  } finally {
    await source.return?.();
  }
}

function countLf(buf: Buffer, from: number, to: number): number {
  let n = 0;
  for (let i = buf.indexOf(LF, from); i !== -1 && i < to; i = buf.indexOf(LF, i + 1)) n += 1;
  return n;
}
