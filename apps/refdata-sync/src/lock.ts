/**
 * One sync per target at a time, with @dq/core's lock file (pid and host of the owner; the lock of
 * a process that is gone is taken over). A live owner makes the caller wait up to its limit, then
 * fail with {@link LockHeldError}.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { acquireFileLock, FileLockHeldError, type FileLockOwner } from '@dq/core/lock';
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
  const deadline = performance.now() + waitSeconds * 1000; // monotonic: a clock step neither ends nor stretches the wait
  for (;;) {
    try {
      const held = await acquireFileLock(path);
      return { tookOver: held.tookOver, release: () => held.release() };
    } catch (e) {
      if (!(e instanceof FileLockHeldError)) throw e;
      if (performance.now() >= deadline) throw heldError(path, e.owner, waitSeconds);
    }
    try {
      await delay(Math.min(POLL_MS, Math.max(0, Math.ceil(deadline - performance.now()))), undefined, signal ? { signal } : {});
    } catch (e) {
      throw new InterruptedError('while waiting for the lock of another sync', e);
    }
  }
}

/**
 * The lock is held after the wait: who holds it, and — when this host cannot tell whether that
 * sync still runs (another host's) — when it is taken over (its lease), or, for a lock with no lease
 * (an earlier version's) or naming no owner, when to delete it by hand.
 */
function heldError(path: string, owner: FileLockOwner | undefined, waitSeconds: number): LockHeldError {
  const who = owner === undefined ? 'another sync' : `another sync (pid ${owner.pid} on ${owner.host}, since ${owner.startedAt})`;
  const then =
    waitSeconds > 0
      ? `waited ${waitSeconds} s: try again later, or pass a longer --lock-wait`
      : 'try again later, or pass --lock-wait <seconds> to wait for it';
  const stale =
    owner === undefined
      ? `. The lock names no owner (damaged?): if no sync runs on this target, delete ${path}`
      : owner.host !== hostname()
        ? owner.leaseMs === undefined
          ? `. This host cannot tell whether it still runs: if no sync runs on ${owner.host} any more (the machine went down), delete ${path}`
          : `. That sync refreshes the lock while it runs; it is taken over ${Math.round(owner.leaseMs / 1000)} s after its last refresh`
        : '';
  return new LockHeldError(`${who} holds ${path}; ${then}${stale}`);
}
