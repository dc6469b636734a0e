/**
 * One sync per target at a time, with @dq/core's lock file (pid and host of the owner; the lock of
 * a process that is gone is taken over). A live owner makes the caller wait up to its limit, then
 * fail with {@link LockHeldError}.
 */
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { acquireFileLock, FileLockHeldError } from '@dq/core/lock';
import { InterruptedError, LockHeldError } from './errors.js';

/** Name of the lock file inside the target directory. */
export const LOCK_FILE = '.dq-refdata.lock';

/** A held lock; `release()` removes it (only if it is still ours). */
export interface HeldLock {
  /** Whether a stale lock of a dead process was taken over. */
  tookOver: boolean;
  release(): Promise<void>;
}

/** How often a waiting sync looks at the lock again. */
const POLL_MS = 250;

/**
 * Takes the lock of `dir`, waiting up to `waitSeconds` (0: do not wait) for a live owner. Throws
 * {@link LockHeldError} naming the owner's pid when the wait runs out, and an
 * {@link InterruptedError} as soon as `signal` is aborted during the wait (a SIGTERM is not held
 * back until the limit).
 */
export async function acquireLock(dir: string, waitSeconds: number, signal?: AbortSignal): Promise<HeldLock> {
  const path = join(dir, LOCK_FILE);
  const deadline = Date.now() + waitSeconds * 1000;
  for (;;) {
    try {
      const held = await acquireFileLock(path);
      return { tookOver: held.tookOver, release: () => held.release() };
    } catch (e) {
      if (!(e instanceof FileLockHeldError)) throw e;
      if (Date.now() >= deadline) {
        const { owner } = e;
        const who = owner === undefined ? 'another sync' : `another sync (pid ${owner.pid} on ${owner.host}, since ${owner.startedAt})`;
        throw new LockHeldError(`${who} holds ${path}; try again later, or pass --lock-wait <seconds> to wait for it`);
      }
    }
    try {
      await delay(Math.min(POLL_MS, Math.max(0, deadline - Date.now())), undefined, signal ? { signal } : {});
    } catch (e) {
      throw new InterruptedError('while waiting for the lock of another sync', e);
    }
  }
}
