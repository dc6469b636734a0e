import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, rowTexts, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';
import type { RecordResult } from '@dq/core';
import { inspectTable } from '../src/preflight.js';
import { decideRow } from '../src/row-values.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe('dq-pg and what the table does to the values it is given', () => {
  it('rollback with a BEFORE UPDATE trigger that trims: rows it would not give back exactly are left and named (exit 4), restored once it is disabled', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 60);
    // Legacy data with trailing blanks, and a trigger added later that trims every update.
    await withClient(db, async (c) => {
      await c.query(`UPDATE customers SET city = city || '  ' WHERE id % 3 = 0 AND city IS NOT NULL`);
      await c.query(`CREATE FUNCTION trim_city() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.city := btrim(NEW.city); RETURN NEW; END$$`);
      await c.query(`CREATE TRIGGER trim_city BEFORE UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION trim_city()`);
    });
    const original = await rowTexts(db);
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'trimmed']));
    expect(run.code, run.stderr).toBe(0);
    expect(summaryOf(run)['written'] as number).toBeGreaterThan(0);
    const cleansed = await rowTexts(db);

    const undo = await runCli(['rollback', '--db', db, '--run', 'trimmed']);
    expect(undo.stderr).not.toMatch(/\n\s+at /);
    // Not "done, exit 0" over rows that lost their blanks: those are conflicts, left as the run wrote them.
    expect(undo.code, undo.stderr).toBe(4);
    const summary = JSON.parse(undo.stdout) as { restored: number; conflicts: number; conflictKeys: string[] };
    expect(summary.conflicts).toBeGreaterThan(0);
    const after = await rowTexts(db);
    for (const [key, row] of original) {
      if (summary.conflictKeys.includes(key)) {
        expect(row).toMatch(/ {2}"?,/);
        expect(after.get(key)).toBe(cleansed.get(key));
      } else expect(after.get(key)).toBe(row);
    }
    expect(undo.stderr).toContain(summary.conflictKeys[0]);
    expect(undo.stderr).toContain('column city');
    expect(undo.stderr).toContain('DISABLE TRIGGER \\"trim_city\\"');

    // With the trigger disabled, the same command restores them, byte for byte.
    await withClient(db, (c) => c.query('ALTER TABLE customers DISABLE TRIGGER trim_city'));
    const again = await runCli(['rollback', '--db', db, '--run', 'trimmed']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ restored: summary.conflicts, conflicts: 0 });
    expect(await rowTexts(db)).toEqual(original);
  }, 30_000);

  it('a postal code column of a number type: exit 2 saying its leading zeros are lost already and the ALTER that makes it text, which then cleans', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 20);
    await withClient(db, async (c) => {
      await c.query(`UPDATE customers SET street = 'Theaterplatz', house_number = '2', postal_code = '01067', city = 'Dresden', country = 'DE' WHERE id = 1`);
      await c.query(`ALTER TABLE customers ALTER COLUMN postal_code TYPE integer USING NULLIF(regexp_replace(postal_code, '\\D', '', 'g'), '')::integer`);
    });
    const stored = await rowTexts(db);
    expect(stored.get('1')).toContain(',1067,');
    const calls = billable(env.sandbox);
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'numeric-zip']));
    expect(run.code, run.stderr).toBe(2);
    const alter = `ALTER TABLE "public"."customers" ALTER COLUMN "postal_code" TYPE text USING lpad("postal_code"::bigint::text, 5, '0')`;
    expect(run.stderr).toBe(
      `dq-pg: column-type: --map postalCode: column "postal_code" of "public"."customers" is integer, not a text type (text, varchar, char): a number keeps no leading zeros, so postal codes such as 01067 (Dresden) are already stored without them (1067). Make it text, padded to the length of the country's postal codes (5 in Germany): ${alter}, or map a text column\n`,
    );
    expect(billable(env.sandbox)).toBe(calls);
    expect(await rowTexts(db)).toEqual(stored);
    // The ALTER it names gives Dresden its 0 back, and the run then cleans the table.
    await withClient(db, (c) => c.query(alter));
    expect((await rowTexts(db)).get('1')).toContain(',01067,');
    const again = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'numeric-zip']));
    expect(again.code, again.stderr).toBe(0);
    expect(summaryOf(again)).toMatchObject({ state: 'done', rows: 20 });
  }, 60_000);

  it("a request-id status column too short for the platform's ids: exit 2 naming the column and the ALTER, and the rerun after it writes every row without new calls", async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 40);
    // A request id is the platform's (a UUID: 36 characters); the pre-flight cannot know its length.
    await withClient(db, (c) => c.query(`ALTER TABLE customers ADD COLUMN dq_status text, ADD COLUMN "DQ Request" varchar(32)`));
    const original = await rowTexts(db);
    const args = ['--run-id', 'rid', '--status-columns', 'status=dq_status,requestId=DQ Request'];
    const first = await runCli(cleanseArgs(db, env.sandbox, args));
    expect(first.stderr).not.toMatch(/\n\s+at /);
    expect(first.code, first.stderr).toBe(2);
    expect(summaryOf(first)).toMatchObject({ state: 'stopped', error: { code: 'column-type' } });
    expect(first.stderr).toContain('--status-columns requestId: column "DQ Request"');
    expect(first.stderr).toContain('character varying(32)');
    expect(first.stderr).toContain('ALTER TABLE "public"."customers" ALTER COLUMN "DQ Request" TYPE text');
    expect(first.stderr).toContain('--run-id rid');
    expect(await resultCount(db, 'rid')).toBe(0);
    expect(await rowTexts(db)).toEqual(original);

    await withClient(db, (c) => c.query(`ALTER TABLE customers ALTER COLUMN "DQ Request" TYPE text`));
    const calls = billable(env.sandbox);
    const again = await runCli(cleanseArgs(db, env.sandbox, args));
    expect(again.code, again.stderr).toBe(0);
    expect(summaryOf(again)).toMatchObject({ state: 'done' });
    expect(await resultCount(db, 'rid')).toBe(40);
    expect(billable(env.sandbox)).toBe(calls);
    const ids = await withClient(db, (c) => c.query<{ n: number }>(`SELECT count(*)::int AS n FROM customers WHERE length("DQ Request") = 36`));
    expect(ids.rows[0]!.n).toBeGreaterThan(0);
  }, 30_000);
  it('a BEFORE UPDATE trigger that returns NULL for some rows: they are named as left out by the table, not as changed by someone else', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 40);
    await withClient(db, async (c) => {
      await c.query(`CREATE FUNCTION skip_odd() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN IF NEW.id % 2 = 1 THEN RETURN NULL; END IF; RETURN NEW; END$$`);
      await c.query(`CREATE TRIGGER skip_odd BEFORE UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION skip_odd()`);
    });
    const original = await rowTexts(db);
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'skipped']));
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run) as { conflicts: number; conflictKeys: string[] };
    expect(summary.conflicts).toBeGreaterThan(0);
    expect(summary.conflictKeys.every((k) => Number(k) % 2 === 1)).toBe(true);
    const after = await rowTexts(db);
    for (const k of summary.conflictKeys) expect(after.get(k)).toBe(original.get(k));
    expect(run.stderr).not.toMatch(/changed by someone else/);
    expect(run.stderr).toContain('left out of the UPDATE though no one changed them');
    expect(run.stderr).toContain('BEFORE UPDATE trigger');
    expect(run.stderr).toContain(`"${summary.conflictKeys[0]}"`);
  }, 30_000);
  it('a name-typed column (63 bytes, longer values cut without an error): a longer correction is kept as value-too-long, not stored cut off', async () => {
    const db = await env.pg.createDatabase();
    await withClient(db, (c) => c.query(`CREATE DOMAIN street_name AS name; CREATE TABLE t (id int PRIMARY KEY, street name, strasse street_name)`));
    const target = await withClient(db, (c) =>
      inspectTable(c, { table: 't', map: { street: 'street', addressLine: 'strasse' }, mode: 'address', write: true }),
    );
    // 64 bytes in 40 characters: PostgreSQL would store the first 63 bytes of it.
    const long = `${'Ä'.repeat(24)}straße Nummer 1`;
    const row = { key: '1', values: ['Hauptstr.', 'Hauptstr. 1'] };
    const answer = { status: 'accepted', resultClass: 'A', address: { street: long, houseNumber: '1' } } as unknown as RecordResult;
    const decided = decideRow('address', row, target.columns, answer);
    expect(decided.outcome).toBe('kept');
    expect(decided.after).toEqual(row.values);
    expect(decided.unfit?.map((u) => [u.column, u.length, u.maxLength, u.unit])).toEqual([
      ['street', 64, 63, 'bytes'],
      ['strasse', 66, 63, 'bytes'],
    ]);
    // What writing it would have done: no error, the value cut.
    const stored = await withClient(db, (c) => c.query<{ s: string }>(`INSERT INTO t VALUES (1, $1) RETURNING street::text AS s`, [long]));
    expect(stored.rows[0]!.s).toBe(long.slice(0, -1));
  }, 30_000);

  it('domains over domains (over char(n), varchar(n), name): padding is no change, a longer correction is value-too-long, as through one domain', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 60);
    await withClient(db, async (c) => {
      await c.query(
        `CREATE DOMAIN zip_base AS char(6); CREATE DOMAIN zip AS zip_base; CREATE DOMAIN town_base AS varchar(8); CREATE DOMAIN town AS town_base CHECK (VALUE <> '')`,
      );
      await c.query(`CREATE DOMAIN street_base AS name; CREATE DOMAIN street_t AS street_base`);
      await c.query(
        `ALTER TABLE customers ALTER COLUMN postal_code TYPE zip USING left(postal_code, 6), ALTER COLUMN city TYPE town USING left(NULLIF(city, ''), 8)`,
      );
    });
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'nested', '--store', 'off']));
    expect(run.code, run.stderr).toBe(0);
    const errors = await withClient(db, async (c) => {
      const { rows } = await c.query<{ code: string; n: number }>(
        `SELECT error ->> 'code' AS code, count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'nested' AND error IS NOT NULL GROUP BY 1 ORDER BY 1`,
      );
      return Object.fromEntries(rows.map((r) => [r.code, r.n]));
    });
    expect(errors['value-too-long'] ?? 0).toBeGreaterThan(0);
    expect(errors['write-refused']).toBeUndefined();
    // The rerun finds nothing to change: a char(n) value's padding is no change (was: every padded row written again).
    const again = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'nested-again', '--store', 'off']));
    expect(again.code, again.stderr).toBe(0);
    expect(summaryOf(again)['written']).toBe(0);
    // A name through two domains is cut at 63 bytes like a name: found by the pre-flight too.
    await withClient(db, (c) => c.query(`ALTER TABLE customers ALTER COLUMN street TYPE street_t`));
    const target = await withClient(db, (c) =>
      inspectTable(c, { table: 'customers', map: { street: 'street', postalCode: 'postal_code', locality: 'city' }, mode: 'address', write: true }),
    );
    expect(target.columns.map((m) => [m.column, m.maxLength, m.padded, m.maxBytes])).toEqual([
      ['street', undefined, undefined, 63],
      ['postal_code', 6, true, undefined],
      ['city', 8, undefined, undefined],
    ]);
  }, 30_000);
});

async function resultCount(db: string, runId: string): Promise<number> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = $1`, [runId]);
    return rows[0]!.n;
  });
}
