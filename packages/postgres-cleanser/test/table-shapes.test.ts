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

/**
 * A database whose table `customers` (`rows` rows) is partitioned `by`, into `customers_nozip`
 * (`nozip`, with a unique index on the key) and `customers_zip` (`zip`); every second row with a
 * town and a street has no postal code (the answer fills it in).
 */
async function partitionedCustomers(rows: number, by: string, nozip: string, zip: string): Promise<string> {
  const db = await env.pg.createDatabase();
  await createCustomers(db, rows);
  await withClient(db, async (c) => {
    await c.query(`UPDATE customers SET postal_code = NULL WHERE city IS NOT NULL AND street IS NOT NULL AND id % 2 = 0`);
    await c.query(`ALTER TABLE customers RENAME TO source`);
    await c.query(`CREATE TABLE customers (LIKE source) PARTITION BY ${by}`);
    await c.query(`CREATE TABLE customers_nozip PARTITION OF customers ${nozip}`);
    await c.query(`CREATE TABLE customers_zip PARTITION OF customers ${zip}`);
    await c.query(`CREATE UNIQUE INDEX ON customers_nozip (id)`);
    await c.query(`INSERT INTO customers SELECT * FROM source`);
  });
  return db;
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

  it('a view or materialized view is refused as what it is, naming the table it reads (was: "no table … in this database")', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 10);
    await withClient(db, async (c) => {
      await c.query(`CREATE VIEW customers_v AS SELECT * FROM customers WHERE country IS NOT NULL`);
      await c.query(`CREATE MATERIALIZED VIEW customers_m AS SELECT * FROM customers`);
    });
    const view = await refused(cleanseArgs(db, env.sandbox, ['--run-id', 'view']).map((a) => (a === 'public.customers' ? 'public.customers_v' : a)));
    expect(view.stderr).toContain('dq-pg: table-unsupported: --table: "public.customers_v" is public.customers_v, a view, not a table');
    expect(view.stderr).toContain('give --table the table that stores the values (it reads public.customers)');
    const matview = await refused(cleanseArgs(db, env.sandbox, ['--run-id', 'matview']).map((a) => (a === 'public.customers' ? 'customers_M' : a)));
    expect(matview.stderr).toContain('"customers_M" is public.customers_m, a materialized view, not a table');
    expect(matview.stderr).toContain('then REFRESH MATERIALIZED VIEW public.customers_m');
  }, 30_000);

  it('a table partitioned by a mapped column: the key-not-unique refusal says to clean each partition, where a row whose correction moves it is refused and named', async () => {
    const db = await partitionedCustomers(30, 'LIST ((postal_code IS NULL))', 'FOR VALUES IN (true)', 'FOR VALUES IN (false)');
    const parent = await refused(cleanseArgs(db, env.sandbox, ['--run-id', 'parent']));
    expect(parent.stderr).toContain('"public"."customers" is partitioned (LIST (((postal_code IS NULL))))');
    expect(parent.stderr).toContain('Clean each partition on its own (--table <partition> --key "id", with a unique index on "id" in each partition)');
    expect(parent.stderr).not.toContain('add a unique index');

    const before = await withClient(
      db,
      async (c) => (await c.query<{ id: string; t: string }>(`SELECT id::text AS id, c::text AS t FROM customers_nozip c ORDER BY id`)).rows,
    );
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'nozip']).map((a) => (a === 'public.customers' ? 'public.customers_nozip' : a)));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('violates partition constraint');
    const summary = summaryOf(run);
    expect(summary['notWritten']).toBeGreaterThan(0);
    expect(summary['rows']).toBe(before.length);
    // The refused rows hold exactly what they held.
    const refusedKeys = new Set(summary['notWrittenKeys'] as string[]);
    const after = await withClient(
      db,
      async (c) => (await c.query<{ id: string; t: string }>(`SELECT id::text AS id, c::text AS t FROM customers c ORDER BY id`)).rows,
    );
    for (const row of before) if (refusedKeys.has(row.id)) expect(after.find((r) => r.id === row.id)?.t).toBe(row.t);
    // Nothing moved, nothing half-written: rows whose correction keeps them here may be written.
    const moved = await withClient(
      db,
      async (c) => (await c.query(`SELECT count(*)::int AS n FROM customers_zip WHERE id % 2 = 0 AND city IS NOT NULL AND street IS NOT NULL`)).rows[0],
    );
    expect(moved).toEqual({ n: 0 });
  }, 30_000);

  it('a partition cleaned on its own, partitioned by the postal code: a row whose correction belongs in another partition keeps its values, named with the key column and the UPDATE that moves it', async () => {
    const db = await partitionedCustomers(40, 'LIST (postal_code)', 'FOR VALUES IN (NULL)', 'DEFAULT');
    const before = await rowTexts(db);
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'nozip']).map((a) => (a === 'public.customers' ? 'public.customers_nozip' : a)));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    const summary = summaryOf(run);
    const refusedKeys = summary['notWrittenKeys'] as string[];
    expect(refusedKeys.length).toBeGreaterThan(0);
    const results = await withClient(db, async (c) => {
      const { rows } = await c.query<{ row_key: string; outcome: string; code: string; message: string }>(
        `SELECT row_key, outcome, error ->> 'code' AS code, error ->> 'message' AS message FROM dq_cleanse.results
          WHERE run_id = 'nozip' AND row_key = ANY ($1::text[]) ORDER BY row_key::bigint`,
        [refusedKeys],
      );
      return rows;
    });
    expect(results.map((r) => r.row_key).sort()).toEqual([...refusedKeys].sort());
    const move =
      /; to correct it, move it through "public"\."customers" \((UPDATE "public"\."customers" SET "postal_code" = '([^']+)' WHERE "id" = '(\d+)')\) and clean the partition it lands in; the row was not written$/;
    for (const r of results) {
      expect(r).toMatchObject({ outcome: 'kept', code: 'write-refused' });
      const m = move.exec(r.message);
      expect(m, r.message).not.toBeNull();
      expect(m?.[3]).toBe(r.row_key);
      expect(r.message).toBe(
        `the table refused this row's corrected values: its corrected postal_code belongs in another partition of "public"."customers" (PARTITION BY LIST (postal_code)): "public"."customers_nozip" takes only rows where (postal_code IS NULL), and PostgreSQL moves a row to another partition only in an UPDATE of the partitioned table, not of the partition (new row for relation "customers_nozip" violates partition constraint, SQLSTATE 23514)${m?.[0]}`,
      );
      expect(run.stderr).toContain(`"key":"${r.row_key}","reason":"its corrected postal_code belongs in another partition of \\"public\\".\\"customers\\"`);
    }
    // Nothing moved, nothing half-written: the refused rows hold exactly what they held, in their partition.
    const after = await rowTexts(db);
    for (const key of refusedKeys) expect(after.get(key)).toBe(before.get(key));
    const inNozip = await withClient(db, async (c) => (await c.query<{ id: string }>(`SELECT id::text AS id FROM customers_nozip`)).rows.map((r) => r.id));
    for (const key of refusedKeys) expect(inNozip).toContain(key);
    // The statement it names moves the row, which then holds its corrected postal code in the other partition.
    const [first] = results;
    const m = move.exec(first!.message)!;
    await withClient(db, (c) => c.query(m[1]!));
    const moved = await withClient(
      db,
      async (c) => (await c.query(`SELECT tableoid::regclass::text AS part, postal_code FROM customers WHERE id = $1`, [first!.row_key])).rows,
    );
    expect(moved).toEqual([{ part: 'customers_zip', postal_code: m[2] }]);
  }, 30_000);

  it('schema, table, key and columns whose names need quotes: given quoted as SQL writes them, cleaned and rolled back byte-exact', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 20);
    await withClient(db, async (c) => {
      await c.query(`CREATE SCHEMA "CRM Data"`);
      await c.query(`ALTER TABLE customers SET SCHEMA "CRM Data"`);
      await c.query(`ALTER TABLE "CRM Data".customers RENAME TO "Kunden.Alt"`);
      await c.query(`ALTER TABLE "CRM Data"."Kunden.Alt" RENAME COLUMN id TO "Kunden ID"`);
      await c.query(`ALTER TABLE "CRM Data"."Kunden.Alt" RENAME COLUMN street TO "Street Name"`);
      await c.query(`ALTER TABLE "CRM Data"."Kunden.Alt" RENAME COLUMN postal_code TO "PLZ"`);
      await c.query(`ALTER TABLE "CRM Data"."Kunden.Alt" RENAME COLUMN city TO "Ort ""alt"""`);
    });
    const texts = async (): Promise<string[]> =>
      withClient(db, async (c) =>
        (await c.query<{ t: string }>(`SELECT k::text AS t FROM "CRM Data"."Kunden.Alt" k ORDER BY "Kunden ID"`)).rows.map((r) => r.t),
      );
    const original = await texts();
    const map = 'street="Street Name",houseNumber=house_number,postalCode="PLZ",locality="Ort ""alt""",country=country';
    const args = [
      'cleanse',
      '--db',
      db,
      '--table',
      '"CRM Data"."Kunden.Alt"',
      '--key',
      '"Kunden ID"',
      '--map',
      map,
      '--base-url',
      env.sandbox.url,
      '--rate-limit',
      '0',
    ];
    const run = await runCli([...args, '--run-id', 'quoted']);
    expect(run.stderr).not.toContain('column-not-found');
    expect(run.code, run.stderr).toBe(0);
    expect(summaryOf(run)['written']).toBeGreaterThan(0);
    expect(await texts()).not.toEqual(original);
    const undo = await runCli(['rollback', '--db', db, '--run', 'quoted']);
    expect(undo.code, undo.stderr).toBe(0);
    expect(await texts()).toEqual(original);
    // A quoted name matches exactly, not ignoring case.
    const wrongCase = await refused([...args.map((a) => (a === map ? 'street="street name"' : a)), '--run-id', 'case']);
    expect(wrongCase.stderr).toContain('dq-pg: column-not-found: --map street: table "CRM Data"."Kunden.Alt" has no column ""street name""');
  }, 30_000);

  it("--map given twice adds up, and a column holding a comma is quoted as in CSV (the second --map dropped the first one's fields; the comma split the name)", async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 20);
    await withClient(db, (c) => c.query(`ALTER TABLE customers RENAME COLUMN street TO "Strasse, Nr"`));
    const args = [
      'cleanse',
      '--db',
      db,
      '--table',
      'customers',
      '--map',
      'street="Strasse, Nr",houseNumber=house_number',
      '--map',
      'postalCode=postal_code,locality=city,country=country',
      '--base-url',
      env.sandbox.url,
      '--rate-limit',
      '0',
      '--run-id',
      'twice',
    ];
    const run = await runCli(args);
    expect(run.code, run.stderr).toBe(0);
    const settings = await withClient(
      db,
      async (c) => (await c.query<{ o: { mapping: unknown } }>(`SELECT options AS o FROM dq_cleanse.runs WHERE run_id = 'twice'`)).rows[0]?.o,
    );
    expect(settings?.mapping).toEqual({ street: 'Strasse, Nr', houseNumber: 'house_number', postalCode: 'postal_code', locality: 'city', country: 'country' });
    expect(summaryOf(run)['written']).toBeGreaterThan(0);
  }, 30_000);
});
