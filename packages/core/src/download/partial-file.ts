/**
 * The temporary file a download grows in, beside its target (same file system, so the final
 * rename is atomic), with the SHA-512 of everything in it kept up to date while bytes arrive. A
 * small sidecar records what the part belongs to, so a later run resumes only the same download.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';

/** What a part file belongs to; a part whose sidecar differs is discarded instead of resumed. */
interface PartMeta {
  urlPath: string;
  /** Total size announced by the server, bytes. */
  total: number;
  expectedSha512: string | null;
}

const WRITE_HWM = 1024 * 1024; // bytes buffered towards the disk before backpressure

/** One download's part file and the running digest of its content. */
export class PartialFile {
  readonly #part: string;
  readonly #meta: string;
  readonly #urlPath: string;
  readonly #expected: string | null;
  #hash: Hash = createHash('sha512');
  /** Bytes fed to #hash; equals the part's size whenever the two are in step. */
  #hashed = 0;

  constructor(opts: { partPath: string; urlPath: string; expectedSha512: string | undefined }) {
    this.#part = opts.partPath;
    this.#meta = `${opts.partPath}.json`;
    this.#urlPath = opts.urlPath;
    this.#expected = opts.expectedSha512?.toLowerCase() ?? null;
  }

  get path(): string {
    return this.#part;
  }

  /**
   * Bytes already held for this download (0 when there is no usable part). Brings the digest in
   * step with the file, hashing the existing part once when a previous run left it.
   */
  async resumeOffset(): Promise<{ offset: number; total: number | undefined }> {
    const size = await fileSize(this.#part);
    if (size === 0) return { offset: 0, total: undefined };
    const meta = await this.#readMeta();
    if (meta === undefined || meta.urlPath !== this.#urlPath || meta.expectedSha512 !== this.#expected || size > meta.total) {
      await this.reset();
      return { offset: 0, total: undefined };
    }
    if (this.#hashed !== size) {
      this.#hash = createHash('sha512');
      await pipeline(createReadStream(this.#part, { highWaterMark: WRITE_HWM }), async (src: AsyncIterable<Buffer>) => {
        for await (const chunk of src) this.#hash.update(chunk);
      });
      this.#hashed = size;
    }
    return { offset: size, total: meta.total };
  }

  /** Deletes the part and its sidecar and starts the digest afresh. */
  async reset(): Promise<void> {
    await rm(this.#part, { force: true });
    await rm(this.#meta, { force: true });
    this.#hash = createHash('sha512');
    this.#hashed = 0;
  }

  /** Records what the part belongs to (before its first byte is written). */
  async begin(total: number): Promise<void> {
    const meta: PartMeta = { urlPath: this.#urlPath, total, expectedSha512: this.#expected };
    await writeFile(this.#meta, JSON.stringify(meta));
  }

  /**
   * Appends `body` to the part, hashing in the same pass. Whatever arrived before a broken body is
   * still written and fsynced (so the next attempt resumes after it), then the body's error is
   * rethrown. `onChunk` gets the part's size after each chunk.
   */
  async append(body: AsyncIterable<Buffer>, onChunk?: (size: number) => void): Promise<void> {
    // flush: fsync before the stream closes, so a placed file is on disk, not only in the page cache.
    const out = createWriteStream(this.#part, { flags: 'a', flush: true, highWaterMark: WRITE_HWM });
    let bodyError: unknown;
    try {
      for await (const chunk of body) {
        this.#hash.update(chunk);
        this.#hashed += chunk.length;
        onChunk?.(this.#hashed);
        if (!out.write(chunk)) await once(out, 'drain');
      }
    } catch (e) {
      bodyError = e;
    }
    await new Promise<void>((resolve, reject) => {
      out.once('error', reject);
      out.end(() => resolve());
    });
    if (bodyError !== undefined) throw bodyError;
  }

  /** Lower-case hex SHA-512 of the part's content (call once, after the last append). */
  digest(): string {
    return this.#hash.digest('hex');
  }

  /** Renames the part onto `target` (atomic on one file system), then syncs the directory. */
  async place(target: string): Promise<void> {
    await rename(this.#part, target);
    await rm(this.#meta, { force: true });
    await syncDir(dirname(target));
  }

  async #readMeta(): Promise<PartMeta | undefined> {
    try {
      const m = JSON.parse(await readFile(this.#meta, 'utf8')) as Partial<PartMeta>;
      return typeof m.urlPath === 'string' && typeof m.total === 'number' ? { urlPath: m.urlPath, total: m.total, expectedSha512: m.expectedSha512 ?? null } : undefined;
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
