import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, resultRows, runCli, spawnCli, startEnv, summaryOf } from './support.js';
import type { TestEnv } from './support.js';

// A database that stops answering in the middle of a run (the server frozen with SIGSTOP: sockets
// stay open, nothing answers): dq-pg's bookkeeping and its default result store both live there.

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
  // Slow answers keep the run going long enough to freeze the database in the middle.
  env.sandbox.setFaults({ batch: { latencyMs: 20 } });
});
afterAll(async () => {
  await env?.stop();
});

const ROWS = 1200;
const BATCH = 20;
const WORKERS = 2;

describe('the database stops answering mid-run', () => {
  it(
    'the run ends with exit 75 naming the run id to resume, in bounded time rather than a hang; resumed once the database answers, it pays only for answers not stored',
    { timeout: 420_000 },
    async () => {
      const args = (db: string, runId: string) =>
        cleanseArgs(db, env.sandbox, ['--run-id', runId, '--batch-size', String(BATCH), '--workers', String(WORKERS)]);
      // The distinct inputs: what one uninterrupted run over the same table pays.
      const straight = await env.pg.createDatabase();
      await createCustomers(straight, ROWS);
      const calls0 = billable(env.sandbox);
      const reference = await runCli(args(straight, 'straight'));
      expect(reference.code, reference.stderr).toBe(0);
      const distinct = billable(env.sandbox) - calls0;

      const db = await env.pg.createDatabase();
      await createCustomers(db, ROWS);
      const calls1 = billable(env.sandbox);
      const { done } = spawnCli(args(db, 'frozen'));
      while ((await resultRows(db, 'frozen')) < 200) await sleep(20);

      // The postmaster and every backend: the queries under way hang, and new connections too.
      const processes = [
        env.pg.pid,
        ...execFileSync('ps', ['-o', 'pid=', '--ppid', String(env.pg.pid)], { encoding: 'utf8' })
          .split(/\s+/)
          .filter(Boolean)
          .map(Number),
      ];
      let frozen = true;
      const thaw = (): void => {
        if (!frozen) return;
        frozen = false;
        for (const pid of processes) process.kill(pid, 'SIGCONT');
      };
      for (const pid of processes) process.kill(pid, 'SIGSTOP');
      const started = Date.now();
      const guard = setTimeout(thaw, 300_000); // a run that hangs must not leave the server frozen
      let stopped;
      try {
        stopped = await done;
      } finally {
        clearTimeout(guard);
        thaw();
      }
      const took = Date.now() - started;
      expect(stopped.code, stopped.stderr).toBe(75);
      expect(stopped.stderr).toMatch(/db-unreachable: .*rerun with --run-id frozen/);
      expect(stopped.stderr).not.toMatch(/\n\s+at /);
      // The query timeouts (30 s), the stop's own queries timing out, and the close (5 s).
      expect(took).toBeLessThan(240_000);
      const committed = await resultRows(db, 'frozen');
      expect(committed).toBeLessThan(ROWS);

      const resumed = await runCli(args(db, 'frozen'));
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(summaryOf(resumed)).toMatchObject({ state: 'done' });
      expect(await resultRows(db, 'frozen')).toBe(ROWS);
      // Both runs together: every distinct input once, plus at most the pages in flight when the
      // database froze (their answers could not be stored).
      expect(billable(env.sandbox) - calls1).toBeLessThanOrEqual(distinct + WORKERS * BATCH);
    },
  );
});
