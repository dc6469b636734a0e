/**
 * One process at a time on a resource: a lock file created exclusively, holding the owner's pid
 * and host. A lock whose process is gone (same host, pid not alive: a run killed with kill -9) is
 * stale and taken over; a live one makes the caller wait up to its limit, then fail with
 * {@link FileLockHeldError} naming the owner.
 */
import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';

const POLL_MS = 250; // how often a waiting caller looks at the lock again

/** Who holds a lock, as written in the lock file. */
export interface FileLockOwner {
  readonly pid: number;
  readonly host: string;
  readonly startedAt: string;
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
 * is not writable) are the file system's.
 */
export async function acquireFileLock(path: string, options: FileLockOptions = {}): Promise<HeldFileLock> {
  const me: FileLockOwner = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
  const deadline = Date.now() + (options.waitMs ?? 0);
  let tookOver = false;
  for (;;) {
    if (await createWithContent(path, JSON.stringify(me))) return { tookOver, release: () => releaseLock(path) };
    const owner = await readOwner(path);
    // Only a dead owner on this host is stale; an unreadable lock (damaged by hand) is left alone.
    if (owner !== undefined && owner.host === me.host && !alive(owner.pid)) {
      // Rename first: of two callers taking over at once, only one rename finds the stale file.
      const aside = `${path}.stale-${randomBytes(4).toString('hex')}`;
      try {
        await rename(path, aside);
        await rm(aside, { force: true });
        tookOver = true;
      } catch {
        // someone else took it over first; try again
      }
      continue;
    }
    if (Date.now() >= deadline) throw new FileLockHeldError(path, owner);
    await delay(POLL_MS);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readOwner(path: string): Promise<FileLockOwner | undefined> {
  try {
    const o = JSON.parse(await readFile(path, 'utf8')) as Partial<FileLockOwner>;
    return typeof o.pid === 'number' && typeof o.host === 'string' ? { pid: o.pid, host: o.host, startedAt: String(o.startedAt) } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Creates `path` holding `content`, or returns false if it exists. The content is written to a
 * private file first and hard-linked into place, so no reader ever sees an empty lock.
 */
async function createWithContent(path: string, content: string): Promise<boolean> {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  const fh = await open(tmp, 'wx');
  try {
    await fh.writeFile(content);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await link(tmp, path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  } finally {
    await rm(tmp, { force: true });
  }
}

async function releaseLock(path: string): Promise<void> {
  const owner = await readOwner(path);
  if (owner?.pid === process.pid && owner.host === hostname()) await rm(path, { force: true });
}
