/**
 * One process at a time on a resource: a lock file created exclusively, holding the owner's pid
 * and host and, on Linux, the owner's start time and the machine's boot id. A lock whose process is
 * gone (same host: a run killed with kill -9, the machine rebooted) is stale and taken over; a live
 * one makes the caller wait up to its limit, then fail with {@link FileLockHeldError} naming the
 * owner. "Gone" includes a pid now used by another process of the same pid namespace (pids wrap
 * around; a reboot). A lock of another host or pid namespace (a container sharing the host name and
 * the folder), whose pid cannot be checked here, is held while its owner keeps refreshing it (a
 * lease of two minutes by default) and gone after that.
 */
import { randomBytes } from 'node:crypto';
import { constants, readFileSync, readlinkSync, type Stats } from 'node:fs';
import { link, open, rename, rm, utimes } from 'node:fs/promises';
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
  /**
   * The machine's boot id (`/proc/sys/kernel/random/boot_id`) when the owner took the lock: another
   * one on the same host means the machine was rebooted since. Absent where /proc cannot be read,
   * and in locks written before it was recorded.
   */
  readonly bootId?: string;
  /**
   * The owner's start time (field 22 of `/proc/<pid>/stat`, clock ticks since boot): a process of
   * that pid with another start time is not the owner but a later process given the same pid.
   * Absent where /proc cannot be read, and in locks written before it was recorded.
   */
  readonly procStart?: number;
  /**
   * The owner's pid namespace (`/proc/self/ns/pid`, e.g. `pid:[4026531836]`): a pid is only
   * checked in the namespace it belongs to. Absent where it cannot be read, and in older locks.
   */
  readonly pidNs?: string;
  /**
   * The owner's lease, ms: it sets the lock file's modification time to now every quarter of it
   * while it holds the lock. A lock whose process cannot be checked from here (another host,
   * another pid namespace) counts as gone once its file was not refreshed for that long. Absent in
   * locks written before leases were kept: those are held until someone deletes them.
   */
  readonly leaseMs?: number;
  /** When the lock file was last refreshed (its modification time, ms), as read; not written into the file. */
  readonly refreshedAtMs?: number;
}

/** Default {@link FileLockOptions.leaseMs}: two minutes, far more than the clocks of two machines differ. */
export const DEFAULT_LEASE_MS = 120_000;

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
  /** The lease the holder keeps ({@link FileLockOwner.leaseMs}); default {@link DEFAULT_LEASE_MS}. */
  readonly leaseMs?: number;
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
    ...ownStart(),
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
  };
  const deadline = performance.now() + (options.waitMs ?? 0); // monotonic: a clock step neither ends nor stretches the wait
  let tookOver = false;
  for (;;) {
    if (await createWithContent(path, JSON.stringify(me))) {
      const lease = keepLease(path, me.leaseMs ?? DEFAULT_LEASE_MS);
      return {
        tookOver,
        release: () => {
          clearInterval(lease);
          return releaseLock(path);
        },
      };
    }
    const owner = await readOwner(path);
    // Only a dead owner on this host is stale; an unreadable lock (damaged by hand) is left alone.
    if (owner !== undefined && !lockOwnerAlive(owner)) {
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
    if (performance.now() >= deadline) throw new FileLockHeldError(path, owner);
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

/**
 * Refreshes the lock file's modification time every quarter of `leaseMs` while the lock is ours
 * (a timer that never keeps the process alive), so that a host that cannot check our process sees
 * that it still runs. A refresh that fails (the file gone, taken over, a read-only remount) is
 * left: the next one tries again, and the lock's release is unchanged.
 */
function keepLease(path: string, leaseMs: number): ReturnType<typeof setInterval> {
  const timer = setInterval(
    () => {
      void (async () => {
        if (!ownLock(await readOwner(path))) return;
        const now = new Date();
        await utimes(path, now, now);
      })().catch(() => undefined);
    },
    Math.max(10, Math.floor(leaseMs / 4)),
  );
  timer.unref();
  return timer;
}

/**
 * Whether the owner named in a lock file still holds it. A lock of another host, or of another pid
 * namespace on this host (another container sharing its host name and the folder), names a process
 * that cannot be checked from here: it is held while its owner keeps its lease (the file refreshed
 * within `leaseMs`), and taken for gone after that (a container killed with its run); a lock
 * without a lease (an older version's) is held until someone deletes it. On this host, the owner is gone when the
 * machine was rebooted since it took the lock (another boot id), when its pid is not alive (or a
 * zombie), or when the process of that pid started at another time than the owner (the pid was
 * given to another process since; also our own pid, when a previous process of it left the lock).
 * A lock without a start time (written by a version before
 * start times were recorded, or where /proc cannot be read) is judged by its pid alone, as then; so
 * is one whose pid's /proc entry cannot be read now (no /proc, or /proc mounted with hidepid).
 */
export function lockOwnerAlive(owner: Pick<FileLockOwner, 'pid' | 'host' | 'bootId' | 'procStart' | 'pidNs' | 'leaseMs' | 'refreshedAtMs'>): boolean {
  if (owner.host !== hostname()) return leaseHeld(owner);
  const recordedBoot = typeof owner.bootId === 'string' ? owner.bootId : undefined;
  const boot = bootId();
  if (recordedBoot !== undefined && boot !== undefined && recordedBoot !== boot) return false;
  // A pid of another pid namespace (another container on this host, sharing its host name and the
  // folder) names no process here that could be checked: judged by its lease, like another host's.
  // Judging its pid here could let two live runs write one file.
  const ns = pidNamespace();
  if (owner.pidNs !== undefined && ns !== undefined && owner.pidNs !== ns) return leaseHeld(owner);
  if (!processAlive(owner.pid)) return false;
  if (typeof owner.procStart !== 'number') return true;
  const start = procStat(owner.pid)?.start;
  return start === undefined || start === owner.procStart;
}

/** Whether an owner this host cannot check keeps its lease; true without a lease or a refresh time to judge by. */
function leaseHeld(owner: Pick<FileLockOwner, 'leaseMs' | 'refreshedAtMs'>): boolean {
  if (typeof owner.leaseMs !== 'number' || !(owner.leaseMs > 0) || owner.refreshedAtMs === undefined) return true;
  return Date.now() - owner.refreshedAtMs < owner.leaseMs;
}

/** Whether `pid` is a zombie (Linux: its state in /proc/<pid>/stat is Z or X); false where that cannot be read. */
function zombie(pid: number): boolean {
  const state = procStat(pid)?.state;
  return state === 'Z' || state === 'X';
}

/**
 * State and start time (clock ticks since boot) of `pid` from `/proc/<pid>/stat`; undefined where
 * that cannot be read (no /proc, no such process, hidepid), or when /proc is not of this process's
 * pid namespace (a container started without its own /proc: there /proc/<pid> would be another
 * process than our `pid`).
 */
function procStat(pid: number): { state: string; start: number } | undefined {
  if (!procIsOurs()) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // pid (comm) state …: the command name may hold spaces and parentheses, the fields follow the
    // last ')'. The state is field 3, the start time field 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[19]);
    return fields[0] !== undefined && Number.isSafeInteger(start) ? { state: fields[0], start } : undefined;
  } catch {
    return undefined;
  }
}

let procOurs: boolean | undefined;
/** Whether /proc shows this process's pid namespace: /proc/self is named after our pid. */
function procIsOurs(): boolean {
  if (procOurs === undefined) {
    try {
      procOurs = readlinkSync('/proc/self') === String(process.pid);
    } catch {
      procOurs = false;
    }
  }
  return procOurs;
}

let namespace: { id: string | undefined } | undefined;
/** This process's pid namespace (Linux), undefined where it cannot be read. */
function pidNamespace(): string | undefined {
  if (namespace === undefined) {
    try {
      namespace = { id: readlinkSync('/proc/self/ns/pid') || undefined };
    } catch {
      namespace = { id: undefined };
    }
  }
  return namespace.id;
}

let boot: { id: string | undefined } | undefined;
/** This boot's id (Linux), undefined where it cannot be read. */
function bootId(): string | undefined {
  if (boot === undefined) {
    try {
      boot = { id: readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim() || undefined };
    } catch {
      boot = { id: undefined };
    }
  }
  return boot.id;
}

/** What this process writes into its locks beside pid and host: boot id and start time, those that can be read. */
function ownStart(): { bootId?: string; procStart?: number; pidNs?: string } {
  const id = bootId();
  const start = procStat(process.pid)?.start;
  const ns = pidNamespace();
  return { ...(id !== undefined ? { bootId: id } : {}), ...(start !== undefined ? { procStart: start } : {}), ...(ns !== undefined ? { pidNs: ns } : {}) };
}

/** Most bytes of a lock file read: an owner is a few hundred; anything longer is no lock of ours. */
const MAX_LOCK_BYTES = 64 * 1024;

/**
 * The owner written in the lock at `path`; undefined when it cannot be read as one. Only a regular
 * file is read, never through a symbolic link and never waiting: a named pipe put under the lock's
 * name would block the read for ever, a link to a device never end.
 */
async function readOwner(path: string): Promise<FileLockOwner | undefined> {
  try {
    const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    let text: string;
    let stats: Stats;
    try {
      stats = await fh.stat();
      if (!stats.isFile() || stats.size > MAX_LOCK_BYTES) return undefined;
      text = await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
    const o = JSON.parse(text) as Partial<FileLockOwner>;
    if (typeof o.pid !== 'number' || typeof o.host !== 'string') return undefined;
    return {
      pid: o.pid,
      host: o.host,
      startedAt: String(o.startedAt),
      ...(typeof o.about === 'string' ? { about: o.about } : {}),
      ...(typeof o.bootId === 'string' ? { bootId: o.bootId } : {}),
      ...(typeof o.procStart === 'number' ? { procStart: o.procStart } : {}),
      ...(typeof o.pidNs === 'string' ? { pidNs: o.pidNs } : {}),
      ...(typeof o.leaseMs === 'number' ? { leaseMs: o.leaseMs } : {}),
      refreshedAtMs: stats.mtimeMs,
    };
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

/** Whether `owner` is this process: our pid and host, and our start time when it names one. */
function ownLock(owner: FileLockOwner | undefined): boolean {
  if (owner?.pid !== process.pid || owner.host !== hostname()) return false;
  const start = ownStart().procStart;
  return owner.procStart === undefined || start === undefined || owner.procStart === start;
}

/** Removes the lock if it is still ours. */
async function releaseLock(path: string): Promise<void> {
  if (ownLock(await readOwner(path))) await rm(path, { force: true });
}
