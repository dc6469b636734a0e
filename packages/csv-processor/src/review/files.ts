import { open, rename, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { CsvError } from '../errors.js';
import { identityOf, type WrittenFile } from '../run-files.js';

/**
 * Refuses, before anything is written, a written file that is one of the files read (same
 * device and inode: a symlink or hard link counts), or whose folder does not exist. The same
 * checks as a validate run's (run-files.ts).
 */
export async function refuseSameFiles(reads: readonly WrittenFile[], written: WrittenFile, flag: string): Promise<void> {
  const target = await identityOf(written);
  for (const read of reads) {
    const id = await identityOf(read).catch(() => undefined);
    if (id === target) {
      throw new CsvError('path-conflict', `${written.label} is ${read.label}: it would be overwritten; choose another ${flag}`);
    }
  }
}

/**
 * Writes a file whole or not at all: into a temporary file next to it, fsynced, then renamed
 * over `path`. `write` gets the open handle.
 */
export async function writeAtomically(path: string, write: (handle: import('node:fs/promises').FileHandle) => Promise<void>): Promise<void> {
  const temp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  let handle;
  try {
    handle = await open(temp, 'wx');
  } catch (err) {
    throw new CsvError('output-unwritable', `cannot write next to ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
  try {
    await write(handle);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, path);
  } catch (err) {
    await handle?.close().catch(() => undefined);
    await rm(temp, { force: true });
    if (err instanceof CsvError) throw err;
    throw new CsvError('output-unwritable', `cannot write ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
}

/** Writes `bytes` to `path` atomically. */
export function writeFileAtomically(path: string, bytes: Buffer): Promise<void> {
  return writeAtomically(path, async (handle) => {
    await handle.writeFile(bytes);
  });
}
