import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSilentLogger } from '@dq/core';
import { cleanse } from '../src/index.js';
import { API_KEY, billable, cleanseArgs, createCustomers, MAP, runCli, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { CliResult, TestEnv } from './support.js';

// An application holds a lock on rows of the table (an open transaction that updated them) for
// longer than dq-pg's query timeout: the page write must neither wait for it nor end the run as if
// the database were unreachable.

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

const ROWS = 200;
/** The query timeout of the runs: short, so that a page write waiting for the lock would hit it. */
const QUERY_TIMEOUT_MS = 4000;
/** The longest the application holds its lock (released earlier once the run ended). */
const HOLD_MS = 120_000;

describe('rows locked by an application during a run', () => {
  it(
    'are left unwritten and named as conflicts while the run writes every other row and finishes without waiting for the lock; the next run writes just them with no new call',
    { timeout: 300_000 },
    async () => {
      const db = await env.pg.createDatabase();
      await createCustomers(db, ROWS);
      const dbUrl = `${db}?query_timeout=${QUERY_TIMEOUT_MS}`;
      // Rows the run would correct (a row with nothing to write is never waited for).
      const wouldChange: string[] = [];
      await cleanse({
        db,
        table: 'customers',
        key: 'id',
        map: Object.fromEntries(MAP.split(',').map((p) => p.split('=') as [string, string])),
        baseUrl: env.sandbox.url,
        apiKey: API_KEY,
        logger: createSilentLogger(),
        engine: { threads: 1, rateLimits: { batch: 0 }, store: 'off' },
        dryRun: true,
        onChange: (c) => wouldChange.push(c.key),
      });
      expect(wouldChange.length).toBeGreaterThan(20);
      const locked = [wouldChange[3], wouldChange[Math.floor(wouldChange.length / 2)]] as string[];
      const before = await withClient(db, async (c) => (await c.query('SELECT id::text AS id, c::text AS t FROM customers c ORDER BY id')).rows);

      const app = new pg.Client({ connectionString: db });
      await app.connect();
      let held = true;
      let first: CliResult;
      const calls0 = billable(env.sandbox);
      try {
        await app.query('BEGIN');
        await app.query(`UPDATE customers SET house_number = 'app-' || id WHERE id = ANY ($1::bigint[])`, [locked]);
        const { done } = spawnCli(cleanseArgs(dbUrl, env.sandbox, ['--run-id', 'locked-1', '--batch-size', '25']));
        // The lock is held until the run ends (at most HOLD_MS, far beyond the query timeout).
        const release = setTimeout(() => {
          held = false;
          void app.query('ROLLBACK').catch(() => undefined);
        }, HOLD_MS);
        try {
          first = await done;
        } finally {
          clearTimeout(release);
        }
        // The run ended while the application still held its lock: it did not wait for it.
        expect(held).toBe(true);
        await app.query('ROLLBACK');
        held = false;
      } finally {
        await app.end();
      }

      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).not.toMatch(/unreachable/);
      expect(first.stderr).not.toMatch(/\n\s+at /);
      const summary = summaryOf(first);
      expect(summary).toMatchObject({ state: 'done', rows: ROWS, written: wouldChange.length - 2, conflicts: 2 });
      expect([...(summary['conflictKeys'] as string[])].sort()).toEqual([...locked].sort());
      // Each locked row named on stderr, with what happens to it.
      expect(first.stderr).toMatch(/rows locked by another session .*next run writes them/);
      for (const k of locked) expect(first.stderr).toContain(`"${k}"`);
      // Not as rows changed since they were read: nobody changed them.
      expect(first.stderr).not.toMatch(/changed by someone else/);
      const firstCalls = billable(env.sandbox) - calls0;
      expect(firstCalls).toBeGreaterThan(0);

      // Every other row written, the locked ones as the application's rollback left them (as before).
      const after1 = await withClient(db, async (c) => (await c.query('SELECT id::text AS id, c::text AS t FROM customers c ORDER BY id')).rows);
      const beforeOf = new Map(before.map((r) => [r.id, r.t]));
      const changed1 = after1.filter((r) => beforeOf.get(r.id) !== r.t).map((r) => r.id);
      expect(changed1.sort()).toEqual(wouldChange.filter((k) => !locked.includes(k)).sort());
      const outcomes = await withClient(db, async (c) =>
        (
          await c.query<{ row_key: string; outcome: string }>(
            `SELECT row_key, outcome FROM dq_cleanse.results WHERE run_id = 'locked-1' AND row_key = ANY ($1) ORDER BY row_key`,
            [locked],
          )
        ).rows.map((r) => r.outcome),
      );
      expect(outcomes).toEqual(['conflict', 'conflict']);

      // The next run: writes exactly the two rows, their answers from the result store.
      const calls1 = billable(env.sandbox);
      const second = await runCli(cleanseArgs(dbUrl, env.sandbox, ['--run-id', 'locked-2', '--batch-size', '25']));
      expect(second.code, second.stderr).toBe(0);
      expect(summaryOf(second)).toMatchObject({ state: 'done', rows: ROWS, written: 2, conflicts: 0 });
      expect(billable(env.sandbox) - calls1).toBe(0);
      const after2 = await withClient(db, async (c) => (await c.query('SELECT id::text AS id, c::text AS t FROM customers c ORDER BY id')).rows);
      const after1Of = new Map(after1.map((r) => [r.id, r.t]));
      expect(
        after2
          .filter((r) => after1Of.get(r.id) !== r.t)
          .map((r) => r.id)
          .sort(),
      ).toEqual([...locked].sort());
    },
  );

  it(
    'a lock on the table itself that outlasts the page write stops the run with exit 75 naming the lock and the run id (not an unreachable database); the rerun finishes it',
    { timeout: 300_000 },
    async () => {
      const db = await env.pg.createDatabase();
      await createCustomers(db, ROWS);
      const dbUrl = `${db}?query_timeout=${QUERY_TIMEOUT_MS}`;
      const app = new pg.Client({ connectionString: db });
      await app.connect();
      let stopped: CliResult;
      const calls0 = billable(env.sandbox);
      try {
        // SHARE: the run may read the table, not update it.
        await app.query('BEGIN');
        await app.query('LOCK TABLE customers IN SHARE MODE');
        stopped = await runCli(cleanseArgs(dbUrl, env.sandbox, ['--run-id', 'table-locked', '--batch-size', '25']));
        await app.query('ROLLBACK');
      } finally {
        await app.end();
      }
      expect(stopped.code, stopped.stderr).toBe(75);
      expect(stopped.stderr).toMatch(/db-locked: "public"\."customers" .*stayed locked by another session.*rerun with --run-id table-locked/);
      expect(stopped.stderr).not.toMatch(/unreachable/);
      expect(stopped.stderr).not.toMatch(/\n\s+at /);
      const resumed = await runCli(cleanseArgs(dbUrl, env.sandbox, ['--run-id', 'table-locked', '--batch-size', '25']));
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(summaryOf(resumed)).toMatchObject({ state: 'done' });
      const written = await withClient(
        db,
        async (c) => (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'table-locked'`)).rows[0]?.n,
      );
      expect(written).toBe(ROWS);
      // The pages validated but not written had their answers stored: both runs together pay at most once per row.
      expect(billable(env.sandbox) - calls0).toBeLessThanOrEqual(ROWS);
    },
  );
});
