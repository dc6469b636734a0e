import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyIdOf } from '@dq/core/throttle';
import { otherAccountsOfKey } from '@dq/core/throttle-pg';
import { cleanseArgs, createCustomers, createEtlRole, rowTexts, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

// dq-pg as an ETL role that owns neither the table nor the bookkeeping schema, with the grants
// the README lists. The schema is created once by its owner with `dq-pg init`.
let env: TestEnv;
let owner: string;
let etl: string;
beforeAll(async () => {
  env = await startEnv();
  owner = await env.pg.createDatabase();
  await createCustomers(owner, 60);
  await withClient(owner, async (c) => {
    await c.query(`ALTER TABLE customers ADD COLUMN name text`);
    await c.query(`UPDATE customers SET name = 'Customer ' || id WHERE id % 9 <> 0`);
  });
  const init = await runCli(['init', '--db', owner]);
  expect(init.stderr).toBe('');
  expect(init.code).toBe(0);
  etl = await createEtlRole(owner);
});
afterAll(async () => {
  await env?.stop();
});

describe('dq-pg as an ETL role that does not own dq_cleanse', () => {
  it("init made the budget's key table too: the ETL role, which may not create tables, has its key checked (one key under two accounts is found)", async () => {
    await withClient(owner, (c) => c.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC'));
    await expect(withClient(etl, (c) => c.query('CREATE TABLE probe (x int)'))).rejects.toMatchObject({ code: '42501' });
    const keyId = keyIdOf('etl-role-key');
    // What a run of the role records as its first calls start, and what a second run under another account finds.
    expect(await otherAccountsOfKey(etl, 'prod', keyId)).toEqual([]);
    expect(await otherAccountsOfKey(etl, 'staging', keyId)).toEqual(['prod']);
    const rows = await withClient(owner, async (c) => (await c.query<{ account: string }>('SELECT account FROM dq_throttle_keys ORDER BY account')).rows);
    expect(rows.map((r) => r.account)).toEqual(['prod', 'staging']);
  });

  it('runs cleanse, status and rollback with the documented grants', async () => {
    const original = await rowTexts(owner);
    const run = await runCli(cleanseArgs(etl, env.sandbox, ['--run-id', 'etl-run', '--batch-size', '20']));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(summaryOf(run)).toMatchObject({ state: 'done', rows: 60 });
    expect(summaryOf(run)['written']).toBeGreaterThan(0);

    const status = await runCli(['status', '--db', etl, '--run', 'etl-run', '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId: 'etl-run', state: 'done', rows: 60 });

    const undo = await runCli(['rollback', '--db', etl, '--run', 'etl-run']);
    expect(undo.code).toBe(0);
    expect(await rowTexts(owner)).toEqual(original);
  });

  it('--status-columns into a data column: its old values are audited and rollback restores them', async () => {
    const original = await rowTexts(owner);
    const names = await withClient(
      owner,
      async (c) => (await c.query<{ id: string; name: string | null }>('SELECT id::text AS id, name FROM customers ORDER BY id')).rows,
    );
    const run = await runCli(cleanseArgs(etl, env.sandbox, ['--run-id', 'names-run', '--batch-size', '20', '--status-columns', 'status=name']));
    expect(run.code).toBe(0);
    const after = await withClient(owner, async (c) => (await c.query<{ name: string }>('SELECT name FROM customers ORDER BY id')).rows);
    expect(new Set(after.map((r) => r.name)).has('Customer 1')).toBe(false);

    // The audit holds each row's name from before the run.
    const audited = await withClient(
      owner,
      async (c) =>
        (await c.query<{ row_key: string; name: string | null }>(`SELECT row_key, before ->> 'name' AS name FROM dq_cleanse.audit WHERE run_id = 'names-run'`))
          .rows,
    );
    expect(audited).toHaveLength(60);
    const byKey = new Map(audited.map((a) => [a.row_key, a.name]));
    for (const n of names) expect(byKey.get(n.id)).toBe(n.name);

    const undo = await runCli(['rollback', '--db', etl, '--run', 'names-run']);
    expect(undo.code).toBe(0);
    expect(JSON.parse(undo.stdout)).toMatchObject({ restored: 60, conflicts: 0 });
    expect(await rowTexts(owner)).toEqual(original);
  });

  it('refuses a status column that is the key or a mapped column, before any call', async () => {
    for (const spec of ['status=id', 'class=city']) {
      const bad = await runCli(cleanseArgs(etl, env.sandbox, ['--status-columns', spec]));
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/is the key or a mapped column/);
    }
  });

  it('--where cannot smuggle in a second statement, with or without --dry-run: the other table survives', async () => {
    // A table the ETL role owns, so that a smuggled DROP would succeed.
    await withClient(owner, (c) =>
      c.query(`CREATE TABLE public.keep_me (id int); INSERT INTO public.keep_me VALUES (1); ALTER TABLE public.keep_me OWNER TO ${new URL(etl).username}`),
    );
    const before = await rowTexts(owner);
    for (const extra of [['--dry-run'], []]) {
      const res = await runCli(cleanseArgs(etl, env.sandbox, ['--where', '1=1); DROP TABLE public.keep_me; SELECT (1', ...extra]));
      expect(res.code).toBe(2);
      expect(res.stderr).toMatch(/where-invalid: --where/);
      expect(res.stderr).not.toMatch(/\n\s+at /);
      const kept = await withClient(etl, async (c) => (await c.query<{ n: number }>('SELECT count(*)::int AS n FROM public.keep_me')).rows[0]?.n);
      expect(kept).toBe(1);
    }
    expect(await rowTexts(owner)).toEqual(before);
  });
});
