import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, createEtlRole, runCli, snapshot, startEnv, withClient } from './support.js';
import type { TestEnv } from './support.js';

// Operator mistakes with the databases dq-pg writes to: a --store or --db URL that reaches a
// read-only server (a hot standby, or a role with default_transaction_read_only), and a --store
// database whose dq_store.results is another application's table. Each must stop before the first
// billable call, with exit 2 and one line saying what to change, not an "unexpected error".
let env: TestEnv;
let db: string;
const ROWS = 120;

/** A login role whose sessions are read-only (as on a hot standby); its URL for database `url`. */
async function readOnlyRole(url: string, grant: (name: string) => string[] = () => []): Promise<{ url: string; password: string }> {
  const name = `ro_${randomBytes(4).toString('hex')}`;
  const password = `pw${randomBytes(8).toString('hex')}`;
  await withClient(url, async (c) => {
    await c.query(`CREATE ROLE ${name} LOGIN PASSWORD '${password}'`);
    await c.query(`ALTER ROLE ${name} SET default_transaction_read_only = on`);
    for (const sql of grant(name)) await c.query(sql);
  });
  const u = new URL(url);
  u.username = name;
  u.password = password;
  return { url: u.toString(), password };
}

beforeAll(async () => {
  env = await startEnv();
  db = await env.pg.createDatabase();
  await createCustomers(db, ROWS, 29);
});
afterAll(async () => {
  await env?.stop();
});

describe('dq-pg with a result store it cannot write to', () => {
  it('a --store on a read-only server stops before any call (exit 2), naming it; every rerun pays nothing', async () => {
    const storeDb = await env.pg.createDatabase();
    // The store exists and the role has the README's grants: only writing is impossible.
    const init = await runCli(['init', '--db', storeDb]);
    expect(init.code, init.stderr).toBe(0);
    const ro = await readOnlyRole(storeDb, (name) => [
      `GRANT USAGE ON SCHEMA dq_store TO ${name}`,
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA dq_store TO ${name}`,
    ]);
    const before = await snapshot(db);
    const calls = billable(env.sandbox);
    for (const runId of ['ro-store-1', 'ro-store-1', 'ro-store-2']) {
      const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', runId, '--batch-size', '20', '--store', ro.url]));
      expect(run.code, run.stderr).toBe(2);
      const lines = run.stderr.trim().split('\n');
      const line = lines.find((l) => l.startsWith('dq-pg: '));
      expect(line).toMatch(/^dq-pg: store-permission-denied: the result store postgres:\/\/ro_[0-9a-f]+:.*read-only.*--store off/);
      expect(run.stderr).not.toContain('bug in dq-pg');
      expect(run.stderr).not.toContain(ro.password);
      expect(run.stdout).not.toContain(ro.password);
    }
    // Not one answer bought that could not be kept, however often the scheduler retries.
    expect(billable(env.sandbox) - calls).toBe(0);
    expect(await snapshot(db)).toEqual(before);
  });

  it('a --store database whose dq_store.results is not a result store stops before any call (exit 2), naming the table', async () => {
    const storeDb = await env.pg.createDatabase();
    await withClient(storeDb, async (c) => {
      await c.query(`CREATE SCHEMA dq_store`);
      await c.query(`CREATE TABLE dq_store.results (id integer PRIMARY KEY, payload text)`);
      await c.query(`INSERT INTO dq_store.results VALUES (1, 'theirs')`);
    });
    const calls = billable(env.sandbox);
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'foreign-store', '--store', storeDb]));
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).not.toContain('bug in dq-pg');
    expect(run.stderr).toMatch(
      /^dq-pg: usage: the result store postgres:\/\/.*: dq_store\.results there is not a result store \(it lacks the columns key, result, checked_at.*--store off$/m,
    );
    expect(billable(env.sandbox) - calls).toBe(0);
    // The other application's table is left as it was.
    const rows = await withClient(storeDb, async (c) => (await c.query('SELECT * FROM dq_store.results')).rows);
    expect(rows).toEqual([{ id: 1, payload: 'theirs' }]);
  });
});

describe('dq-pg with a --db it cannot write to', () => {
  it('cleanse and rollback on a read-only server stop with exit 2 (db-read-only) naming the database, no call made', async () => {
    const init = await runCli(['init', '--db', db]);
    expect(init.code, init.stderr).toBe(0);
    const etl = new URL(await createEtlRole(db));
    await withClient(db, (c) => c.query(`ALTER ROLE ${etl.username} SET default_transaction_read_only = on`));
    const before = await snapshot(db);
    const calls = billable(env.sandbox);
    const run = await runCli(cleanseArgs(etl.toString(), env.sandbox, ['--run-id', 'ro-db']));
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).not.toContain('bug in dq-pg');
    expect(run.stderr).not.toContain(etl.password);
    expect(run.stderr).toMatch(/^dq-pg: db-read-only: the database 127\.0\.0\.1:\d+\/t_[0-9a-f]+ is read-only for user etl_[0-9a-f]+ .*--db/m);
    expect(billable(env.sandbox) - calls).toBe(0);
    expect(await snapshot(db)).toEqual(before);

    const undo = await runCli(['rollback', '--db', etl.toString(), '--run', 'ro-db']);
    expect(undo.code, undo.stderr).toBe(2);
    expect(undo.stderr).toMatch(/^dq-pg: db-read-only: /m);

    // status only reads: it works on a read-only server.
    const status = await runCli(['status', '--db', etl.toString()]);
    expect(status.code, status.stderr).toBe(0);
  });
});
