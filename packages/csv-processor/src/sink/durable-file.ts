import { open, type FileHandle } from 'node:fs/promises';
import { CsvError } from '../errors.js';
import { writeError } from './write-error.js';

/**
 * An output file written in batches: `append` buffers text, `commit` writes it and fsyncs, so that
 * a length recorded in a checkpoint after `commit` is on disk.
 */
export class DurableFile {
  readonly path: string;
  /** How error messages name the file ("the output /x/out.csv"). */
  readonly label: string;
  #handle: FileHandle;
  #bytes: number;
  #pending: string[] = [];

  private constructor(path: string, label: string, handle: FileHandle, bytes: number) {
    this.path = path;
    this.label = label;
    this.#handle = handle;
    this.#bytes = bytes;
  }

  /**
   * Opens `path`. Fresh: created or truncated to empty. Resume (`keepBytes` given): truncated to
   * the checkpointed length, dropping whatever a killed run wrote after its last checkpoint.
   */
  static async open(path: string, label: string, keepBytes?: number, checkpoint = 'the checkpoint'): Promise<DurableFile> {
    const startOver = `delete ${checkpoint} and rerun without --resume to start over (the answers the run paid for are not bought again unless it ran with --store off)`;
    try {
      if (keepBytes === undefined) return new DurableFile(path, label, await open(path, 'w'), 0);
      const handle = await open(path, 'r+').catch((err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        throw new CsvError('resume-mismatch', `${label} of the interrupted run is gone (its checkpoint counts ${keepBytes} bytes in it): ${startOver}`);
      });
      const { size } = await handle.stat();
      if (size < keepBytes) {
        await handle.close();
        throw new CsvError(
          'resume-mismatch',
          `${label} is shorter (${size} bytes) than the checkpoint says (${keepBytes}): it was changed since the run stopped; ${startOver}`,
        );
      }
      await handle.truncate(keepBytes);
      return new DurableFile(path, label, handle, keepBytes);
    } catch (err) {
      if (err instanceof CsvError) throw err;
      throw new CsvError('output-unwritable', `cannot open ${path} for writing: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, {
        cause: err,
      });
    }
  }

  /** Bytes on disk after the last commit. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Buffers `text` for the next commit. */
  append(text: string): void {
    this.#pending.push(text);
  }

  /**
   * Writes the buffered text at the end of the file and fsyncs it. A failed write (disk full,
   * file-size limit) is an `output-io` error naming the file; what it wrote past the last commit
   * is cut off by `--resume`.
   */
  async commit(): Promise<void> {
    try {
      if (this.#pending.length > 0) {
        const data = Buffer.from(this.#pending.join(''), 'utf8');
        this.#pending = [];
        let written = 0;
        while (written < data.length) {
          const { bytesWritten } = await this.#handle.write(data, written, data.length - written, this.#bytes + written);
          written += bytesWritten;
        }
        this.#bytes += data.length;
      }
      await this.#handle.sync();
    } catch (err) {
      throw writeError(`${this.label}`, err);
    }
  }

  /** Closes the file; buffered text that was not committed is dropped. */
  async close(): Promise<void> {
    await this.#handle.close();
  }
}
