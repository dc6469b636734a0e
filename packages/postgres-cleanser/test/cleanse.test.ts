import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, runCli, snapshot, startEnv, summaryOf, withClient } from './support.js';
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
      expect(classes).toEqual(expect.objectContaining(new Set(['A', 'B', 'C', 'D', 'E', 'F'])));
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
    const changes = dry.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; key: string; after: Record<string, string | null> }).filter((l) => l.type === 'change');
    expect(changes.length).toBe(summaryOf(dry)['written']);

    const real = await runCli(cleanseArgs(db, env.sandbox, ['--batch-size', '60']));
    expect(summaryOf(real)['written']).toBe(changes.length);
    const after = await snapshot(db);
    for (const change of changes) {
      expect(JSON.parse(after.get(change.key) ?? '[]')).toEqual(Object.values(change.after));
    }
  });
});
