import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { InterruptedError } from './errors.js';

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
    throw e;
  }
  return hash.digest('hex');
}
