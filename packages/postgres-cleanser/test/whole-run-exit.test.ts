import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, CLI, cleanseArgs, createCustomers, runCli, spawnCli, startEnv, summaryOf, until, withClient } from './support.js';
import type { CliResult, TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

/** Rows of run `runId` recorded `unavailable` in dq_cleanse.results. */
async function unavailableRows(db: string, runId: string): Promise<number> {
  return withClient(db, async (c) => {
    if (!(await c.query(`SELECT to_regclass('dq_cleanse.results') IS NOT NULL AS ok`)).rows[0]?.ok) return 0;
    const { rows } = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = $1 AND status = 'unavailable'`, [runId]);
    return rows[0]?.n ?? 0;
  });
}

/**
 * One call at a time: the sandbox's seeded faults then meet the same calls on every run, however
 * loaded the machine, so the same rows fail after their retries: here each between answers
 * (unavailable), none among the last calls of a page, which the engine takes for an outage (exit
 * 75, nothing marked).
 */
const ONE_AT_A_TIME = ['--workers', '1', '--threads', '0', '--concurrency', '1'];

/** Keys of the rows of run `runId` with `status`, in key order. */
async function keysOf(db: string, runId: string, status?: string): Promise<string[]> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<{ k: string }>(
      `SELECT row_key AS k FROM dq_cleanse.results WHERE run_id = $1 AND ($2::text IS NULL OR status = $2) ORDER BY row_key::bigint`,
      [runId, status ?? null],
    );
    return rows.map((r) => r.k);
  });
}

/** Runs `script` with a real POSIX shell (`sh -c`), `args` as its "$@", the API key in the environment. */
function shell(script: string, args: string[]): Promise<CliResult> {
  const child = spawn('sh', ['-c', script, 'sh', ...args], { env: { ...process.env, DQ_API_KEY: API_KEY }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe('dq-pg: the exit code of a run is that of all its rows, earlier attempts included', () => {
  it('a scheduler retry of a run that exited 4 (rows unavailable) exits 4 again, not 0, and says how to redo those rows', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 120);
    const args = cleanseArgs(db, env.sandbox, ['--run-id', 'F1', '--batch-size', '20', ...ONE_AT_A_TIME]);
    env.sandbox.setFaults({ batch: { errorRate: 0.5, errorStatuses: [503] } });
    let first;
    try {
      first = await runCli(args);
    } finally {
      env.sandbox.setFaults({});
    }
    expect(first.code, first.stderr).toBe(4);
    const unavailable = await unavailableRows(db, 'F1');
    expect(unavailable).toBeGreaterThan(0);

    const retry = await runCli(args);
    expect(retry.stderr).not.toContain('this is a bug');
    expect(retry.code, retry.stderr).toBe(4);
    const summary = summaryOf(retry);
    expect(summary).toMatchObject({ state: 'done', exitCode: 4, rows: 0, runTotals: { rows: 120, unavailable } });
    expect(retry.stderr).toContain(`${unavailable} of the 120 rows of run F1 are unavailable`);
    expect(retry.stderr).toContain(`status = '\\''unavailable'\\''`);
    const status = await runCli(['status', '--db', db, '--run', 'F1', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ state: 'done', unavailable });

    // --max-failed is judged on the whole run too.
    const tolerant = await runCli([...args, '--max-failed', '0.9']);
    expect(tolerant.code, tolerant.stderr).toBe(0);
  }, 180_000);

  it('the run that first leaves rows unavailable exits 4 saying how to redo them: its --where, pasted into a shell, makes a new run redo exactly those rows', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 80);
    // A key whose name a shell would split, and SQL literals whose quotes it would take for its own, unless the --where is quoted for it.
    await withClient(db, (c) => c.query(`ALTER TABLE customers RENAME COLUMN id TO "Kunden Nr"`));
    const args = (runId: string): string[] =>
      cleanseArgs(db, env.sandbox, ['--run-id', runId, '--batch-size', '20', ...ONE_AT_A_TIME]).map((a, i, all) => (all[i - 1] === '--key' ? 'Kunden Nr' : a));
    const runId = 'F2';
    env.sandbox.setFaults({ batch: { errorRate: 0.6, errorStatuses: [503] } });
    let first;
    try {
      first = await runCli(args(runId));
    } finally {
      env.sandbox.setFaults({});
    }
    expect(first.code, first.stderr).toBe(4);
    const unavailable = await keysOf(db, runId, 'unavailable');
    expect(unavailable.length).toBeGreaterThan(0);
    const hint = first.stderr.split('\n').find((l) => l.startsWith('dq-pg: hint: ') && l.includes('unavailable'));
    expect(hint, first.stderr).toContain(`${unavailable.length} of the 80 rows of run ${runId} are unavailable`);
    const where = /--where (.+)$/.exec(hint ?? '')?.[1];
    expect(where).toBeDefined();

    const redo = await shell(`exec "$@" --where ${where}`, [process.execPath, CLI, ...args('redo')]);
    expect(redo.code, redo.stderr).toBe(0);
    expect(summaryOf(redo)).toMatchObject({ state: 'done', rows: unavailable.length, byStatus: { unavailable: 0 } });
    expect(await keysOf(db, 'redo')).toEqual(unavailable);
  }, 180_000);

  it('a run resumed after a stop exits 4 when an earlier attempt left rows unavailable, though its own rows all succeeded', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 400);
    const args = cleanseArgs(db, env.sandbox, ['--run-id', 'S1', '--batch-size', '20', ...ONE_AT_A_TIME]);
    env.sandbox.setFaults({ batch: { errorRate: 0.5, errorStatuses: [503] } });
    let stopped;
    try {
      const { child, done } = spawnCli(args);
      await until('a page with unavailable rows', async () => (await unavailableRows(db, 'S1')) > 0);
      child.kill('SIGTERM');
      stopped = await done;
    } finally {
      env.sandbox.setFaults({});
    }
    expect(stopped.code, stopped.stderr).toBe(75);
    expect(summaryOf(stopped)).toMatchObject({ state: 'stopped' });

    const resumed = await runCli(args);
    expect(resumed.code, resumed.stderr).toBe(4);
    const summary = summaryOf(resumed) as { state: string; byStatus: { unavailable: number }; runTotals: { rows: number; unavailable: number } };
    expect(summary.state).toBe('done');
    expect(summary.byStatus.unavailable).toBe(0);
    expect(summary.runTotals.rows).toBe(400);
    expect(summary.runTotals.unavailable).toBe(await unavailableRows(db, 'S1'));
  }, 180_000);
});
