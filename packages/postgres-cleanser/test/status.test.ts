import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanseArgs, createCustomers, runCli, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
  // Slow answers keep a run going while the test looks at it.
  env.sandbox.setFaults({ batch: { latencyMs: 300 } });
});
afterAll(async () => {
  await env?.stop();
});

async function statusOf(db: string, runId: string): Promise<Record<string, unknown>> {
  const res = await runCli(['status', '--db', db, '--run', runId, '--json']);
  expect(res.code).toBe(0);
  return JSON.parse(res.stdout) as Record<string, unknown>;
}

async function committedRows(db: string, runId: string): Promise<number> {
  return withClient(db, async (c) => {
    const exists = await c.query(`SELECT to_regclass('dq_cleanse.progress') IS NOT NULL AS ok`);
    if (!exists.rows[0]?.ok) return 0;
    const { rows } = await c.query<{ n: number }>(`SELECT COALESCE(sum(rows_read), 0)::int AS n FROM dq_cleanse.progress WHERE run_id = $1`, [runId]);
    return rows[0]?.n ?? 0;
  });
}

describe('dq-pg status', () => {
  it('shows a run whose process was killed with -9 as interrupted, with the command that resumes it', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 600);
    const args = cleanseArgs(db, env.sandbox, ['--run-id', 'killed', '--batch-size', '20', '--workers', '2', '--where', "country IS DISTINCT FROM 'XX'"]);
    const { child, done } = spawnCli(args);
    while ((await committedRows(db, 'killed')) < 40) await sleep(20);
    expect(await statusOf(db, 'killed')).toMatchObject({ state: 'running' });
    child.kill('SIGKILL');
    expect((await done).signal).toBe('SIGKILL');

    const interrupted = await statusOf(db, 'killed');
    expect(interrupted).toMatchObject({ state: 'interrupted' });
    const resume = interrupted['resume'] as string;
    expect(resume).toContain('dq-pg cleanse --table \'"public"."customers"\' --key id --map ');
    expect(resume).toContain(`--where 'country IS DISTINCT FROM '\\''XX'\\''' --run-id killed`);
    const table = await runCli(['status', '--db', db]);
    expect(table.stdout).toMatch(/killed .* interrupted /);
    expect(table.stdout).toContain(`to resume killed (interrupted): ${resume}`);

    // The command resumes it (the same settings, so the run accepts it).
    const resumed = await runCli(args);
    expect(resumed.code).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ state: 'done' });
    const finished = await statusOf(db, 'killed');
    expect(finished).toMatchObject({ state: 'done', rows: 600 });
    expect(finished['resume']).toBeUndefined();
  });

  it('says there is no such run, with exit 2, for an unknown --run', async () => {
    const db = await env.pg.createDatabase();
    for (const withRuns of [false, true]) {
      if (withRuns) {
        await createCustomers(db, 20);
        expect((await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'known']))).code).toBe(0);
      }
      const res = await runCli(['status', '--db', db, '--run', 'nope']);
      expect(res.code).toBe(2);
      expect(res.stderr).toMatch(/run-not-found: --run nope: no run nope in this database/);
      expect(res.stdout).not.toContain('no dq-pg runs');
    }
  });
});
