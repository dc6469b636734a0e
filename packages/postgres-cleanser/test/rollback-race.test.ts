import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanseArgs, createCustomers, rowTexts, runCli, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

/** Waits until `check` holds (polled every 50 ms), at most `ms`. */
async function until(check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('dq-pg rollback against a run being resumed', () => {
  it('a resume started while the rollback works does not write behind it: it stops with run-busy and the rollback restores every row', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 600);
    const original = await rowTexts(db);
    // The run stops part way (its spending cap), resumable.
    const args = cleanseArgs(db, env.sandbox, ['--run-id', 'raced', '--batch-size', '50', '--pages-per-claim', '1', '--workers', '1']);
    const first = await runCli([...args, '--max-calls', '200']);
    expect(first.code).toBe(5);
    const firstWritten = summaryOf(first)['written'] as number;
    expect(firstWritten).toBeGreaterThan(0);

    // An application holds one of the rows the run wrote: the rollback waits for it in its first batch.
    const held = await withClient(db, async (c) => {
      const { rows } = await c.query<{ k: string }>(
        `SELECT row_key AS k FROM dq_cleanse.results WHERE run_id = 'raced' AND before IS NOT NULL ORDER BY row_key LIMIT 1`,
      );
      return rows[0]!.k;
    });
    const locker = new (await import('pg')).default.Client({ connectionString: db });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM customers WHERE id = $1 FOR UPDATE', [held]);
      const undo = spawnCli(['rollback', '--db', db, '--run', 'raced']);
      await until(async () =>
        withClient(db, async (c) => {
          const { rows } = await c.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%dq_cleanse.results%' AND datname = current_database()`,
          );
          return (rows[0]?.n ?? 0) > 0;
        }),
      );
      // Meanwhile the operator (or a scheduler's retry) resumes the run: it must not write behind the
      // rollback (rows whose audit the rollback has read already would keep the run's values).
      const resume = await runCli(args);
      expect(resume.stderr).toContain('run-busy');
      expect(resume.stderr).toContain('rolled back');
      expect(resume.stderr).not.toMatch(/\n\s+at /);
      expect(resume.code).toBe(75);
      await locker.query('COMMIT');
      const rolledBack = await undo.done;
      expect(rolledBack.code).toBe(0);
      expect(JSON.parse(rolledBack.stdout)).toMatchObject({ restored: firstWritten, conflicts: 0 });
      const after = await rowTexts(db);
      expect([...original.keys()].filter((id) => after.get(id) !== original.get(id))).toEqual([]);
      // Rerun now, the run is found rolled back: nothing is written, nothing bought.
      const calls = env.sandbox.stats();
      const again = await runCli(args);
      expect(again.code).toBe(0);
      expect(summaryOf(again)).toMatchObject({ state: 'rolled-back', rows: 0 });
      expect(env.sandbox.stats().billable).toEqual(calls.billable);
      expect(await rowTexts(db)).toEqual(original);
      const status = JSON.parse((await runCli(['status', '--db', db, '--run', 'raced', '--json'])).stdout) as { state: string };
      expect(status.state).toBe('rolled-back');
    } finally {
      await locker.end();
    }
  }, 90_000);
});
