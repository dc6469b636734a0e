import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSilentLogger } from '@dq/core';
import { cleanse } from '../src/index.js';
import type { CleanseOptions } from '../src/index.js';
import { API_KEY, cleanseArgs, createCustomers, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

const MAP = {
  street: 'street',
  houseNumber: 'house_number',
  postalCode: 'postal_code',
  locality: 'city',
  addressLine: 'address_line',
  localityLine: 'locality_line',
  country: 'country',
};

function options(db: string, extra: Partial<CleanseOptions> = {}): CleanseOptions {
  return {
    db,
    table: 'customers',
    key: 'id',
    map: MAP,
    baseUrl: env.sandbox.url,
    apiKey: API_KEY,
    logger: createSilentLogger(),
    engine: { threads: 1, rateLimits: { batch: 0 } },
    ...extra,
  };
}

/**
 * Resolves once a dq-pg connection is blocked by `other`'s transaction, i.e. the guarded page
 * UPDATE on the rows it holds (other dq-pg connections may wait on each other's range claims
 * meanwhile). Activity is cached per transaction: cleared first to see the current waits.
 */
async function blockedBy(other: pg.Client): Promise<void> {
  await waitFor(async () => {
    await other.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await other.query(
      `SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'dq-pg%' AND pg_backend_pid() = ANY (pg_blocking_pids(pid))`,
    );
    return rows.length > 0;
  });
}

describe('guarded page writes', () => {
  it('reports rows another transaction changed while their page was in flight as conflicts and leaves that transaction’s values', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 120);
    const wouldChange: string[] = [];
    await cleanse(options(db, { dryRun: true, onChange: (c) => wouldChange.push(c.key) }));
    expect(wouldChange.length).toBeGreaterThan(20);
    const edited = wouldChange.filter((_, i) => i % 2 === 0);

    // Another session edits rows and holds its locks: the cleanser reads the old committed values,
    // validates them, and its guarded UPDATE then waits for this transaction.
    const other = new pg.Client({ connectionString: db });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`UPDATE customers SET house_number = 'edited-' || id WHERE id = ANY ($1::bigint[])`, [edited]);
      const run = cleanse({ ...options(db, { runId: 'guarded', batchSize: 500 }), dryRun: false });
      await blockedBy(other);
      await other.query('COMMIT');
      const summary = await run;

      expect(summary.conflicts).toBe(edited.length);
      expect([...summary.conflictKeys].sort()).toEqual([...edited].sort());
      expect(summary.written).toBe(wouldChange.length - edited.length);
      const { rows } = await other.query<{ id: string; house_number: string }>(`SELECT id::text, house_number FROM customers WHERE id = ANY ($1::bigint[])`, [
        edited,
      ]);
      for (const r of rows) expect(r.house_number).toBe(`edited-${r.id}`);
      const outcomes = await other.query<{ outcome: string; n: number }>(
        `SELECT outcome, count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'guarded' AND row_key = ANY ($1) GROUP BY outcome`,
        [edited],
      );
      expect(outcomes.rows).toEqual([{ outcome: 'conflict', n: edited.length }]);
      const audited = await other.query(`SELECT 1 FROM dq_cleanse.audit WHERE run_id = 'guarded' AND row_key = ANY ($1)`, [edited]);
      expect(audited.rowCount).toBe(0);
    } finally {
      await other.end();
    }
  });

  it('with --status-columns, a row without corrections that another transaction changed while its page was in flight is a conflict too', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 120);
    await withClient(db, (c) => c.query('ALTER TABLE customers ADD COLUMN dq_status text'));
    const wouldChange = new Set<string>();
    await cleanse(options(db, { dryRun: true, onChange: (c) => wouldChange.add(c.key) }));
    // Rows the run would only give a status: no corrections.
    const edited = Array.from({ length: 120 }, (_, i) => String(i + 1))
      .filter((k) => !wouldChange.has(k))
      .slice(0, 6);
    expect(edited).toHaveLength(6);
    const other = new pg.Client({ connectionString: db });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`UPDATE customers SET house_number = 'edited-' || id WHERE id = ANY ($1::bigint[])`, [edited]);
      const run = cleanse({ ...options(db, { runId: 'guarded-status', batchSize: 500, statusColumns: { status: 'dq_status' } }), dryRun: false });
      await blockedBy(other);
      await other.query('COMMIT');
      const summary = await run;
      expect(summary.conflicts).toBe(edited.length);
      expect([...summary.conflictKeys].sort()).toEqual([...edited].sort());
      const { rows } = await other.query<{ id: string; house_number: string; dq_status: string | null }>(
        `SELECT id::text, house_number, dq_status FROM customers WHERE id = ANY ($1::bigint[])`,
        [edited],
      );
      for (const r of rows) expect(r).toEqual({ id: r.id, house_number: `edited-${r.id}`, dq_status: null });
      const outcomes = await other.query<{ outcome: string; n: number }>(
        `SELECT outcome, count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'guarded-status' AND row_key = ANY ($1) GROUP BY outcome`,
        [edited],
      );
      expect(outcomes.rows).toEqual([{ outcome: 'conflict', n: edited.length }]);
      const status = await other.query<{ n: number }>(`SELECT sum(conflicts)::int AS n FROM dq_cleanse.progress WHERE run_id = 'guarded-status'`);
      expect(status.rows[0]?.n).toBe(edited.length);
    } finally {
      await other.end();
    }
  });

  it('clobbers none of the values another connection keeps writing during a whole run', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 600);
    env.sandbox.setFaults({ batch: { latencyMs: 15 } });
    const last = new Map<string, string>();
    let edits = 0;
    try {
      const { done } = spawnCli(cleanseArgs(db, env.sandbox, ['--run-id', 'busy', '--batch-size', '40', '--concurrency', '8']));
      let finished = false;
      const result = done.finally(() => (finished = true));
      await withClient(db, async (c) => {
        while (!finished) {
          const id = String(1 + Math.floor(Math.random() * 600));
          const marker = `edit-${++edits}`;
          await c.query('UPDATE customers SET house_number = $2 WHERE id = $1', [id, marker]);
          last.set(id, marker);
          await sleep(2);
        }
      });
      const r = await result;
      expect(r.code).toBe(0);
      expect(summaryOf(r)['rows']).toBe(600);
    } finally {
      env.sandbox.setFaults({});
    }
    expect(edits).toBeGreaterThan(100);

    const clobbered = await withClient(db, async (c) => {
      const { rows } = await c.query<{ id: string; house_number: string | null; before: string | null }>(
        `SELECT t.id::text, t.house_number, a.before ->> 'house_number' AS before
           FROM customers t LEFT JOIN dq_cleanse.audit a ON a.run_id = 'busy' AND a.row_key = t.id::text
          WHERE t.id = ANY ($1::bigint[])`,
        [[...last.keys()]],
      );
      // The other connection's last value survives, unless the cleanser read exactly that value
      // and corrected it afterwards (then the audit's before value is that marker).
      return rows.filter((r) => r.house_number !== last.get(r.id) && r.before !== last.get(r.id));
    });
    expect(clobbered).toEqual([]);
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not reached in time');
    await sleep(20);
  }
}
