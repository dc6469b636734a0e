import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../src/bookkeeping.js';
import { billable, cleanseArgs, createEtlRole, grantEtl, runCli, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

// The upgrade path: a database set up by the dq-pg of bookkeeping layout 3, with the rate budget
// table of that time (no lanes) and a finished run of 40 rows, loaded from a fixture made by that
// dq-pg (see the fixture's header). The ETL role has the README's grants, given before the upgrade.
let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

const FIXTURE = new URL('./fixtures/layout-3.sql', import.meta.url);
/** The customers table before the old run: row_to_json of each row, in id order. */
const ORIGINAL = new URL('./fixtures/layout-3.original.json', import.meta.url);
/** Rows of the fixture's customers table: each input at most one call. */
const ROWS = 40;
/** Rows the old run corrected (outcome `written` in the fixture). */
const OLD_WRITTEN = 31;

/** A fresh database holding the layout-3 fixture, created by its owner (the harness's superuser). */
async function layout3(): Promise<string> {
  const db = await env.pg.createDatabase();
  const sql = await readFile(FIXTURE, 'utf8');
  await withClient(db, (c) => c.query(sql));
  return db;
}

/** The customers table's rows as row_to_json, in id order. */
async function customers(db: string): Promise<unknown[]> {
  return withClient(db, async (c) => (await c.query<{ j: unknown }>('SELECT row_to_json(t) AS j FROM customers t ORDER BY id')).rows.map((r) => r.j));
}

async function one<T>(db: string, sql: string): Promise<T | undefined> {
  return withClient(db, async (c) => (await c.query<T & Record<string, unknown>>(sql)).rows[0]);
}

/** A cleanse of customers with a rate limit, so that the account's budget table is used too. */
async function cleanse(db: string, runId: string): Promise<{ code: number | null; stderr: string; calls: number; summary?: Record<string, unknown> }> {
  const args = cleanseArgs(db, env.sandbox, ['--run-id', runId, '--batch-size', '10']);
  args[args.indexOf('--rate-limit') + 1] = '1000';
  const calls = billable(env.sandbox);
  const run = await runCli(args);
  return { code: run.code, stderr: run.stderr, calls: billable(env.sandbox) - calls, ...(run.code === 0 ? { summary: summaryOf(run) } : {}) };
}

const roleOf = (url: string): string => new URL(url).username;

describe('a database of the layout-3 dq-pg', () => {
  it('the ETL role is told to have dq-pg init run; after init and the grants again its runs work, and the second one calls nothing', async () => {
    const owner = await layout3();
    const etl = await createEtlRole(owner);
    const before = await customers(owner);
    const auditOf = async () =>
      withClient(owner, async (c) => (await c.query(`SELECT * FROM dq_cleanse.audit WHERE run_id = 'old-nightly' ORDER BY row_key`)).rows);
    const audit = await auditOf();
    expect(audit).toHaveLength(OLD_WRITTEN);

    // (a) The documented error and exit code, no stack trace, nothing called or written.
    const refused = await cleanse(etl, 'etl-1');
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(
      new RegExp(
        `permission-denied: .*may not upgrade schema dq_cleanse from layout version 3 to ${SCHEMA_VERSION}.*run "dq-pg init" once as the schema's owner`,
      ),
    );
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(refused.calls).toBe(0);
    expect(await customers(owner)).toEqual(before);

    // (b) The owner's init migrates, keeping the old run: its status and audit are as they were.
    const init = await runCli(['init', '--db', owner]);
    expect(init.code, init.stderr).toBe(0);
    expect(JSON.parse(init.stdout)).toMatchObject({ schema: 'dq_cleanse', version: SCHEMA_VERSION });
    expect(await auditOf()).toEqual(audit);
    const status = await runCli(['status', '--db', owner, '--run', 'old-nightly', '--json']);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId: 'old-nightly', kind: 'cleanse', state: 'done', rows: 40, written: OLD_WRITTEN });

    // Until the grants are given again, the ETL role is told which are missing (the new table).
    const ungranted = await cleanse(etl, 'etl-1');
    expect(ungranted.code, ungranted.stderr).toBe(2);
    expect(ungranted.stderr).toMatch(/permission-denied: .*dq_cleanse\.known/);
    expect(ungranted.stderr).not.toMatch(/\n\s+at /);
    expect(ungranted.calls).toBe(0);

    // (c) With the grants again the ETL role's run works through the upgraded budget table; the
    // rows are checked once (layout 3 did not record them as known, and its store's entries are
    // under keys of the earlier form, which folded case: never read), then known.
    await grantEtl(owner, roleOf(etl));
    const first = await cleanse(etl, 'etl-1');
    expect(first.code, first.stderr).toBe(0);
    expect(first.summary).toMatchObject({ state: 'done', rows: 40, budget: { scope: 'shared' } });
    expect(first.calls).toBeLessThanOrEqual(ROWS);
    const second = await cleanse(etl, 'etl-2');
    expect(second.code, second.stderr).toBe(0);
    expect(second.calls).toBe(0);
    expect(second.summary).toMatchObject({ state: 'done', rows: 40, apiCalls: 0, written: 0 });
  });

  it("after the owner's init the old run is rolled back exactly as the ETL role; its inputs are bought once more (the old store's keys are of the earlier form), then reused", async () => {
    const owner = await layout3();
    const etl = await createEtlRole(owner);
    expect((await runCli(['init', '--db', owner])).code).toBe(0);
    await grantEtl(owner, roleOf(etl));
    const undo = await runCli(['rollback', '--db', etl, '--run', 'old-nightly']);
    expect(undo.code, undo.stderr).toBe(0);
    expect(JSON.parse(undo.stdout)).toMatchObject({ restored: OLD_WRITTEN, conflicts: 0 });
    expect(await customers(owner)).toEqual(JSON.parse(await readFile(ORIGINAL, 'utf8')));
    // The old run's answers are in the store it left, under keys of the earlier form (case
    // folded), which no run reads: each input is bought once more, and corrected again.
    const again = await cleanse(etl, 'etl-after-rollback');
    expect(again.code, again.stderr).toBe(0);
    expect(again.calls).toBeGreaterThan(0);
    expect(again.calls).toBeLessThanOrEqual(ROWS);
    expect(again.summary).toMatchObject({ rows: 40, written: OLD_WRITTEN });
    const next = await cleanse(etl, 'etl-after-rollback-2');
    expect(next.summary).toMatchObject({ apiCalls: 0, written: 0 });
  });

  it('a budget table of the former layout (no lanes) under a current dq_cleanse: the ETL role is told to have dq-pg init run', async () => {
    const owner = await layout3();
    expect((await runCli(['init', '--db', owner])).code).toBe(0);
    // The account's budget table as another connector of the former version left it.
    await withClient(owner, (c) => c.query('ALTER TABLE dq_throttle DROP COLUMN lanes'));
    const etl = await createEtlRole(owner);
    const before = await customers(owner);
    const refused = await cleanse(etl, 'etl-old-budget');
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(/budget-permission-denied: .*dq_throttle.*dq-pg init/);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(refused.calls).toBe(0);
    expect(await customers(owner)).toEqual(before);
    const notOwner = await runCli(['init', '--db', etl]);
    expect(notOwner.code, notOwner.stderr).toBe(2);
    expect(notOwner.stderr).toMatch(/^dq-pg: budget-permission-denied: .*dq_throttle.*dq-pg init/);
    expect(notOwner.stderr.trim().split('\n')).toHaveLength(1);
    expect((await runCli(['init', '--db', owner])).code).toBe(0);
    const resumed = await cleanse(etl, 'etl-old-budget');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.summary).toMatchObject({ state: 'done', rows: 40, budget: { scope: 'shared' } });
  });

  it('a result store of layout 1 (answers as jsonb) under a current dq_cleanse: the ETL role is told to have dq-pg init run; after it the entries are kept and the runs work', async () => {
    const owner = await layout3();
    expect((await runCli(['init', '--db', owner])).code).toBe(0);
    const entries = await one<{ n: number }>(owner, 'SELECT count(*)::int AS n FROM dq_store.results');
    expect(entries?.n).toBeGreaterThan(0);
    // The store as the former version left it: layout 1.
    await withClient(owner, async (c) => {
      await c.query('ALTER TABLE dq_store.results ALTER COLUMN result TYPE jsonb USING result::jsonb');
      await c.query('UPDATE dq_store.schema_version SET version = 1');
    });
    const etl = await createEtlRole(owner);
    const before = await customers(owner);
    const refused = await cleanse(etl, 'etl-old-store');
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(/store-permission-denied: .*may not upgrade schema dq_store from layout version 1 to 2 .*run "dq-pg init" once/);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(refused.calls).toBe(0);
    expect(await customers(owner)).toEqual(before);
    // init as the ETL role cannot upgrade it either: one line, exit 2, naming the role that can.
    const notOwner = await runCli(['init', '--db', etl]);
    expect(notOwner.code, notOwner.stderr).toBe(2);
    expect(notOwner.stderr).toMatch(
      /^dq-pg: store-permission-denied: the result store 127\.0\.0\.1:\d+\/\w+ \(schema dq_store\) cannot be used: the database user etl_\w+ may not upgrade schema dq_store from layout version 1 to 2 .*run "dq-pg init" once \(as that role\)/,
    );
    expect(notOwner.stderr.trim().split('\n')).toHaveLength(1);
    expect((await runCli(['init', '--db', owner])).code).toBe(0);
    expect(
      await one(owner, `SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = 'dq_store.results'::regclass AND attname = 'result'`),
    ).toEqual({
      t: 'json',
    });
    // The old run's answers are kept through the upgrade (under keys of the earlier form, which no
    // run reads: bought once more); a rolled-back run is corrected again, then known.
    expect(await one(owner, 'SELECT count(*)::int AS n FROM dq_store.results')).toEqual(entries);
    expect((await runCli(['rollback', '--db', owner, '--run', 'old-nightly'])).code).toBe(0);
    const again = await cleanse(etl, 'etl-old-store-2');
    expect(again.code, again.stderr).toBe(0);
    expect(again.calls).toBeLessThanOrEqual(ROWS);
    expect(again.summary).toMatchObject({ rows: 40, written: OLD_WRITTEN });
    const next = await cleanse(etl, 'etl-old-store-3');
    expect(next.summary).toMatchObject({ apiCalls: 0, written: 0 });
  });

  it('the migration is safe with several processes starting at once, and idempotent', async () => {
    const owner = await layout3();
    const results = await one<{ n: number }>(owner, 'SELECT count(*)::int AS n FROM dq_cleanse.results');
    // Four inits and two owner runs of one run id, all started together on the layout-3 database.
    const inits = [1, 2, 3, 4].map(() => spawnCli(['init', '--db', owner]).done);
    const args = cleanseArgs(owner, env.sandbox, ['--run-id', 'together', '--batch-size', '10']);
    args[args.indexOf('--rate-limit') + 1] = '1000';
    const runs = [1, 2].map(() => spawnCli(args).done);
    for (const r of await Promise.all([...inits, ...runs])) expect(r.code, r.stderr).toBe(0);
    const again = await runCli(['init', '--db', owner]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ version: SCHEMA_VERSION });
    expect(await one(owner, 'SELECT array_agg(version)::text AS v FROM dq_cleanse.schema_version')).toEqual({ v: `{${SCHEMA_VERSION}}` });
    expect(await one(owner, `SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'old-nightly'`)).toEqual(results);
    expect(await one(owner, `SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'together'`)).toEqual({ n: 40 });
    const lanes = await one<{ n: number }>(
      owner,
      `SELECT count(*)::int AS n FROM information_schema.columns WHERE table_name = 'dq_throttle' AND column_name = 'lanes'`,
    );
    expect(lanes?.n).toBe(1);
  });
});
