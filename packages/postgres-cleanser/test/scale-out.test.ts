import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, snapshot, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
  env.sandbox.setFaults({ batch: { latencyMs: 10 } });
});
afterAll(async () => {
  await env?.stop();
});

const ROWS = 900;

describe('several processes on one run', () => {
  it('split the rows between them: disjoint work whose union is every row', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, ROWS);
    const before = await snapshot(db);
    const calls = billable(env.sandbox);
    // One range worker each, so the split shows per process (workers of one process: next test).
    const args = cleanseArgs(db, env.sandbox, ['--run-id', 'shared', '--batch-size', '30', '--pages-per-claim', '2', '--concurrency', '8', '--workers', '1']);
    const [pa, pb] = [spawnCli(args), spawnCli(args)];
    const [a, b] = await Promise.all([pa.done, pb.done]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const sa = summaryOf(a);
    const sb = summaryOf(b);
    expect((sa['rows'] as number) + (sb['rows'] as number)).toBe(ROWS);
    expect(sa['rows']).toBeGreaterThan(0);
    expect(sb['rows']).toBeGreaterThan(0);
    // Each distinct input is paid for once per process at most; no page is validated twice.
    expect(billable(env.sandbox) - calls).toBeLessThanOrEqual(ROWS);

    await withClient(db, async (c) => {
      const { rows } = await c.query<{ row_key: string; worker: string }>(`SELECT row_key, worker FROM dq_cleanse.results WHERE run_id = 'shared'`);
      const byWorker = new Map<string, Set<string>>();
      for (const r of rows) {
        const set = byWorker.get(r.worker) ?? new Set<string>();
        set.add(r.row_key);
        byWorker.set(r.worker, set);
      }
      expect(byWorker.size).toBe(2);
      const [first, second] = [...byWorker.values()] as [Set<string>, Set<string>];
      expect([...first].filter((k) => second.has(k))).toEqual([]);
      expect(new Set([...first, ...second])).toEqual(new Set(before.keys()));
      // Each process reports the rows it did itself: its results carry its pid in the worker name.
      const ofProcess = (pid: number | undefined) => rows.filter((r) => r.worker.split(':')[1] === String(pid)).length;
      expect([ofProcess(pa.child.pid), ofProcess(pb.child.pid)]).toEqual([sa['rows'], sb['rows']]);

      const ranges = await c.query<{ n: number; workers: number }>(
        `SELECT count(*)::int AS n, count(DISTINCT worker)::int AS workers FROM dq_cleanse.progress WHERE run_id = 'shared' AND done`,
      );
      expect(ranges.rows[0]?.workers).toBe(2);
      const state = await c.query<{ state: string }>(`SELECT state FROM dq_cleanse.runs WHERE run_id = 'shared'`);
      expect(state.rows[0]?.state).toBe('done');
    });
  });

  it('split the rows between the range workers of one process the same way, also when reading ahead', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, ROWS);
    const before = await snapshot(db);
    const args = cleanseArgs(db, env.sandbox, [
      '--run-id',
      'workers',
      '--batch-size',
      '30',
      '--pages-per-claim',
      '2',
      '--concurrency',
      '8',
      '--workers',
      '3',
      '--read-ahead',
      '1',
    ]);
    const run = await spawnCli(args).done;
    expect(run.code).toBe(0);
    expect(summaryOf(run)).toMatchObject({ state: 'done', rows: ROWS });

    await withClient(db, async (c) => {
      const { rows } = await c.query<{ row_key: string; worker: string }>(`SELECT row_key, worker FROM dq_cleanse.results WHERE run_id = 'workers'`);
      expect(rows.length).toBe(ROWS);
      expect(new Set(rows.map((r) => r.row_key))).toEqual(new Set(before.keys()));
      // Every worker did part of the work, under a name of its own.
      expect(new Set(rows.map((r) => r.worker)).size).toBe(3);
      const progress = await c.query<{ rows: number; pending: number }>(
        `SELECT sum(rows_read)::int AS rows, count(*) FILTER (WHERE NOT done)::int AS pending FROM dq_cleanse.progress WHERE run_id = 'workers'`,
      );
      expect(progress.rows[0]).toEqual({ rows: ROWS, pending: 0 });
    });
  });
});
