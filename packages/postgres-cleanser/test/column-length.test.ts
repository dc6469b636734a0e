import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanseArgs, createCustomers, rowTexts, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe('dq-pg and columns of a declared length', () => {
  it('a correction longer than varchar(n) holds leaves that row as it is, says why, and the run writes the others', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 300);
    // A legacy schema: city is varchar(7), the towns in it cut to fit. The platform answers with
    // the full names, longer than the column holds.
    await withClient(db, (c) => c.query(`ALTER TABLE customers ALTER city TYPE varchar(7) USING left(city, 7)`));
    const original = await rowTexts(db);

    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'narrow', '--batch-size', '100']));
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.stderr).not.toContain('unexpected error');
    expect(run.code, `signal ${run.signal}; stderr: ${run.stderr}`).toBe(0);
    const summary = summaryOf(run);
    expect(summary).toMatchObject({ state: 'done', rows: 300 });
    expect(summary['written'] as number).toBeGreaterThan(0);

    const { unfit, written } = await withClient(db, async (c) => {
      const u = await c.query<{ row_key: string; error: { code: string; message: string }; outcome: string; before: string[] | null }>(
        `SELECT row_key, error, outcome, before FROM dq_cleanse.results WHERE run_id = 'narrow' AND error ->> 'code' = 'value-too-long' ORDER BY row_key`,
      );
      const w = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'narrow' AND outcome = 'written'`);
      return { unfit: u.rows, written: w.rows[0]!.n };
    });
    expect(unfit.length).toBeGreaterThan(0);
    // Counted and listed in the summary, beside the conflicts.
    expect(summary['notWritten']).toBe(unfit.length);
    expect([...(summary['notWrittenKeys'] as string[])].sort()).toEqual(unfit.map((r) => r.row_key).sort());
    expect(written).toBe(summary['written']);
    const after = await rowTexts(db);
    for (const r of unfit) {
      // Not written, not even the columns that would fit: never half a correction.
      expect(after.get(r.row_key)).toBe(original.get(r.row_key));
      expect(r.outcome).toBe('kept');
      expect(r.before).toBeNull();
      expect(r.error.message).toContain('city');
      expect(r.error.message).toContain('character varying(7)');
    }
    // Named on stderr with the key and the column.
    expect(run.stderr).toContain('longer than its column holds');
    expect(run.stderr).toContain(unfit[0]!.row_key);

    // Once the column is widened, the next run writes them, with the answers it has already.
    await withClient(db, (c) => c.query(`ALTER TABLE customers ALTER city TYPE varchar(40)`));
    const calls = Object.values(env.sandbox.stats().billable).reduce((a, b) => a + b, 0);
    const next = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'widened', '--batch-size', '100']));
    expect(next.code, `signal ${next.signal}; stderr: ${next.stderr}`).toBe(0);
    expect(summaryOf(next)['written']).toBe(unfit.length);
    expect(Object.values(env.sandbox.stats().billable).reduce((a, b) => a + b, 0)).toBe(calls);
  }, 60_000);
});

describe('dq-pg status columns of a declared length', () => {
  it('a status column too short for every status is refused before any call, naming the length needed', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 50);
    await withClient(db, async (c) => {
      await c.query(`ALTER TABLE customers ADD COLUMN dq_status varchar(8)`);
      // A row the local checks refuse: status invalid-input, 13 characters.
      await c.query(
        `UPDATE customers SET street = NULL, house_number = NULL, postal_code = NULL, city = NULL, address_line = NULL, locality_line = NULL WHERE id = 40`,
      );
    });
    const before = env.sandbox.stats();
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'short-status', '--status-columns', 'status=dq_status']));
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('column-type');
    expect(run.stderr).toContain('dq_status');
    expect(run.stderr).toContain('19 characters');
    expect(env.sandbox.stats().billable).toEqual(before.billable);
  }, 60_000);
});
