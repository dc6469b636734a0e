import type { Stats } from 'node:fs';
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
 * Checks every file a run writes before anything is written, then takes the output's lock and the
 * rejects file's:
 * - no written file (output, rejects, checkpoint, lock, report) is the input, by device and
 *   inode, so a symlink or hard link to the input is caught too; no two of them are one file;
 * - the folder of each exists (else a usage error naming the folder);
 * - no other live run writes the same output or rejects file (else `output-locked`, exit 75, naming its pid); the
 *   lock of a run that is gone (kill -9) is taken over.
 * Returns the held lock; release it when the run ends.
 */
export async function claimRunFiles(paths: RunPaths): Promise<HeldFileLock> {
  const input = await statInput(paths.input);
  const inputId = `${input.dev}:${input.ino}`;
  const files: WrittenFile[] = [
    { path: paths.output, label: `the output ${paths.output}`, flags: '--output' },
    { path: paths.rejects, label: `the rejects file ${paths.rejects}`, flags: '--output or --rejects' },
    { path: paths.checkpoint, label: `the checkpoint ${paths.checkpoint}`, flags: '--output' },
    { path: `${paths.checkpoint}.tmp`, label: `the checkpoint's temporary file ${paths.checkpoint}.tmp`, flags: '--output' },
    { path: paths.lock, label: `the lock ${paths.lock}`, flags: '--output' },
    { path: paths.rejectsLock, label: `the lock ${paths.rejectsLock}`, flags: '--output or --rejects' },
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
  // The output's lock, then the rejects file's: two runs on different outputs may name one --rejects.
  const output = await lockFile(paths.lock, paths.output);
  try {
    const rejects = await lockFile(paths.rejectsLock, paths.rejects);
    return {
      tookOver: output.tookOver || rejects.tookOver,
      release: async () => {
        await rejects.release();
        await output.release();
      },
    };
  } catch (err) {
    await output.release();
    throw err;
  }
}

async function lockFile(lock: string, written: string): Promise<HeldFileLock> {
  try {
    return await acquireFileLock(lock);
  } catch (err) {
    if (err instanceof FileLockHeldError) {
      const who = err.owner ? `pid ${err.owner.pid} on ${err.owner.host}, started ${err.owner.startedAt}` : `the lock ${lock} names no process`;
      throw new CsvError('output-locked', `another dq-csv run is writing ${written} (${who}); try again when it has finished (its lock is ${lock})`);
    }
    throw new CsvError('output-unwritable', `cannot create the lock ${lock}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, {
      cause: err,
    });
  }
}

/**
 * The input's stat, refusing what is not a file: a run reads the input twice (the header, then the
 * records) and `--resume` reads it from an offset, which a pipe (`<(zcat …)`) cannot give; opening
 * one would also wait for its writer.
 */
export async function statInput(path: string): Promise<Stats> {
  const s = await stat(path).catch((err: unknown) => {
    throw new CsvError('input-unreadable', `cannot read the input ${path}: ${(err as NodeJS.ErrnoException).code}`, { cause: err });
  });
  if (s.isFile()) return s;
  const what = s.isDirectory() ? 'is a folder' : s.isFIFO() ? 'is a pipe' : 'is not a file';
  throw new CsvError(
    'input-unreadable',
    `the input ${path} ${what}: dq-csv reads a file, from where it stopped on --resume${s.isFIFO() ? '; write the stream to a file first (e.g. zcat in.csv.gz > in.csv)' : ''}`,
  );
}

/**
 * What a path will be written to: device and inode when it exists (following symlinks), else the
 * real path of its folder plus its name (so two spellings of one new file match). Devices and
 * pipes get an identity of their own.
 */
export async function identityOf(file: WrittenFile): Promise<string> {
  const s = await stat(file.path).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CsvError('output-unwritable', `cannot use ${file.label}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  });
  if (s) {
    // A pipe or socket takes no write at an offset (and opening a pipe waits for its reader).
    if (s.isFIFO() || s.isSocket()) {
      throw new CsvError(
        'output-unwritable',
        `${file.label} is a ${s.isFIFO() ? 'pipe' : 'socket'}: dq-csv writes a file it can cut back to its checkpoint on --resume; write to a file`,
      );
    }
    if (s.isDirectory()) throw new CsvError('output-unwritable', `${file.label} is a folder: name a file in it (e.g. ${join(file.path, 'out.csv')})`);
    // A device (/dev/null) is not overwritten by being written twice: never a conflict.
    if (!s.isFile()) return `device:${file.label}`;
    return `${s.dev}:${s.ino}`;
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
