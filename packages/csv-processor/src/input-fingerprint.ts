import { createHash } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { CsvError } from './errors.js';

/** Bytes in each sampled window of the input. */
export const FINGERPRINT_WINDOW = 64 * 1024;

/**
 * Samples of the input's content a checkpoint keeps beside its size and modification time, so
 * that `--resume` refuses an input replaced by another of the same size whose modification time
 * was put back (`cp -p`, `touch -r`, `rsync -t`). Three windows of {@link FINGERPRINT_WINDOW}
 * bytes, whatever the input's size (a 10 GB input costs three 64 KiB reads): its start, its end,
 * and the bytes just before where the resume starts reading (the checkpoint's offset).
 */
export interface InputFingerprint {
  readonly algorithm: 'sha256';
  /** Bytes per window. */
  readonly window: number;
  /** sha256 of the first `window` bytes (the whole input when it is shorter). */
  readonly head: string;
  /** sha256 of the last `window` bytes. */
  readonly tail: string;
  /** sha256 of the `window` bytes that end at `offset`, the checkpoint's byte offset. */
  readonly before: { readonly offset: number; readonly sha256: string };
}

/**
 * Reads the windows of {@link InputFingerprint} from one open handle of the input, the file the
 * run reads: an input replaced under its name meanwhile does not change the samples the run's
 * checkpoints keep.
 */
export class InputSampler {
  readonly #handle: FileHandle;
  readonly #size: number;
  readonly #head: string;
  readonly #tail: string;

  private constructor(handle: FileHandle, size: number, head: string, tail: string) {
    this.#handle = handle;
    this.#size = size;
    this.#head = head;
    this.#tail = tail;
  }

  /**
   * Opens the input and samples its start and end. `size` and `ino`: the input's as the run saw
   * it; a file of another size or inode under that name now (replaced in between) is refused.
   */
  static async open(path: string, size: number, ino: number): Promise<InputSampler> {
    const handle = await open(path, 'r').catch((err: unknown) => {
      throw new CsvError('input-unreadable', `cannot read the input ${path}: ${(err as NodeJS.ErrnoException).code}`, { cause: err });
    });
    try {
      const now = await handle.stat();
      if (now.size !== size || now.ino !== ino) {
        throw new CsvError('input-unreadable', `the input ${path} was replaced or changed while dq-csv opened it; rerun when nothing writes it`);
      }
      const head = await hashRange(handle, 0, Math.min(FINGERPRINT_WINDOW, size));
      const tail = await hashRange(handle, Math.max(0, size - FINGERPRINT_WINDOW), size);
      return new InputSampler(handle, size, head, tail);
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /**
   * The handle the run reads the input through (its source's `file`): the file the run opened,
   * also once another file is renamed over its name.
   */
  get file(): FileHandle {
    return this.#handle;
  }

  /** The fingerprint for a checkpoint at byte `offset`. */
  async at(offset: number): Promise<InputFingerprint> {
    return {
      algorithm: 'sha256',
      window: FINGERPRINT_WINDOW,
      head: this.#head,
      tail: this.#tail,
      before: { offset, sha256: await hashRange(this.#handle, Math.max(0, offset - FINGERPRINT_WINDOW), offset) },
    };
  }

  /**
   * The windows of `stored` (a checkpoint's) whose bytes differ in this input, described for a
   * message ("its first 64 KiB (bytes 0-65535)"); empty when the input is the one sampled.
   */
  async differences(stored: InputFingerprint): Promise<string[]> {
    const window = stored.window;
    const kib = `${window / 1024} KiB`;
    const differ: string[] = [];
    const check = async (start: number, end: number, sha256: string, what: string) => {
      if ((await hashRange(this.#handle, start, end)) !== sha256) differ.push(`${what} (bytes ${start}-${Math.max(start, end - 1)})`);
    };
    await check(0, Math.min(window, this.#size), stored.head, `its first ${kib}`);
    const { offset } = stored.before;
    await check(Math.max(0, offset - window), Math.min(offset, this.#size), stored.before.sha256, `the ${kib} before the point the interrupted run stopped at`);
    await check(Math.max(0, this.#size - window), this.#size, stored.tail, `its last ${kib}`);
    return differ;
  }

  async close(): Promise<void> {
    await this.#handle.close().catch(() => undefined);
  }
}

/** sha256 (hex) of bytes [start, end) of the file. */
async function hashRange(handle: FileHandle, start: number, end: number): Promise<string> {
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(Math.max(0, end - start));
  let read = 0;
  while (read < buffer.length) {
    const { bytesRead } = await handle.read(buffer, read, buffer.length - read, start + read);
    if (bytesRead === 0) break; // shorter than it was: hashes what is there (and so differs)
    read += bytesRead;
  }
  return hash.update(buffer.subarray(0, read)).digest('hex');
}
