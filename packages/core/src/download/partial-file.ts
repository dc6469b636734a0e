/**
 * The temporary file a download grows in, beside its target (same file system, so the final
 * rename is atomic), with the SHA-512 of everything in it kept up to date while bytes arrive. A
 * small sidecar records what the part belongs to, so a later run resumes only the same download.
 */
import { constants } from 'node:fs';
import { lstat, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DqError } from '../errors/dq-error.js';
import { hashFile, writeBody } from './block-pipeline.js';
import { DOWNLOAD_CODES } from './errors.js';
import type { EarlyBody } from './http.js';
import type { BlockHasher } from './sha512-hasher.js';

/** What a part file belongs to; a part whose sidecar differs is discarded instead of resumed. */
interface PartMeta {
  urlPath: string;
  /**
   * Total size announced by the server, bytes; null when a whole-file answer gave none (chunked):
   * such a part is never resumed, since nothing tells how much of the file it holds.
   */
  total: number | null;
  expectedSha512: string | null;
  /**
   * What the server said identifies this version of the file, sent back as `If-Range` on a resume
   * (a strong `ETag`, or else `Last-Modified`); absent when it gave neither.
   */
  validator?: string;
}

/**
 * Added to every open of a part or its sidecar: never through a symbolic link (which could lead out
 * of the destination), never waiting on a named pipe.
 */
const OWN_FILE = constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Picks the hasher for a file of `total` bytes (undefined: size unknown). */
export type HasherFactory = (total: number | undefined) => BlockHasher;

/** One download's part file and the running digest of its content. */
export class PartialFile {
  readonly #part: string;
  readonly #meta: string;
  readonly #urlPath: string;
  readonly #expected: string | null;
  readonly #newHasher: HasherFactory;
  #hasher: BlockHasher | undefined;
  /** Bytes fed to #hasher; equals the part's size whenever the two are in step (-1: not in step). */
  #hashed = 0;
  /** Total size of the file being downloaded, once known. */
  #total: number | undefined;
  /** Whether this object began the part (not a part an earlier run left). */
  #begunHere = false;

  constructor(opts: { partPath: string; urlPath: string; expectedSha512: string | undefined; hasher: HasherFactory }) {
    this.#part = opts.partPath;
    this.#meta = `${opts.partPath}.json`;
    this.#urlPath = opts.urlPath;
    this.#expected = opts.expectedSha512?.toLowerCase() ?? null;
    this.#newHasher = opts.hasher;
  }

  get path(): string {
    return this.#part;
  }

  /**
   * Bytes already held for this download (0 when there is no usable part). Brings the digest in
   * step with the file, hashing the existing part once when a previous run left it.
   */
  async resumeOffset(): Promise<{ offset: number; total: number | undefined; validator: string | undefined; begunHere: boolean }> {
    await this.#clearStrangers();
    const size = await fileSize(this.#part);
    if (size === 0) return { offset: 0, total: undefined, validator: undefined, begunHere: false };
    const meta = await this.#readMeta();
    if (meta === undefined || meta.urlPath !== this.#urlPath || meta.expectedSha512 !== this.#expected || meta.total === null || size > meta.total) {
      await this.reset();
      return { offset: 0, total: undefined, validator: undefined, begunHere: false };
    }
    if (this.#hashed !== size || this.#hasher === undefined) {
      const hasher = this.#restartHash(meta.total);
      const fh = await open(this.#part, constants.O_RDONLY | OWN_FILE);
      try {
        await hashFile(fh, size, hasher);
      } finally {
        await fh.close();
      }
      this.#hashed = size;
    }
    return { offset: size, total: meta.total, validator: meta.validator, begunHere: this.#begunHere };
  }

  /** Deletes the part and its sidecar and starts the digest afresh. */
  async reset(): Promise<void> {
    await rm(this.#part, { force: true });
    await rm(this.#meta, { force: true });
    this.#hasher?.dispose();
    this.#hasher = undefined;
    this.#hashed = 0;
    this.#begunHere = false;
  }

  /**
   * Records what the part belongs to (before its first byte is written), with the server's
   * `validator` of the file's version when it gave one, and starts the digest. `total` undefined:
   * the server did not say (a chunked answer), and the part is not resumed.
   */
  async begin(total: number | undefined, validator: string | undefined): Promise<void> {
    const meta: PartMeta = { urlPath: this.#urlPath, total: total ?? null, expectedSha512: this.#expected, ...(validator === undefined ? {} : { validator }) };
    await writeFile(this.#meta, JSON.stringify(meta), { flag: constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | OWN_FILE });
    this.#restartHash(total);
    this.#hashed = 0;
    this.#begunHere = true;
  }

  /**
   * Appends `body` to the part, hashing in the same pass, and fsyncs it. Whatever arrived before a
   * broken body is still written and fsynced (so the next attempt resumes after it), then the
   * body's error is rethrown. `onChunk` gets the part's size as bytes arrive.
   */
  async append(body: EarlyBody, onChunk?: (size: number) => void): Promise<void> {
    if (this.#hashed < 0) await this.resumeOffset(); // a failed write left the digest behind
    const hasher = this.#hasher ?? this.#restartHash(this.#total);
    const start = this.#hashed;
    // Positional writes (not O_APPEND): blocks in flight may complete out of order.
    const fh = await open(this.#part, constants.O_WRONLY | constants.O_CREAT | OWN_FILE);
    let outcome;
    try {
      const expected = this.#total === undefined ? undefined : this.#total - start;
      outcome = await writeBody(body, fh, start, hasher, expected, (taken) => onChunk?.(start + taken));
    } finally {
      await fh.close();
    }
    this.#hashed = outcome.hashInStep ? start + outcome.written : -1;
    if (outcome.error !== undefined) throw outcome.error;
  }

  /** Bytes in the part file now (0 when there is none); unlike {@link resumeOffset}, never discards it. */
  async size(): Promise<number> {
    return fileSize(this.#part);
  }

  /** Forgets the running digest (the part stays on disk for a later run to resume). */
  release(): void {
    this.#hasher?.dispose();
    this.#hasher = undefined;
    this.#hashed = -1;
  }

  /** Lower-case hex SHA-512 of the part's content (call once, after the last append). */
  async digest(): Promise<string> {
    if (this.#hasher === undefined || this.#hashed < 0) await this.resumeOffset();
    const hasher = this.#hasher ?? this.#restartHash(this.#total);
    this.#hasher = undefined;
    return hasher.digest();
  }

  /** Renames the part onto `target` (atomic on one file system), then syncs the directory. */
  async place(target: string): Promise<void> {
    await rename(this.#part, target);
    await rm(this.#meta, { force: true });
    await syncDir(dirname(target));
  }

  /**
   * Removes what is under the part's or the sidecar's name and is not a regular file: a symbolic
   * link (to a file out of the destination, say), a named pipe, a socket or a device was made by no
   * download, and writing through it would write elsewhere or wait for ever. The link itself is
   * removed, never what it points to; the download starts that file afresh. A folder there is an
   * error naming it, for a person to move away.
   */
  async #clearStrangers(): Promise<void> {
    for (const path of [this.#part, this.#meta]) {
      const st = await lstat(path).catch((e: unknown) => {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw e;
      });
      if (st === undefined || st.isFile()) continue;
      if (st.isDirectory()) {
        throw new DqError(`${path} is a folder where the download keeps its part file; move it away, then download again`, {
          code: DOWNLOAD_CODES.partNotAFile,
          retriable: false,
        });
      }
      await rm(path, { force: true });
    }
  }

  #restartHash(total: number | undefined): BlockHasher {
    this.#hasher?.dispose();
    this.#total = total;
    this.#hasher = this.#newHasher(total);
    return this.#hasher;
  }

  async #readMeta(): Promise<PartMeta | undefined> {
    try {
      const m = JSON.parse(await readFile(this.#meta, { encoding: 'utf8', flag: constants.O_RDONLY | OWN_FILE })) as Partial<PartMeta>;
      return typeof m.urlPath === 'string' && (typeof m.total === 'number' || m.total === null)
        ? {
            urlPath: m.urlPath,
            total: m.total,
            expectedSha512: m.expectedSha512 ?? null,
            ...(typeof m.validator === 'string' ? { validator: m.validator } : {}),
          }
        : undefined;
    } catch {
      return undefined;
    }
  }
}

async function fileSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/** fsync of a directory, so a rename in it survives a crash; a no-op where directories cannot be opened. */
export async function syncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch {
    // some platforms (Windows) cannot fsync a directory
  } finally {
    await fh?.close();
  }
}
