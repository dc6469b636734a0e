/**
 * A throwaway PostgreSQL 17 for the Postgres benchmarks: the test harness's server
 * (`@dq/test-support/pg`: a free local port, a temp data directory, durability off, the same for
 * every side measured), plus the CPU time its processes use.
 */
import { readdir, readFile } from 'node:fs/promises';
import { startPostgres } from '@dq/test-support/pg';

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
