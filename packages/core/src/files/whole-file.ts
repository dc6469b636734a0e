import { randomBytes } from 'node:crypto';
import { open, realpath, rename, rm, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { DqError, ExitCode } from '../errors/index.js';
import { isLmdbFile } from '../store/lmdb-store.js';

/**
 * Why a whole file could not be written: `path-conflict`, the path names a file that must not be
 * overwritten (a result store's database, a folder); `output-unwritable`, the file system refused
 * the write (its errno in the message). Not retriable: the path is at fault. Each connector turns
 * it into its own error (exit 2 or 1).
 */
export class WholeFileError extends DqError {
  override name = 'WholeFileError';
  /** Exit 2: the user names another path (or makes room) and runs again. */
  readonly exitCode = ExitCode.USAGE;
  constructor(code: 'path-conflict' | 'output-unwritable', message: string, cause?: unknown) {
    super(message, { code, retriable: false, ...(cause === undefined ? {} : { cause }) });
  }
}

/**
 * Checks, before a run pays for anything, that {@link writeWholeFile} may write `path` at its
 * end: its folder exists, and it is not a folder nor a file of a result store's database.
 *
 * @throws WholeFileError naming what is wrong and what to do.
 */
export async function checkWholeFileTarget(path: string): Promise<void> {
  const existing = await stat(path).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return undefined;
    throw unwritable(path, e);
  });
  if (existing === undefined) {
    const folder = await stat(dirname(path)).catch((e: unknown) => {
      throw unwritable(path, e);
    });
    if (!folder.isDirectory()) throw unwritable(path, Object.assign(new Error('not a folder'), { code: 'ENOTDIR' }));
    return;
  }
  refuseFolder(path, existing);
  if (existing.isFile()) await refuseStoreFile(path);
}

function refuseFolder(path: string, s: Stats): void {
  if (s.isDirectory()) throw new WholeFileError('path-conflict', `${path} is a folder: name a file in it (e.g. ${join(path, 'report.html')})`);
}

async function refuseStoreFile(path: string): Promise<void> {
  if (await isLmdbFile(path)) {
    throw new WholeFileError(
      'path-conflict',
      `${path} is a file of a result store's database: writing it would destroy every answer stored there; name another file`,
    );
  }
}

/**
 * Writes the file at `path` whole or not at all, the way a user who named the path expects:
 * - a regular file (new or existing) is written under a temporary name in its folder, synced, then
 *   renamed over it: a reader never sees half a file, and a failed write leaves the old one;
 * - a symlink to a file keeps being a symlink: the file it leads to is the one replaced;
 * - a device, pipe or socket (`/dev/null`, `/dev/stdout`) is written in place: renaming a file over
 *   it would replace the device itself (as root, `/dev/null` for every program of the machine);
 * - a folder, or a file of a result store's LMDB database (any name), is refused before anything
 *   is written ({@link WholeFileError} `path-conflict`).
 * An existing file keeps its permission bits. `write` gets the open handle and writes everything.
 */
export async function writeWholeFile(path: string, write: (handle: FileHandle) => Promise<void>): Promise<void> {
  const existing = await stat(path).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return undefined;
    throw unwritable(path, e);
  });
  if (existing) refuseFolder(path, existing);
  if (existing && !existing.isFile()) {
    const handle = await open(path, 'w').catch((e: unknown) => {
      throw unwritable(path, e);
    });
    try {
      await write(handle);
    } catch (e) {
      throw e instanceof DqError ? e : unwritable(path, e);
    } finally {
      await handle.close().catch(() => undefined);
    }
    return;
  }
  if (existing) await refuseStoreFile(path);
  // The file a symlink leads to (a new file's path stays as given: a dangling link is replaced).
  const target = existing ? await realpath(path) : path;
  const temp = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, 'wx', existing ? existing.mode & 0o7777 : 0o666);
    if (existing) await handle.chmod(existing.mode & 0o7777);
    await write(handle);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, target);
  } catch (e) {
    await handle?.close().catch(() => undefined);
    await rm(temp, { force: true });
    throw e instanceof DqError ? e : unwritable(path, e);
  }
}

function unwritable(path: string, e: unknown): WholeFileError {
  const code = (e as NodeJS.ErrnoException)?.code;
  const hint =
    code === 'ENOENT' || code === 'ENOTDIR'
      ? ': its folder does not exist; create it or name another file'
      : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
        ? ': this user may not write there; name a writable place'
        : code === 'ENOSPC' || code === 'EDQUOT'
          ? ': the disk is full; free space or name another disk'
          : '';
  return new WholeFileError('output-unwritable', `cannot write ${path} (${code ?? (e as Error)?.message ?? String(e)})${hint}`, e);
}
