import type { Stats } from 'node:fs';
import { lstat, mkdir, readdir, readlink, realpath, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { checkWholeFileTarget } from '@dq/core/files';
import { acquireFileLock, FileLockHeldError, type HeldFileLock } from '@dq/core/lock';
import { CsvError } from './errors.js';
import { rejectsNextTo, runPaths, type ProcessFileOptions, type RunPaths } from './options.js';

/** A file a run writes, how to name it to the user, and the flags that choose another one. */
export interface WrittenFile {
  readonly path: string;
  readonly label: string;
  readonly flags?: string;
}

/**
 * The file the file system writes when `path` is opened for writing: the real path of the file
 * when it exists (symlinks and symlinked folders followed), the target of a dangling symlink
 * (opening it creates the target), else its folder's real path plus its name. A path whose folder
 * does not exist, or cannot be read, is returned absolute as it is: the claim refuses it, naming
 * the folder.
 */
export async function writtenPath(path: string): Promise<string> {
  let current = resolve(path);
  for (let hops = 0; hops < 40; hops++) {
    const real = await realpath(current).catch(() => undefined);
    if (real !== undefined) return real;
    const folder = await realpath(dirname(current)).catch(() => undefined);
    if (folder === undefined) return current;
    const here = join(folder, basename(current));
    const target = await readlink(here).catch(() => undefined);
    if (target === undefined) return here;
    current = resolve(folder, target);
  }
  return current; // a loop of symlinks: opening it fails (ELOOP), named by the claim
}

/**
 * `path` made absolute the way the file system reads it, where `path.resolve` only spells it out:
 * - a `..` leads up from the folder the path before it leads to, so `link/../out.csv` (`link` a
 *   symlink to `data/in`) names `data/out.csv`, as for the shell, `cp` or the next step of a
 *   pipeline, not `./out.csv`; a `..` after a folder that does not exist (or is no folder) names
 *   no file, and is refused;
 * - a path ending in `/` (or `/.`) names a folder: refused unless there is one (the caller then
 *   refuses the folder as such), where `path.resolve` would drop the slash and a file be written.
 * Otherwise it is `path.resolve`'s. `label` names the file in the message ("the output", ...).
 */
export async function physicalPath(path: string, label: string): Promise<string> {
  const absolute = isAbsolute(path) ? path : `${process.cwd()}${sep}${path}`;
  const refused = (problem: string, todo: string, cause?: unknown) =>
    new CsvError(label === 'the input' ? 'input-unreadable' : 'output-unwritable', `${label} ${path} ${problem}; ${todo}`, { cause });
  const parts = absolute.split(sep);
  const name = parts[parts.length - 1];
  if ((name === '' || name === '.') && parts.length > 1 && !(await stat(absolute).catch(() => undefined))) {
    const folder = resolve(absolute);
    const example = label === 'the report' ? 'report.html' : label === 'the rejects file' ? 'rejects.csv' : 'out.csv';
    throw refused(
      `ends in "${name === '' ? sep : `${sep}.`}", so it names a folder, and there is no folder ${folder}`,
      label === 'the input' ? 'name the input file' : `name a file, e.g. ${join(folder, example)} (its folder must exist)`,
    );
  }
  const last = parts.lastIndexOf('..');
  if (last === -1) return resolve(absolute);
  let real: string;
  try {
    real = await realpath(parts.slice(0, last + 1).join(sep));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const problem = code === 'ENOENT' ? 'does not exist' : code === 'ENOTDIR' ? 'is not a folder' : `cannot be used (${code ?? (err as Error).message})`;
    throw refused(
      `goes through the folder ${parts.slice(0, last).join(sep)}, which ${problem}: a path cannot lead up (..) out of it`,
      label === 'the input' ? 'check the path' : 'create it first or choose another path',
      err,
    );
  }
  return resolve(real, ...parts.slice(last + 1));
}

/**
 * The paths of a run, derived from the file the output path leads to rather than from its
 * spelling: `--output link.csv` (a symlink to out.csv), `--output linked-folder/out.csv` and
 * `--output out.csv` all write out.csv, so all three take `out.csv.lock`, find
 * `out.csv.checkpoint.json` and default the rejects file to `out.rejects.csv`, next to it. A
 * checkpoint an older dq-csv left next to a symlink's own name is still found there (with the
 * rejects file that run wrote).
 */
export async function resolveRunPaths(options: Pick<ProcessFileOptions, 'input' | 'output' | 'rejects' | 'report'>): Promise<RunPaths> {
  const given = runPaths({
    input: await physicalPath(options.input, 'the input'),
    output: await physicalPath(options.output, 'the output'),
    ...(options.rejects !== undefined ? { rejects: await physicalPath(options.rejects, 'the rejects file') } : {}),
    ...(options.report !== undefined ? { report: await physicalPath(options.report, 'the report') } : {}),
  });
  const output = await writtenPath(given.output);
  let rejects = await writtenPath(options.rejects !== undefined ? given.rejects : rejectsNextTo(output));
  let checkpoint = `${output}.checkpoint.json`;
  if (given.checkpoint !== checkpoint && !(await exists(checkpoint)) && (await exists(given.checkpoint))) {
    checkpoint = given.checkpoint;
    rejects = await writtenPath(given.rejects);
  }
  const asGiven = {
    ...(given.output !== output ? { output: given.output } : {}),
    ...(options.rejects !== undefined && given.rejects !== rejects ? { rejects: given.rejects } : {}),
  };
  return {
    input: given.input,
    output,
    rejects,
    checkpoint,
    lock: `${output}.lock`,
    rejectsLock: `${rejects}.lock`,
    ...(given.report !== undefined ? { report: given.report } : {}),
    ...(Object.keys(asGiven).length > 0 ? { asGiven } : {}),
  };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** The locks a run holds; `lockNewFiles` once the run has created its output and rejects file. */
export interface RunClaim extends HeldFileLock {
  /**
   * Takes the lock by device and inode of the output and the rejects file that did not exist when
   * the run was claimed (call it once the run has created them, before writing to them): a run
   * started later under another name of the file (a hard link made meanwhile) is refused too.
   */
  lockNewFiles(): Promise<void>;
}

/**
 * Checks every file a run writes before anything is written, then takes the output's locks and
 * the rejects file's:
 * - no written file (output, rejects, checkpoint, lock, report) is the input, by device and
 *   inode, so a symlink or hard link to the input is caught too; no two of them are one file;
 *   none is a file of the embedded result store (`storeFiles`);
 * - the folder of each exists (else a usage error naming the folder);
 * - no other live run writes the same output or rejects file, under any name (else
 *   `output-locked`, exit 75, naming its pid); the lock of a run that is gone (kill -9) is taken
 *   over. Two locks per file: `<file>.lock` next to the file it leads to (`paths` come from
 *   {@link resolveRunPaths}: a symlink, a symlinked folder or `..` lead to one lock), and one by
 *   device and inode (the one name all hard links of a file share) in {@link identityLockFolder}.
 * A lock that cannot be written (a folder that is read-only or full, a file-size limit) is
 * `output-unwritable` naming the folder and the cause, and leaves nothing behind.
 * Returns the held locks; release them when the run ends.
 */
export async function claimRunFiles(paths: RunPaths, storeFiles: readonly string[] = []): Promise<RunClaim> {
  const input = await statInput(paths.input);
  const inputId = `${input.dev}:${input.ino}`;
  // The embedded result store's files, by the same identity as the written files (device and
  // inode when they exist, the file a path leads to when not).
  const store = new Map<string, string>();
  for (const path of storeFiles) store.set(await storeFileIdentity(path), path);
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
    const storeFile = store.get(id);
    if (storeFile !== undefined) {
      throw new CsvError(
        'path-conflict',
        `${file.label} is the result store's file ${storeFile}: writing it would destroy every answer stored there; choose another ${file.flags ?? '--output'} (or another --store)`,
      );
    }
    const other = seen.get(id);
    if (other) {
      const flags = file.flags === '--report' ? '--report' : '--output or --rejects';
      throw new CsvError('path-conflict', `${file.label} and ${other.label} are the same file; choose another ${flags}`);
    }
    seen.set(id, file);
  }
  // The report is written whole at the end (core's writeWholeFile): a file it may not replace (a
  // result store's database under any folder) is refused now, before anything is paid for.
  if (paths.report !== undefined) await checkWholeFileTarget(paths.report);
  // The output's locks, then the rejects file's: two runs on different outputs may name one --rejects.
  const held: HeldFileLock[] = [];
  // Every lock is released even when one cannot be (its folder made read-only meanwhile); the
  // first failure is thrown once all were tried.
  const release = async () => {
    const failed: unknown[] = [];
    for (const lock of held.splice(0).reverse()) await lock.release().catch((err: unknown) => failed.push(err));
    if (failed.length > 0) throw failed[0];
  };
  const written = [
    { path: paths.output, lock: paths.lock, asGiven: paths.asGiven?.output, flag: '--output' },
    { path: paths.rejects, lock: paths.rejectsLock, asGiven: paths.asGiven?.rejects, flag: '--rejects' },
  ];
  const unlocked: typeof written = [];
  try {
    // Its folder first: one that cannot be used is refused before a file is created.
    await ownFolder(identityLockFolder()).catch((err: unknown) => {
      throw lockUnwritable(join(identityLockFolder(), '<device>-<inode>.lock'), err, IDENTITY_HINT);
    });
    for (const file of written) {
      held.push(await lockFile(file.lock, file.path, file.asGiven, file.flag));
      const byIdentity = await lockIdentity(file.path);
      if (byIdentity) held.push(byIdentity);
      else unlocked.push(file);
    }
  } catch (err) {
    await release();
    throw err;
  }
  const tookOver = held.some((lock) => lock.tookOver);
  return {
    tookOver,
    release,
    lockNewFiles: async () => {
      for (const file of unlocked.splice(0)) {
        const byIdentity = await lockIdentity(file.path);
        if (byIdentity) held.push(byIdentity);
      }
    },
  };
}

/**
 * Takes `<file>.lock` for writing `file` (the path it leads to). `asGiven`: how the user named it,
 * when that was another way (a symlink), for the message.
 */
export async function lockFile(lock: string, file: string, asGiven?: string, flag = '--output'): Promise<HeldFileLock> {
  try {
    return await acquireFileLock(lock);
  } catch (err) {
    if (err instanceof FileLockHeldError) {
      const via = asGiven !== undefined ? `, the file ${flag} ${asGiven} leads to` : '';
      throw new CsvError(
        'output-locked',
        `another dq-csv run is writing ${file}${via} (${ownerOf(err, lock)}); try again when it has finished (its lock is ${lock})`,
      );
    }
    throw lockUnwritable(lock, err);
  }
}

/**
 * Where the locks by device and inode are kept: one folder per user on this machine, in the
 * temporary folder (`TMPDIR`), as a file's hard links may sit in different folders.
 */
export function identityLockFolder(): string {
  const uid = process.getuid?.();
  return join(tmpdir(), uid === undefined ? 'dq-csv-locks' : `dq-csv-locks-${uid}`);
}

/**
 * Takes the lock of the regular file `file` by device and inode: every name of the file (hard
 * links, in any folder) takes the same one. Returns undefined when `file` does not exist yet (see
 * {@link RunClaim.lockNewFiles}) or is not a regular file.
 */
export async function lockIdentity(file: string): Promise<HeldFileLock | undefined> {
  const s = await stat(file, { bigint: true }).catch(() => undefined);
  if (!s?.isFile()) return undefined;
  const folder = identityLockFolder();
  const lock = join(folder, `${s.dev}-${s.ino}.lock`);
  try {
    await ownFolder(folder);
    return await acquireFileLock(lock, { about: file });
  } catch (err) {
    if (err instanceof FileLockHeldError) {
      // Under this very name: its lock next to the file was removed by hand while it runs.
      if (err.owner?.about === file) {
        throw new CsvError(
          'output-locked',
          `another dq-csv run is writing ${file} (${ownerOf(err, lock)}), though its lock ${file}.lock was removed; try again when it has finished (its lock is also ${lock})`,
        );
      }
      const other = err.owner?.about !== undefined ? `as ${err.owner.about}` : 'under another name';
      throw new CsvError(
        'output-locked',
        `another dq-csv run is writing ${file} ${other}, a hard link to it: the same file (${ownerOf(err, lock)}); try again when it has finished (its lock is ${lock})`,
      );
    }
    throw lockUnwritable(lock, err, IDENTITY_HINT);
  }
}

const IDENTITY_HINT = 'dq-csv keeps there the locks that keep two runs off one file under two names; set TMPDIR to a folder it may write';

/** Creates `folder` (this user's only) unless it is there; refuses one that is not this user's folder. */
async function ownFolder(folder: string): Promise<void> {
  await mkdir(folder, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  const s = await lstat(folder);
  const uid = process.getuid?.();
  if (!s.isDirectory() || (uid !== undefined && s.uid !== uid)) {
    throw new Error(`${folder} is not a folder of this user (uid ${uid}); remove it or set TMPDIR to another folder`);
  }
}

function ownerOf(err: FileLockHeldError, lock: string): string {
  return err.owner ? `pid ${err.owner.pid} on ${err.owner.host}, started ${err.owner.startedAt}` : `the lock ${lock} names no process`;
}

/** A lock that cannot be written: `output-unwritable` naming its folder and why. */
function lockUnwritable(lock: string, err: unknown, hint?: string): CsvError {
  return new CsvError('output-unwritable', `cannot create the lock ${lock} in the folder ${dirname(lock)}: ${fsProblem(err)}${hint ? ` (${hint})` : ''}`, {
    cause: err,
  });
}

/** What a file-system error means, with its code, for a message. */
export function fsProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOSPC':
      return 'the disk is full (ENOSPC); free space';
    case 'EDQUOT':
      return 'the disk quota is used up (EDQUOT); free space or raise the quota';
    case 'EFBIG':
      return 'a file there would pass the file-size limit (EFBIG: ulimit -f); raise the limit';
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${code}); write the output where you may create files`;
    case 'EROFS':
      return 'the file system is read-only (EROFS); write the output elsewhere';
    case 'ENOENT':
      return 'the folder does not exist (ENOENT)';
    default:
      return code ?? (err as Error).message;
  }
}

/**
 * When the output has other names (hard links) and there is no checkpoint at `paths.checkpoint`:
 * the checkpoint an interrupted run left next to another name of the same file in the same folder
 * (`<name>.checkpoint.json`), if any. A name in another folder is not found.
 */
export async function checkpointOfAnotherName(paths: RunPaths): Promise<{ name: string; checkpoint: string } | undefined> {
  const output = await stat(paths.output, { bigint: true }).catch(() => undefined);
  if (!output?.isFile() || output.nlink < 2n) return undefined;
  const folder = dirname(paths.output);
  const suffix = '.checkpoint.json';
  for (const entry of await readdir(folder).catch(() => [] as string[])) {
    if (!entry.endsWith(suffix)) continue;
    const name = join(folder, entry.slice(0, -suffix.length));
    if (name === paths.output) continue;
    const other = await stat(name, { bigint: true }).catch(() => undefined);
    if (other && other.dev === output.dev && other.ino === output.ino) return { name, checkpoint: join(folder, entry) };
  }
  return undefined;
}

/**
 * The input's stat, refusing what is not a file: a run reads the input twice (the header, then the
 * records) and `--resume` reads it from an offset, which a pipe (`<(zcat …)`) cannot give; opening
 * one would also wait for its writer.
 */
export async function statInput(path: string): Promise<Stats> {
  const s = await stat(path).catch((err: unknown) => {
    // `--input -`, the usual name of standard input, when no file is named `-`.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && basename(path) === '-') {
      throw new CsvError(
        'input-unreadable',
        `there is no file ${path}: dq-csv does not read standard input (--input -), as it reads the input from where it stopped on --resume; write the stream to a file first and pass that file`,
        { cause: err },
      );
    }
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
 * Refuses to call a run done whose input was written to while it was read: the file it opened and
 * read (`now`: its stat through the run's handle, whatever name it has now) has another size or
 * modification time than when the run began, so a writer was not finished with it, and records at
 * its end may be cut short or missing. A file renamed over the input's name meanwhile is no change
 * of the file read: the run read the one it opened, whole.
 */
export async function refuseChangedWhileRead(path: string, before: Stats, now: Stats, checkpoint: string, reusesAnswers: boolean): Promise<void> {
  if (now.size === before.size && now.mtimeMs === before.mtimeMs) return;
  throw new CsvError(
    'input-changed',
    `the input ${path} changed while it was read (${before.size} bytes, modified ${before.mtime.toISOString()} when the run began; now ${now.size} bytes, modified ${now.mtime.toISOString()}): something was still writing it, and records at its end may be cut short or missing; once the file is complete, delete ${checkpoint} and rerun without --resume${reusesAnswers ? ' (answers already paid for are not bought again)' : ''}`,
  );
}

/**
 * What a path will be written to: device and inode when it exists (following symlinks), else the
 * real path of its folder plus its name (so two spellings of one new file match). Devices and
 * pipes get an identity of their own.
 */
/** {@link identityOf} of a store file; one whose folder does not exist (a store not made yet) is named by its path. */
async function storeFileIdentity(path: string): Promise<string> {
  return identityOf({ path, label: path }).catch(async () => `new:${await writtenPath(path)}`);
}

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
    if (!s.isFile()) {
      // The output and the rejects file are cut back to their checkpoint on --resume and synced
      // after every batch, and the checkpoint and lock are made next to them: a device
      // (/dev/null) takes none of that (fsync fails on it, and the side files would land in /dev).
      if (file.flags !== '--report') {
        throw new CsvError(
          'output-unwritable',
          `${file.label} is not a file (a device): dq-csv writes its output and rejects to files it syncs and can cut back to their checkpoint on --resume, with the checkpoint and lock next to them; write to a file (and delete it afterwards if only the result store was to be filled)`,
        );
      }
      // A report written to a device is not overwritten by being written twice: never a conflict.
      return `device:${file.label}`;
    }
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
  return `new:${await writtenPath(join(real, basename(file.path)))}`;
}
