import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, stat, unlink, type FileHandle } from 'node:fs/promises';
import { CsvError } from '../errors.js';
import { fsProblem } from '../run-files.js';
import { writeError } from './write-error.js';

/** Bytes at the end of a committed file whose digest a checkpoint keeps (see {@link DurableFile.tail}). */
export const TAIL_BYTES = 64 * 1024;

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

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
  /** The run's checkpoint, for the advice when the file is taken away mid-run. */
  readonly #checkpoint: string;
  /** The last {@link TAIL_BYTES} bytes of the file as committed, and their sha256. */
  #tail: Buffer;
  #tailSha256: string;

  private constructor(path: string, label: string, handle: FileHandle, bytes: number, created: boolean, checkpoint: string, tail = Buffer.alloc(0)) {
    this.path = path;
    this.label = label;
    this.#handle = handle;
    this.#bytes = bytes;
    this.#created = created;
    this.#checkpoint = checkpoint;
    this.#tail = tail;
    this.#tailSha256 = sha256(tail);
  }

  /**
   * Opens `path` for writing without changing it yet (see {@link start}): created when it is not
   * there. Resume (`keepBytes` given): the file must be there, at least that long, and, when
   * `keepTail` (the checkpoint's {@link tail}) is given, end in the bytes the run wrote there: a
   * file put in its place since (another run's output, an older copy) is refused rather than cut
   * back and continued. A file that cannot be opened is `output-unwritable` naming it, the cause
   * and what to do.
   */
  static async open(path: string, label: string, keepBytes?: number, checkpoint = 'the checkpoint', keepTail?: string): Promise<DurableFile> {
    const startOver = `delete ${checkpoint} and rerun without --resume to start over (the answers the run paid for are not bought again unless it ran with --store off)`;
    try {
      if (keepBytes === undefined) {
        const { handle, created } = await openOrCreate(path);
        return new DurableFile(path, label, handle, 0, created, checkpoint);
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
      const from = Math.max(0, keepBytes - TAIL_BYTES);
      const tail = Buffer.alloc(keepBytes - from);
      const { bytesRead } = await handle.read(tail, 0, tail.length, from);
      if (keepTail !== undefined && (bytesRead !== tail.length || sha256(tail) !== keepTail)) {
        await handle.close();
        throw new CsvError(
          'resume-mismatch',
          `${label} is not the file the interrupted run wrote: its bytes ${from}-${Math.max(from, keepBytes - 1)}, the last the checkpoint counts, differ from what the run wrote there (replaced or rewritten since the run stopped?); put back the file the run wrote and rerun with --resume, or ${startOver}`,
        );
      }
      return new DurableFile(path, label, handle, keepBytes, false, checkpoint, tail);
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

  /** sha256 (hex) of the last {@link TAIL_BYTES} bytes on disk after the last commit (all of them when fewer). */
  get tail(): string {
    return this.#tailSha256;
  }

  /** Buffers `text` for the next commit. */
  append(text: string): void {
    this.#pending.push(text);
  }

  /**
   * Writes the buffered text at the end of the file and fsyncs it. A failed write (disk full,
   * file-size limit) is an `output-io` error naming the file; what it wrote past the last commit
   * is cut off by `--resume`. The file must still be the one this run writes, before the write and
   * after the sync (see {@link #verify}), so a checkpoint never counts rows in a file that is gone.
   */
  async commit(): Promise<void> {
    await this.#verify();
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
        this.#tail = data.length >= TAIL_BYTES ? data.subarray(data.length - TAIL_BYTES) : Buffer.concat([this.#tail, data]).subarray(-TAIL_BYTES);
        this.#tailSha256 = sha256(this.#tail);
      }
      await this.#handle.sync();
    } catch (err) {
      throw writeError(`${this.label}`, err);
    }
    await this.#verify();
  }

  /** Throws `output-changed` when the file was taken away or changed since the last commit (see {@link #verify}). */
  async verify(): Promise<void> {
    await this.#verify();
  }

  /**
   * Refuses to go on with a file another process took away or changed while the run writes it
   * (README "Files a run writes, and the lock"): deleted or renamed (a cleanup job, logrotate),
   * replaced by another file under its name, or cut short or written to (logrotate's
   * copytruncate). The run would otherwise report rows written that are in no file under the name
   * it gives, or fill a cut file's start with NUL bytes. `output-changed`, naming the file and
   * what to do; the checkpoint stays at the last batch that was whole in the file.
   */
  async #verify(): Promise<void> {
    const expectedBytes = this.#bytes;
    let own, named;
    try {
      own = await this.#handle.stat();
      named = await stat(this.path).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
        throw err;
      });
    } catch (err) {
      throw writeError(this.label, err);
    }
    let what: string;
    if (own.nlink === 0 || named === undefined) what = 'deleted or renamed';
    // By inode alone: the file the run holds open is alive, so no other file of its file system has
    // its inode number, and a device number may differ between a path's stat and the handle's
    // (overlay file systems on older kernels).
    else if (named.ino !== own.ino) what = 'replaced by another file';
    else if (own.size !== expectedBytes)
      what = `${own.size < expectedBytes ? 'cut short' : 'written to'} by another process (${own.size} bytes; the run wrote ${expectedBytes})`;
    else return;
    const checkpointLeft = await stat(this.#checkpoint).then(
      () => true,
      () => false,
    );
    const advice = checkpointLeft
      ? `put back the file the run wrote under that name, as it was, and rerun with --resume; or delete ${this.#checkpoint} and rerun without --resume to clean the input from the start`
      : 'rerun without --resume to clean the input from the start';
    throw new CsvError(
      'output-changed',
      `${this.label} was ${what} while the run wrote it (logrotate or a cleanup job?): leave the files of a run alone until it ends; ${advice} (answers already paid for are not bought again unless the run had --store off)`,
    );
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
