import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { InterruptedError, TargetError, UsageError } from './errors.js';

export { syncDir } from '@dq/core/download';

/** Size of a file in bytes, or undefined when it does not exist. */
export async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch {
    return undefined;
  }
}

/**
 * Lower-case hex SHA-512 of a file's content, read from disk now; undefined when the file does not
 * exist. An abort of `signal` stops the reading at once with an {@link InterruptedError} naming
 * the file (a large file takes a while).
 */
export async function sha512OfFile(path: string, signal?: AbortSignal): Promise<string | undefined> {
  const hash = createHash('sha512');
  try {
    for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024, ...(signal ? { signal } : {}) })) hash.update(chunk as Buffer);
  } catch (e) {
    if (signal?.aborted) throw new InterruptedError(`while hashing ${path}`, e);
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw readError(path, e);
  }
  return hash.digest('hex');
}

/**
 * Why a file of the target could not be read, naming it and what to do (README "Exit codes"): a
 * folder where a file belongs (or a file where a folder belongs) is exit 2 like a folder where
 * `current` belongs — sync does not remove what it did not make, so a person moves it away;
 * permissions exit 2 (`target-not-writable`); anything else exit 1, with the path.
 */
export function readError(path: string, e: unknown): Error {
  const code = (e as { code?: unknown } | null | undefined)?.code;
  const again = 'then sync again (the file is downloaded again; the files that match are kept)';
  if (code === 'EISDIR') return new UsageError(`${path} is a folder where dq-refdata keeps a file; move the folder away, ${again}`);
  if (code === 'ENOTDIR') return new UsageError(`a part of the path ${path} is a file where dq-refdata keeps a folder; move that file away, ${again}`);
  if (code === 'ELOOP') return new UsageError(`${path} is a symbolic link that leads to itself (ELOOP); remove it, ${again}`);
  if (code === 'EACCES' || code === 'EPERM') {
    return new TargetError(
      'target-not-writable',
      `cannot read ${path}: permission denied (${code}); make the target readable and writable for this user, or give another --target`,
      e,
    );
  }
  const why = typeof code === 'string' ? `${code}: ${(e as Error).message}` : String((e as Error | undefined)?.message ?? e);
  return new Error(`cannot read ${path} (${why}); check that file and its disk, then sync again`, { cause: e });
}
