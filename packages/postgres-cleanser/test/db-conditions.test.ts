import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanseArgs,
  createCustomers,
  createEtlRole,
  resultRows,
  rowTexts,
  runCli,
  runWithin,
  spawnCli,
  startEnv,
  summaryOf,
  until,
  withClient,
} from './support.js';
import type { CliResult, TestEnv } from './support.js';

// Settings and events of the database a user or DBA controls: each is either handled by dq-pg's
// design (the run goes on) or named with what to do (exit 2), never "unexpected error".

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

/** The database name of a connection URL (for ALTER DATABASE). */
const dbName = (url: string): string => new URL(url).pathname.slice(1);

/** The state `dq-pg status` shows for run `runId`. */
async function stateOf(db: string, runId: string): Promise<unknown> {
  const res = await runCli(['status', '--db', db, '--run', runId, '--json']);
  return (JSON.parse(res.stdout) as { state: unknown }).state;
}

describe('dq-pg and the database settings and events around a run', () => {
  for (const isolation of ['serializable', 'repeatable read']) {
    it(`a database whose default_transaction_isolation is ${isolation}: the run works as under read committed`, async () => {
      const db = await env.pg.createDatabase();
      await createCustomers(db, 400);
      await withClient(db, (c) => c.query(`ALTER DATABASE "${dbName(db)}" SET default_transaction_isolation = '${isolation}'`));
      const run = await runWithin(cleanseArgs(db, env.sandbox, ['--run-id', 'iso', '--batch-size', '10', '--pages-per-claim', '1', '--workers', '4']), 120_000);
      expect(run.stderr).not.toContain('this is a bug');
      expect(run.code, run.stderr).toBe(0);
      expect(summaryOf(run)).toMatchObject({ state: 'done', rows: 400 });
      expect(await stateOf(db, 'iso')).toBe('done');
    }, 150_000);
  }

  it('UPDATE revoked from the ETL role during a run: exit 2 permission-denied naming the table and the grant, not an unexpected error', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 400);
    expect((await runCli(['init', '--db', db])).code).toBe(0);
    const etl = await createEtlRole(db);
    const role = new URL(etl).username;
    const password = new URL(etl).password;
    env.sandbox.setFaults({ batch: { latencyMs: 200 } });
    let run: CliResult;
    try {
      const { child, done } = spawnCli(cleanseArgs(etl, env.sandbox, ['--run-id', 'revoked', '--batch-size', '20', '--workers', '1']));
      const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
      await until('the first pages', async () => (await resultRows(db, 'revoked')) >= 40);
      await withClient(db, (c) => c.query(`REVOKE UPDATE ON customers FROM ${role}`));
      run = await done;
      clearTimeout(killer);
    } finally {
      env.sandbox.setFaults({});
    }
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('dq-pg: permission-denied: permission denied for table customers');
    expect(run.stderr).toContain(`GRANT SELECT, UPDATE ON public.customers TO ${role}`);
    expect(run.stderr).toContain('rerun with --run-id revoked');
    expect(run.stderr).not.toContain('this is a bug');
    expect(run.stderr).not.toContain(password);
  }, 120_000);

  it('a row-level security policy whose WITH CHECK refuses some corrections: those rows are kept as write-refused, the run goes on', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 300);
    expect((await runCli(['init', '--db', db])).code).toBe(0);
    const etl = await createEtlRole(db);
    await withClient(db, async (c) => {
      await c.query('ALTER TABLE customers ENABLE ROW LEVEL SECURITY');
      await c.query('CREATE POLICY short_streets ON customers USING (true) WITH CHECK (length(street) <= 15)');
    });
    const original = await rowTexts(db);
    const run = await runWithin(cleanseArgs(etl, env.sandbox, ['--run-id', 'rls', '--batch-size', '100']), 90_000);
    expect(run.stderr).not.toContain('this is a bug');
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run) as { state: string; written: number; notWritten: number; notWrittenKeys: string[] };
    expect(summary.state).toBe('done');
    expect(summary.written).toBeGreaterThan(0);
    const refused = await withClient(db, async (c) => {
      const { rows } = await c.query<{ row_key: string; outcome: string; message: string }>(
        `SELECT row_key, outcome, error ->> 'message' AS message FROM dq_cleanse.results WHERE run_id = 'rls' AND error ->> 'code' = 'write-refused'`,
      );
      return rows;
    });
    expect(refused.length).toBeGreaterThan(0);
    expect(summary.notWritten).toBe(refused.length);
    const after = await rowTexts(db);
    for (const r of refused) {
      expect(r.outcome).toBe('kept');
      expect(r.message).toContain('row-level security policy');
      expect(after.get(r.row_key)).toBe(original.get(r.row_key));
    }
  }, 120_000);

  it('a deadlock with an application transaction: the page gives way and is written without the rows held, the run goes on', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 300);
    // dq-pg's sessions look for deadlocks after 2 s (before their 5 s lock wait ends), the
    // application's much later: dq-pg's page is the one PostgreSQL rolls back.
    await withClient(db, (c) => c.query(`ALTER DATABASE "${dbName(db)}" SET deadlock_timeout = '2s'`));
    const app = new pg.Client({ connectionString: db });
    await app.connect();
    let run: CliResult;
    try {
      await app.query(`SET deadlock_timeout = '60s'`);
      await app.query('BEGIN');
      await app.query('SELECT id FROM customers WHERE id = 299 FOR UPDATE');
      const { child, done } = spawnCli(cleanseArgs(db, env.sandbox, ['--run-id', 'deadlock', '--batch-size', '100', '--workers', '1']));
      const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
      // dq-pg's page write waits for row 299, holding the rows of its page it updated before it.
      await until('dq-pg waiting for the row the application holds', async () =>
        withClient(
          db,
          async (c) => (await c.query(`SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'dq-pg%' AND wait_event_type = 'Lock'`)).rowCount! > 0,
        ),
      );
      // The application now updates rows of that page: each waits for the other.
      const appUpdate = app.query(`UPDATE customers SET city = city WHERE id BETWEEN 201 AND 300 AND id <> 299`);
      run = await done;
      clearTimeout(killer);
      await appUpdate;
    } finally {
      await app.query('ROLLBACK').catch(() => undefined);
      await app.end();
    }
    expect(run.stderr).not.toContain('this is a bug');
    expect(run.stderr).not.toContain('deadlock detected');
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run) as { state: string; rows: number; conflicts: number; conflictKeys: string[] };
    expect(summary).toMatchObject({ state: 'done', rows: 300 });
    expect(summary.conflictKeys).toContain('299');
    expect(run.stderr).toContain('rows locked by another session');
  }, 120_000);

  it("a database statement_timeout shorter than dq-pg's wait for a row lock: the held row is a conflict, the run goes on", async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 200);
    await withClient(db, (c) => c.query(`ALTER DATABASE "${dbName(db)}" SET statement_timeout = '2s'`));
    const app = new pg.Client({ connectionString: db });
    await app.connect();
    let run: CliResult;
    try {
      await app.query(`SET statement_timeout = 0`);
      await app.query('BEGIN');
      await app.query('SELECT id FROM customers WHERE id BETWEEN 1 AND 200 FOR UPDATE');
      run = await runWithin(cleanseArgs(db, env.sandbox, ['--run-id', 'stmt', '--batch-size', '100', '--workers', '1']), 90_000);
    } finally {
      await app.query('ROLLBACK').catch(() => undefined);
      await app.end();
    }
    expect(run.stderr).not.toContain('this is a bug');
    expect(run.stderr).not.toContain('canceling statement due to statement timeout');
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run) as { state: string; conflicts: number };
    expect(summary.state).toBe('done');
    expect(summary.conflicts).toBeGreaterThan(0);
  }, 120_000);

  it('idle_in_transaction_session_timeout shorter than a key range takes: exit 2 naming the setting, not "lost the connection"', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 100);
    await withClient(db, (c) => c.query(`ALTER DATABASE "${dbName(db)}" SET idle_in_transaction_session_timeout = '1s'`));
    env.sandbox.setFaults({ batch: { latencyMs: 400 } });
    let run: CliResult;
    try {
      run = await runWithin(cleanseArgs(db, env.sandbox, ['--run-id', 'idle', '--batch-size', '10', '--pages-per-claim', '5', '--workers', '1']), 90_000);
    } finally {
      env.sandbox.setFaults({});
    }
    expect(run.stderr).not.toContain('this is a bug');
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('dq-pg: db-setting: the database ended the session in which dq-pg holds its claim');
    expect(run.stderr).toContain('idle_in_transaction_session_timeout');
    expect(run.stderr).toContain('rerun with --run-id idle');
  }, 120_000);

  it('a --where that fails on a row at run time: exit 2 naming --where and the database message', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 100);
    await withClient(db, (c) => c.query(`UPDATE customers SET postal_code = CASE WHEN id = 60 THEN 'D-80331' ELSE '10115' END`));
    const run = await runWithin(cleanseArgs(db, env.sandbox, ['--run-id', 'bad-where', '--batch-size', '20', '--where', 'postal_code::int > 50000']), 60_000);
    expect(run.stderr).not.toContain('this is a bug');
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('dq-pg: where-invalid: --where "postal_code::int > 50000" failed on a row of "public"."customers"');
    expect(run.stderr).toContain('invalid input syntax for type integer: "D-80331"');
  }, 90_000);
});
