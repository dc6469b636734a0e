/**
 * One sync per target at a time, with @dq/core's lock file (pid and host of the owner; the lock of
 * a process that is gone is taken over). A live owner makes the caller wait up to its limit, then
 * fail with {@link LockHeldError}.
 */
import { join } from 'node:path';
import { acquireFileLock, FileLockHeldError } from '@dq/core/lock';
import { LockHeldError } from './errors.js';

/** Name of the lock file inside the target directory. */
export const LOCK_FILE = '.dq-refdata.lock';

/** A held lock; `release()` removes it (only if it is still ours). */
export interface HeldLock {
  /** Whether a stale lock of a dead process was taken over. */
  tookOver: boolean;
  release(): Promise<void>;
}

/**
 * Takes the lock of `dir`, waiting up to `waitSeconds` (0: do not wait) for a live owner. Throws
 * {@link LockHeldError} naming the owner's pid when the wait runs out.
 */
export async function acquireLock(dir: string, waitSeconds: number): Promise<HeldLock> {
  const path = join(dir, LOCK_FILE);
  try {
    const held = await acquireFileLock(path, { waitMs: waitSeconds * 1000 });
    return { tookOver: held.tookOver, release: () => held.release() };
  } catch (e) {
    if (!(e instanceof FileLockHeldError)) throw e;
    const { owner } = e;
    const who = owner === undefined ? 'another sync' : `another sync (pid ${owner.pid} on ${owner.host}, since ${owner.startedAt})`;
    throw new LockHeldError(`${who} holds ${path}; try again later, or pass --lock-wait <seconds> to wait for it`);
  }
}
