import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { DqError } from '../errors/index.js';
import { DEFAULT_MAX_AGE_MS } from './age.js';
import { LMDB_FILES, openLmdbStore } from './lmdb-store.js';
import { openPgStore, type PgQueryable } from './pg-store.js';
import { redactUrl } from './pg-version.js';
import type { ResultStore } from './types.js';

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
 * `~/.cache/dq-connectors/store`.
 */
export function defaultStoreDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const cache = env['XDG_CACHE_HOME'] || join(homedir(), '.cache');
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
 * Refuses a `--store` that starts like a Postgres URL but is not one (`postgres:/…`, `postgres:…`, a
 * `/` short): taken for a folder it would make an empty store under the working directory, its
 * name holding the password. The value is not repeated (it may hold a password).
 */
export function refuseMistypedUrl(spec: string | undefined): void {
  if (spec === undefined || !/^postgres(ql)?:/i.test(spec) || isPostgresUrl(spec)) return;
  throw new DqError('--store starts with "postgres:" but is not a postgres:// URL (the "//" is missing): write postgres://user@host:5432/database', {
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
  const dir = embeddedStoreDir(spec, env);
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
 * @throws DqError `store-io` when the store cannot be opened (the message names where, never a password).
 */
export async function openStore(spec: string | undefined, options: OpenStoreOptions = {}): Promise<ResultStore | undefined> {
  const maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
  if (spec === 'off') return undefined;
  refuseMistypedUrl(spec);
  if (spec === undefined && options.defaultDb) {
    const { db, location, initCommand } = options.defaultDb;
    return openPgStore({ db, owned: false, location, maxAgeMs, ...(initCommand === undefined ? {} : { initCommand }) });
  }
  if (spec !== undefined && isPostgresUrl(spec)) {
    let bounded: typeof import('../pg-pool.js');
    try {
      bounded = await import('../pg-pool.js');
    } catch (e) {
      throw new DqError('a Postgres store needs the "pg" package: npm install pg', { code: 'config-invalid', retriable: false, cause: e });
    }
    // A database that stops answering must not hold the run forever (see createBoundedPool).
    const { pool, end } = bounded.createBoundedPool(spec, 4);
    return openPgStore({ db: pool, owned: true, location: redactUrl(spec), maxAgeMs, end, initCommand: ownerInit(spec) });
  }
  if (spec !== undefined && spec.trim() === '') {
    throw new DqError('--store is empty: give a folder, a postgres:// URL or off', { code: 'config-invalid', retriable: false });
  }
  return openLmdbStore(embeddedStoreDir(spec, options.env)!, maxAgeMs);
}
