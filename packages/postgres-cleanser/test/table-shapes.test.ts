import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, COLUMNS, rowTexts, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { CliResult, TestEnv } from './support.js';

// Table shapes and settings of the table itself: each either works like a plain table or is
// refused before any API call (exit 2) naming what to change, never "unexpected error" after a
// page was paid for.

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

/** A cleanse that pre-flight must refuse: exit 2, no stack trace, not a bug, and no call paid. */
async function refused(args: string[]): Promise<CliResult> {
  const calls = billable(env.sandbox);
  const run = await runCli(args);
  expect(run.stderr).not.toContain('this is a bug');
  expect(run.stderr).not.toMatch(/\n\s+at /);
  expect(run.code, run.stderr).toBe(2);
  expect(billable(env.sandbox)).toBe(calls);
  return run;
}

describe('dq-pg and the shape of the table', () => {
  it('a table with inheritance children is refused naming them; a child alone and a partitioned table are cleaned', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 30);
    // Key 3 is in the parent and in the child: a read of the parent returns it twice.
    await withClient(db, async (c) => {
      await c.query(`CREATE TABLE customers_old (PRIMARY KEY (id)) INHERITS (customers)`);
      await c.query(`INSERT INTO customers_old SELECT * FROM customers WHERE id IN (3, 31)`);
      await c.query(
        `INSERT INTO customers_old SELECT 100 + id, street, house_number, postal_code, city, address_line, locality_line, country FROM ONLY customers WHERE id <= 10`,
      );
    });
    const parent = await refused(cleanseArgs(db, env.sandbox, ['--run-id', 'parent', '--batch-size', '10']));
    expect(parent.stderr).toContain('dq-pg: table-unsupported: "public"."customers" has inheritance children (customers_old)');
    expect(parent.stderr).toContain('clean each table on its own');

    // The child on its own is a plain table: exactly its 11 rows.
    const child = await runCli([...cleanseArgs(db, env.sandbox, ['--run-id', 'child']).map((a) => (a === 'public.customers' ? 'public.customers_old' : a))]);
    expect(child.code, child.stderr).toBe(0);
    expect(summaryOf(child)).toMatchObject({ state: 'done', rows: 11 });

    // Declarative partitioning: every row of every partition, each once.
    const parts = await env.pg.createDatabase();
    await createCustomers(parts, 30);
    await withClient(parts, async (c) => {
      await c.query(`ALTER TABLE customers RENAME TO source`);
      await c.query(`CREATE TABLE customers (LIKE source) PARTITION BY RANGE (id)`);
      await c.query(`CREATE TABLE customers_low PARTITION OF customers FOR VALUES FROM (MINVALUE) TO (16)`);
      await c.query(`CREATE TABLE customers_high PARTITION OF customers FOR VALUES FROM (16) TO (MAXVALUE)`);
      await c.query(`ALTER TABLE customers ADD PRIMARY KEY (id)`);
      await c.query(`INSERT INTO customers SELECT * FROM source`);
    });
    const partitioned = await runCli(cleanseArgs(parts, env.sandbox, ['--run-id', 'parts', '--batch-size', '10']));
    expect(partitioned.code, partitioned.stderr).toBe(0);
    expect(summaryOf(partitioned)).toMatchObject({ state: 'done', rows: 30 });
    expect(summaryOf(partitioned)['written']).toBeGreaterThan(0);
  }, 60_000);

  it('a NOT NULL class or request-id status column is refused before any call, naming the column and the ALTER TABLE to run', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 20);
    await withClient(db, (c) => c.query(`ALTER TABLE customers ADD COLUMN dq_status text, ADD COLUMN dq_class text NOT NULL DEFAULT ''`));
    // A row with nothing to validate: invalid-input, no class.
    await withClient(db, (c) => c.query(`UPDATE customers SET ${COLUMNS.map((col) => `${col} = NULL`).join(', ')} WHERE id = 4`));
    const run = await refused(cleanseArgs(db, env.sandbox, ['--run-id', 'nn', '--status-columns', 'status=dq_status,class=dq_class']));
    expect(run.stderr).toContain('--status-columns class: column "dq_class" of "public"."customers" is NOT NULL');
    expect(run.stderr).toContain('ALTER TABLE "public"."customers" ALTER COLUMN "dq_class" DROP NOT NULL');
    // A NOT NULL status column is fine: every row gets a status.
    await withClient(db, (c) => c.query(`UPDATE customers SET dq_status = ''; ALTER TABLE customers ALTER COLUMN dq_status SET NOT NULL`));
    const ok = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'nn-status', '--status-columns', 'status=dq_status']));
    expect(ok.code, ok.stderr).toBe(0);
  }, 60_000);

  it('a rule on UPDATE, or a publication of updates without a replica identity, is refused before any call', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 20);
    await withClient(db, async (c) => {
      await c.query(`CREATE TABLE changes (id bigint)`);
      await c.query(`CREATE RULE log_change AS ON UPDATE TO customers DO ALSO INSERT INTO changes VALUES (NEW.id)`);
    });
    const rule = await refused(cleanseArgs(db, env.sandbox, ['--run-id', 'rule']));
    expect(rule.stderr).toContain('dq-pg: table-unsupported: "public"."customers" has a rule on UPDATE (log_change)');

    // No primary key: --key names a unique index, which is no replica identity by default.
    await withClient(db, async (c) => {
      await c.query(`DROP RULE log_change ON customers`);
      await c.query(`ALTER TABLE customers DROP CONSTRAINT customers_pkey`);
      await c.query(`CREATE UNIQUE INDEX customers_id ON customers (id)`);
      await c.query(`CREATE PUBLICATION replicas FOR TABLE customers`);
    });
    const published = await refused(cleanseArgs(db, env.sandbox, ['--run-id', 'published']));
    expect(published.stderr).toContain('is in publication replicas, which publishes UPDATEs, and has no replica identity');
    expect(published.stderr).toContain('REPLICA IDENTITY USING INDEX');
    // With a replica identity the same table is cleaned.
    await withClient(db, (c) => c.query(`ALTER TABLE customers ALTER COLUMN id SET NOT NULL, REPLICA IDENTITY USING INDEX customers_id`));
    const ok = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'identified']));
    expect(ok.code, ok.stderr).toBe(0);
    expect(summaryOf(ok)['written']).toBeGreaterThan(0);
  }, 60_000);

  it('a database with a publication FOR ALL TABLES (logical replication, change capture): dq-pg creates and upgrades its own schemas and cleans the table', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 40);
    // Every table, dq-pg's own included once created, publishes its inserts, updates and deletes.
    await withClient(db, (c) => c.query(`CREATE PUBLICATION everything FOR ALL TABLES`));
    const first = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'all-tables']));
    expect(first.stderr).not.toContain('this is a bug');
    expect(first.code, first.stderr).toBe(0);
    expect(summaryOf(first)['written']).toBeGreaterThan(0);
    // An upgrade rewrites the layout version: bookkeeping of the layout before this one.
    await withClient(db, (c) => c.query(`TRUNCATE dq_cleanse.schema_version; INSERT INTO dq_cleanse.schema_version (version) VALUES (3)`));
    const init = await runCli(['init', '--db', db]);
    expect(init.code, init.stderr).toBe(0);
    const again = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'all-tables-2']));
    expect(again.code, again.stderr).toBe(0);
    expect(summaryOf(again)).toMatchObject({ state: 'done', apiCalls: 0 });
  }, 60_000);

  it('a role with column-level grants only (SELECT and UPDATE on the columns dq-pg uses) cleans the table', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 30);
    await withClient(db, (c) => c.query(`ALTER TABLE customers ADD COLUMN secret text DEFAULT 'x'`));
    expect((await runCli(['init', '--db', db])).code).toBe(0);
    const role = `etl_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    await withClient(db, async (c) => {
      await c.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
      await c.query(`GRANT USAGE ON SCHEMA dq_cleanse TO ${role}`);
      await c.query(`GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA dq_cleanse TO ${role}`);
      await c.query(`GRANT USAGE ON SCHEMA dq_store TO ${role}`);
      await c.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA dq_store TO ${role}`);
      // Not the secret column, and no table-level grant.
      await c.query(`GRANT SELECT (id, ${COLUMNS.join(', ')}), UPDATE (${COLUMNS.join(', ')}) ON customers TO ${role}`);
    });
    const url = new URL(db);
    url.username = role;
    url.password = password;
    const original = await rowTexts(db);
    const run = await runCli(cleanseArgs(url.toString(), env.sandbox, ['--run-id', 'columns', '--batch-size', '10']));
    expect(run.stderr).not.toContain('may not SELECT');
    expect(run.code, run.stderr).toBe(0);
    expect(summaryOf(run)['written']).toBeGreaterThan(0);
    const undo = await runCli(['rollback', '--db', url.toString(), '--run', 'columns']);
    expect(undo.code, undo.stderr).toBe(0);
    expect(await rowTexts(db)).toEqual(original);
    // A column it may not update is named.
    await withClient(db, (c) => c.query(`REVOKE UPDATE (city) ON customers FROM ${role}`));
    const denied = await refused(cleanseArgs(url.toString(), env.sandbox, ['--run-id', 'no-city']));
    expect(denied.stderr).toContain('may not UPDATE column "city" of "public"."customers"');
  }, 60_000);
});
