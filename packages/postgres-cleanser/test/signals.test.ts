import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { STOP_GRACE_MS } from '../src/cleanse.js';
import { billable, cleanseArgs, createCustomers, resultRows, runCli, spawnCli, startEnv, summaryOf, until } from './support.js';
import type { CliResult, TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterEach(() => {
  env.sandbox.setFaults({});
});
afterAll(async () => {
  await env?.stop();
});

const ROWS = 200;
const PAGE = 50;

/** Calls of the batch endpoint that reached the sandbox (each is delayed on arrival), and those being answered now. */
function batchCalls(): { arrived: number; now: number } {
  const stats = env.sandbox.stats();
  return { arrived: stats.faults['batch']?.delayed ?? 0, now: stats.concurrent['batch']?.now ?? 0 };
}

/** Waits for `done`, killing the process after `ms` (a stop that never ends fails the test instead of hanging it). */
async function within(child: { kill(signal: NodeJS.Signals): boolean }, done: Promise<CliResult>, ms: number): Promise<{ result: CliResult; ms: number }> {
  const t0 = Date.now();
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  try {
    const result = await done;
    return { result, ms: Date.now() - t0 };
  } finally {
    clearTimeout(timer);
  }
}

describe('dq-pg cleanse stopped by SIGINT/SIGTERM while the platform is slow', () => {
  it.each(['SIGINT', 'SIGTERM', 'SIGHUP'] as const)(
    'a second %s ends the run at once: exit 75 with the summary line, and the same --run-id resumes it',
    async (signal) => {
      const db = await env.pg.createDatabase();
      await createCustomers(db, ROWS);
      const runId = `twice-${signal}`;
      const args = cleanseArgs(db, env.sandbox, ['--run-id', runId, '--batch-size', String(PAGE), '--workers', '1']);
      const calls0 = billable(env.sandbox);
      // Each answer takes 20 s (under the 30 s call timeout): the first page's calls are under way for that long.
      env.sandbox.setFaults({ batch: { latencyMs: 20_000 } });
      const { child, done } = spawnCli(args);
      await until('calls under way', async () => batchCalls().now > 0);
      child.kill(signal);
      await sleep(500);
      // The first signal waits for the page under way.
      expect(child.exitCode).toBeNull();
      child.kill(signal);
      const { result, ms } = await within(child, done, 30_000);

      expect(result.signal).toBeNull();
      expect(result.code, result.stderr).toBe(75);
      expect(ms).toBeLessThan(5_000);
      expect(result.stderr).toContain(`second ${signal}: ending the run now`);
      expect(result.stderr).toContain(`interrupted: stopped by a signal before the pages under way were written`);
      expect(result.stderr).toContain(`rerun with --run-id ${runId}`);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(summaryOf(result)).toMatchObject({ runId, state: 'stopped', exitCode: 75, rows: 0, error: { code: 'interrupted' } });
      expect(await resultRows(db, runId)).toBe(0);

      env.sandbox.setFaults({});
      const resumed = await runCli(args);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(summaryOf(resumed)).toMatchObject({ state: 'done', rows: ROWS });
      // The calls cut in flight may be bought again: one page at most.
      expect(billable(env.sandbox) - calls0).toBeLessThanOrEqual(ROWS + PAGE);
    },
    90_000,
  );

  it(`after a first SIGTERM while the platform hangs, no call or retry is sent and the run ends within ${STOP_GRACE_MS / 1000} s and a few`, async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, ROWS);
    const runId = 'hang';
    const args = cleanseArgs(db, env.sandbox, ['--run-id', runId, '--batch-size', String(PAGE), '--workers', '1']);
    // No answer within the 30 s call timeout: every call would time out and be retried.
    env.sandbox.setFaults({ batch: { latencyMs: 120_000 } });
    const { child, done } = spawnCli(args);
    await until('calls under way', async () => batchCalls().now > 0);
    await sleep(500);
    const atSignal = batchCalls().arrived;
    child.kill('SIGTERM');
    const { result, ms } = await within(child, done, 60_000);

    expect(result.signal).toBeNull();
    expect(result.code, result.stderr).toBe(75);
    expect(ms).toBeLessThan(STOP_GRACE_MS + 5_000);
    expect(ms).toBeGreaterThanOrEqual(STOP_GRACE_MS - 1_000);
    expect(batchCalls().arrived).toBe(atSignal);
    expect(result.stderr).toContain('SIGTERM: stopping');
    expect(result.stderr).toContain(`interrupted: stopped by a signal before the pages under way were written`);
    expect(summaryOf(result)).toMatchObject({ runId, state: 'stopped', exitCode: 75, error: { code: 'interrupted' } });
    expect(await resultRows(db, runId)).toBe(0);
  }, 90_000);
});
