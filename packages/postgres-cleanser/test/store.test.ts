import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, runCli, snapshot, startEnv, summaryOf, withClient, type TestEnv } from './support.js';

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

const query = <T extends object>(sql: string, values: unknown[] = []): Promise<T[]> =>
  withClient(db, async (c) => (await c.query<T & Record<string, unknown>>(sql, values)).rows);

/** Rows of run `runId` whose answer (request id and check time) is that of run `from`'s written row. */
const reusedFrom = async (runId: string, from: string): Promise<number> =>
  Number(
    (
      await query<{ n: string }>(
        `SELECT count(*) AS n FROM dq_cleanse.results a JOIN dq_cleanse.results b ON b.row_key = a.row_key AND b.run_id = $2 AND b.outcome = 'written'
          WHERE a.run_id = $1 AND a.outcome = 'unchanged' AND a.request_id = b.request_id AND a.checked_at = b.checked_at AND a.before IS NULL`,
        [runId, from],
      )
    )[0]?.n,
  );

describe('dq-pg with the result store (default: its own database)', () => {
  it('a new run right after the first calls nothing and writes nothing; edited rows, and only those, are called', { timeout: 600_000 }, async () => {
    const first = await cleanse('night-1');
    expect(first.calls).toBeGreaterThan(ROWS / 2);
    const corrected = first.summary['written'] as number;
    expect(corrected).toBeGreaterThan(ROWS / 10);
    const afterFirst = await snapshot(db);

    // The second night: the rows the first one corrected hold what it wrote, so its answers are
    // reused; every other row's input is in the store.
    const second = await cleanse('night-2');
    expect(second.calls).toBe(0);
    expect(second.summary).toMatchObject({ rows: ROWS, apiCalls: 0, written: 0, conflicts: 0, storeHitRate: 1 });
    expect(second.summary['callsSavedByStore']).toBeGreaterThanOrEqual(first.calls);
    expect(await snapshot(db)).toEqual(afterFirst);
    expect(await query(`SELECT 1 FROM dq_cleanse.audit WHERE run_id = 'night-2'`)).toEqual([]);
    // The results table shows each corrected row's answer with its original request id and check time.
    expect(await reusedFrom('night-2', 'night-1')).toBe(corrected);

    const third = await cleanse('night-3');
    expect(third.calls).toBe(0);
    expect(third.summary).toMatchObject({ apiCalls: 0, written: 0, storeHitRate: 1 });
    expect(await reusedFrom('night-3', 'night-1')).toBe(corrected);

    // 1 % of the rows edited with addresses of their own; one corrected row edited back to its
    // value from before the first run; one edited and then set back to what the first run wrote.
    const [back, same] = await query<{ row_key: string; before: Record<string, string | null> }>(
      `SELECT row_key, before FROM dq_cleanse.audit WHERE run_id = 'night-1' AND row_key::bigint % 100 <> 0 ORDER BY row_key::bigint LIMIT 2`,
    );
    const edited = await withClient(db, async (c) => {
      const r = await c.query(`UPDATE customers SET street = 'Geänderte Straße ' || id, house_number = '1', address_line = NULL
                                WHERE id % 100 = 0 AND postal_code IS NOT NULL AND city IS NOT NULL AND country IS NOT NULL`);
      const cols = Object.keys(back!.before);
      await c.query(`UPDATE customers SET ${cols.map((col, i) => `${col} = $${i + 2}`).join(', ')} WHERE id = $1`, [
        back!.row_key,
        ...cols.map((col) => back!.before[col]),
      ]);
      await c.query(`UPDATE customers SET city = 'Irgendwo' WHERE id = $1`, [same!.row_key]);
      await c.query(`UPDATE customers SET city = $2 WHERE id = $1`, [same!.row_key, JSON.parse(afterFirst.get(same!.row_key)!)[3]]);
      return r.rowCount ?? 0;
    });
    expect(edited).toBeGreaterThan(ROWS / 200);
    const fourth = await cleanse('night-4');
    expect(fourth.calls).toBe(edited);
    expect(fourth.summary['apiCalls']).toBe(edited);
    // The row edited back to its old input: its answer is in the store (no call), its correction is written again.
    const [backNow] = await query<{ outcome: string; request_id: string; first: string }>(
      `SELECT r.outcome, r.request_id, f.request_id AS first FROM dq_cleanse.results r JOIN dq_cleanse.results f ON f.row_key = r.row_key AND f.run_id = 'night-1'
        WHERE r.run_id = 'night-4' AND r.row_key = $1`,
      [back!.row_key],
    );
    expect(backNow).toMatchObject({ outcome: 'written', request_id: backNow!.first });
    expect((await snapshot(db)).get(back!.row_key)).toBe(afterFirst.get(back!.row_key));
    // The row holding what the first run wrote again: reused, not written.
    const [sameNow] = await query<{ outcome: string; before: unknown }>(
      `SELECT outcome, before FROM dq_cleanse.results WHERE run_id = 'night-4' AND row_key = $1`,
      [same!.row_key],
    );
    expect(sameNow).toEqual({ outcome: 'unchanged', before: null });

    const fifth = await cleanse('night-5');
    expect(fifth.calls).toBe(0);
    expect(fifth.summary).toMatchObject({ apiCalls: 0, written: 0 });
  });

  it(
    'after a rollback of the run that corrected them, rows are their old inputs again: answered from the store, corrected again',
    { timeout: 600_000 },
    async () => {
      const corrected = Number(
        (await query<{ n: string }>(`SELECT count(*) AS n FROM dq_cleanse.results WHERE run_id = 'night-1' AND outcome = 'written'`))[0]?.n,
      );
      const undo = await runCli(['rollback', '--db', db, '--run', 'night-1']);
      // Exit 4: the rows edited since the run are left as they are (and reported).
      expect(undo.code, undo.stderr).toBe(4);
      const restored = Number(
        (await query<{ n: string }>(`SELECT count(*) AS n FROM dq_cleanse.results WHERE run_id = 'night-1' AND rollback = 'restored'`))[0]?.n,
      );
      expect(restored).toBeGreaterThan(corrected / 2);
      const after = await cleanse('after-rollback');
      expect(after.calls).toBe(0);
      expect(after.summary['written']).toBe(restored);
      expect((await cleanse('after-rollback-2')).summary).toMatchObject({ apiCalls: 0, written: 0 });
    },
  );

  it(
    'a --store database that cannot be reached stops the run with store-unreachable (75), naming that store, not --db, without its password',
    { timeout: 600_000 },
    async () => {
      // A port nothing listens on: taken, then given back.
      const port = await new Promise<number>((resolve) => {
        const s = createServer().listen(0, '127.0.0.1', () => {
          const p = (s.address() as AddressInfo).port;
          s.close(() => resolve(p));
        });
      });
      const before = billable(env.sandbox);
      const result = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'store-down', '--store', `postgres://etl:St0re-pw-9@127.0.0.1:${port}/results`]));
      expect(result.code, result.stderr).toBe(75);
      expect(result.stderr).toMatch(
        new RegExp(`dq-pg: store-unreachable: the result store postgres://etl:(\\*\\*\\*|\\[redacted\\])@127\\.0\\.0\\.1:${port}/results `),
      );
      const main = new URL(db);
      expect(result.stderr).not.toContain(`${main.host}${main.pathname}`);
      expect(result.stderr).not.toContain('St0re-pw-9');
      expect(result.stdout).not.toContain('St0re-pw-9');
      expect(billable(env.sandbox)).toBe(before);
    },
  );

  it('--store off keeps nothing for later runs: the rows it corrects are not recorded as known', { timeout: 600_000 }, async () => {
    const other = await env.pg.createDatabase();
    await createCustomers(other, 300, 5);
    const result = await runCli(cleanseArgs(other, env.sandbox, ['--run-id', 'off-1', '--store', 'off']));
    expect(result.code, result.stderr).toBe(0);
    expect(summaryOf(result)['written']).toBeGreaterThan(0);
    const known = await withClient(other, async (c) => (await c.query<{ n: string }>(`SELECT count(*) AS n FROM dq_cleanse.known`)).rows[0]!.n);
    expect(known).toBe('0');
  });

  it('--store off and --max-age 0 call everything; answers older than --max-age are bought again, once', { timeout: 600_000 }, async () => {
    const settled = await cleanse('age-1');
    expect(settled.calls).toBe(0);
    const all = (await cleanse('age-2', '--store', 'off')).calls;
    expect(all).toBeGreaterThan(ROWS / 2);
    expect((await cleanse('age-3', '--max-age', '0')).calls).toBe(all);
    // Every answer two hours old: with --max-age 1h each row is checked again, and then known.
    await withClient(db, async (c) => {
      await c.query(`UPDATE dq_cleanse.results SET checked_at = checked_at - interval '2 hours'`);
      await c.query(`UPDATE dq_store.results SET checked_at = checked_at - interval '2 hours'`);
    });
    expect((await cleanse('age-4', '--max-age', '1h')).calls).toBe(all);
    expect((await cleanse('age-5', '--max-age', '1h')).calls).toBe(0);
  });
});
