import { startSandbox, type Sandbox } from '@dq/sandbox';
import { startPostgres, type TestPostgres } from '@dq/test-support/pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, createCustomers, MAP, runCli, summaryOf, withClient } from './support.js';

// dq-pg cleanse as a user runs it: no --run-id (a new one), --key (the primary key), --rate-limit, --threads, --workers,
// --batch-size, --store (its own database) or --max-age (30 days). Every other test passes
// --rate-limit 0 and --threads 1 (test/support.ts's cleanseArgs) against a sandbox without rate
// limits; this one runs against the sandbox's own config: the contract's per-account limits.
const ROWS = 300;

let pg: TestPostgres;
let sandbox: Sandbox;
let db: string;

beforeAll(async () => {
  [pg, sandbox] = await Promise.all([startPostgres(), startSandbox({ port: 0 })]);
  db = await pg.createDatabase();
  await createCustomers(db, ROWS, 23);
}, 300_000);
afterAll(async () => {
  await sandbox?.close();
  await pg?.stop();
});

const cleanse = async (runId?: string) => {
  const before = billable(sandbox);
  const result = await runCli([
    'cleanse',
    '--db',
    db,
    '--table',
    'public.customers',
    '--map',
    MAP,
    '--base-url',
    sandbox.url,
    ...(runId === undefined ? [] : ['--run-id', runId]),
  ]);
  expect(result.code, result.stderr).toBe(0);
  return { calls: billable(sandbox) - before, summary: summaryOf(result) };
};

/** Makes every stored answer and recorded result look checked `days` days earlier than it was. */
const olderBy = (days: number) =>
  withClient(db, async (c) => {
    await c.query(`UPDATE dq_cleanse.results SET checked_at = checked_at - $1::interval`, [`${days} days`]);
    await c.query(`UPDATE dq_store.results SET checked_at = checked_at - $1::interval`, [`${days} days`]);
  });

describe('dq-pg cleanse with no engine flag', () => {
  it(
    'names its new run id (status knows it), gets no 429 at the default rate limit, reuses answers 29 days old and buys again those 31 days old',
    { timeout: 300_000 },
    async () => {
      const first = await cleanse(); // no --run-id: a new id, named in the summary, that status knows
      expect(first.summary).toMatchObject({ rows: ROWS });
      const runId = first.summary['runId'];
      expect(runId).toMatch(/\S/);
      const status = await runCli(['status', '--db', db, '--run', String(runId), '--json']);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ runId, state: 'done' });
      expect(first.calls).toBeGreaterThan(ROWS / 2);
      const tooMany = Object.values(sandbox.stats().requests).reduce((sum, r) => sum + (r.byStatus['429'] ?? 0), 0);
      expect(tooMany).toBe(0);

      await olderBy(29);
      const second = await cleanse('night-2');
      expect(second.calls).toBe(0);
      expect(second.summary).toMatchObject({ apiCalls: 0, written: 0 });

      await olderBy(2); // now 31 days old: past the default --max-age
      const third = await cleanse('night-3');
      expect(third.calls).toBe(first.calls);
      // The answers bought again were stored: the next run calls nothing.
      expect((await cleanse('night-4')).calls).toBe(0);
    },
  );
});
