/**
 * File-system failures while writing a target, as errors that name the file and say what to do
 * (README "Exit codes"): a full file system is exit 1 (a person frees space; the next sync keeps
 * what was verified and resumes the part), a read-only or forbidden target exit 2 (configuration).
 */
import { formatBytes, NoRoomError } from '@dq/core/download';
import { InterruptedError, TargetError } from './errors.js';
import { readError } from './fs-sync.js';

const FULL: Readonly<Record<string, string>> = {
  ENOSPC: 'the file system is full (ENOSPC)',
  EDQUOT: 'the disk quota is used up (EDQUOT)',
  EFBIG: 'the file reached the file-size limit (EFBIG: ulimit -f, or the largest file of its file system)',
};
const NOT_WRITABLE: Readonly<Record<string, string>> = {
  EROFS: 'the file system is read-only (EROFS)',
  EACCES: 'permission denied (EACCES)',
  EPERM: 'operation not permitted (EPERM)',
};

/** The {@link TargetError} for a failure writing `path`, or undefined when `error` is no such file-system error. */
export function targetFileError(path: string, error: unknown): TargetError | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  if (typeof code !== 'string') return undefined;
  if (error instanceof NoRoomError) {
    return new TargetError(
      'target-full',
      `cannot write ${path}: it needs ${formatBytes(error.needed)} and its file system has ${formatBytes(error.free)} free, so nothing of it was written; free space on it (or give --target a directory on another file system), then sync again: verified files are kept`,
      error,
    );
  }
  const full = FULL[code];
  if (full !== undefined) {
    return new TargetError(
      'target-full',
      `cannot write ${path}: ${full}; free space on it (or give --target a directory on another file system), then sync again: verified files are kept and a download cut short resumes`,
      error,
    );
  }
  const denied = NOT_WRITABLE[code];
  if (denied !== undefined) {
    return new TargetError('target-not-writable', `cannot write ${path}: ${denied}; make the target writable for this user, or give another --target`, error);
  }
  return undefined;
}

/**
 * Runs `step`, which writes `path`; a full or unwritable file system becomes a {@link TargetError}
 * naming `path`, a stop by the caller's signal an {@link InterruptedError} naming it.
 */
export async function writingTo<T>(path: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (e) {
    if ((e as { code?: unknown } | null | undefined)?.code === 'aborted') throw new InterruptedError(`while writing ${path}`, e);
    const code = (e as { code?: unknown } | null | undefined)?.code;
    // A folder where a file goes, or a file where a folder goes: named, for a person to move away.
    throw targetFileError(path, e) ?? (code === 'EISDIR' || code === 'ENOTDIR' ? readError(path, e) : e);
  }
}

/**
 * The error a sync stopped by `signal` ends with: why it stopped, where, and that the next sync
 * resumes (a part stays beside its file, verified files are kept).
 */
export function interrupted(signal: AbortSignal, error: unknown): InterruptedError {
  return new InterruptedError(
    `sync interrupted ${stoppedBy(signal, error)}; run dq-refdata sync again: verified files are kept and a download cut short resumes from its part`,
    error,
  );
}

/** `(received SIGTERM) while hashing <file>`: why `signal` stopped a command and, when `error` says, where. */
export function stoppedBy(signal: AbortSignal, error: unknown): string {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : reason === undefined ? 'aborted' : String(reason);
  const where = error instanceof InterruptedError ? ` ${error.message}` : '';
  return `(${why})${where}`;
}
