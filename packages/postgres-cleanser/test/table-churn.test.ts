import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, MAP, resultRows, runCli, runWithin, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { CliResult, TestEnv } from './support.js';

// The table changes under a run in ways the pre-flight refuses (a key that is no longer unique, a
// generated mapped column, a key type of another order): the run must stop with a message saying
// what to do and exit 2, never loop, never exit 1 as if dq-pg had a bug.

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

/** A run's arguments: one range worker, small pages and ranges, so that changes land between pages. */
const args = (db: string, runId: string, extra: string[] = []): string[] =>
  cleanseArgs(db, env.sandbox, ['--run-id', runId, '--batch-size', '20', '--pages-per-claim', '2', '--workers', '1', ...extra]);

/** No stack trace, no "bug", no unexpected error: the failure is one a user caused and can fix. */
function handled(run: CliResult): void {
  expect(run.stderr).not.toMatch(/\n\s+at /);
  expect(run.stderr).not.toMatch(/this is a bug|unexpected error/);
}

/**
 * Starts a run with slow platform answers, applies `change` once its first page committed, and
 * returns how the run ended (killed after 30 s: a run that loops fails here instead of hanging).
 */
async function changedMidRun(db: string, runId: string, extra: string[], change: (c: pg.Client) => Promise<unknown>): Promise<CliResult> {
  env.sandbox.setFaults({ batch: { latencyMs: 300 }, validate: { latencyMs: 300 } });
  try {
    const { child, done } = spawnCli(args(db, runId, extra));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    try {
      while ((await resultRows(db, runId)) === 0) await sleep(50);
      await withClient(db, change);
      return await done;
    } finally {
      clearTimeout(timer);
    }
  } finally {
    env.sandbox.setFaults({});
  }
}

describe('dq-pg and a table changed in ways it cannot write', () => {
  it.each([
    { store: 'the result store on', extra: [] as string[] },
    // Without known rows the duplicates first meet the results table's key, read as a range taken over.
    { store: '--store off', extra: ['--store', 'off'] },
  ])(
    "the key's primary key dropped mid-run and rows with the same keys inserted ($store): exit 2 naming the keys, no loop; made unique again, the run resumes to the end",
    async ({ extra }) => {
      const db = await env.pg.createDatabase();
      await createCustomers(db, 120);
      const run = await changedMidRun(db, 'dup', extra, async (c) => {
        await c.query('ALTER TABLE customers DROP CONSTRAINT customers_pkey');
        await c.query('INSERT INTO customers SELECT * FROM customers WHERE id BETWEEN 101 AND 103');
      });
      handled(run);
      expect(run.signal).toBeNull();
      expect(run.stderr).toContain('dq-pg: key-not-unique: --key: column "id" of "public"."customers" no longer identifies one row: "101", "102", "103"');
      expect(run.stderr).toContain('rerun with --run-id dup');
      expect(run.code).toBe(2);
      expect(summaryOf(run)).toMatchObject({ state: 'stopped', exitCode: 2, error: { code: 'key-not-unique' } });

      await withClient(db, async (c) => {
        await c.query('DELETE FROM customers a USING customers b WHERE a.id = b.id AND a.ctid > b.ctid');
        await c.query('ALTER TABLE customers ADD PRIMARY KEY (id)');
      });
      const resumed = await runCli(args(db, 'dup', extra));
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(summaryOf(resumed)).toMatchObject({ state: 'done' });
      expect(await resultRows(db, 'dup')).toBe(120);
    },
    60_000,
  );

  it('a mapped column turned into a generated column mid-run: exit 2 naming it and saying to start a new run without it, which completes', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 100);
    const run = await changedMidRun(db, 'generated', [], async (c) => {
      await c.query('ALTER TABLE customers DROP COLUMN locality_line');
      await c.query(`ALTER TABLE customers ADD COLUMN locality_line text GENERATED ALWAYS AS (postal_code || ' ' || city) STORED`);
    });
    handled(run);
    expect(run.stderr).toContain(
      'dq-pg: column-type: column "locality_line" can only be updated to DEFAULT (SQLSTATE 428C9): a column of public.customers that dq-pg writes (--map, --status-columns) became a generated column',
    );
    expect(run.stderr).toContain('take the column out of --map or --status-columns and start a new run');
    expect(run.code).toBe(2);
    const status = await runCli(['status', '--db', db, '--run', 'generated', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ state: 'stopped', lastError: { code: 'column-type' } });

    const map = MAP.replace(',localityLine=locality_line', '');
    const again = await runCli(
      cleanseArgs(db, env.sandbox, ['--run-id', 'without-it', '--batch-size', '20', '--workers', '1']).map((a) => (a === MAP ? map : a)),
    );
    expect(again.code, again.stderr).toBe(0);
    expect(summaryOf(again)).toMatchObject({ state: 'done', rows: 100 });
  }, 60_000);

  it('the key changed from bigint to text between kill -9 and the resume: exit 2 saying to start a new run, no loop; the new run completes paying only for rows not yet answered', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 150);
    const calls0 = billable(env.sandbox);
    env.sandbox.setFaults({ batch: { latencyMs: 200 }, validate: { latencyMs: 200 } });
    try {
      const { child, done } = spawnCli(args(db, 'retyped'));
      // Past the first range (40 keys), so that the ranges cut in bigint order overlap in text order.
      while ((await resultRows(db, 'retyped')) < 60) await sleep(25);
      child.kill('SIGKILL');
      expect((await done).signal).toBe('SIGKILL');
      // The platform finishes (and bills) the calls the killed process had in flight: wait them out.
      await sleep(600);
    } finally {
      env.sandbox.setFaults({});
    }
    await withClient(db, (c) => c.query('ALTER TABLE customers ALTER COLUMN id TYPE text'));
    const answered = await resultRows(db, 'retyped');
    const paidBefore = billable(env.sandbox) - calls0;

    const resumed = await runWithin(args(db, 'retyped'), 30_000);
    handled(resumed);
    expect(resumed.signal).toBeNull();
    expect(resumed.stderr).toContain(
      'dq-pg: run-mismatch: --run-id retyped: the key id of "public"."customers" was bigint when that run began and is text now, which orders its values otherwise',
    );
    expect(resumed.stderr).toContain('Start a new run');
    expect(resumed.code).toBe(2);
    expect(billable(env.sandbox) - calls0).toBe(paidBefore);

    const calls1 = billable(env.sandbox);
    const fresh = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'retyped-2', '--batch-size', '20', '--workers', '1']));
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(summaryOf(fresh)).toMatchObject({ state: 'done', rows: 150 });
    expect(await resultRows(db, 'retyped-2')).toBe(150);
    // The rows the killed run had answered come from the result store (a page in flight at the kill may be bought again).
    expect(billable(env.sandbox) - calls1).toBeLessThanOrEqual(150 - answered + 20);
  }, 60_000);

  it('the table renamed, or a mapped column made generated, between a run and its rollback or review export: exit 2 saying the table changed since the run, and what to do', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 40);
    const run = await runCli(args(db, 'before-change'));
    expect(run.code, run.stderr).toBe(0);
    const rollback = (): Promise<CliResult> => runCli(['rollback', '--db', db, '--run', 'before-change']);

    await withClient(db, (c) => c.query('ALTER TABLE customers RENAME TO customers_old'));
    const renamed = await rollback();
    handled(renamed);
    expect(renamed.stderr).toContain(
      'dq-pg: table-not-found: run before-change was made on "public"."customers", which changed since: it is not in this database any more (dropped or renamed?). Give the table back the name, key and columns the run used, then run this command again',
    );
    expect(renamed.code).toBe(2);

    await withClient(db, async (c) => {
      await c.query('ALTER TABLE customers_old RENAME TO customers');
      await c.query('ALTER TABLE customers DROP COLUMN locality_line');
      await c.query(`ALTER TABLE customers ADD COLUMN locality_line text GENERATED ALWAYS AS (postal_code || ' ' || city) STORED`);
    });
    const generated = await rollback();
    handled(generated);
    expect(generated.stderr).toContain(
      'dq-pg: column-type: run before-change was made on "public"."customers", which changed since: column "locality_line" of "public"."customers" is generated and cannot be written.',
    );
    expect(generated.code).toBe(2);
    const exported = await runCli(['review', 'export', '--db', db, '--run', 'before-change', '--output', join(tmpdir(), `churn-${process.pid}.csv`)]);
    handled(exported);
    expect(exported.stderr).toContain('run before-change was made on "public"."customers", which changed since: column "locality_line"');
    expect(exported.code).toBe(2);
  }, 60_000);
});
