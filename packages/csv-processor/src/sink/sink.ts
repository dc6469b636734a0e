import type { RecordResult } from '@dq/core';
import type { InputFormat, SourceReject, SourceRow } from '../source/types.js';
import { formatCsvLine, formatHeaderLine, type CellValue } from './csv-format.js';
import { stringifyJson } from '../source/lossless-json.js';
import { DurableFile } from './durable-file.js';
import type { ResultColumns } from './result-columns.js';

/** Header of the rejects file. */
export const REJECT_COLUMNS = ['line', 'code', 'reason', 'raw'] as const;

/** Byte lengths and counts that a checkpoint records after a commit. */
export interface SinkState {
  readonly outputBytes: number;
  readonly rejectsBytes: number;
  /** Rows written to the output so far (a JSON array needs it to place its commas). */
  readonly rows: number;
  /**
   * sha256 of the last 64 KiB of each file up to its length above: a resume refuses a file that
   * does not end in them (replaced since). Absent in a checkpoint of an older dq-csv.
   */
  readonly outputTail?: string;
  readonly rejectsTail?: string;
}

/** Options of {@link openSink}. */
export interface SinkOptions {
  readonly outputPath: string;
  readonly rejectsPath: string;
  /** Output format; the same as the input's. */
  readonly format: InputFormat;
  /** CSV delimiter of the output (the input's). */
  readonly delimiter: string;
  /** CSV input header; the output header is this plus the result columns. */
  readonly header?: readonly string[];
  readonly columns: ResultColumns;
  /** Neutralise formula-like cells of the output and the rejects (see formatCell). */
  readonly spreadsheetSafe?: boolean;
  /** Resume: truncate both files to these lengths and go on from there. */
  readonly resume?: SinkState;
  /** The checkpoint resumed from, for the message when a file it counts on is gone or shorter. */
  readonly checkpointPath?: string;
  /**
   * Called once both files are open (created when they were not there), before anything is
   * written to them: the run locks a file it has just created (run-files.ts, `lockNewFiles`).
   */
  readonly opened?: () => Promise<void>;
}

/**
 * Writes the output (every input row in order, result columns appended) and the rejects file
 * (CSV: line, code, reason, raw). `commit` makes both durable before a checkpoint may name them.
 */
export class Sink {
  readonly #output: DurableFile;
  readonly #rejects: DurableFile;
  readonly #options: SinkOptions;
  #rows: number;

  private constructor(options: SinkOptions, output: DurableFile, rejects: DurableFile) {
    this.#options = options;
    this.#output = output;
    this.#rejects = rejects;
    this.#rows = options.resume?.rows ?? 0;
  }

  /**
   * Opens both files (fresh: creates them and writes the headers; resume: truncates them to the
   * checkpoint). Neither is changed until both are open: a run refused because one of them cannot
   * be opened leaves the other as it was (an earlier run's output stays whole), and removes a file
   * it created.
   */
  static async open(options: SinkOptions): Promise<Sink> {
    const checkpoint = options.checkpointPath ?? 'the checkpoint';
    const output = await DurableFile.open(
      options.outputPath,
      `the output ${options.outputPath}`,
      options.resume?.outputBytes,
      checkpoint,
      options.resume?.outputTail,
    );
    let rejects: DurableFile;
    try {
      rejects = await DurableFile.open(
        options.rejectsPath,
        `the rejects file ${options.rejectsPath}`,
        options.resume?.rejectsBytes,
        checkpoint,
        options.resume?.rejectsTail,
      );
    } catch (err) {
      await output.discard();
      throw err;
    }
    const sink = new Sink(options, output, rejects);
    try {
      await options.opened?.();
    } catch (err) {
      await Promise.all([output.discard(), rejects.discard()]);
      throw err;
    }
    try {
      await output.start();
      await rejects.start();
    } catch (err) {
      await sink.close();
      throw err;
    }
    if (!options.resume) {
      if (options.format === 'csv') {
        output.append(formatHeaderLine([...(options.header ?? []), ...options.columns.names], options.delimiter, options.spreadsheetSafe));
      } else if (options.format === 'json') {
        output.append('[');
      }
      rejects.append(formatCsvLine(REJECT_COLUMNS, ',', options.spreadsheetSafe));
      await sink.commit();
    }
    return sink;
  }

  /** Buffers one output row. */
  row(row: SourceRow, result: RecordResult): void {
    const values = this.#options.columns.values(result);
    if (this.#options.format === 'csv') {
      this.#output.append(formatCsvLine([...(row.cells ?? []), ...values], this.#options.delimiter, this.#options.spreadsheetSafe));
    } else {
      // The spread keeps the order the input's keys were written in (lossless-json.ts, KEY_ORDER).
      const object: Record<string, unknown> = { ...row.object };
      this.#options.columns.names.forEach((name, i) => {
        object[name] = values[i] ?? null;
      });
      const json = stringifyJson(object);
      if (this.#options.format === 'ndjson') this.#output.append(json + '\n');
      else this.#output.append((this.#rows === 0 ? '\n' : ',\n') + json);
    }
    this.#rows += 1;
  }

  /** Buffers one reject. */
  reject(reject: SourceReject): void {
    const cells: CellValue[] = [reject.line, reject.code, reject.reason, reject.raw];
    this.#rejects.append(formatCsvLine(cells, ',', this.#options.spreadsheetSafe));
  }

  /** Writes and fsyncs both files (rejects first, then output). */
  async commit(): Promise<SinkState> {
    await this.#rejects.commit();
    await this.#output.commit();
    return this.state;
  }

  /** Throws `output-changed` when either file was taken away or changed since the last commit. */
  async verify(): Promise<void> {
    await this.#rejects.verify();
    await this.#output.verify();
  }

  /** Lengths and counts as of the last commit. */
  get state(): SinkState {
    return {
      outputBytes: this.#output.bytes,
      rejectsBytes: this.#rejects.bytes,
      rows: this.#rows,
      outputTail: this.#output.tail,
      rejectsTail: this.#rejects.tail,
    };
  }

  /** Ends the output (a JSON array gets its closing bracket), commits and closes both files. */
  async finish(): Promise<SinkState> {
    if (this.#options.format === 'json') this.#output.append(this.#rows === 0 ? ']\n' : '\n]\n');
    const state = await this.commit();
    await this.close();
    return state;
  }

  /** Closes both files without finishing (after an error: the checkpoint stays valid). */
  async close(): Promise<void> {
    await Promise.allSettled([this.#output.close(), this.#rejects.close()]);
  }
}
