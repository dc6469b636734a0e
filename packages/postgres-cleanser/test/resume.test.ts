import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, runCli, snapshot, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
  // Slow answers keep pages in flight long enough to be killed in the middle of one.
  env.sandbox.setFaults({ batch: { latencyMs: 20 } });
});
afterAll(async () => {
  await env?.stop();
});

const ROWS = 1000;
const BATCH = 50;
const args = (db: string) => cleanseArgs(db, env.sandbox, ['--run-id', 'crash', '--batch-size', String(BATCH), '--pages-per-claim', '4', '--concurrency', '8']);

async function committedRows(db: string): Promise<number> {
  return withClient(db, async (c) => {
    const exists = await c.query(`SELECT to_regclass('dq_cleanse.progress') IS NOT NULL AS ok`);
    if (!exists.rows[0]?.ok) return 0;
    const { rows } = await c.query<{ n: number }>(`SELECT COALESCE(sum(rows_read), 0)::int AS n FROM dq_cleanse.progress WHERE run_id = 'crash'`);
    return rows[0]?.n ?? 0;
  });
}

describe('resume after kill -9', () => {
  // Each range worker has one page validated but not committed at a kill; reading ahead
  // (validating the next page while one is written) leaves up to two per worker.
  it.each([
    { mode: 'with the default 4 range workers', extra: [] as string[], pagesRepeated: 4 },
    { mode: 'with --workers 1', extra: ['--workers', '1'], pagesRepeated: 1 },
    { mode: 'with --workers 1 --read-ahead 1', extra: ['--workers', '1', '--read-ahead', '1'], pagesRepeated: 2 },
  ])('processes every row exactly once and repeats at most $pagesRepeated page(s) of calls $mode', async ({ extra, pagesRepeated }) => {
    // The same table cleaned without interruption: what the resumed run must end up with.
    const reference = await env.pg.createDatabase();
    await createCustomers(reference, ROWS);
    const calls0 = billable(env.sandbox);
    expect((await runCli([...args(reference), ...extra])).code).toBe(0);
    const uninterruptedCalls = billable(env.sandbox) - calls0;
    const expected = await snapshot(reference);

    const db = await env.pg.createDatabase();
    await createCustomers(db, ROWS);
    const calls1 = billable(env.sandbox);
    const { child, done } = spawnCli([...args(db), ...extra]);
    while ((await committedRows(db)) < 4 * BATCH) await sleep(25);
    child.kill('SIGKILL');
    const killed = await done;
    expect(killed.signal).toBe('SIGKILL');
    const atKill = await committedRows(db);
    expect(atKill).toBeLessThan(ROWS);

    const resumed = await runCli([...args(db), ...extra]);
    expect(resumed.code).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ state: 'done', rows: ROWS - atKill });
    const totalCalls = billable(env.sandbox) - calls1;

    expect(await snapshot(db)).toEqual(expected);
    await withClient(db, async (c) => {
      const results = await c.query<{ n: number; distinct: number }>(
        `SELECT count(*)::int AS n, count(DISTINCT row_key)::int AS distinct FROM dq_cleanse.results WHERE run_id = 'crash'`,
      );
      expect(results.rows[0]).toEqual({ n: ROWS, distinct: ROWS });
      const audit = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.audit WHERE run_id = 'crash'`);
      const referenceAudit = await withClient(reference, (r) => r.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.audit`));
      expect(audit.rows[0]?.n).toBe(referenceAudit.rows[0]?.n);
      const progress = await c.query<{ rows: number; pending: number }>(
        `SELECT sum(rows_read)::int AS rows, count(*) FILTER (WHERE NOT done)::int AS pending FROM dq_cleanse.progress WHERE run_id = 'crash'`,
      );
      expect(progress.rows[0]).toEqual({ rows: ROWS, pending: 0 });
    });
    expect(totalCalls).toBeGreaterThanOrEqual(uninterruptedCalls);
    expect(totalCalls).toBeLessThanOrEqual(uninterruptedCalls + pagesRepeated * BATCH);
  });
});
