import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLUMNS, cleanseArgs, createCustomers, runCli, snapshot, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

const QUOTA = 250;
let env: TestEnv;
beforeAll(async () => {
  env = await startEnv(QUOTA);
});
afterAll(async () => {
  await env?.stop();
});

describe('quota stop', () => {
  it('exits 3 with every committed page consistent, and the same run id finishes the rest later', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 400);
    const original = await snapshot(db);
    const args = cleanseArgs(db, env.sandbox, ['--run-id', 'quota', '--batch-size', '40']);

    const stopped = await runCli(args);
    expect(stopped.code).toBe(3);
    expect(stopped.stderr).toContain('quota-exhausted');
    // What to do now, with the run's own way to resume (the stop is recorded with it for dq-pg status).
    expect(stopped.stderr).toMatch(/^dq-pg: quota-exhausted: .*; fix the key, account, plan or quota, then rerun with --run-id quota$/m);
    const summary = summaryOf(stopped);
    expect(summary).toMatchObject({ state: 'stopped', error: { code: 'quota-exhausted' } });
    expect(summary['rows']).toBeGreaterThan(0);
    expect(summary['rows']).toBeLessThan(400);

    const now = await snapshot(db);
    await withClient(db, async (c) => {
      // Range workers share the table out in key ranges, each with its own checkpoint.
      const ranges = await c.query<{ lo: string | null; last_key: string | null }>(
        `SELECT r.lo, p.last_key FROM dq_cleanse.ranges r JOIN dq_cleanse.progress p USING (run_id, range_no) WHERE run_id = 'quota'`,
      );
      const behindACheckpoint = (k: string): boolean =>
        ranges.rows.some((r) => r.last_key !== null && (r.lo === null || Number(k) > Number(r.lo)) && Number(k) <= Number(r.last_key));
      const results = await c.query<{ row_key: string }>(`SELECT row_key FROM dq_cleanse.results WHERE run_id = 'quota'`);
      const checked = new Set(results.rows.map((r) => r.row_key));
      // Exactly the rows up to their range's checkpoint have results; nothing past one was written.
      expect(checked).toEqual(new Set([...original.keys()].filter(behindACheckpoint)));
      const audit = await c.query<{ row_key: string; after: Record<string, string | null> }>(
        `SELECT row_key, after FROM dq_cleanse.audit WHERE run_id = 'quota'`,
      );
      const audited = new Map(audit.rows.map((r) => [r.row_key, r.after]));
      for (const [key, values] of now) {
        const after = audited.get(key);
        if (after) expect(JSON.parse(values)).toEqual(COLUMNS.map((c) => after[c]));
        else expect(values).toBe(original.get(key));
      }
      const run = await c.query<{ state: string; last_error: { code: string } }>(`SELECT state, last_error FROM dq_cleanse.runs WHERE run_id = 'quota'`);
      expect(run.rows[0]).toMatchObject({
        state: 'stopped',
        last_error: { code: 'quota-exhausted', message: expect.stringMatching(/then rerun with --run-id quota$/) },
      });
    });

    // A new plan period: the same run id picks up at the checkpoint.
    env.sandbox.reset();
    const resumed = await runCli(args);
    expect(resumed.code).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ state: 'done', rows: 400 - (summary['rows'] as number) });
    const results = await withClient(db, (c) =>
      c.query<{ n: number }>(`SELECT count(DISTINCT row_key)::int AS n, count(*)::int AS total FROM dq_cleanse.results WHERE run_id = 'quota'`),
    );
    expect(results.rows[0]).toEqual({ n: 400, total: 400 });
  });
});
