import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { billable, cleanseArgs, createCustomers, resultRows, runCli, spawnCli, startEnv, summaryOf, until, withClient } from './support.js';
import type { TestEnv } from './support.js';

// A --store database apart from --db that goes away mid-run (closed to connections, its sessions
// ended): the run stops with store-unreachable (exit 75) like any run stop: a summary with the run
// id (also one dq-pg made up), the run recorded as stopped, and the rerun to type on stderr.
let env: TestEnv;
let db: string;
let storeDb: string;
const ROWS = 600;

beforeAll(async () => {
  env = await startEnv();
  db = await env.pg.createDatabase();
  storeDb = await env.pg.createDatabase();
  await createCustomers(db, ROWS, 37);
});
afterAll(async () => {
  await env?.stop();
});

const storeName = (): string => new URL(storeDb).pathname.slice(1);

describe('the result store database goes away mid-run', () => {
  it('stops with exit 75, a summary naming the run, the run recorded as stopped and the rerun on stderr; the rerun finishes without paying twice', async () => {
    env.sandbox.setFaults({ batch: { latencyMs: 100 } });
    const calls = billable(env.sandbox);
    // No --run-id: the id dq-pg makes up is the one to resume.
    const args = ['--batch-size', '20', '--concurrency', '4', '--store', storeDb];
    const running = spawnCli(cleanseArgs(db, env.sandbox, args));
    const seen = async () =>
      withClient(db, async (c) => {
        const exists = await c.query(`SELECT to_regclass('dq_cleanse.results') IS NOT NULL AS ok`);
        if (!exists.rows[0]?.ok) return false;
        return ((await c.query(`SELECT 1 FROM dq_cleanse.results LIMIT 1`)).rowCount ?? 0) > 0;
      });
    await until('the run to write a page', seen);
    await withClient(env.pg.url, async (c) => {
      await c.query(`ALTER DATABASE ${storeName()} ALLOW_CONNECTIONS false`);
      await c.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, [storeName()]);
    });
    const stopped = await running.done;
    env.sandbox.setFaults({});
    await withClient(env.pg.url, (c) => c.query(`ALTER DATABASE ${storeName()} ALLOW_CONNECTIONS true`));

    expect(stopped.code, stopped.stderr).toBe(75);
    const summary = summaryOf(stopped);
    expect(summary).toMatchObject({ state: 'stopped', exitCode: 75, error: { code: 'store-unreachable' } });
    const runId = summary['runId'] as string;
    expect(runId).toMatch(/^r\d{8}T\d{6}-[0-9a-f]{6}$/);
    expect(stopped.stderr).toMatch(
      new RegExp(`^dq-pg: store-unreachable: the result store postgres://.*; rerun with --run-id ${runId} once the store's database answers again`, 'm'),
    );
    expect(stopped.stderr).not.toContain(new URL(storeDb).password);
    const status = await runCli(['status', '--db', db, '--run', runId, '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId, state: 'stopped', lastError: { code: 'store-unreachable' } });

    const rerun = await runCli(cleanseArgs(db, env.sandbox, [...args, '--run-id', runId]));
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(await resultRows(db, runId)).toBe(ROWS);
    // Paid once per row, but for the calls in flight when the store went away.
    expect(billable(env.sandbox) - calls).toBeLessThanOrEqual(ROWS + 4 * 20);
  });

  it('a --store that cannot be reached at the start stops before any run is recorded: no "interrupted" run per retry in dq-pg status', async () => {
    // A port nothing listens on.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const fresh = await env.pg.createDatabase();
    await createCustomers(fresh, 20, 3);
    const calls = billable(env.sandbox);
    for (let i = 0; i < 2; i += 1) {
      const run = await runCli(cleanseArgs(fresh, env.sandbox, ['--store', `postgres://etl:secret@127.0.0.1:${port}/results`]));
      expect(run.code, run.stderr).toBe(75);
      expect(run.stderr).toMatch(/^dq-pg: store-unreachable: the result store postgres:\/\/etl:/m);
    }
    expect(billable(env.sandbox) - calls).toBe(0);
    const status = await runCli(['status', '--db', fresh, '--json']);
    expect(status.code, status.stderr).toBe(0);
    const runs = status.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { runId: string; state: string });
    expect(runs.map((r) => `${r.runId} ${r.state}`)).toEqual([]);
  });
});
