import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from '@dq/test-support/pg';
import { startSandboxProcess, type SandboxProcess } from '@dq/test-support/sandbox-process';
import { API_KEY, runCli, summaryOf, withClient } from './support.js';

const ROWS = 1000;
let server: TestPostgres;
let sandbox: SandboxProcess;
let db: string;

beforeAll(async () => {
  [server, sandbox] = await Promise.all([
    startPostgres(),
    // No rate limit: the cap, not the clock, must stop the run.
    startSandboxProcess({ accounts: [{ id: 'cap', apiKeys: [API_KEY], rateLimits: { batch: 0, validate: 0 } }] }),
  ]);
  db = await server.createDatabase();
  await withClient(db, async (c) => {
    await c.query(`CREATE TABLE customers (id bigint PRIMARY KEY, street text, house_number text, postal_code text, city text)`);
    // Distinct addresses: one call each.
    await c.query(`INSERT INTO customers SELECT g, 'Lindenweg', g::text, '10115', 'Berlin' FROM generate_series(1, $1::int) g`, [ROWS]);
  });
}, 120_000);
afterAll(async () => {
  await sandbox?.stop();
  await server?.stop();
});

const args = (...extra: string[]): string[] => [
  'cleanse',
  '--db',
  db,
  '--table',
  'public.customers',
  '--key',
  'id',
  '--country',
  'DE',
  '--run-id',
  'capped',
  '--map',
  'street=street,houseNumber=house_number,postalCode=postal_code,locality=city',
  '--base-url',
  sandbox.url,
  '--rate-limit',
  '0',
  '--batch-size',
  '100',
  ...extra,
];

describe('dq-pg --max-calls', () => {
  it('stops the run at the cap (exit 5, state stopped, no call past it), and the same run id resumes it to done', async () => {
    const first = await runCli(args('--max-calls', '300'));
    expect(first.code, first.stderr).toBe(5);
    expect(await sandbox.billable()).toBe(300);
    const stopped = summaryOf(first);
    expect(stopped).toMatchObject({ state: 'stopped', error: { code: 'max-calls-reached' }, budget: { scope: 'shared', billableCalls: 300, maxCalls: 300 } });
    expect(first.stderr).toMatch(/spending cap/);
    expect(first.stderr).not.toMatch(/\n\s+at /);
    const state = await withClient(
      db,
      async (c) => (await c.query<{ state: string }>(`SELECT state FROM dq_cleanse.runs WHERE run_id = 'capped'`)).rows[0]?.state,
    );
    expect(state).toBe('stopped');

    const resumed = await runCli(args());
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ state: 'done' });
    const results = await withClient(db, async (c) =>
      Number((await c.query<{ n: string }>(`SELECT count(DISTINCT row_key)::text AS n FROM dq_cleanse.results WHERE run_id = 'capped'`)).rows[0]?.n),
    );
    expect(results).toBe(ROWS);
    // Answers of the pages being written when the cap stopped the run may be bought again: at most the first run's.
    const total = await sandbox.billable();
    expect(total).toBeGreaterThanOrEqual(ROWS);
    expect(total).toBeLessThanOrEqual(ROWS + 300);
  }, 180_000);

  it('counts in the summary the calls of a page the cap cut short', async () => {
    const before = await sandbox.billable();
    const run = await runCli(args('--max-calls', '50', '--store', 'off').map((a) => (a === 'capped' ? 'cut-short' : a)));
    expect(run.code, run.stderr).toBe(5);
    expect(await sandbox.billable()).toBe(before + 50);
    expect(summaryOf(run)).toMatchObject({ state: 'stopped', apiCalls: 50, budget: { billableCalls: 50 } });
  }, 180_000);
});
