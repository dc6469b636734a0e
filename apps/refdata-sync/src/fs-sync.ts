/**
 * Reading what a target holds without trusting it: every path is target-relative, a symbolic link
 * inside the target is never followed (it could lead outside it, or to a device that never ends),
 * and only a regular file is read (a named pipe would block the read for ever, a device never end).
 */
import { createHash } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, open, readlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { InterruptedError, TargetError, UsageError } from './errors.js';

export { syncDir } from '@dq/core/download';

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const CHUNK = 1024 * 1024;

/** What the entry `path` (its `lstat`) is, for a message: `a symbolic link to /etc/passwd`, `a named pipe (FIFO)`. */
export async function describe(
  path: string,
  st: Pick<Stats, 'isSymbolicLink' | 'isDirectory' | 'isFIFO' | 'isSocket' | 'isCharacterDevice' | 'isBlockDevice'>,
): Promise<string> {
  if (st.isSymbolicLink()) {
    const to = await readlink(path).catch(() => undefined);
    return to === undefined ? 'a symbolic link' : `a symbolic link to ${to}`;
  }
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'a file';
}

/**
 * Something other than what dq-refdata keeps is where it keeps a file or a folder: a symbolic link,
 * a folder, a named pipe, a device. Sync neither follows, reads nor removes it (exit 2: a person
 * moves it away); verify reports it as a problem of that path.
 */
export class NotOursError extends UsageError {
  /** Target-relative path of the entry. */
  readonly rel: string;
  /** What is there, e.g. `a symbolic link to /etc/passwd`. */
  readonly found: string;
  /** What dq-refdata keeps there. */
  readonly expected: 'file' | 'folder';
  constructor(path: string, rel: string, found: string, expected: 'file' | 'folder') {
    super(
      found === 'a folder' && expected === 'file'
        ? `${path} is a folder where dq-refdata keeps a file; move the folder away, then sync again (the file is downloaded again; the files that match are kept)`
        : `${path} is ${found} where dq-refdata keeps a ${expected}; it is not ${found.startsWith('a symbolic link') ? 'followed' : 'read'}, changed or removed: move it away, then sync again (the files placed are kept; what is missing is downloaded again)`,
    );
    this.rel = rel;
    this.found = found;
    this.expected = expected;
  }
}

/**
 * Checks that every folder on the way from `target` to `target/rel` (not `rel`'s last segment) is
 * a real folder: a symbolic link there would lead reads and writes outside the target, a file there
 * cannot hold what sync places. A folder that does not exist yet is fine (sync creates it).
 */
export async function checkFoldersInside(target: string, rel: string, last = false): Promise<void> {
  const parts = rel.split(/[/\\]/).filter((p) => p !== '' && p !== '.');
  const upTo = last ? parts.length : parts.length - 1;
  let sub = '';
  for (let i = 0; i < upTo; i++) {
    sub = sub === '' ? parts[i]! : `${sub}/${parts[i]!}`;
    const path = join(target, sub);
    let st: Stats;
    try {
      st = await lstat(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw readError(path, e);
    }
    if (!st.isDirectory()) throw new NotOursError(path, sub, await describe(path, st), 'folder');
  }
}

/**
 * Opens the regular file `target/rel` for reading, without following a link on the way; undefined
 * when nothing is there. Anything else there (a link, a folder, a pipe, a device) is a
 * {@link NotOursError}; the caller closes the handle.
 */
export async function openInside(target: string, rel: string): Promise<{ fh: FileHandle; size: number } | undefined> {
  await checkFoldersInside(target, rel);
  const path = join(target, rel);
  let fh: FileHandle;
  try {
    fh = await open(path, READ_FLAGS);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    const st = await lstat(path).catch(() => undefined);
    // ELOOP: the last segment is a link (O_NOFOLLOW); ENXIO: a socket.
    if (st !== undefined && !st.isFile()) throw new NotOursError(path, rel, await describe(path, st), 'file');
    throw readError(path, e);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new NotOursError(path, rel, await describe(path, st), 'file');
    return { fh, size: st.size };
  } catch (e) {
    await fh.close();
    throw e;
  }
}

/** Size in bytes of the regular file `target/rel`, or undefined when nothing is there. */
export async function sizeOf(target: string, rel: string): Promise<number | undefined> {
  const opened = await openInside(target, rel);
  if (opened === undefined) return undefined;
  await opened.fh.close();
  return opened.size;
}

/**
 * Lower-case hex SHA-512 of an open file's content, read from disk now. An abort of `signal`
 * stops the reading at once with an {@link InterruptedError} naming `path` (a large file takes a while).
 */
export async function sha512OfHandle(fh: FileHandle, path: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash('sha512');
  const buf = Buffer.allocUnsafe(CHUNK);
  for (let position = 0; ;) {
    if (signal?.aborted) throw new InterruptedError(`while hashing ${path}`, signal.reason);
    let n: number;
    try {
      ({ bytesRead: n } = await fh.read(buf, 0, CHUNK, position));
    } catch (e) {
      throw readError(path, e);
    }
    if (n === 0) break;
    hash.update(buf.subarray(0, n));
    position += n;
  }
  return hash.digest('hex');
}

/**
 * Lower-case hex SHA-512 of the regular file `target/rel`, read from disk now; undefined when it
 * does not exist. Anything but a regular file there is a {@link NotOursError}, never read.
 */
export async function sha512OfFile(target: string, rel: string, signal?: AbortSignal): Promise<string | undefined> {
  const opened = await openInside(target, rel);
  if (opened === undefined) return undefined;
  try {
    return await sha512OfHandle(opened.fh, join(target, rel), signal);
  } finally {
    await opened.fh.close();
  }
}

/**
 * Why a file of the target could not be read, naming it and what to do (README "Exit codes"): a
 * folder where a file belongs (or a file where a folder belongs) is exit 2 like a folder where
 * `current` belongs — sync does not remove what it did not make, so a person moves it away;
 * permissions exit 2 (`target-not-writable`); anything else exit 1, with the path.
 */
export function readError(path: string, e: unknown): Error {
  if (e instanceof UsageError || e instanceof TargetError || e instanceof InterruptedError) return e;
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
