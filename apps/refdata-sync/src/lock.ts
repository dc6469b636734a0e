/**
 * One sync per target at a time: a lock file created exclusively, holding the owner's pid and host.
 * A lock whose process is gone (same host, pid not alive) is stale and taken over; a live one makes
 * the caller wait up to its limit, then fail with {@link LockHeldError}.
 */
import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { LockHeldError } from './errors.js';

/** Name of the lock file inside the target directory. */
export const LOCK_FILE = '.dq-refdata.lock';
const POLL_MS = 250; // how often a waiting sync looks at the lock again

interface LockOwner {
  pid: number;
  host: string;
  startedAt: string;
}

/** A held lock; `release()` removes it (only if it is still ours). */
export interface HeldLock {
  /** Whether a stale lock of a dead process was taken over. */
  tookOver: boolean;
  release(): Promise<void>;
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

async function readOwner(path: string): Promise<LockOwner | undefined> {
  try {
    const o = JSON.parse(await readFile(path, 'utf8')) as Partial<LockOwner>;
    return typeof o.pid === 'number' && typeof o.host === 'string' ? { pid: o.pid, host: o.host, startedAt: String(o.startedAt) } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the lock of `dir`, waiting up to `waitSeconds` (0: do not wait) for a live owner. Throws
 * {@link LockHeldError} naming the owner's pid when the wait runs out.
 */
export async function acquireLock(dir: string, waitSeconds: number): Promise<HeldLock> {
  const path = join(dir, LOCK_FILE);
  const me: LockOwner = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
  const deadline = Date.now() + waitSeconds * 1000;
  let tookOver = false;
  for (;;) {
    if (await createWithContent(path, JSON.stringify(me))) return { tookOver, release: () => releaseLock(path) };
    const owner = await readOwner(path);
    // Only a dead owner on this host is stale; an unreadable lock (damaged by hand) is left alone.
    if (owner !== undefined && owner.host === me.host && !alive(owner.pid)) {
      // Rename first: of two syncs taking over at once, only one rename finds the stale file.
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
    if (Date.now() >= deadline) {
      const who = owner === undefined ? 'another sync' : `another sync (pid ${owner.pid} on ${owner.host}, since ${owner.startedAt})`;
      throw new LockHeldError(`${who} holds ${path}; try again later, or pass --lock-wait <seconds> to wait for it`);
    }
    await delay(POLL_MS);
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
