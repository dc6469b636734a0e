/**
 * Splits a byte stream into raw records: one per line, except that a newline inside a quoted CSV
 * field belongs to the record. Works on bytes, not text: quote, CR and LF are ASCII and never
 * occur inside a multi-byte UTF-8 sequence, so framing is the same for UTF-8, Latin-1 and
 * Windows-1252, and each record's exact byte offset is known (the checkpoint stores it).
 */

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;

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
  /** Set when the record was cut short because a quote was never closed. */
  readonly unclosedQuote?: true;
  /**
   * Set when the record is longer than `maxRecordBytes`: its full length and start offset; `bytes`
   * then holds only its first {@link OVERSIZED_SAMPLE_BYTES} bytes (the rest was not kept).
   */
  readonly tooLarge?: { readonly length: number; readonly offset: number };
}

/** Default largest record, in bytes. */
export const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;

/** Bytes kept of a record that is too large, to show in the rejects file. */
export const OVERSIZED_SAMPLE_BYTES = 1024;

/** Options of {@link frameRecords}. */
export interface FramerOptions {
  /** Treat `"` as a quote that may hide newlines (CSV). Off for NDJSON. */
  readonly quotes: boolean;
  /** Byte offset of the first byte the stream delivers. Default 0. */
  readonly startOffset?: number;
  /** Line number of the first record the stream delivers. Default 1. */
  readonly startLine?: number;
  /**
   * Largest record in bytes (default 1 MiB). A quoted field still open after this many bytes is
   * taken to be a stray quote: the record's first line is given back alone, marked
   * `unclosedQuote`, and framing restarts on the next line, so memory stays bounded. Any other
   * record longer than this is read through to its end without being kept and given back with
   * `tooLarge` set.
   */
  readonly maxRecordBytes?: number;
}

/**
 * Frames records from `chunks`. Empty lines (no bytes, or only CR) are skipped but counted in
 * line numbers.
 */
export async function* frameRecords(chunks: AsyncIterable<Buffer>, options: FramerOptions): AsyncGenerator<RawRecord> {
  const maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  let pending: Buffer = Buffer.alloc(0);
  let pendingOffset = options.startOffset ?? 0; // absolute offset of pending[0]
  let line = options.startLine ?? 1;
  // Scan state inside `pending`, kept across chunks so a long record is not rescanned.
  let scan = 0;
  let inQuote = false;
  let newlines = 0;
  // A record past maxRecordBytes being read through: its start, and the bytes and LFs dropped so far.
  let skip: { head: Buffer; line: number; offset: number; bytes: number; lf: number } | undefined;

  function* drain(final: boolean): Generator<RawRecord> {
    for (;;) {
      let end = -1;
      while (scan < pending.length) {
        if (inQuote) {
          const q = pending.indexOf(QUOTE, scan);
          const stop = q === -1 ? pending.length : q;
          newlines += countLf(pending, scan, stop);
          if (q === -1) {
            scan = pending.length;
            break;
          }
          inQuote = false;
          scan = q + 1;
        } else {
          const lf = pending.indexOf(LF, scan);
          const q = options.quotes ? pending.indexOf(QUOTE, scan) : -1;
          if (q !== -1 && (lf === -1 || q < lf)) {
            inQuote = true;
            scan = q + 1;
          } else if (lf !== -1) {
            end = lf;
            break;
          } else {
            scan = pending.length;
          }
        }
      }
      if (!skip && end === -1 && inQuote && (pending.length > maxRecordBytes || final) && newlines > 0) {
        // A quote opened and never closed: give back the first line alone and reframe the rest.
        const firstLf = pending.indexOf(LF);
        yield* emit(firstLf, true);
        continue;
      }
      if (end === -1) {
        if (final && skip) yield* emitTooLarge(pending.length);
        else if (final && pending.length > 0) yield* emit(pending.length, inQuote);
        else if (skip || pending.length > maxRecordBytes) dropScanned();
        return;
      }
      if (skip) yield* emitTooLarge(end);
      else yield* emit(end, false);
    }
  }

  /** Drops the scanned bytes of a record that is too large, keeping its first bytes aside. */
  function dropScanned(): void {
    skip ??= { head: Buffer.from(pending.subarray(0, OVERSIZED_SAMPLE_BYTES)), line, offset: pendingOffset, bytes: 0, lf: 0 };
    skip.bytes += scan;
    skip.lf += countLf(pending, 0, scan);
    pending = pending.subarray(scan);
    pendingOffset += scan;
    scan = 0;
  }

  function* emitTooLarge(end: number): Generator<RawRecord> {
    const started = skip!;
    skip = undefined;
    const next = Math.min(end + 1, pending.length);
    const lines = started.lf + countLf(pending, 0, end);
    const length = started.bytes + (end > 0 && pending[end - 1] === CR ? end - 1 : end);
    const record: RawRecord = {
      bytes: started.head,
      line: started.line,
      endLine: started.line + lines,
      nextOffset: pendingOffset + next,
      tooLarge: { length, offset: started.offset },
    };
    line = started.line + lines + (end < pending.length ? 1 : 0);
    pending = pending.subarray(next);
    pendingOffset += next;
    scan = 0;
    inQuote = false;
    newlines = 0;
    yield record;
  }

  function* emit(end: number, unclosedQuote: boolean): Generator<RawRecord> {
    const next = Math.min(end + 1, pending.length);
    let stop = end;
    if (stop > 0 && pending[stop - 1] === CR) stop -= 1;
    const bytes = pending.subarray(0, stop);
    const lines = unclosedQuote ? 0 : countLf(pending, 0, end);
    const record: RawRecord = {
      bytes,
      line,
      endLine: line + lines,
      nextOffset: pendingOffset + next,
      ...(unclosedQuote ? { unclosedQuote: true as const } : {}),
    };
    line += lines + (end < pending.length ? 1 : 0);
    pending = pending.subarray(next);
    pendingOffset += next;
    scan = 0;
    inQuote = false;
    newlines = 0;
    if (bytes.length > 0 && !(bytes.length === 1 && bytes[0] === CR)) yield record;
  }

  for await (const chunk of chunks) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    yield* drain(false);
  }
  yield* drain(true);
}

function countLf(buf: Buffer, from: number, to: number): number {
  let n = 0;
  for (let i = buf.indexOf(LF, from); i !== -1 && i < to; i = buf.indexOf(LF, i + 1)) n += 1;
  return n;
}
