import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanseArgs, createCustomers, runCli, summaryOf, withClient } from './support.js';
import { startEnv, type TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe('platform outage', () => {
  it('exits 75 with the run stopped and no row marked unavailable while every call fails, and the same run id finishes every row once the platform is back', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 300);
    const args = cleanseArgs(db, env.sandbox, ['--run-id', 'outage', '--batch-size', '40']);

    env.sandbox.setFaults({ batch: { errorRate: 1, errorStatuses: [503] } });
    const stopped = await runCli(args);
    expect(stopped.code, stopped.stderr).toBe(75);
    expect(stopped.stderr).toContain('platform-unreachable');
    expect(stopped.stderr).toContain('--run-id outage');
    expect(summaryOf(stopped)).toMatchObject({ state: 'stopped', error: { code: 'platform-unreachable' } });
    const unavailable = (): Promise<number> =>
      withClient(
        db,
        async (c) =>
          (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'outage' AND status = 'unavailable'`)).rows[0]!.n,
      );
    expect(await unavailable()).toBe(0);

    env.sandbox.setFaults({});
    const resumed = await runCli(args);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ state: 'done' });
    const results = await withClient(db, (c) =>
      c.query<{ n: number }>(`SELECT count(DISTINCT row_key)::int AS n FROM dq_cleanse.results WHERE run_id = 'outage'`),
    );
    expect(results.rows[0]?.n).toBe(300);
    expect(await unavailable()).toBe(0);
  }, 120_000);
});
