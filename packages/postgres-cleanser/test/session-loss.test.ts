import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, COLUMNS, createCustomers, resultRows, runCli, spawnCli, startEnv, summaryOf, until, withClient } from './support.js';
import type { TestEnv } from './support.js';

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

const ROWS = 1000;
const PAGE = 50;

/** Distinct address inputs of the customers table: no run needs to pay for more. */
async function distinctInputs(db: string): Promise<number> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<{ n: number }>(`SELECT count(DISTINCT (${COLUMNS.join(', ')}))::int AS n FROM customers`);
    return rows[0]!.n;
  });
}

/** Ends the sessions of this database whose application name is `name` (as `pg_terminate_backend` does for an operator); returns how many. */
async function terminate(db: string, name: string): Promise<number> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<{ n: number }>(
      `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = $1`,
      [name],
    );
    return rows[0]!.n;
  });
}

describe('dq-pg: losing a session it holds without querying it stops the run before the next page is paid for', () => {
  it.each([
    {
      session: 'the claim on its key range',
      application: 'dq-pg claim',
      says: "the session holding this process's claim on a key range",
      workers: '1',
      // The run's own session is still there to record why it stopped.
      state: 'stopped',
    },
    {
      session: "the run's hold (the main session, which status and a second run look for)",
      application: 'dq-pg',
      says: 'the session holding run lost-dq-pg ended',
      workers: '2',
      state: 'interrupted',
    },
  ])(
    '$session: exit 75 with the summary within a page or two, and the same --run-id finishes paying for nothing twice',
    async ({ application, says, workers, state }) => {
      const db = await env.pg.createDatabase();
      await createCustomers(db, ROWS);
      const runId = `lost-${application.replace(/\W+/g, '-')}`;
      // One key range for the whole table: whichever worker claims it works every page.
      const args = cleanseArgs(db, env.sandbox, ['--run-id', runId, '--batch-size', String(PAGE), '--pages-per-claim', '100', '--workers', workers]);
      const calls0 = billable(env.sandbox);
      // Slow answers: a page takes about a second, so the run is cut well before its end.
      env.sandbox.setFaults({ batch: { latencyMs: 300 } });
      const { done } = spawnCli(args);
      await until('two pages written', async () => (await resultRows(db, runId)) >= 2 * PAGE);
      expect(await terminate(db, application)).toBe(1);
      const atKill = billable(env.sandbox);
      const lost = await done;

      expect(lost.code, lost.stderr).toBe(75);
      expect(lost.stderr).not.toMatch(/\n\s+at /);
      expect(lost.stderr).toContain(`db-unreachable: lost the connection to the database`);
      expect(lost.stderr).toContain(says);
      expect(lost.stderr).toContain(`rerun with --run-id ${runId}`);
      // The page whose calls were under way at most, and the one read as the loss arrived.
      const afterKill = billable(env.sandbox) - atKill;
      expect(afterKill).toBeLessThanOrEqual(2 * PAGE);
      const committed = await resultRows(db, runId);
      expect(committed).toBeLessThan(ROWS);
      expect(summaryOf(lost)).toMatchObject({ type: 'summary', runId, state, exitCode: 75, error: { code: 'db-unreachable' } });
      const status = await runCli(['status', '--db', db, '--run', runId, '--json']);
      expect(JSON.parse(status.stdout)).toMatchObject({ state });

      env.sandbox.setFaults({});
      const resumed = await runCli(args);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(summaryOf(resumed)).toMatchObject({ state: 'done', rows: ROWS - committed });
      expect(await resultRows(db, runId)).toBe(ROWS);
      // The answers of the page cut short are in the result store: the whole run buys each input once, one page at most again.
      expect(billable(env.sandbox) - calls0).toBeLessThanOrEqual((await distinctInputs(db)) + PAGE);
    },
    120_000,
  );
});
