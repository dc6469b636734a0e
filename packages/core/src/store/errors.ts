import { statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { getSystemErrorName } from 'node:util';
import { defineErrorCodes } from '../errors/error-codes.js';
import { ExitCode } from '../errors/exit-code.js';
import { CONNECTION_CODES } from '../transport/http-failure.js';

/**
 * The result store's errors and the exit codes they lead to (README "The result store"): a store
 * that cannot be reached is worth a retry (75), one this user may not use is configuration (2),
 * anything else is unexpected (1). Every message names the store (never its password) and what to do.
 */
/** The code of a {@link StoreError} whose database cannot be reached now (exit 75; a stop to resume from). */
export const STORE_UNREACHABLE = 'store-unreachable';

export class StoreError extends defineErrorCodes('dq-store', {
  usage: { exit: ExitCode.USAGE },
  /** the store's database is down, refuses connections for now, or dropped the connection */
  [STORE_UNREACHABLE]: { exit: ExitCode.TEMPFAIL },
  /** the store's role lacks a privilege or cannot log in, or the folder cannot be written */
  'store-permission-denied': { exit: ExitCode.USAGE },
  /** any other failure of the store */
  'store-io': { exit: ExitCode.UNEXPECTED },
}) {
  override readonly name = 'StoreError';
}

/**
 * What a run can do instead of using a store it cannot: the end of the messages about a folder.
 * dq-store leaves it out ({@link withoutRunAdvice}): it has no run to make without a store.
 */
export const RUN_WITHOUT_STORE = ', or pass --store off (every answer is then bought again)';

/**
 * `message` as dq-store says it: without the advice to run with `--store off` in any of its
 * wordings (dq-store refuses `--store off`: it names no store to show or trim).
 */
export function withoutRunAdvice(message: string): string {
  return message
    .replaceAll(RUN_WITHOUT_STORE, '')
    .replace(
      /; --store off runs without it instead, buying again every answer it holds/g,
      '; check the host and port of the URL, or rerun once the database answers',
    )
    .replace(/ \(or pass --store off\)/g, '')
    .replace(/,? or pass --store off/g, '');
}

/** PostgreSQL error classes of a server that cannot serve us now: connection (08), resources (53), operator intervention (57), not in the state for it (55, e.g. a database closed to connections). */
const PG_UNAVAILABLE_CLASSES = new Set(['08', '53', '55', '57']);
/** Login or access refused: a person must grant or fix the credentials. */
const PG_DENIED = new Set(['42501', '28000', '28P01', '3D000']);
/** Folder errors a person fixes: permissions, a read-only file system. */
const FS_DENIED = new Set(['EACCES', 'EPERM', 'EROFS']);
/**
 * The store's file cannot grow: a full disk, a used-up disk quota, or the process's file-size
 * limit (`ulimit -f`). Not retriable (75): a rerun would buy answers again and fail at the same
 * commit until a person frees space or moves the store.
 */
const FS_FULL = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

/**
 * The errno name (`EIO`, `ENOSPC`, …) of a file system or LMDB error: Node's string code, or the
 * positive errno number LMDB puts in `code` (5 → `EIO`); undefined for LMDB's own (negative) codes.
 */
export function errnoName(cause: unknown): string | undefined {
  const code = (cause as { code?: unknown } | null | undefined)?.code;
  if (typeof code === 'string') return code;
  if (typeof code !== 'number' || !Number.isInteger(code) || code <= 0) return undefined;
  try {
    const name = getSystemErrorName(-code);
    return name.startsWith('Unknown') ? undefined : name;
  } catch {
    return undefined;
  }
}

/** The error of a Postgres store at `location` (a URL without its password) for `cause`. */
export function pgStoreError(location: string, cause: unknown, schema: string): StoreError {
  const e = cause as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : undefined;
  const reason = typeof e.message === 'string' && e.message !== '' ? e.message : String(cause);
  if (code !== undefined && PG_DENIED.has(code)) {
    const what =
      code === '42501'
        ? `permission denied: create schema ${schema} once as a role allowed to, or GRANT USAGE ON SCHEMA ${schema} and GRANT SELECT, INSERT, UPDATE, DELETE ON ${schema}.results to this user`
        : `${reason}: check the user, password and database of the URL`;
    return new StoreError('store-permission-denied', `the result store ${location} cannot be used (${what}); then rerun, or pass --store off`, { cause });
  }
  // A URL asking for TLS (sslmode=require) of a server without it: no retry brings it (exit 2, not 75).
  if (code === undefined && reason === 'The server does not support SSL connections') {
    return new StoreError(
      'usage',
      `the result store ${location} cannot be used: the server does not support SSL connections, and the URL asks for them (sslmode); turn on ssl on the server, or remove sslmode from the URL on a network where unencrypted connections are acceptable`,
      { cause },
    );
  }
  // No SQLSTATE (the connection broke or could not be made) or a server that cannot serve now.
  if (code === undefined || CONNECTION_CODES.has(code) || PG_UNAVAILABLE_CLASSES.has(code.slice(0, 2))) {
    return new StoreError(
      STORE_UNREACHABLE,
      `the result store ${location} cannot be used: unreachable (${reason}); --store off runs without it instead, buying again every answer it holds`,
      {
        cause,
      },
    );
  }
  return new StoreError('store-io', `the result store ${location} cannot be used (${reason}); fix it or pass --store off`, { cause });
}

/** The error of the embedded store in `dir` for `cause` (a file system or LMDB error). */
export function lmdbStoreError(dir: string, cause: unknown): StoreError {
  const code = errnoName(cause);
  const message = (cause as Error | undefined)?.message;
  const reason = code ?? (typeof message === 'string' && message !== '' ? message : 'I/O error');
  if (code !== undefined && FS_DENIED.has(code)) {
    return new StoreError(
      'store-permission-denied',
      `the result store ${dir} cannot be used (${reason}): ${deniedWhy(dir, code, cause)}; give --store a folder this user may write${RUN_WITHOUT_STORE}`,
      { cause },
    );
  }
  if (code !== undefined && FS_FULL.has(code)) {
    const what =
      code === 'EFBIG'
        ? 'its file reached the file-size limit (EFBIG: ulimit -f, or the largest file of its file system); raise the limit'
        : code === 'EDQUOT'
          ? 'the disk quota is used up (EDQUOT); free space or raise the quota'
          : 'the disk is full (ENOSPC); free space on it';
    return new StoreError(
      'store-io',
      `the result store ${dir} cannot be used: ${what} or give --store a folder on another file system, then rerun (or pass --store off)`,
      { cause },
    );
  }
  return new StoreError('store-io', `the result store ${dir} cannot be used (${reason}); check the folder and the disk, or pass --store off`, { cause });
}

/**
 * Why the file or folder a store error names (the cause's path, else the store's folder) is denied,
 * in words: a read-only file system, or which user owns it with which mode, so that a store made by
 * another user (root, a run under another uid) is told apart from a permission set wrong.
 */
function deniedWhy(dir: string, code: string, cause: unknown, verb = 'use'): string {
  const path = (cause as { path?: unknown } | undefined)?.path;
  const named = typeof path === 'string' ? path : dir;
  if (code === 'EROFS') return `${named} is on a read-only file system`;
  // The nearest of the path and the folders above it this user can see: a folder this user may
  // not enter hides everything in it, so it is the one to name, with its owner and mode.
  for (let at = named; ; at = dirname(at)) {
    try {
      return `${thisUser()} may not ${verb} ${at} (${ownerAndMode(statSync(at))})`;
    } catch {
      if (dirname(at) === at) return `${thisUser()} may not ${verb} ${named}`;
    }
  }
}

/** Whether `cause` is a file system refusal a person fixes (permissions, a read-only file system). */
export function isAccessDenied(cause: unknown): boolean {
  const code = errnoName(cause);
  return code !== undefined && FS_DENIED.has(code);
}

/**
 * The error of dq-store `command` on the embedded store in `dir` when this user may not `access`
 * it (`cause`: the refusal, naming the file or folder): `info` needs read access to the folder and
 * its data file only; `prune` and `clear` need write access to the folder's files (and the folder,
 * for a lock file to create). Names what refused, its owner and mode (or the read-only file
 * system), and what to do instead of `--store` at another folder (these commands are about this one).
 */
export function storeAccessError(dir: string, cause: unknown, command: string, access: 'read' | 'write'): StoreError {
  const code = errnoName(cause) ?? 'EACCES';
  const why = deniedWhy(dir, code, cause, access);
  const what =
    access === 'read'
      ? `dq-store ${command} needs read access to the store's folder and its results.mdb: run it as their owner, or have the owner give this user read access (a group of both, and chmod g+rX)`
      : code === 'EROFS'
        ? `dq-store ${command} needs write access: run it where the store is mounted read-write (dq-store info needs read access only)`
        : `dq-store ${command} needs write access to the store's folder and its files: run it as their owner, or have the owner give this user write access (dq-store info needs read access only)`;
  return new StoreError('store-permission-denied', `the result store ${dir} cannot be used (${code}): ${why}; ${what}`, { cause });
}

/** This process's user, as a permission message names it. */
export function thisUser(): string {
  const uid = process.getuid?.();
  return uid === undefined ? 'this user' : `user id ${uid}`;
}

/** `owned by user id 0, mode 0755`: who may change a file or folder a permission message names. */
export function ownerAndMode(s: Stats): string {
  return `owned by user id ${s.uid}, mode ${(s.mode & 0o7777).toString(8).padStart(4, '0')}`;
}
