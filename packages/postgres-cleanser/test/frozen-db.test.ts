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
      // The frozen run and its resume keep dq-pg's default rate limit: the account's shared rate
      // budget then lives in the same database, and its reservations hang with it too.
      const defaultRate = (db: string, runId: string) => args(db, runId).filter((a, i, all) => a !== '--rate-limit' && all[i - 1] !== '--rate-limit');
      // The distinct inputs: what one uninterrupted run over the same table pays.
      const straight = await env.pg.createDatabase();
      await createCustomers(straight, ROWS);
      const calls0 = billable(env.sandbox);
      const reference = await runCli(args(straight, 'straight'));
      expect(reference.code, reference.stderr).toBe(0);
      const distinct = billable(env.sandbox) - calls0;

      // A query that gets no answer for 10 s counts as the database unreachable (`?query_timeout=`,
      // README) rather than after the default 30 s: what is under test is that the run stops, not when.
      const db = `${await env.pg.createDatabase()}?query_timeout=10000`;
      await createCustomers(db, ROWS);
      const calls1 = billable(env.sandbox);
      const { done } = spawnCli(defaultRate(db, 'frozen'));
      while ((await resultRows(db, 'frozen')) < 200) await sleep(20);

      const thaw = env.pg.freeze(300_000); // the queries under way hang, and new connections too
      const started = Date.now();
      let stopped;
      try {
        stopped = await done;
      } finally {
        thaw();
      }
      const took = Date.now() - started;
      expect(stopped.code, stopped.stderr).toBe(75);
      expect(stopped.stderr).toMatch(/db-unreachable: .*rerun with --run-id frozen/);
      expect(stopped.stderr).not.toMatch(/\n\s+at /);
      // The query timeouts (10 s here), the stop's own queries timing out, and the close (5 s).
      expect(took).toBeLessThan(240_000);
      const committed = await resultRows(db, 'frozen');
      expect(committed).toBeLessThan(ROWS);

      const resumed = await runCli(defaultRate(db, 'frozen'));
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(summaryOf(resumed)).toMatchObject({ state: 'done' });
      expect(await resultRows(db, 'frozen')).toBe(ROWS);
      // Both runs together: every distinct input once, plus at most the pages in flight when the
      // database froze (their answers could not be stored).
      expect(billable(env.sandbox) - calls1).toBeLessThanOrEqual(distinct + WORKERS * BATCH);
    },
  );
});
