import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanseArgs, createCustomers, resultRows, runCli, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe('dq-pg and a table changed under a run', () => {
  it('a table renamed mid-run: exit 2 naming it and the run id to resume, no stack trace; renamed back, the run resumes to the end', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 400);
    env.sandbox.setFaults({ batch: { latencyMs: 300 }, validate: { latencyMs: 300 } });
    try {
      const args = cleanseArgs(db, env.sandbox, ['--run-id', 'renamed', '--batch-size', '20', '--workers', '1']);
      const { done } = spawnCli(args);
      for (let i = 0; i < 200 && (await resultRows(db, 'renamed')) === 0; i += 1) await new Promise((r) => setTimeout(r, 50));
      expect(await resultRows(db, 'renamed')).toBeGreaterThan(0);
      await withClient(db, (c) => c.query('ALTER TABLE customers RENAME TO customers_old'));
      const run = await done;
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(run.stderr).not.toContain('unexpected error');
      expect(run.stderr).toContain('table-not-found');
      expect(run.stderr).toContain('--run-id renamed');
      expect(run.code).toBe(2);
    } finally {
      env.sandbox.setFaults({});
    }
    await withClient(db, (c) => c.query('ALTER TABLE customers_old RENAME TO customers'));
    const resumed = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'renamed', '--batch-size', '20', '--workers', '1']));
    expect(resumed.code).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ state: 'done' });
    expect(await resultRows(db, 'renamed')).toBe(400);
  }, 90_000);

  it("a mapped column's type widened mid-run (as after value-too-long): exit 75 saying the definition changed, and the rerun with the run id completes", async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 200);
    env.sandbox.setFaults({ batch: { latencyMs: 300 }, validate: { latencyMs: 300 } });
    try {
      const args = cleanseArgs(db, env.sandbox, ['--run-id', 'widened', '--batch-size', '20', '--workers', '1']);
      const { done } = spawnCli(args);
      for (let i = 0; i < 200 && (await resultRows(db, 'widened')) === 0; i += 1) await new Promise((r) => setTimeout(r, 50));
      expect(await resultRows(db, 'widened')).toBeGreaterThan(0);
      await withClient(db, (c) => c.query('ALTER TABLE customers ALTER COLUMN postal_code TYPE varchar(60)'));
      const run = await done;
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(run.stderr).not.toContain('this is a bug');
      expect(run.stderr).toContain('dq-pg: table-changed: the definition of public.customers changed while dq-pg worked on it');
      expect(run.stderr).toContain('rerun with --run-id widened');
      expect(run.code).toBe(75);
    } finally {
      env.sandbox.setFaults({});
    }
    // status says why the run ended and how to resume it, not only that no session holds it.
    const status = await runCli(['status', '--db', db, '--run', 'widened', '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      state: 'stopped',
      lastError: { code: 'table-changed', message: expect.stringContaining('the definition of public.customers changed') },
      resume: expect.stringContaining('--run-id widened'),
    });
    const resumed = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'widened', '--batch-size', '20', '--workers', '1']));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ state: 'done' });
    expect(await resultRows(db, 'widened')).toBe(200);
  }, 90_000);
});
