import { open, rename, rm, stat } from 'node:fs/promises';
import { acquireFileLock, FileLockHeldError, type HeldFileLock } from '@dq/core/lock';
import { randomBytes } from 'node:crypto';
import { CsvError } from '../errors.js';
import { runPaths } from '../options.js';
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

/**
 * Holds a finished dq-csv output while review reads it: refuses one whose run has not finished
 * (its checkpoint is still there: the output is partial) and takes the output's lock, so no
 * validate run writes it meanwhile (a live one holding it: exit 75, naming its pid; a folder it
 * cannot create the lock in is read without it).
 */
export async function holdFinishedOutput(path: string): Promise<HeldFileLock> {
  const paths = runPaths({ input: path, output: path });
  // A run removes its checkpoint when it finishes.
  for (const left of [paths.checkpoint]) {
    if (
      await stat(left).then(
        () => true,
        () => false,
      )
    ) {
      throw new CsvError(
        'checkpoint-exists',
        `the dq-csv validate run writing ${path} has not finished (${left} is there): finish it with --resume first, then review its output`,
      );
    }
  }
  try {
    return await acquireFileLock(paths.lock);
  } catch (err) {
    if (err instanceof FileLockHeldError) {
      const who = err.owner ? `pid ${err.owner.pid} on ${err.owner.host}, started ${err.owner.startedAt}` : `the lock ${paths.lock} names no process`;
      throw new CsvError('output-locked', `a dq-csv run is writing ${path} (${who}); try again when it has finished`);
    }
    // A folder review may not write to (a read-only share): read without the lock.
    return { release: async () => undefined } as unknown as HeldFileLock;
  }
}
