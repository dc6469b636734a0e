import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, createEtlRole, rowTexts, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

// A nightly run with --status-columns over a table that did not change since the last night: a
// real PostgreSQL, the sandbox over HTTP, the CLI from dist/ as the ETL role, and a trigger that
// counts every UPDATE the table gets.
let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

const STATUS = 'status=dq_status,class=dq_class,requestId=dq_request_id,checkedAt=dq_checked_at';

/** Counts every UPDATE of each row of customers in table `writes` (id, n), whoever updates it. */
async function countWrites(owner: string, etlUrl: string): Promise<void> {
  const etl = decodeURIComponent(new URL(etlUrl).username);
  await withClient(owner, async (c) => {
    await c.query(`CREATE TABLE writes (id bigint PRIMARY KEY, n int NOT NULL DEFAULT 0)`);
    await c.query(`CREATE FUNCTION count_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                     INSERT INTO writes (id, n) VALUES (NEW.id, 1) ON CONFLICT (id) DO UPDATE SET n = writes.n + 1; RETURN NEW; END $$`);
    await c.query(`CREATE TRIGGER count_write AFTER UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION count_write()`);
    await c.query(`GRANT SELECT, INSERT, UPDATE ON writes TO ${etl}`);
  });
}

/** Keys of the rows updated since `writes` was emptied, and empties it. */
async function takeWrites(db: string): Promise<string[]> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<{ id: string }>('SELECT id::text AS id FROM writes ORDER BY writes.id');
    await c.query('TRUNCATE writes');
    return rows.map((r) => r.id);
  });
}

async function auditRows(db: string, runId: string): Promise<number> {
  return withClient(
    db,
    async (c) => (await c.query<{ n: number }>('SELECT count(*)::int AS n FROM dq_cleanse.audit WHERE run_id = $1', [runId])).rows[0]?.n ?? 0,
  );
}

describe('dq-pg cleanse --status-columns, night after night', () => {
  it('a second run over the unchanged table calls nothing and updates no row; after 1 % of the rows were edited, only those', async () => {
    const rows = 300;
    const owner = await env.pg.createDatabase();
    await createCustomers(owner, rows);
    await withClient(owner, (c) =>
      c.query('ALTER TABLE customers ADD COLUMN dq_status text, ADD COLUMN dq_class text, ADD COLUMN dq_request_id text, ADD COLUMN dq_checked_at timestamptz'),
    );
    // A row the local checks refuse (nothing to validate): no answer, so no check time of its own.
    await withClient(owner, (c) =>
      c.query(
        `UPDATE customers SET street = NULL, house_number = NULL, postal_code = NULL, city = NULL, address_line = NULL, locality_line = NULL WHERE id = 42`,
      ),
    );
    expect((await runCli(['init', '--db', owner])).code).toBe(0);
    const etl = await createEtlRole(owner);
    await countWrites(owner, etl);
    const night = async (runId: string) => {
      const calls = billable(env.sandbox);
      const run = await runCli(cleanseArgs(etl, env.sandbox, ['--run-id', runId, '--batch-size', '50', '--status-columns', STATUS]));
      expect(run.code, run.stderr).toBe(0);
      return { calls: billable(env.sandbox) - calls, summary: summaryOf(run), writes: await takeWrites(owner), audit: await auditRows(owner, runId) };
    };

    // The first night writes every row's status (and the corrections).
    const first = await night('night-1');
    expect(first.calls).toBeGreaterThan(0);
    expect(first.writes).toHaveLength(rows);
    expect(first.audit).toBe(rows);
    const statuses = await withClient(
      owner,
      async (c) => (await c.query<{ n: number }>('SELECT count(*)::int AS n FROM customers WHERE dq_status IS NULL')).rows[0]?.n,
    );
    expect(statuses).toBe(0);
    const refused = await withClient(
      owner,
      async (c) => (await c.query(`SELECT status, request_id FROM dq_cleanse.results WHERE run_id = 'night-1' AND row_key = '42'`)).rows[0],
    );
    expect(refused).toEqual({ status: 'invalid-input', request_id: null });
    const afterFirst = await rowTexts(owner);

    // The second night, a new run id, nothing changed: no call, no UPDATE, no audit row.
    const second = await night('night-2');
    expect(second.calls).toBe(0);
    expect(second.writes).toEqual([]);
    expect(second.audit).toBe(0);
    expect(second.summary).toMatchObject({ rows, apiCalls: 0, written: 0, conflicts: 0, state: 'done' });
    expect(await rowTexts(owner)).toEqual(afterFirst);

    // Its status says so, and rolling it back restores nothing and changes nothing.
    const status = await runCli(['status', '--db', etl, '--run', 'night-2', '--json']);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId: 'night-2', state: 'done', rows, written: 0, conflicts: 0 });
    const undo = await runCli(['rollback', '--db', etl, '--run', 'night-2']);
    expect(undo.code, undo.stderr).toBe(0);
    expect(JSON.parse(undo.stdout)).toMatchObject({ restored: 0, conflicts: 0 });
    expect(await takeWrites(owner)).toEqual([]);
    expect(await rowTexts(owner)).toEqual(afterFirst);

    // 1 % of the rows edited (a street no earlier night saw): calls and UPDATEs for those only.
    const edited = ['7', '150', '298'];
    await withClient(owner, (c) => c.query(`UPDATE customers SET street = 'Bahnhofstraße ' || id WHERE id = ANY ($1::bigint[])`, [edited]));
    await takeWrites(owner);
    const third = await night('night-3');
    expect(third.calls).toBeGreaterThan(0);
    expect(third.calls).toBeLessThanOrEqual(edited.length);
    expect(third.writes).toEqual(edited);
    expect(third.audit).toBe(edited.length);
    const afterThird = await rowTexts(owner);
    for (const [id, text] of afterFirst) if (!edited.includes(id)) expect(afterThird.get(id), id).toBe(text);

    // And the night after that is quiet again.
    const fourth = await night('night-4');
    expect(fourth).toMatchObject({ calls: 0, writes: [], audit: 0 });
  });
});
