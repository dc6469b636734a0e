import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, rowTexts, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe('dq-pg and a table whose trigger rewrites what is stored', () => {
  it('the audit holds what the row holds, the next run neither writes nor buys again, and rollback restores every row exactly once the trigger is disabled (until then those rows are named, exit 4)', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 200);
    // The application's own rule: towns are stored in capitals, whatever an UPDATE sends.
    await withClient(db, async (c) => {
      await c.query(`CREATE FUNCTION upper_city() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.city := upper(NEW.city); RETURN NEW; END $$`);
      await c.query(`CREATE TRIGGER upper_city BEFORE UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION upper_city()`);
    });
    const original = await rowTexts(db);
    const first = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'night-1', '--batch-size', '50']));
    expect(first.code).toBe(0);
    const written = summaryOf(first)['written'] as number;
    expect(written).toBeGreaterThan(50);

    // Every audited row's `after` is what the row holds now, column by column.
    const mismatched = await withClient(db, async (c) => {
      const { rows } = await c.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM dq_cleanse.results r JOIN customers t ON t.id::text = r.row_key
          WHERE r.run_id = 'night-1' AND r.before IS NOT NULL
            AND ARRAY[t.street, t.house_number, t.postal_code::text, t.city, t.address_line, t.locality_line, t.country::text] IS DISTINCT FROM r.after`,
      );
      return rows[0]!.n;
    });
    expect(mismatched).toBe(0);

    // The next night: the rows hold what the first run left, nothing to buy or write.
    const calls = billable(env.sandbox);
    const second = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'night-2', '--batch-size', '50']));
    expect(second.code).toBe(0);
    expect(summaryOf(second)).toMatchObject({ written: 0, apiCalls: 0 });
    expect(billable(env.sandbox)).toBe(calls);

    // The trigger would upper-case the towns given back ('Konstanz' stored as 'KONSTANZ'): those
    // rows are left as the run wrote them and named (exit 4), the others restored.
    const undo = await runCli(['rollback', '--db', db, '--run', 'night-1']);
    expect(undo.code).toBe(4);
    const undone = JSON.parse(undo.stdout) as { restored: number; conflicts: number };
    expect(undone.conflicts).toBeGreaterThan(0);
    expect(undone.restored + undone.conflicts).toBe(written);
    expect(undo.stderr).toContain('DISABLE TRIGGER \\"upper_city\\"');
    // With the trigger disabled for it, the rerun gives every row back what it held.
    await withClient(db, (c) => c.query('ALTER TABLE customers DISABLE TRIGGER upper_city'));
    const again = await runCli(['rollback', '--db', db, '--run', 'night-1']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ restored: undone.conflicts, conflicts: 0 });
    expect(await rowTexts(db)).toEqual(original);
  }, 60_000);
});
