import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanseArgs, createCustomers, runCli, spawnCli, startEnv, summaryOf, until, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

/** Rows of run `runId` recorded `unavailable` in dq_cleanse.results. */
async function unavailableRows(db: string, runId: string): Promise<number> {
  return withClient(db, async (c) => {
    if (!(await c.query(`SELECT to_regclass('dq_cleanse.results') IS NOT NULL AS ok`)).rows[0]?.ok) return 0;
    const { rows } = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = $1 AND status = 'unavailable'`, [runId]);
    return rows[0]?.n ?? 0;
  });
}

describe('dq-pg: the exit code of a run is that of all its rows, earlier attempts included', () => {
  it('a scheduler retry of a run that exited 4 (rows unavailable) exits 4 again, not 0, and says how to redo those rows', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 120);
    const args = cleanseArgs(db, env.sandbox, ['--run-id', 'F1', '--batch-size', '20']);
    env.sandbox.setFaults({ batch: { errorRate: 0.5, errorStatuses: [503] } });
    let first;
    try {
      first = await runCli(args);
    } finally {
      env.sandbox.setFaults({});
    }
    expect(first.code, first.stderr).toBe(4);
    const unavailable = await unavailableRows(db, 'F1');
    expect(unavailable).toBeGreaterThan(0);

    const retry = await runCli(args);
    expect(retry.stderr).not.toContain('this is a bug');
    expect(retry.code, retry.stderr).toBe(4);
    const summary = summaryOf(retry);
    expect(summary).toMatchObject({ state: 'done', exitCode: 4, rows: 0, runTotals: { rows: 120, unavailable } });
    expect(retry.stderr).toContain(`${unavailable} of the 120 rows of run F1 are unavailable`);
    expect(retry.stderr).toContain(`status = 'unavailable'`);
    const status = await runCli(['status', '--db', db, '--run', 'F1', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ state: 'done', unavailable });

    // --max-failed is judged on the whole run too.
    const tolerant = await runCli([...args, '--max-failed', '0.9']);
    expect(tolerant.code, tolerant.stderr).toBe(0);
  }, 180_000);

  it('a run resumed after a stop exits 4 when an earlier attempt left rows unavailable, though its own rows all succeeded', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 400);
    const args = cleanseArgs(db, env.sandbox, ['--run-id', 'S1', '--batch-size', '20', '--workers', '1']);
    env.sandbox.setFaults({ batch: { errorRate: 0.5, errorStatuses: [503] } });
    let stopped;
    try {
      const { child, done } = spawnCli(args);
      await until('a page with unavailable rows', async () => (await unavailableRows(db, 'S1')) > 0);
      child.kill('SIGTERM');
      stopped = await done;
    } finally {
      env.sandbox.setFaults({});
    }
    expect(stopped.code, stopped.stderr).toBe(75);
    expect(summaryOf(stopped)).toMatchObject({ state: 'stopped' });

    const resumed = await runCli(args);
    expect(resumed.code, resumed.stderr).toBe(4);
    const summary = summaryOf(resumed) as { state: string; byStatus: { unavailable: number }; runTotals: { rows: number; unavailable: number } };
    expect(summary.state).toBe('done');
    expect(summary.byStatus.unavailable).toBe(0);
    expect(summary.runTotals.rows).toBe(400);
    expect(summary.runTotals.unavailable).toBe(await unavailableRows(db, 'S1'));
  }, 180_000);
});
