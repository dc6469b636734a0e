import { Socket } from 'node:net';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { DqError } from '../errors/index.js';
import { DEFAULT_MAX_AGE_MS } from './age.js';
import { openLmdbStore } from './lmdb-store.js';
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

/** Longest wait for one query of the Postgres store (a lookup or an upsert takes milliseconds). */
const STORE_QUERY_TIMEOUT_MS = 30_000;
/** Longest wait for a new connection to the Postgres store. */
const STORE_CONNECT_TIMEOUT_MS = 15_000;

/** How long closing waits for the store's database to end its connections before dropping them. */
const STORE_CLOSE_WAIT_MS = 5_000;

/**
 * Ends `pool`, its connections' sockets destroyed when the server does not take the goodbye within
 * {@link STORE_CLOSE_WAIT_MS} (a frozen server would otherwise keep the process alive).
 */
async function endPool(pool: { end(): Promise<void> }, sockets: ReadonlySet<Socket>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const ended = pool.end().then(
    () => true,
    () => true,
  );
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), STORE_CLOSE_WAIT_MS)));
  const done = await Promise.race([ended, late]);
  clearTimeout(timer);
  if (!done) for (const socket of sockets) socket.destroy();
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
  if (spec === undefined && options.defaultDb) {
    const { db, location, initCommand } = options.defaultDb;
    return openPgStore({ db, owned: false, location, maxAgeMs, ...(initCommand === undefined ? {} : { initCommand }) });
  }
  if (spec !== undefined && isPostgresUrl(spec)) {
    let pg: typeof import('pg');
    try {
      pg = (await import('pg')).default as unknown as typeof import('pg');
    } catch (e) {
      throw new DqError('a Postgres store needs the "pg" package: npm install pg', { code: 'config-invalid', retriable: false, cause: e });
    }
    // A database that stops answering (a frozen server, a network partition) must not hold the run
    // forever: a query or a connection that takes this long fails as the store being unreachable
    // (exit 75). `?query_timeout=<ms>` in the URL sets another limit.
    const sockets = new Set<Socket>();
    const pool = new pg.Pool({
      connectionString: spec,
      max: 4,
      query_timeout: STORE_QUERY_TIMEOUT_MS,
      connectionTimeoutMillis: STORE_CONNECT_TIMEOUT_MS,
      keepAlive: true,
      // The pool's sockets, kept so that closing does not wait on a server that stopped answering.
      stream: () => {
        const socket = new Socket();
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
        return socket;
      },
    });
    // An idle connection that drops must not crash the process; the next query reports it.
    pool.on('error', () => undefined);
    return openPgStore({ db: pool, owned: true, location: redactUrl(spec), maxAgeMs, end: () => endPool(pool, sockets), initCommand: ownerInit(spec) });
  }
  if (spec !== undefined && spec.trim() === '') {
    throw new DqError('--store is empty: give a folder, a postgres:// URL or off', { code: 'config-invalid', retriable: false });
  }
  return openLmdbStore(resolve(spec ?? defaultStoreDir(options.env)), maxAgeMs);
}
