import { stat } from 'node:fs/promises';
import type { HeldFileLock } from '@dq/core/lock';
import { writeWholeFile, WholeFileError } from '@dq/core/files';
import { CsvError } from '../errors.js';
import { checkpointOfAnotherName, identityOf, lockFile, lockIdentity, resolveRunPaths, type WrittenFile } from '../run-files.js';

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
 * Writes a file whole or not at all (core's writeWholeFile: a temporary file next to it, fsynced,
 * renamed over `path`; a device written in place; a result store's file refused). `write` gets
 * the open handle.
 */
export async function writeAtomically(path: string, write: (handle: import('node:fs/promises').FileHandle) => Promise<void>): Promise<void> {
  try {
    await writeWholeFile(path, write);
  } catch (err) {
    if (err instanceof WholeFileError) throw new CsvError(err.code === 'path-conflict' ? 'path-conflict' : 'output-unwritable', err.message, { cause: err });
    throw err;
  }
}

/** Writes `bytes` to `path` atomically. */
export function writeFileAtomically(path: string, bytes: Buffer): Promise<void> {
  return writeAtomically(path, async (handle) => {
    await handle.writeFile(bytes);
  });
}

/**
 * Holds a finished dq-csv output while review reads it: refuses one whose run has not finished
 * (its checkpoint is still there, next to the file the path leads to or next to another name of
 * it in the same folder: the output is partial) and takes the output's locks, the same a validate
 * run takes (run-files.ts: by the file the path leads to, and by device and inode), so no validate
 * run writes it meanwhile under any name (a live one holding it: exit 75, naming its pid; a folder
 * review cannot create a lock in is read without that lock).
 */
export async function holdFinishedOutput(path: string): Promise<HeldFileLock> {
  const paths = await resolveRunPaths({ input: path, output: path });
  // A run removes its checkpoint when it finishes.
  const left = (await exists(paths.checkpoint)) ? paths.checkpoint : (await checkpointOfAnotherName(paths))?.checkpoint;
  if (left !== undefined) {
    throw new CsvError(
      'checkpoint-exists',
      `the dq-csv validate run writing ${path} has not finished (${left} is there): finish it with --resume first, then review its output`,
    );
  }
  const held: HeldFileLock[] = [];
  const release = async () => {
    for (const lock of held.splice(0).reverse()) await lock.release();
  };
  // A folder review may not write to (a read-only share): read without the lock.
  const unlessUnwritable = (err: unknown) => {
    if (err instanceof CsvError && err.code === 'output-unwritable') return undefined;
    throw err;
  };
  try {
    const byPath = await lockFile(paths.lock, paths.output, paths.asGiven?.output).catch(unlessUnwritable);
    if (byPath) held.push(byPath);
    const byIdentity = await lockIdentity(paths.output).catch(unlessUnwritable);
    if (byIdentity) held.push(byIdentity);
  } catch (err) {
    await release();
    throw err;
  }
  return { tookOver: held.some((lock) => lock.tookOver), release };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
