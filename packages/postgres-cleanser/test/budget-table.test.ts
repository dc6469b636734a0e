import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, runCli, startEnv, withClient } from './support.js';
import type { TestEnv } from './support.js';

// A --budget database (or dq-pg's own) where a table named dq_throttle already belongs to another
// application: dq-pg must not add its columns to it, and must send no call without its budget.
let env: TestEnv;
let db: string;

beforeAll(async () => {
  env = await startEnv();
  db = await env.pg.createDatabase();
  await createCustomers(db, 40, 5);
});
afterAll(async () => {
  await env?.stop();
});

/** A database holding another application's `dq_throttle` (one row of its own). */
async function foreignThrottle(): Promise<string> {
  const url = await env.pg.createDatabase();
  await withClient(url, async (c) => {
    await c.query(`CREATE TABLE dq_throttle (id integer PRIMARY KEY, note text)`);
    await c.query(`INSERT INTO dq_throttle VALUES (1, 'theirs')`);
  });
  return url;
}

const columnsOf = (url: string): Promise<string[]> =>
  withClient(url, async (c) => {
    const { rows } = await c.query<{ name: string }>(
      `SELECT attname AS name FROM pg_attribute WHERE attrelid = 'dq_throttle'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    );
    return rows.map((r) => r.name);
  });

describe("a dq_throttle that is another application's table", () => {
  it('cleanse --budget there: exit 2 naming the table (a retry would not cure it), the table left as it was, no call sent', async () => {
    const budget = await foreignThrottle();
    const calls = billable(env.sandbox);
    // The budget is used only with a rate limit (the tests' default is --rate-limit 0).
    const run = await runCli([...cleanseArgs(db, env.sandbox, ['--run-id', 'foreign-budget', '--budget', budget]), '--rate-limit', '50']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(
      /^dq-pg: budget-db-config: the shared rate budget's database refused it: table dq_throttle in this database is not the shared rate budget's .*\(42809\)/m,
    );
    expect(run.stderr).not.toContain('bug in dq-pg');
    expect(billable(env.sandbox) - calls).toBe(0);
    expect(await columnsOf(budget)).toEqual(['id', 'note']);
    expect(await withClient(budget, async (c) => (await c.query('SELECT * FROM dq_throttle')).rows)).toEqual([{ id: 1, note: 'theirs' }]);
  });

  it('dq-pg init there: exit 2 naming the table and what to do; the table is left as it was', async () => {
    const own = await foreignThrottle();
    const init = await runCli(['init', '--db', own]);
    expect(init.code, init.stderr).toBe(2);
    expect(init.stderr).toMatch(
      /^dq-pg: usage: table dq_throttle in this database is not the shared rate budget's \(it lacks the columns account, endpoint, tat_us, factor, factor_at_us: another application's table\?\) and was left as it is; rename it, point --budget at another database, or run with --budget off$/m,
    );
    expect(await columnsOf(own)).toEqual(['id', 'note']);
  });
});
