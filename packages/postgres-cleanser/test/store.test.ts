import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, runCli, startEnv, summaryOf, withClient, type TestEnv } from './support.js';

const ROWS = Number(process.env['DQ_PG_STORE_TEST_ROWS'] ?? 5_000);
let env: TestEnv;
let db: string;

beforeAll(async () => {
  env = await startEnv();
  db = await env.pg.createDatabase();
  await createCustomers(db, ROWS, 17);
}, 300_000);
afterAll(async () => {
  await env?.stop();
});

const cleanse = async (runId: string, ...extra: string[]) => {
  const before = billable(env.sandbox);
  const result = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', runId, ...extra]));
  expect(result.code, result.stderr).toBe(0);
  return { calls: billable(env.sandbox) - before, summary: summaryOf(result) };
};

describe('dq-pg with the result store (default: its own database)', () => {
  it('a new run over an unchanged table calls nothing and writes nothing; 1 % edited calls only those', { timeout: 600_000 }, async () => {
    const first = await cleanse('night-1');
    expect(first.calls).toBeGreaterThan(ROWS / 2);
    // The first run corrected some rows: their values are new inputs, checked once by the next run.
    await cleanse('night-2');
    const third = await cleanse('night-3');
    expect(third.calls).toBe(0);
    expect(third.summary).toMatchObject({ apiCalls: 0, written: 0, storeHitRate: 1 });
    expect(third.summary['callsSavedByStore']).toBeGreaterThan(0);

    // The stored check time, not the run's, is what the results table shows for an answer from the store.
    const times = await withClient(db, async (c) => {
      const { rows } = await c.query<{ run_id: string; t: Date }>(
        `SELECT run_id, checked_at AS t FROM dq_cleanse.results WHERE row_key = (SELECT min(row_key) FROM dq_cleanse.results WHERE request_id IS NOT NULL) ORDER BY run_id`,
      );
      return rows;
    });
    expect(times.map((r) => r.run_id)).toEqual(['night-1', 'night-2', 'night-3']);
    expect(times[2]!.t.toISOString()).toBe(times[1]!.t.toISOString());

    // 1 % of the rows edited with addresses of their own: only those are called.
    const edited = await withClient(db, async (c) => {
      const r = await c.query(`UPDATE customers SET street = 'Geänderte Straße ' || id, house_number = '1', address_line = NULL
                                WHERE id % 100 = 0 AND postal_code IS NOT NULL AND city IS NOT NULL AND country IS NOT NULL`);
      return r.rowCount ?? 0;
    });
    expect(edited).toBeGreaterThan(ROWS / 200);
    const fourth = await cleanse('night-4');
    expect(fourth.calls).toBe(edited);
  });

  it('--store off calls everything; --max-age 0 calls everything', { timeout: 600_000 }, async () => {
    const settled = await cleanse('age-1');
    expect(settled.calls).toBe(0);
    const all = (await cleanse('age-2', '--store', 'off')).calls;
    expect(all).toBeGreaterThan(ROWS / 2);
    expect((await cleanse('age-3', '--max-age', '0')).calls).toBe(all);
  });
});
