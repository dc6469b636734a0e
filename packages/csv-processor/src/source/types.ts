import type { FileHandle } from 'node:fs/promises';

/** What a source yields: rows in input order, and rejects for records that cannot be parsed. */

/** Where the reader stands: enough to continue from here after a crash. */
export interface SourcePosition {
  /** Data records handed out so far (rows + rejects; a CSV header is not one), from the start. */
  readonly records: number;
  /** Byte offset where the next record starts (CSV and NDJSON; bytes read so far for JSON). */
  readonly offset: number;
  /** Line number of the next record (CSV, NDJSON) or next array element number (JSON). */
  readonly line: number;
}

/** Input file formats. */
export type InputFormat = 'csv' | 'json' | 'ndjson';

/** Supported input encodings. Output is always UTF-8. */
/** The encodings an input (and a review file) may be read in. */
export const INPUT_ENCODINGS = ['utf8', 'latin1', 'windows-1252'] as const;
export type InputEncoding = (typeof INPUT_ENCODINGS)[number];

/** Stable reasons a record goes to the rejects file. */
export type RejectCode =
  'column-count' | 'broken-quoting' | 'undecodable-bytes' | 'invalid-json' | 'not-an-object' | 'record-too-large' | 'result-key-clash' | 'duplicate-key';

/** A parsed row: CSV cells aligned with the header, or a JSON object. */
export interface SourceRow {
  readonly kind: 'row';
  /** Line (CSV, NDJSON) or element number (JSON array), 1-based. */
  readonly line: number;
  /** CSV cells, same length as the header. */
  readonly cells?: readonly string[];
  /** JSON / NDJSON object. */
  readonly object?: Readonly<Record<string, unknown>>;
  readonly position: SourcePosition;
}

/** A record that could not be parsed, for the rejects file. */
export interface SourceReject {
  readonly kind: 'reject';
  /** First line (or element number) of the record. */
  readonly line: number;
  readonly code: RejectCode;
  /** What is wrong and what to do, for people. */
  readonly reason: string;
  /** The record's text as read (undecodable bytes shown as U+FFFD). */
  readonly raw: string;
  readonly position: SourcePosition;
}

export type SourceItem = SourceRow | SourceReject;

/** An opened input. */
export interface Source {
  readonly format: InputFormat;
  /** CSV header names, in file order; undefined for JSON inputs. */
  readonly header?: readonly string[];
  /** Total input size in bytes, for progress. */
  readonly totalBytes: number;
  /** Items after the start position, in input order. */
  readonly items: AsyncIterable<SourceItem>;
  /** Releases the file (also done when `items` finishes or is returned early). */
  close(): Promise<void>;
}

/** Options common to every source. */
export interface SourceOptions {
  readonly path: string;
  /**
   * The input opened by the caller (a run): every read goes through this handle, so the source
   * reads the file the run opened, also when another is renamed over `path` meanwhile; the caller
   * closes it. Without it the source opens `path` for each read.
   */
  readonly file?: FileHandle;
  readonly format: InputFormat;
  /** Default 'utf8'. */
  readonly encoding?: InputEncoding;
  /** CSV field delimiter, one ASCII character. Default ','. */
  readonly delimiter?: string;
  /** Continue from here (a checkpoint); default the start of the file. */
  readonly start?: SourcePosition;
  /** Largest record in bytes, default 1 MiB (see FramerOptions.maxRecordBytes). */
  readonly maxRecordBytes?: number;
}
