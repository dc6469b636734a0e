import { constants } from 'node:fs';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { CsvError } from '../errors.js';
import { fsProblem } from '../run-files.js';
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
  /** Whether opening it created the file (it was not there before this run). */
  readonly #created: boolean;

  private constructor(path: string, label: string, handle: FileHandle, bytes: number, created: boolean) {
    this.path = path;
    this.label = label;
    this.#handle = handle;
    this.#bytes = bytes;
    this.#created = created;
  }

  /**
   * Opens `path` for writing without changing it yet (see {@link start}): created when it is not
   * there. Resume (`keepBytes` given): the file must be there, at least that long. A file that
   * cannot be opened is `output-unwritable` naming it, the cause and what to do.
   */
  static async open(path: string, label: string, keepBytes?: number, checkpoint = 'the checkpoint'): Promise<DurableFile> {
    const startOver = `delete ${checkpoint} and rerun without --resume to start over (the answers the run paid for are not bought again unless it ran with --store off)`;
    try {
      if (keepBytes === undefined) {
        const { handle, created } = await openOrCreate(path);
        return new DurableFile(path, label, handle, 0, created);
      }
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
      return new DurableFile(path, label, handle, keepBytes, false);
    } catch (err) {
      if (err instanceof CsvError) throw err;
      throw new CsvError('output-unwritable', `cannot open ${label} for writing: ${fsProblem(err)}`, { cause: err });
    }
  }

  /**
   * Cuts the file to where this run writes from: empty for a fresh run, the checkpointed length on
   * resume (dropping whatever a killed run wrote after its last checkpoint). Called once every file
   * of the run is open, so a run refused on the way leaves the files as they were.
   */
  async start(): Promise<void> {
    try {
      await this.#handle.truncate(this.#bytes);
    } catch (err) {
      throw writeError(this.label, err);
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

  /** Closes the file of a run refused before {@link start}: removed when this run created it, else left as it was. */
  async discard(): Promise<void> {
    await this.#handle.close().catch(() => undefined);
    if (this.#created) await unlink(this.path).catch(() => undefined);
  }
}

/** Opens `path` for writing as it is, creating it when it is not there (and saying whether it did). */
async function openOrCreate(path: string): Promise<{ handle: FileHandle; created: boolean }> {
  for (let attempt = 0; ; attempt++) {
    try {
      return { handle: await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL), created: true };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    try {
      return { handle: await open(path, constants.O_WRONLY), created: false };
    } catch (err) {
      // Removed between the two opens: try again (a file another process keeps replacing fails in the end).
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw err;
    }
  }
}
