import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanseArgs, createCustomers, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe('dq-pg on a citext column', () => {
  it('rollback leaves a row whose town an application re-cased since the run (Konstanz → KONSTANZ) as a conflict, not overwritten', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 100);
    await withClient(db, async (c) => {
      await c.query('CREATE EXTENSION IF NOT EXISTS citext');
      await c.query('ALTER TABLE customers ALTER city TYPE citext');
    });
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'cased', '--batch-size', '50']));
    expect(run.code).toBe(0);
    const key = await withClient(db, async (c) => {
      const { rows } = await c.query<{ k: string }>(
        `SELECT r.row_key AS k FROM dq_cleanse.results r JOIN customers t ON t.id::text = r.row_key
          WHERE r.run_id = 'cased' AND r.before IS NOT NULL AND t.city IS NOT NULL AND upper(t.city::text) <> t.city::text ORDER BY r.row_key LIMIT 1`,
      );
      const k = rows[0]!.k;
      // The application's edit after the run: the same town, in capitals.
      await c.query(`UPDATE customers SET city = upper(city::text) WHERE id = $1`, [k]);
      return k;
    });
    const held = await withClient(
      db,
      async (c) => (await c.query<{ city: string }>('SELECT city::text AS city FROM customers WHERE id = $1', [key])).rows[0]!.city,
    );

    const undo = await runCli(['rollback', '--db', db, '--run', 'cased']);
    expect(undo.code).toBe(4);
    expect(JSON.parse(undo.stdout)).toMatchObject({ conflicts: 1, conflictKeys: [key] });
    const after = await withClient(
      db,
      async (c) => (await c.query<{ city: string }>('SELECT city::text AS city FROM customers WHERE id = $1', [key])).rows[0]!.city,
    );
    expect(after).toBe(held);
  }, 60_000);
});

describe('dq-pg on a char(n) column', () => {
  it('a second run over the unchanged table (--store off) writes no row: the padding char(n) adds is no change', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 100);
    // Every code shorter than 8 characters is stored padded: '10115   '.
    await withClient(db, (c) => c.query('ALTER TABLE customers ALTER postal_code TYPE char(8) USING left(postal_code, 8)'));
    const first = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'first', '--store', 'off']));
    expect(first.code, first.stderr).toBe(0);
    expect(summaryOf(first)['written']).toBeGreaterThan(0);
    const second = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'second', '--store', 'off']));
    expect(second.code, second.stderr).toBe(0);
    expect(summaryOf(second)).toMatchObject({ state: 'done', rows: 100, written: 0 });
  }, 60_000);
});
