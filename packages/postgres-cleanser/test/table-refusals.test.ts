import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanseArgs, createCustomers, rowTexts, runCli, runWithin, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

interface Refusal {
  row_key: string;
  outcome: string;
  before: string[] | null;
  error: { code: string; message: string };
}

async function refusals(db: string, runId: string): Promise<Refusal[]> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<Refusal>(
      `SELECT row_key, outcome, before, error FROM dq_cleanse.results WHERE run_id = $1 AND error ->> 'code' = 'write-refused' ORDER BY row_key`,
      [runId],
    );
    return rows;
  });
}

describe('dq-pg and rows the table refuses to take', () => {
  it('a unique index two corrections would collide in: the second row is left as it is and named, the run ends (was: an endless loop)', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 300);
    // Each address once, as the table's unique index wants; dirty variants of one address remain,
    // and the platform corrects them into the same street and number.
    await withClient(db, async (c) => {
      await c.query(`DELETE FROM customers a USING customers b WHERE a.id > b.id
                       AND a.street IS NOT DISTINCT FROM b.street AND a.house_number IS NOT DISTINCT FROM b.house_number`);
      await c.query(`CREATE UNIQUE INDEX customers_address ON customers (street, house_number)`);
    });
    const original = await rowTexts(db);
    const run = await runWithin(cleanseArgs(db, env.sandbox, ['--run-id', 'unique', '--batch-size', '100', '--workers', '1']), 30_000);
    expect(run.signal).toBeNull();
    expect(run.code).toBe(0);
    expect(run.stderr).not.toContain('taken over');
    expect(summaryOf(run)).toMatchObject({ state: 'done' });
    const refused = await refusals(db, 'unique');
    expect(refused.length).toBeGreaterThan(0);
    expect(summaryOf(run)['notWritten']).toBe(refused.length);
    expect([...(summaryOf(run)['notWrittenKeys'] as string[])].sort()).toEqual(refused.map((r) => r.row_key).sort());
    const after = await rowTexts(db);
    for (const r of refused) {
      expect(after.get(r.row_key)).toBe(original.get(r.row_key));
      expect(r).toMatchObject({ outcome: 'kept', before: null });
      expect(r.error.message).toContain('customers_address');
      expect(run.stderr).toContain(`"key":"${r.row_key}"`);
    }
    expect(summaryOf(run)['written'] as number).toBeGreaterThan(0);
  }, 60_000);

  it('a DEFERRABLE INITIALLY DEFERRED unique constraint a correction violates: only that row is refused and named, the others written', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 300);
    await withClient(db, async (c) => {
      await c.query(`DELETE FROM customers a USING customers b WHERE a.id > b.id
                       AND a.street IS NOT DISTINCT FROM b.street AND a.house_number IS NOT DISTINCT FROM b.house_number`);
      await c.query(`ALTER TABLE customers ADD CONSTRAINT customers_address UNIQUE (street, house_number) DEFERRABLE INITIALLY DEFERRED`);
    });
    const original = await rowTexts(db);
    const run = await runWithin(cleanseArgs(db, env.sandbox, ['--run-id', 'deferred', '--batch-size', '100', '--workers', '1']), 30_000);
    expect(run.stderr).not.toContain('write-refused: ');
    expect(run.code, run.stderr).toBe(0);
    const refused = await refusals(db, 'deferred');
    expect(refused.length).toBeGreaterThan(0);
    const after = await rowTexts(db);
    for (const r of refused) {
      expect(after.get(r.row_key)).toBe(original.get(r.row_key));
      expect(r.error.message).toContain('customers_address');
    }
    expect(summaryOf(run)['written'] as number).toBeGreaterThan(0);
  }, 60_000);

  it("a validation trigger raising an error code of the application's own (U0001): those rows are refused and named, the run goes on", async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 100);
    await withClient(db, async (c) => {
      await c.query(`CREATE FUNCTION check_street() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                       IF length(NEW.street) > 15 THEN RAISE EXCEPTION 'street % is too long', NEW.street USING ERRCODE = 'U0001'; END IF;
                       RETURN NEW; END $$`);
      await c.query(`CREATE TRIGGER check_street BEFORE UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION check_street()`);
    });
    const original = await rowTexts(db);
    const run = await runWithin(cleanseArgs(db, env.sandbox, ['--run-id', 'own-code', '--batch-size', '50']), 30_000);
    expect(run.stderr).not.toContain('this is a bug');
    expect(run.code, run.stderr).toBe(0);
    const refused = await refusals(db, 'own-code');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]!.error.message).toContain('SQLSTATE U0001');
    const after = await rowTexts(db);
    for (const r of refused) expect(after.get(r.row_key)).toBe(original.get(r.row_key));
    expect(summaryOf(run)['written'] as number).toBeGreaterThan(0);
  }, 60_000);

  it('a page with rows the table refuses and rows another session holds locked: one lock wait, not one per held row', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 100);
    await withClient(db, (c) => c.query(`ALTER TABLE customers ADD CONSTRAINT short_street CHECK (length(street) <= 15) NOT VALID`));
    const original = await rowTexts(db);
    // Another session holds 20 rows of the one page for the whole run (an application's long transaction).
    const held = Array.from({ length: 20 }, (_, i) => String(2 * i + 1));
    const other = new pg.Client({ connectionString: db });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`SELECT id FROM customers WHERE id = ANY($1::bigint[]) FOR UPDATE`, [held]);
      const started = Date.now();
      const run = await runWithin(cleanseArgs(db, env.sandbox, ['--run-id', 'held', '--batch-size', '100', '--workers', '1']), 90_000);
      const seconds = (Date.now() - started) / 1000;
      expect(run.signal, run.stderr.slice(-1500)).toBeNull();
      expect(run.stderr).not.toMatch(/\n\s+at /);
      const summary = summaryOf(run) as { written: number; conflicts: number; conflictKeys: string[] };
      const refused = await refusals(db, 'held');
      expect(refused.length).toBeGreaterThan(0);
      // The held rows the run would change are conflicts, left as they were; the others are written.
      expect(summary.conflicts).toBeGreaterThan(0);
      for (const key of summary.conflictKeys) expect(held).toContain(key);
      expect(summary.written).toBeGreaterThan(0);
      await other.query('ROLLBACK');
      const after = await rowTexts(db);
      for (const key of [...summary.conflictKeys, ...refused.map((r) => r.row_key)]) expect(after.get(key)).toBe(original.get(key));
      // The page waits once for the held rows (5 s) and is then written around them; probing the
      // refused rows and writing the page again do not wait for them once more, each.
      expect(seconds).toBeLessThan(15);
    } finally {
      await other.end();
    }
  }, 120_000);

  it('a CHECK constraint the corrections break: those rows are named and kept, the others written', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 300);
    // A legacy rule, NOT VALID: the rows that hold longer streets already stay, new values must obey.
    await withClient(db, (c) => c.query(`ALTER TABLE customers ADD CONSTRAINT short_street CHECK (length(street) <= 15) NOT VALID`));
    const original = await rowTexts(db);
    const run = await runWithin(cleanseArgs(db, env.sandbox, ['--run-id', 'checked', '--batch-size', '100']), 30_000);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.code).toBe(0);
    const refused = await refusals(db, 'checked');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]!.error.message).toContain('short_street');
    const after = await rowTexts(db);
    for (const r of refused) expect(after.get(r.row_key)).toBe(original.get(r.row_key));
    expect(summaryOf(run)['written'] as number).toBeGreaterThan(0);
    // The run report lists them with the failures, by code, with the reason.
    const html = join(mkdtempSync(join(tmpdir(), 'dq-pg-refused-')), 'run.html');
    const report = await runCli(['report', '--db', db, '--run', 'checked', '--output', html]);
    expect(report.code).toBe(0);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('write-refused');
    expect(page).toContain('short_street');
  }, 60_000);

  it('rollback: rows whose old values a CHECK constraint added since refuses are left and named as conflicts (exit 4), every other row restored', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 300);
    const original = await rowTexts(db);
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'to-undo', '--batch-size', '100']));
    expect(run.code).toBe(0);
    // After the run, a rule the old values break: a long street name may not come back.
    await withClient(db, (c) => c.query(`ALTER TABLE customers ADD CONSTRAINT short_street CHECK (length(street) <= 15) NOT VALID`));
    const cleaned = await rowTexts(db);
    const blocked = await withClient(db, async (c) => {
      const { rows } = await c.query<{ k: string }>(
        `SELECT row_key AS k FROM dq_cleanse.results WHERE run_id = 'to-undo' AND before IS NOT NULL AND length(before[1]) > 15 ORDER BY row_key`,
      );
      return rows.map((r) => r.k);
    });
    expect(blocked.length).toBeGreaterThan(0);

    const undo = await runCli(['rollback', '--db', db, '--run', 'to-undo']);
    expect(undo.stderr).not.toMatch(/\n\s+at /);
    expect(undo.code).toBe(4);
    const summary = JSON.parse(undo.stdout) as { conflicts: number; conflictKeys: string[] };
    expect(summary.conflicts).toBe(blocked.length);
    expect([...summary.conflictKeys].sort()).toEqual([...blocked].sort().slice(0, 100));
    expect(undo.stderr).toContain('short_street');
    const restored = await rowTexts(db);
    for (const [id, text] of original) expect(restored.get(id)).toBe(blocked.includes(id) ? cleaned.get(id) : text);
  }, 60_000);

  it('a mapped column other tables reference: RESTRICT refuses those rows (named, kept), CASCADE follows the corrections and the rollback; a rollback the reference refuses names it, not "changed"', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 40);
    await withClient(db, async (c) => {
      await c.query(`ALTER TABLE customers ADD CONSTRAINT customers_id_street UNIQUE (id, street)`);
      await c.query(
        `CREATE TABLE orders_r (cid bigint, street text, CONSTRAINT orders_r_fk FOREIGN KEY (cid, street) REFERENCES customers (id, street) ON UPDATE RESTRICT)`,
      );
      await c.query(`CREATE TABLE orders_c (cid bigint, street text, FOREIGN KEY (cid, street) REFERENCES customers (id, street) ON UPDATE CASCADE)`);
      await c.query(`INSERT INTO orders_r SELECT id, street FROM customers WHERE id % 2 = 1 AND street IS NOT NULL`);
      await c.query(`INSERT INTO orders_c SELECT id, street FROM customers WHERE street IS NOT NULL`);
    });
    const original = await rowTexts(db);
    const orders = async (): Promise<string[]> =>
      withClient(db, async (c) => (await c.query<{ t: string }>(`SELECT o::text AS t FROM orders_c o ORDER BY cid`)).rows.map((r) => r.t));
    const originalOrders = await orders();
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'referenced']));
    expect(run.code, run.stderr).toBe(0);
    const refused = await refusals(db, 'referenced');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((r) => Number(r.row_key) % 2 === 1 && r.error.message.includes('orders_r_fk'))).toBe(true);
    expect(summaryOf(run)['notWritten']).toBe(refused.length);
    const cleaned = await rowTexts(db);
    for (const r of refused) expect(cleaned.get(r.row_key)).toBe(original.get(r.row_key));
    // The cascade carried every written street into the orders.
    const mismatched = await withClient(
      db,
      async (c) => (await c.query(`SELECT o.cid FROM orders_c o JOIN customers c ON c.id = o.cid WHERE o.street IS DISTINCT FROM c.street`)).rows,
    );
    expect(mismatched).toEqual([]);

    // An order placed since on a corrected street: that row cannot get its old street back.
    const pinned = await withClient(db, async (c) => {
      const { rows } = await c.query<{ k: string; street: string }>(
        `SELECT row_key AS k, after[1] AS street FROM dq_cleanse.results WHERE run_id = 'referenced' AND before[1] IS DISTINCT FROM after[1] AND row_key::bigint % 2 = 0 ORDER BY row_key LIMIT 1`,
      );
      const row = rows[0]!;
      await c.query(`INSERT INTO orders_r VALUES ($1, $2)`, [row.k, row.street]);
      return row.k;
    });
    const undo = await runCli(['rollback', '--db', db, '--run', 'referenced']);
    expect(undo.code, undo.stderr).toBe(4);
    expect(JSON.parse(undo.stdout)).toMatchObject({ conflicts: 1, conflictKeys: [pinned] });
    expect(undo.stderr).toContain('orders_r_fk');
    expect(undo.stderr).not.toContain('rows changed after the run');
    const restored = await rowTexts(db);
    for (const [id, text] of original) expect(restored.get(id)).toBe(id === pinned ? cleaned.get(id) : text);
    expect((await orders()).filter((o) => !o.startsWith(`(${pinned},`))).toEqual(originalOrders.filter((o) => !o.startsWith(`(${pinned},`)));
  }, 30_000);
});
