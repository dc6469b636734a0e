/**
 * One process at a time on a resource: a lock file created exclusively, holding the owner's pid
 * and host. A lock whose process is gone (same host, pid not alive: a run killed with kill -9) is
 * stale and taken over; a live one makes the caller wait up to its limit, then fail with
 * {@link FileLockHeldError} naming the owner.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, open, readFile, rename, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';

const POLL_MS = 250; // how often a waiting caller looks at the lock again

/** Who holds a lock, as written in the lock file. */
export interface FileLockOwner {
  readonly pid: number;
  readonly host: string;
  readonly startedAt: string;
  /** What the owner said it holds the lock for ({@link FileLockOptions.about}), when it said so. */
  readonly about?: string;
}

/** A held lock; `release()` removes it (only if it is still ours). */
export interface HeldFileLock {
  /** Whether a stale lock of a dead process was taken over. */
  readonly tookOver: boolean;
  release(): Promise<void>;
}

/** Options of {@link acquireFileLock}. */
export interface FileLockOptions {
  /** How long to wait for a live owner to release the lock; default 0 (do not wait). */
  readonly waitMs?: number;
  /**
   * Written into the lock beside pid and host, for a caller the lock refuses: what the owner
   * holds it for (e.g. the file it writes, when the lock's name does not say).
   */
  readonly about?: string;
}

/** The lock is held by another live process (or its file cannot be read) after the wait. */
export class FileLockHeldError extends Error {
  override readonly name = 'FileLockHeldError';
  readonly code = 'lock-held';
  /** The lock file. */
  readonly path: string;
  /** Its owner; undefined when the file does not name one (damaged by hand). */
  readonly owner: FileLockOwner | undefined;

  constructor(path: string, owner: FileLockOwner | undefined) {
    super(owner === undefined ? `${path} is held by another process` : `${path} is held by pid ${owner.pid} on ${owner.host} since ${owner.startedAt}`);
    this.path = path;
    this.owner = owner;
  }
}

/**
 * Takes the lock file `path`, waiting up to `options.waitMs` for a live owner. Throws
 * {@link FileLockHeldError} when the wait runs out; other errors (a folder that does not exist or
 * is not writable, a full disk or a file-size limit while writing the owner) are the file
 * system's, with its `code`, and leave no file behind.
 */
export async function acquireFileLock(path: string, options: FileLockOptions = {}): Promise<HeldFileLock> {
  const me: FileLockOwner = {
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    ...(options.about !== undefined ? { about: options.about } : {}),
  };
  const deadline = Date.now() + (options.waitMs ?? 0);
  let tookOver = false;
  for (;;) {
    if (await createWithContent(path, JSON.stringify(me))) return { tookOver, release: () => releaseLock(path) };
    const owner = await readOwner(path);
    // Only a dead owner on this host is stale; an unreadable lock (damaged by hand) is left alone.
    if (owner !== undefined && owner.host === me.host && !processAlive(owner.pid)) {
      // Rename first: of two callers taking over at once, only one rename finds the stale file.
      const aside = `${path}.stale-${randomBytes(4).toString('hex')}`;
      try {
        await rename(path, aside);
      } catch (e) {
        // ENOENT: someone else took it over first; try again. Anything else (a sticky folder
        // whose other user owns the lock: EPERM) would fail the same way forever.
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw e;
      }
      tookOver = true;
      await rm(aside, { force: true }).catch(() => undefined);
      continue;
    }
    if (Date.now() >= deadline) throw new FileLockHeldError(path, owner);
    await delay(POLL_MS);
  }
}

/**
 * Whether process `pid` of this host is alive (also when it belongs to another user). A zombie is
 * not: a process killed under a parent that does not reap its children (a container's first
 * process, `timeout`, a shell script that `exec`s) stays in the process table, and a lock it held
 * would otherwise be taken for held until the parent ends.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: the process exists but belongs to someone else
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !zombie(pid);
}

/** Whether `pid` is a zombie (Linux: its state in /proc/<pid>/stat is Z or X); false where that cannot be read. */
function zombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // pid (comm) state …: the command name may hold spaces and parentheses, the state follows the last ')'.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

async function readOwner(path: string): Promise<FileLockOwner | undefined> {
  try {
    const o = JSON.parse(await readFile(path, 'utf8')) as Partial<FileLockOwner>;
    if (typeof o.pid !== 'number' || typeof o.host !== 'string') return undefined;
    return { pid: o.pid, host: o.host, startedAt: String(o.startedAt), ...(typeof o.about === 'string' ? { about: o.about } : {}) };
  } catch {
    return undefined;
  }
}

/**
 * Creates `path` holding `content`, or returns false if it exists. The content is written to a
 * private file first and hard-linked into place, so no reader ever sees an empty lock. The private
 * file is removed on every way out: a write refused by a full disk or a file-size limit (ENOSPC,
 * EDQUOT, EFBIG) leaves nothing behind in the folder, and the file system's error is thrown as it
 * came (its `code`), for the caller to name.
 */
async function createWithContent(path: string, content: string): Promise<boolean> {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  // Nothing is created when this fails (ENOENT, EACCES, ENOSPC for want of inodes...).
  const fh = await open(tmp, 'wx');
  try {
    try {
      await fh.writeFile(content);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await link(tmp, path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  } finally {
    await rm(tmp, { force: true }).catch(() => undefined);
  }
}

async function releaseLock(path: string): Promise<void> {
  const owner = await readOwner(path);
  if (owner?.pid === process.pid && owner.host === hostname()) await rm(path, { force: true });
}
