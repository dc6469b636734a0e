/**
 * A throwaway PostgreSQL 17 for the Postgres benchmarks: the test harness's server
 * (`@dq/test-support/pg`: a free local port, a temp data directory, durability off, the same for
 * every side measured), plus the CPU time its processes use.
 */
import { readdir } from 'node:fs/promises';
import { startPostgres } from '@dq/test-support/pg';
import { procCpu } from './proc-stat.js';

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

async function serverCpuMs(postmaster: number): Promise<number> {
  const main = await procCpu(postmaster);
  if (!main) return 0;
  let ms = main.ownMs + main.childrenMs;
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((d) => /^\d+$/.test(d));
  for (const pid of pids) {
    const st = await procCpu(pid);
    if (st?.ppid === postmaster) ms += st.ownMs;
  }
  return ms;
}

/** Starts the server; `sharedBuffers` e.g. `256MB` so a 1M-row table and its index stay cached. */
export async function startBenchPostgres(sharedBuffers = '256MB'): Promise<BenchPostgres> {
  const server = await startPostgres({
    settings: { shared_buffers: sharedBuffers, max_wal_size: '4GB', autovacuum: 'off' },
  });
  const url = server.url;
  const postmaster = server.pid;
  return {
    url,
    cpuMs: () => serverCpuMs(postmaster),
    stop: () => server.stop(),
  };
}
