import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { runNode, summaryOf, type CliExit } from '@dq/test-support/cli';
import { usePostgres } from '@dq/test-support/pg';
import { useSandbox } from '@dq/test-support/use';

// The cost figures of dq-pg's summary (README "The result store", "Spending cap", and
// packages/postgres-cleanser/README.md "Status") against what the sandbox billed the account and
// against the rows of the table: real dq-pg processes, real PostgreSQL, the sandbox over real HTTP.

const DQ_PG = fileURLToPath(new URL('../packages/postgres-cleanser/dist/cli.js', import.meta.url));
const ACCOUNT = 'acct';
const server = usePostgres();
// No rate limit on the sandbox's side either: the figures, not the pacing, are under test.
const sandbox = useSandbox({ accounts: [{ id: ACCOUNT, apiKeys: ['dq-sandbox-key'], rateLimits: { batch: 0 } }] });

type Exit = CliExit;

const run = (args: string[], db: string, started?: (child: ChildProcess) => void): Promise<Exit> =>
  runNode(DQ_PG, args, { ...sandbox.env(), DQ_DATABASE_URL: db }, started);
/** dq-pg's summary line says `"type":"summary"`. */
const summary = (exit: Exit): Record<string, any> => summaryOf(exit, '"type":"summary"');

/** What the sandbox billed the account so far. */
const billed = (): number => sandbox.stats().billable[ACCOUNT] ?? 0;

/** batch/sync requests the sandbox received (counted when answered) so far, and those it answered with 200. */
function batchRequests(): { total: number; ok: number } {
  const b = sandbox.stats().requests['batch'];
  return { total: b?.total ?? 0, ok: b?.byStatus['200'] ?? 0 };
}

/** A new database with dq-pg's bookkeeping and a table of `distinct` addresses, the list `copies` times in key order. */
async function table(distinct: number, copies = 1): Promise<string> {
  const db = await server.createDatabase();
  const client = new pg.Client({ connectionString: db });
  await client.connect();
  try {
    await client.query(`CREATE TABLE customers (id bigint PRIMARY KEY, street text, house_number text, postal_code text, city text)`);
    await client.query(`INSERT INTO customers SELECT g, 'Lindenweg', (1 + (g - 1) % $1::int)::text, '10115', 'Berlin' FROM generate_series(1, $2::int) g`, [
      distinct,
      distinct * copies,
    ]);
  } finally {
    await client.end();
  }
  const init = await run(['init'], db);
  expect(init.code, init.stderr).toBe(0);
  return db;
}

const cleanse = (runId: string, ...more: string[]): string[] => [
  'cleanse',
  '--table',
  'public.customers',
  '--key',
  'id',
  '--country',
  'DE',
  '--run-id',
  runId,
  '--rate-limit',
  '0',
  '--map',
  'street=street,houseNumber=house_number,postalCode=postal_code,locality=city',
  ...more,
];

describe('dq-pg: the cost figures against what the account is billed', () => {
  it('a table with repeated inputs pays each distinct input once, as the summary says, and a later run pays nothing', async () => {
    const db = await table(300, 3);
    let before = billed();
    const first = await run(cleanse('dups'), db);
    expect(first.code, first.stderr.slice(-2000)).toBe(0);
    const s1 = summary(first);
    expect(billed() - before).toBe(300);
    expect({ rows: s1.rows, apiCalls: s1.apiCalls, dedup: s1.callsSavedByDedup, billable: s1.budget.billableCalls, runCalls: s1.runTotals.apiCalls }).toEqual({
      rows: 900,
      apiCalls: 300,
      dedup: 600,
      billable: 300,
      runCalls: 300,
    });

    before = billed();
    const again = await run(cleanse('dups-again'), db);
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    const s2 = summary(again);
    expect(billed() - before).toBe(0);
    expect({ apiCalls: s2.apiCalls, billable: s2.budget.billableCalls, storeHitRate: s2.storeHitRate }).toEqual({ apiCalls: 0, billable: 0, storeHitRate: 1 });
  }, 120_000);

  it("repeats on later pages are answered by the run's cache, and the summary counts them: every row is a call made or a call saved", async () => {
    const db = await table(300, 3);
    const before = billed();
    const exit = await run(cleanse('cached', '--batch-size', '100'), db);
    expect(exit.code, exit.stderr.slice(-2000)).toBe(0);
    const s = summary(exit);
    expect(billed() - before).toBe(300);
    expect(s.apiCalls).toBe(300);
    expect(s.callsSavedByCache).toBeGreaterThan(0);
    expect(s.apiCalls + s.callsSavedByDedup + s.callsSavedByCache + s.callsSavedByStore).toBe(900);
    expect(s.retries).toBe(0);
  }, 120_000);

  it('503s, resets and truncations, on worker threads: billableCalls counts every attempt the platform received', async () => {
    const db = await table(400);
    sandbox.setFaults({ batch: { errorRate: 0.2, errorStatuses: [503], resetRate: 0.05, truncateRate: 0.05 } });
    const before = { billed: billed(), ...batchRequests() };
    let exit: Exit;
    try {
      exit = await run(cleanse('faults', '--threads', '2'), db);
    } finally {
      sandbox.setFaults({});
    }
    expect([0, 4], exit.stderr.slice(-2000)).toContain(exit.code);
    const s = summary(exit);
    // The sandbox counts a request when its response is done, which may be just after the client read it.
    await new Promise((r) => setTimeout(r, 300));
    const after = batchRequests();
    expect(s.apiCalls).toBe(400);
    expect(s.apiCalls + s.retries).toBe(s.budget.billableCalls);
    expect(s.budget.billableCalls).toBe(after.total - before.total);
    // The account pays for the answers it got (a truncated one included), not for a 503 or a reset.
    expect(billed() - before.billed).toBe(after.ok - before.ok);
    expect(billed() - before.billed).toBeLessThan(s.budget.billableCalls);
  }, 120_000);

  it('--max-calls stops at the cap; the stopped run and its resume count in apiCalls what each paid', async () => {
    const db = await table(1200);
    const before = billed();
    const stopped = await run(cleanse('cap', '--max-calls', '700'), db);
    expect(stopped.code, stopped.stderr.slice(-2000)).toBe(5);
    const s1 = summary(stopped);
    const paid1 = billed() - before;
    expect(paid1).toBe(700);
    expect({ apiCalls: s1.apiCalls, budget: s1.budget }).toMatchObject({ apiCalls: 700, budget: { billableCalls: 700, maxCalls: 700 } });

    const resumed = await run(cleanse('cap'), db);
    expect(resumed.code, resumed.stderr.slice(-2000)).toBe(0);
    const s2 = summary(resumed);
    const paid2 = billed() - before - paid1;
    expect(paid1 + paid2).toBe(1200);
    expect({ rows: s2.runTotals.rows, apiCalls: s2.apiCalls, billable: s2.budget.billableCalls }).toEqual({ rows: 1200, apiCalls: paid2, billable: paid2 });
  }, 120_000);

  it('SIGTERM with calls in flight: the pages under way are answered and written, their calls counted, and the resume buys none again', async () => {
    const db = await table(600);
    sandbox.setFaults({ batch: { latencyMs: 1500 } });
    const before = { billed: billed(), ...batchRequests() };
    let stopped: Exit;
    try {
      stopped = await run(cleanse('term', '--concurrency', '40', '--batch-size', '100'), db, (child) => {
        // Once the first answers came back, the next calls are in flight.
        const poll = setInterval(() => {
          if (batchRequests().total - before.total < 40) return;
          clearInterval(poll);
          child.kill('SIGTERM');
        }, 20);
        child.once('close', () => clearInterval(poll));
      });
    } finally {
      sandbox.setFaults({});
    }
    expect(stopped.code, stopped.stderr.slice(-2000)).toBe(75);
    const s1 = summary(stopped);
    const paid1 = billed() - before.billed;
    expect(paid1).toBeGreaterThan(40);
    expect({ apiCalls: s1.apiCalls, billable: s1.budget.billableCalls }).toEqual({ apiCalls: paid1, billable: paid1 });

    const resumed = await run(cleanse('term'), db);
    expect(resumed.code, resumed.stderr.slice(-2000)).toBe(0);
    const s2 = summary(resumed);
    const paid2 = billed() - before.billed - paid1;
    expect(paid1 + paid2).toBe(600);
    expect({ rows: s2.runTotals.rows, apiCalls: s2.apiCalls, runCalls: s2.runTotals.apiCalls }).toEqual({ rows: 600, apiCalls: paid2, runCalls: 600 });
  }, 120_000);
});
