import { constants } from 'node:fs';
import { access, lstat, mkdir, open, readlink, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { DqError } from '../errors/index.js';
import { userCacheDir } from '../files/cache-dir.js';
import { DEFAULT_MAX_AGE_MS } from './age.js';
import { isAccessDenied, lmdbStoreError, ownerAndMode, pgStoreError, RUN_WITHOUT_STORE, storeAccessError, StoreError, thisUser } from './errors.js';
import { LMDB_FILES, openLmdbStore, readLmdbStoreInfo } from './lmdb-store.js';
import { openPgStore, STORE_SCHEMA, type PgQueryable } from './pg-store.js';
import { redactUrl } from './pg-version.js';
import type { ResultStore, StoreInfo } from './types.js';

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  /** Answers older than this are called again; 0 = never reuse (still writes). Default 30 days. */
  maxAgeMs?: number;
  /**
   * The connector's own database, used when `spec` is undefined (dq-pg: the store lives next to
   * its bookkeeping). Not closed by the store. `initCommand`: what the owner of an older store in
   * it runs to upgrade it (see `PgStoreOptions`).
   */
  defaultDb?: { db: PgQueryable; location: string; initCommand?: string };
  /** Environment for the default folder; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * The embedded store's default folder: `$XDG_CACHE_HOME/dq-connectors/store`, else
 * `$HOME/.cache/dq-connectors/store`, else under the home folder the user database (/etc/passwd)
 * gives this user. A relative or empty XDG_CACHE_HOME or HOME is ignored (the XDG Base Directory
 * specification calls a relative path invalid): taken as it is, it would put the store under
 * whatever the working folder of a scheduler's task is, where the next run does not look.
 *
 * @throws StoreError `usage` (exit 2) when there is no home folder to find: no absolute
 * XDG_CACHE_HOME or HOME, and a user id the user database does not know (a container run under an
 * arbitrary uid, a scheduler that clears the environment).
 */
export function defaultStoreDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const cache = userCacheDir(env);
  if (cache === undefined) {
    throw new StoreError(
      'usage',
      `the result store has no default folder: neither XDG_CACHE_HOME nor HOME is set to an absolute path, and ${thisUser()} has no home folder in the user database; set XDG_CACHE_HOME or HOME, or give --store a folder${RUN_WITHOUT_STORE}`,
    );
  }
  return join(cache, 'dq-connectors', 'store');
}

/** `dq-store init` for the store database `url`, with its role left for the owner to fill in. */
function ownerInit(url: string): string {
  try {
    const u = new URL(url);
    return `dq-store init --store ${u.protocol}//<owner>@${u.host}${u.pathname}`;
  } catch {
    return 'dq-store init --store postgres://<owner>@…';
  }
}

const isPostgresUrl = (spec: string): boolean => /^postgres(ql)?:\/\//i.test(spec);

/**
 * Refuses a mistyped `--store`: one starting with an unexpanded `~`, or one that starts like a
 * Postgres URL but is not one (`postgres:/…`, `postgres:…`, a `/` short): taken for a folder it
 * would make an empty store under the working directory, its name holding the password. The
 * value of the latter is not repeated (it may hold a password).
 */
export function refuseMistypedStore(spec: string | undefined): void {
  refuseUnexpandedHome(spec);
  if (spec === undefined || !/^postgres(ql)?:/i.test(spec) || isPostgresUrl(spec)) return;
  throw new DqError('--store starts with "postgres:" but is not a postgres:// URL (the "//" is missing): write postgres://user@host:5432/database', {
    code: 'config-invalid',
    retriable: false,
  });
}

/**
 * Refuses a `--store` that starts with `~`: only a shell expands it, and a scheduler's task, a
 * systemd unit or a container's arguments run the command without one. Taken as it is, it would
 * make a folder named `~` under the working folder (where the next run from another one does not
 * look, and which `rm -rf ~` would mistake for the home folder).
 */
function refuseUnexpandedHome(spec: string | undefined): void {
  if (spec === undefined || !spec.startsWith('~')) return;
  throw new DqError(`--store ${spec}: the "~" was not expanded (no shell ran the command): give the folder's full path`, {
    code: 'config-invalid',
    retriable: false,
  });
}

/**
 * Whether a rerun with these `--store` and `--max-age` settings reuses the answers a stopped run
 * already paid for (not with `--store off`, nor with `--max-age 0`): only then may a connector's
 * advice promise that resuming does not buy them again.
 */
export function reusesAnswers(spec: string | undefined, maxAgeMs: number | undefined): boolean {
  return spec !== 'off' && maxAgeMs !== 0;
}

/**
 * The files of the embedded store the `--store` setting names (its database and LMDB's lock file),
 * whether they exist yet or not; none for `off` and a `postgres://` store. A connector checks the
 * files it writes against them: an output written over the store's memory-mapped file would destroy
 * every answer paid for (and end the process with SIGBUS).
 */
export function embeddedStoreFiles(spec: string | undefined, env?: Readonly<Record<string, string | undefined>>): string[] {
  let dir: string | undefined;
  try {
    dir = embeddedStoreDir(spec, env);
  } catch (e) {
    // No default folder: there is no store file to protect, and opening the store says why.
    if (e instanceof StoreError) return [];
    throw e;
  }
  return dir === undefined ? [] : LMDB_FILES.map((file) => join(dir, file));
}

/** The folder of the embedded store `spec` names; undefined for `off`, an empty value or a Postgres URL (also a mistyped one). */
function embeddedStoreDir(spec: string | undefined, env?: Readonly<Record<string, string | undefined>>): string | undefined {
  if (spec === 'off' || (spec !== undefined && (/^postgres(ql)?:/i.test(spec) || spec.trim() === ''))) return undefined;
  return resolve(spec ?? defaultStoreDir(env));
}

/**
 * Opens the result store the `--store` setting names, the one place that setting is resolved:
 * - `off`: none (undefined): every input is called;
 * - `postgres://…` / `postgresql://…`: the shared store in that database (schema `dq_store`);
 * - any other text: the embedded store in that folder;
 * - undefined: `defaultDb` when given (dq-pg), else the embedded store in {@link defaultStoreDir}.
 *
 * An embedded store's folder is checked before it is opened ({@link makeStoreFolder},
 * {@link checkRoomForNewStore}): a run stops before its first call, not after buying answers it
 * cannot keep.
 *
 * @throws StoreError when the store cannot be opened: `usage` or `store-permission-denied` (exit 2)
 * for a place this user cannot keep it, `store-io` otherwise (the message names where, never a password).
 */
export async function openStore(spec: string | undefined, options: OpenStoreOptions = {}): Promise<ResultStore | undefined> {
  const maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
  if (spec === 'off') return undefined;
  refuseMistypedStore(spec);
  if (spec === undefined && options.defaultDb) {
    const { db, location, initCommand } = options.defaultDb;
    return openPgStore({ db, owned: false, location, maxAgeMs, ...(initCommand === undefined ? {} : { initCommand }) });
  }
  if (spec !== undefined && isPostgresUrl(spec)) {
    // A database that stops answering must not hold the run forever (see createBoundedPool).
    const { pool, end } = (await pgPool()).createBoundedPool(spec, 4);
    return openPgStore({ db: pool, owned: true, location: redactUrl(spec), maxAgeMs, end, initCommand: ownerInit(spec) });
  }
  if (spec !== undefined && spec.trim() === '') {
    throw new DqError('--store is empty: give a folder, a postgres:// URL or off', { code: 'config-invalid', retriable: false });
  }
  const dir = embeddedStoreDir(spec, options.env)!;
  await makeStoreFolder(dir, spec === undefined);
  await checkRoomForNewStore(dir);
  return openLmdbStore(dir, maxAgeMs);
}

/**
 * What `dq-store info` shows of the store the `--store` setting names (not `off`), with read access
 * only: an embedded store is read without creating or changing anything in its folder (see
 * {@link readLmdbStoreInfo}); a Postgres store is opened as {@link openStore} opens it (a role
 * that may only read `dq_store.results` may read it).
 *
 * @throws StoreError as {@link openStore}, and `store-permission-denied` for an embedded store this user may not read.
 */
export async function readStoreInfo(spec: string | undefined, options: OpenStoreOptions = {}): Promise<StoreInfo> {
  refuseMistypedStore(spec);
  if (spec === undefined ? options.defaultDb !== undefined : isPostgresUrl(spec)) {
    const store = (await openStore(spec, options))!;
    try {
      return await store.info();
    } finally {
      await store.close();
    }
  }
  const dir = embeddedStoreDir(spec, options.env);
  if (dir === undefined) throw new DqError('--store names no store: give a folder or a postgres:// URL', { code: 'config-invalid', retriable: false });
  return readLmdbStoreInfo(dir);
}

/**
 * Refuses dq-store `command` (`prune`, `clear`) on the embedded store in `dir`, before anything is
 * opened, when this user may not write it: its data file, and its lock file (or the folder, where
 * LMDB is to create that): a `store-permission-denied` error naming the file or folder, its owner
 * and mode (or the read-only file system) and that the command needs write access.
 */
export async function checkLmdbStoreWritable(dir: string, command: string): Promise<void> {
  const [data, lock] = LMDB_FILES.map((file) => join(dir, file)) as [string, string];
  for (const path of [data, lock]) {
    try {
      await access(path, constants.W_OK);
    } catch (e) {
      if (isAccessDenied(e)) throw storeAccessError(dir, e, command, 'write');
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || path === data) continue;
      // No lock file yet: LMDB creates one in the folder.
      await access(dir, constants.W_OK).catch((e2: unknown) => {
        if (isAccessDenied(e2)) throw storeAccessError(dir, e2, command, 'write');
      });
    }
  }
}

/** The bounded pool module (it needs the optional "pg" package). */
async function pgPool(): Promise<typeof import('../pg-pool.js')> {
  try {
    return await import('../pg-pool.js');
  } catch (e) {
    throw new DqError('a Postgres store needs the "pg" package: npm install pg', { code: 'config-invalid', retriable: false, cause: e });
  }
}

/**
 * Whether the database of the Postgres URL `url` holds a result store (table `dq_store.results`),
 * creating nothing: `dq-store info`, `prune` and `clear` on a database without one (a mistyped
 * database name) say so, as on a folder without one, rather than create the store's schema there
 * or fail for want of the privilege to. Read from the catalog, which every role may read: a store
 * this role may not use is found, and opening it names the grant that is missing.
 *
 * @throws StoreError when the database cannot be reached or logged into (the message names the URL without its password).
 */
export async function pgStoreExists(url: string): Promise<boolean> {
  const { pool, end } = (await pgPool()).createBoundedPool(url, 1);
  try {
    const { rows } = await pool.query<{ found: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                      WHERE n.nspname = $1 AND c.relname = 'results') AS found`,
      [STORE_SCHEMA],
    );
    return rows[0]?.found === true;
  } catch (e) {
    throw pgStoreError(redactUrl(url), e, STORE_SCHEMA);
  } finally {
    await end().catch(() => undefined);
  }
}

/**
 * Room a new store needs on its disk before its first answer is kept: LMDB's lock file (8 KiB),
 * the two header pages it writes (8 KiB), and the room its first commit makes past them (256 KiB,
 * `makeRoom` in lmdb-store.ts), with some to spare.
 */
const NEW_STORE_ROOM = 320 * 1024;

/**
 * Refuses to lay out a new store (its data or lock file missing or empty) where the disk, the disk
 * quota or the file-size limit (`ulimit -f`) leaves no room for it: LMDB lays out those files
 * through memory maps, and on a full disk the process dies (SIGBUS or SIGSEGV, no message) before
 * any error reaches us. Writing that much to a file of its own here fails with the errno instead
 * (`store-io` naming ENOSPC, EDQUOT or EFBIG), before any call is bought. An existing store is not
 * checked: it grows only by commits, which make their room first, and may still have room inside.
 */
async function checkRoomForNewStore(dir: string): Promise<void> {
  const sizes = await Promise.all(
    LMDB_FILES.map((file) =>
      stat(join(dir, file)).then(
        (s) => s.size,
        () => 0,
      ),
    ),
  );
  if (sizes.every((size) => size > 0)) return;
  const probe = join(dir, `.room-check-${process.pid}`);
  const zeros = Buffer.alloc(64 * 1024);
  try {
    const handle = await open(probe, 'wx', 0o600);
    try {
      for (let written = 0; written < NEW_STORE_ROOM; written += zeros.length) await handle.write(zeros, 0, zeros.length, written);
    } finally {
      await handle.close();
    }
  } catch (e) {
    throw lmdbStoreError(dir, e);
  } finally {
    await rm(probe, { force: true });
  }
}

/**
 * What to do about a store folder this user cannot use. `isDefault`: the folder comes from
 * XDG_CACHE_HOME or HOME (see {@link defaultStoreDir}), which may be pointed elsewhere too.
 */
function folderAdvice(isDefault: boolean): string {
  return `give --store a folder this user may write${isDefault ? ' (or set XDG_CACHE_HOME to one)' : ''}${RUN_WITHOUT_STORE}`;
}

/**
 * Creates the embedded store's folder (mode 0700: the store holds personal data) and any missing
 * folder above it, or refuses, before any call is bought, a place this user cannot keep a store, with
 * one line naming the folder, the cause and what to do (exit 2). Made one folder at a time: Node's
 * recursive mkdir reports a read-only file system as ENOENT, which read as an I/O error (exit 1).
 */
async function makeStoreFolder(dir: string, isDefault: boolean): Promise<void> {
  // The missing folders, nearest to the root first, above the nearest one that exists.
  const missing: string[] = [];
  for (let at = dir; ; at = dirname(at)) {
    const found = await lstat(at).catch((e: NodeJS.ErrnoException) => {
      // ENOTDIR: a file above it, found further up.
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return undefined;
      throw lmdbStoreError(dir, e);
    });
    if (found === undefined) {
      missing.unshift(at);
      if (dirname(at) === at) break;
      continue;
    }
    const target = found.isSymbolicLink() ? await stat(at).catch((e: NodeJS.ErrnoException) => e) : found;
    if (target instanceof Error) {
      // A link to a folder that is not there (a volume not mounted): mkdir would report EEXIST or ENOENT.
      const to = await readlink(at).catch(() => '?');
      throw new StoreError(
        'usage',
        `the result store ${dir} cannot be used: ${at} is a symbolic link to ${to}, which ${target.code === 'ENOENT' ? 'does not exist' : `cannot be reached (${target.code})`}: create that folder, or ${folderAdvice(isDefault)}`,
        { cause: target },
      );
    }
    if (!target.isDirectory()) {
      throw new StoreError(
        'usage',
        `the result store ${dir} is not a folder (${at === dir ? 'a file is in its place' : `${at} is a file`}): give --store a folder (it is created if missing)${isDefault ? ' or set XDG_CACHE_HOME to one' : ''}${RUN_WITHOUT_STORE}`,
      );
    }
    break;
  }
  for (const folder of missing) {
    try {
      await mkdir(folder, { mode: 0o700 });
    } catch (e) {
      // Another process made it meanwhile (two runs starting together).
      if ((e as NodeJS.ErrnoException).code === 'EEXIST' && (await isFolder(folder))) continue;
      throw await cannotCreate(dir, dirname(folder), e, isDefault);
    }
  }
}

const isFolder = (path: string): Promise<boolean> =>
  stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );

/** The error of a store whose folder (`dir` or one above it) cannot be made in `parent`, naming that folder and why. */
async function cannotCreate(dir: string, parent: string, cause: unknown, isDefault: boolean): Promise<StoreError> {
  const code = (cause as NodeJS.ErrnoException).code;
  if (code === 'EROFS') {
    return new StoreError(
      'store-permission-denied',
      `the result store ${dir} cannot be created (EROFS): ${parent} is on a read-only file system; ${folderAdvice(isDefault)}`,
      {
        cause,
      },
    );
  }
  if (code !== 'EACCES' && code !== 'EPERM') return lmdbStoreError(dir, cause);
  const owner = await stat(parent).then(
    (s) => ` (${ownerAndMode(s)})`,
    () => '',
  );
  return new StoreError(
    'store-permission-denied',
    `the result store ${dir} cannot be created (${code}): ${thisUser()} may not create folders in ${parent}${owner}; ${folderAdvice(isDefault)}`,
    { cause },
  );
}
