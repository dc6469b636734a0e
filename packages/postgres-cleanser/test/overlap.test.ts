import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, resultRows, runCli, snapshot, spawnCli, startEnv, summaryOf, until } from './support.js';
import type { TestEnv } from './support.js';

// Two runs of the same table with different run ids at once: the scheduler started tonight's job
// while last night's still ran, or an operator started a second one by hand. Both would buy every
// row's answer (the result store keeps an answer only once it has arrived), and the later one
// would find the rows the other corrected changed under it. The second waits for the first.
let env: TestEnv;
let db: string;
const ROWS = 400;

beforeAll(async () => {
  env = await startEnv();
  db = await env.pg.createDatabase();
  await createCustomers(db, ROWS, 43);
});
afterAll(async () => {
  await env?.stop();
});

describe('a second run of a table another run is cleansing now', () => {
  it('two runs started together: one goes on, the other stops before any call (exit 75, naming it); rerun once it ended, it pays nothing', async () => {
    // Slow answers: the first run is still at work when the second is retried below.
    env.sandbox.setFaults({ batch: { latencyMs: 100 } });
    const calls = billable(env.sandbox);
    const args = (runId: string) => cleanseArgs(db, env.sandbox, ['--run-id', runId, '--batch-size', '20', '--concurrency', '8']);
    const [a, b] = await Promise.all([runCli(args('night-a')), runCli(args('night-b'))]);
    env.sandbox.setFaults({});
    // Every row bought once: the run that stopped sent nothing.
    expect(billable(env.sandbox) - calls).toBeLessThanOrEqual(ROWS);
    const [ran, stopped, other] = a.code === 0 ? [a, b, 'night-a'] : [b, a, 'night-b'];
    expect(ran.code, ran.stderr).toBe(0);
    expect(summaryOf(ran)).toMatchObject({ rows: ROWS, conflicts: 0, state: 'done' });
    expect(stopped.code, stopped.stderr).toBe(75);
    expect(stopped.stderr).toMatch(new RegExp(`^dq-pg: table-busy: run ${other} is cleansing "public"\\."customers" now .*--run-id ${other}.*rerun`, 'm'));
    expect(stopped.stderr).not.toContain('    at ');
    const afterFirst = await snapshot(db);

    // The scheduler's retry, once the first has ended: every answer from the store, nothing written.
    const retry = await runCli(args(other === 'night-a' ? 'night-b' : 'night-a'));
    expect(retry.code, retry.stderr).toBe(0);
    expect(summaryOf(retry)).toMatchObject({ rows: ROWS, apiCalls: 0, written: 0, conflicts: 0, state: 'done' });
    expect(billable(env.sandbox) - calls).toBeLessThanOrEqual(ROWS);
    expect(await snapshot(db)).toEqual(afterFirst);
  });

  it('a run started while another works on the table stops at once (exit 75), whatever it was given', async () => {
    env.sandbox.setFaults({ batch: { latencyMs: 100 } });
    const first = spawnCli(
      cleanseArgs(db, env.sandbox, ['--run-id', 'night-3', '--max-age', '0', '--batch-size', '20', '--concurrency', '8', '--workers', '1']),
    );
    await until('the first run to write a page', async () => (await resultRows(db, 'night-3')) > 0);
    // Other accepted classes do not matter: it would buy the same answers for the same rows.
    const second = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'night-4', '--max-age', '0', '--accept', 'A']));
    const done = await first.done;
    env.sandbox.setFaults({});
    expect(done.code, done.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(75);
    expect(second.stderr).toMatch(/^dq-pg: table-busy: run night-3 /m);
    expect(await resultRows(db, 'night-4')).toBe(0);
  });

  it('a second process of the same run, and a run of other rows (another --where), go on beside it', async () => {
    env.sandbox.setFaults({ batch: { latencyMs: 100 } });
    const first = spawnCli(
      cleanseArgs(db, env.sandbox, [
        '--run-id',
        'evens',
        '--where',
        'id % 2 = 0',
        '--max-age',
        '0',
        '--batch-size',
        '20',
        '--concurrency',
        '2',
        '--workers',
        '1',
      ]),
    );
    await until('the first run to write a page', async () => (await resultRows(db, 'evens')) > 0);
    const [joined, odds] = await Promise.all([
      runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'evens', '--where', 'id % 2 = 0', '--max-age', '0', '--batch-size', '20'])),
      runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'odds', '--where', 'id % 2 = 1', '--max-age', '0', '--batch-size', '20'])),
    ]);
    env.sandbox.setFaults({});
    expect(joined.code, joined.stderr).toBe(0);
    expect(odds.code, odds.stderr).toBe(0);
    expect((await first.done).code).toBe(0);
    expect(await resultRows(db, 'evens')).toBe(ROWS / 2);
    expect(await resultRows(db, 'odds')).toBe(ROWS / 2);
  });
});
