import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, runCli, snapshot, spawnCli, startEnv, summaryOf, until, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe('dq-pg cleanse', () => {
  it('writes accepted corrections, keeps review and invalid rows, and records every row once', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 300);
    const before = await snapshot(db);
    const result = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'full', '--batch-size', '40', '--pages-per-claim', '2']));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const summary = summaryOf(result);
    expect(summary).toMatchObject({ runId: 'full', state: 'done', rows: 300, conflicts: 0 });
    const after = await snapshot(db);

    await withClient(db, async (c) => {
      const results = await c.query<{ row_key: string; status: string; outcome: string; result_class: string | null; candidates: unknown }>(
        'SELECT row_key, status, outcome, result_class, candidates FROM dq_cleanse.results WHERE run_id = $1',
        ['full'],
      );
      expect(results.rowCount).toBe(300);
      const audit = await c.query<{ row_key: string; before: Record<string, string | null>; after: Record<string, string | null> }>(
        'SELECT row_key, before, after FROM dq_cleanse.audit WHERE run_id = $1',
        ['full'],
      );
      const written = new Set(audit.rows.map((r) => r.row_key));
      expect(written.size).toBe(summary['written']);
      expect(written.size).toBeGreaterThan(50);
      for (const r of results.rows) {
        // Exactly the written rows changed; review and invalid rows kept their values.
        expect(after.get(r.row_key) !== before.get(r.row_key)).toBe(written.has(r.row_key));
        if (r.status !== 'accepted') expect(r.outcome).toBe('kept');
        if (r.result_class === 'E') expect(Array.isArray(r.candidates)).toBe(true);
      }
      const classes = new Set(results.rows.map((r) => r.result_class));
      // Every class comes up in this labelled set, and nothing else does (a Set compares by content).
      expect(classes).toEqual(new Set(['A', 'B', 'C', 'D', 'E', 'F']));
    });
  });

  it("writes each row's status, class, request id and check time into the table when asked, corrections or not", async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 200);
    await withClient(db, (c) =>
      c.query('ALTER TABLE customers ADD dq_status text, ADD dq_class varchar(1), ADD dq_request_id text, ADD dq_checked_at timestamptz, ADD counter int'),
    );
    const before = await snapshot(db);
    const calls = billable(env.sandbox);
    const bad = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'bad-status', '--status-columns', 'status=counter']));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--status-columns status: column "counter" .* is integer; use a text column/);
    const missing = await runCli(cleanseArgs(db, env.sandbox, ['--status-columns', 'status=dq_state']));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/has no column "dq_state"/);
    // Refused before any API call.
    expect(billable(env.sandbox)).toBe(calls);

    const statusColumns = 'status=dq_status,class=dq_class,requestId=dq_request_id,checkedAt=dq_checked_at';
    const result = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'in-table', '--batch-size', '40', '--status-columns', statusColumns]));
    expect(result.code).toBe(0);
    expect(summaryOf(result)).toMatchObject({ state: 'done', rows: 200, conflicts: 0 });
    const after = await snapshot(db);
    await withClient(db, async (c) => {
      const rows = await c.query<{
        id: string;
        dq_status: string | null;
        dq_class: string | null;
        dq_request_id: string | null;
        dq_checked_at: Date | null;
        status: string;
        result_class: string | null;
        request_id: string | null;
        outcome: string;
      }>(
        `SELECT t.id::text, t.dq_status, t.dq_class, t.dq_request_id, t.dq_checked_at, r.status, r.result_class, r.request_id, r.outcome
           FROM customers t JOIN dq_cleanse.results r ON r.run_id = 'in-table' AND r.row_key = t.id::text`,
      );
      expect(rows.rowCount).toBe(200);
      const outcomes = new Set<string>();
      for (const r of rows.rows) {
        outcomes.add(r.outcome);
        // Every row carries its result, whether its values were corrected or kept.
        expect(r.dq_status).toBe(r.status);
        expect(r.dq_class).toBe(r.result_class);
        expect(r.dq_request_id).toBe(r.request_id);
        expect(r.dq_checked_at).toBeInstanceOf(Date);
        // Only the corrected rows changed their mapped columns.
        expect(after.get(r.id) !== before.get(r.id)).toBe(r.outcome === 'written');
      }
      // Rows were corrected and rows were kept: both branches of the status write ran.
      expect(outcomes).toEqual(new Set(['written', 'kept']));
      expect(summaryOf(result)['written']).toBe(rows.rows.filter((r) => r.outcome === 'written').length);
      expect(summaryOf(result)['written']).toBeGreaterThan(20);
    });
  });

  it('changes nothing and calls nothing when a finished run is run again', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 120);
    const args = cleanseArgs(db, env.sandbox, ['--run-id', 'again', '--batch-size', '50']);
    expect((await runCli(args)).code).toBe(0);
    const after = await snapshot(db);
    const calls = billable(env.sandbox);
    const second = await runCli(args);
    expect(second.code).toBe(0);
    expect(summaryOf(second)).toMatchObject({ state: 'done', rows: 0, written: 0 });
    expect(billable(env.sandbox)).toBe(calls);
    expect(await snapshot(db)).toEqual(after);
  });

  it('writes nothing at all in a dry run and prints the changes a run would make', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 150);
    const before = await snapshot(db);
    const dry = await runCli(cleanseArgs(db, env.sandbox, ['--dry-run', '--batch-size', '60']));
    expect(dry.code).toBe(0);
    expect(await snapshot(db)).toEqual(before);
    const schema = await withClient(db, (c) => c.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'dq_cleanse'`));
    expect(schema.rowCount).toBe(0);
    const changes = dry.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; key: string; after: Record<string, string | null> })
      .filter((l) => l.type === 'change');
    // The summary says what a run would write, not that anything was written.
    const drySummary = summaryOf(dry);
    expect(drySummary).toMatchObject({ dryRun: true, state: 'dry-run', wouldWrite: changes.length });
    expect(changes.length).toBeGreaterThan(0);
    expect(drySummary).not.toHaveProperty('written');
    expect(drySummary).not.toHaveProperty('conflicts');

    const real = await runCli(cleanseArgs(db, env.sandbox, ['--batch-size', '60']));
    expect(summaryOf(real)['written']).toBe(changes.length);
    const after = await snapshot(db);
    for (const change of changes) {
      expect(JSON.parse(after.get(change.key) ?? '[]')).toEqual(Object.values(change.after));
    }
  });

  it('a dry run stopped by SIGTERM says it was interrupted and exits 75, not a success over part of the table', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 400);
    env.sandbox.setFaults({ batch: { latencyMs: 200 } });
    const calls = billable(env.sandbox);
    let dry;
    try {
      const { child, done } = spawnCli(cleanseArgs(db, env.sandbox, ['--dry-run', '--batch-size', '20', '--store', 'off']));
      // Once it validates its first pages (its signal handlers are in place by then).
      await until('the first calls', async () => billable(env.sandbox) >= calls + 40, 20_000);
      child.kill('SIGTERM');
      dry = await done;
    } finally {
      env.sandbox.setFaults({});
    }
    const summary = summaryOf(dry) as { rows: number; exitCode: number; error?: { code: string } };
    expect(summary.rows).toBeLessThan(400);
    expect(dry.code, dry.stderr).toBe(75);
    expect(summary).toMatchObject({ dryRun: true, exitCode: 75, error: { code: 'interrupted' } });
    expect(dry.stderr).toContain(`dq-pg: interrupted: interrupted after ${summary.rows} rows`);
  }, 30_000);
});
