import { realpath, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { acquireFileLock, FileLockHeldError, type HeldFileLock } from '@dq/core/lock';
import { CsvError } from './errors.js';
import type { RunPaths } from './options.js';

/** A file a run writes, how to name it to the user, and the flags that choose another one. */
export interface WrittenFile {
  readonly path: string;
  readonly label: string;
  readonly flags?: string;
}

/**
 * Checks every file a run writes before anything is written, then takes the output's lock:
 * - no written file (output, rejects, checkpoint, lock, report) is the input, by device and
 *   inode, so a symlink or hard link to the input is caught too; no two of them are one file;
 * - the folder of each exists (else a usage error naming the folder);
 * - no other live run writes the same output (else `output-locked`, exit 75, naming its pid); the
 *   lock of a run that is gone (kill -9) is taken over.
 * Returns the held lock; release it when the run ends.
 */
export async function claimRunFiles(paths: RunPaths): Promise<HeldFileLock> {
  const input = await stat(paths.input).catch((err: unknown) => {
    throw new CsvError('input-unreadable', `cannot read the input ${paths.input}: ${(err as NodeJS.ErrnoException).code}`, { cause: err });
  });
  const inputId = `${input.dev}:${input.ino}`;
  const files: WrittenFile[] = [
    { path: paths.output, label: `the output ${paths.output}`, flags: '--output' },
    { path: paths.rejects, label: `the rejects file ${paths.rejects}`, flags: '--output or --rejects' },
    { path: paths.checkpoint, label: `the checkpoint ${paths.checkpoint}`, flags: '--output' },
    { path: `${paths.checkpoint}.tmp`, label: `the checkpoint's temporary file ${paths.checkpoint}.tmp`, flags: '--output' },
    { path: paths.lock, label: `the lock ${paths.lock}`, flags: '--output' },
    // The report is written last, after the run paid for its answers: one that is the input or
    // another of these files would destroy it then.
    ...(paths.report !== undefined ? [{ path: paths.report, label: `the report ${paths.report}`, flags: '--report' }] : []),
  ];
  const seen = new Map<string, WrittenFile>();
  for (const file of files) {
    const id = await identityOf(file);
    if (id === inputId) {
      throw new CsvError(
        'path-conflict',
        `${file.label} is the input file ${paths.input}: writing it would destroy the input; choose another ${file.flags ?? '--output'}`,
      );
    }
    const other = seen.get(id);
    if (other) {
      const flags = file.flags === '--report' ? '--report' : '--output or --rejects';
      throw new CsvError('path-conflict', `${file.label} and ${other.label} are the same file; choose another ${flags}`);
    }
    seen.set(id, file);
  }
  try {
    return await acquireFileLock(paths.lock);
  } catch (err) {
    if (err instanceof FileLockHeldError) {
      const who = err.owner ? `pid ${err.owner.pid} on ${err.owner.host}, started ${err.owner.startedAt}` : `the lock ${paths.lock} names no process`;
      throw new CsvError('output-locked', `another dq-csv run is writing ${paths.output} (${who}); try again when it has finished (its lock is ${paths.lock})`);
    }
    throw new CsvError('output-unwritable', `cannot create the lock ${paths.lock}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, {
      cause: err,
    });
  }
}

/**
 * What a path will be written to: device and inode when it exists (following symlinks), else the
 * real path of its folder plus its name (so two spellings of one new file match). Devices and
 * pipes get an identity of their own.
 */
export async function identityOf(file: WrittenFile): Promise<string> {
  try {
    const s = await stat(file.path);
    // A device or pipe (/dev/null) is not overwritten by being written twice: never a conflict.
    if (!s.isFile() && !s.isDirectory()) return `device:${file.label}`;
    return `${s.dev}:${s.ino}`;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new CsvError('output-unwritable', `cannot use ${file.label}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
    }
  }
  const folder = dirname(file.path);
  let real: string;
  try {
    real = await realpath(folder);
    if (!(await stat(real)).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const problem = code === 'ENOENT' ? 'does not exist' : code === 'ENOTDIR' ? 'is not a folder' : `cannot be used (${code ?? (err as Error).message})`;
    throw new CsvError('output-unwritable', `the folder ${folder} of ${file.label} ${problem}; create it first or choose another path`, { cause: err });
  }
  return `new:${join(real, basename(file.path))}`;
}
