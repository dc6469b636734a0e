import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { status } from '../src/status.js';
import { cleanseArgs, createCustomers, rowTexts, runCli, spawnCli, startEnv, summaryOf, until, withClient } from './support.js';
import type { CliResult, TestEnv } from './support.js';

// dq-pg rollback, review apply and review export stopped part way — by SIGINT/SIGTERM (once,
// twice) or by the loss of a database session — against a real PostgreSQL, the CLI from dist/ as a
// child process really signalled. Each ends with exit 75 and a line saying how far it got, and the
// same command run again finishes the job exactly.
let env: TestEnv;
let dir: string;
beforeAll(async () => {
  env = await startEnv();
  dir = await mkdtemp(join(tmpdir(), 'dq-stops-'));
});
afterAll(async () => {
  await env?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Rows the rollback restores per batch (its default). */
const ROLLBACK_BATCH = 1000;

async function one<T>(db: string, sql: string, values: unknown[] = []): Promise<T> {
  return withClient(db, async (c) => (await c.query(sql, values)).rows[0] as T);
}

/**
 * Makes every UPDATE of customers take `pace` ms per row (table `pace`, changed with {@link setPace})
 * and counts the updates of each row (table `writes`): the server side of a batch or page is slow
 * enough for a signal to arrive while it is under way.
 */
async function slowUpdates(db: string, ms: number): Promise<void> {
  await withClient(db, async (c) => {
    await c.query(`CREATE TABLE pace (ms int NOT NULL); INSERT INTO pace VALUES (${ms})`);
    await c.query(`CREATE TABLE writes (id bigint PRIMARY KEY, n int NOT NULL)`);
    await c.query(`CREATE FUNCTION slow_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                     PERFORM pg_sleep((SELECT ms FROM pace) / 1000.0);
                     INSERT INTO writes (id, n) VALUES (NEW.id, 1) ON CONFLICT (id) DO UPDATE SET n = writes.n + 1; RETURN NEW; END $$`);
    await c.query(`CREATE TRIGGER slow_write AFTER UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION slow_write()`);
  });
}

const setPace = (db: string, ms: number): Promise<unknown> => withClient(db, (c) => c.query('UPDATE pace SET ms = $1', [ms]));

/** Audit rows of run `runId` by their rollback mark. */
async function marks(db: string, runId: string): Promise<{ restored: number; open: number }> {
  return one(
    db,
    `SELECT count(*) FILTER (WHERE rollback = 'restored')::int AS restored, count(*) FILTER (WHERE rollback IS DISTINCT FROM 'restored')::int AS open
       FROM dq_cleanse.results WHERE run_id = $1 AND before IS NOT NULL`,
    [runId],
  );
}

/** Every row as the audit says it should be: its value from before the run where restored, the run's where not. */
async function matchesAudit(db: string, runId: string, original: Map<string, string>, cleaned: Map<string, string>): Promise<void> {
  const restored = new Set(
    await withClient(db, async (c) =>
      (await c.query<{ k: string }>(`SELECT row_key AS k FROM dq_cleanse.results WHERE run_id = $1 AND rollback = 'restored'`, [runId])).rows.map((r) => r.k),
    ),
  );
  const now = await rowTexts(db);
  const wrong = [...now.keys()].filter((id) => now.get(id) !== (restored.has(id) ? original.get(id) : cleaned.get(id)));
  expect(wrong).toEqual([]);
}

/** Sessions of dq-pg on `db` (none once a command has ended). */
async function dqSessions(db: string): Promise<number> {
  return (await one<{ n: number }>(db, `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'dq-pg%'`))
    .n;
}

/** A dq-pg session of `db` waits for a lock. */
async function waitsForLock(db: string): Promise<boolean> {
  return (
    (
      await one<{ n: number }>(
        db,
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'dq-pg' AND wait_event_type = 'Lock'`,
      )
    ).n > 0
  );
}

/** A row of the second batch a rollback of `runId` restores (audit rows go in key order as text), and a session of the test's to lock it with. */
async function lockerOfSecondBatch(db: string, runId: string): Promise<{ locker: pg.Client; held: string }> {
  const { k } = await one<{ k: string }>(
    db,
    `SELECT row_key AS k FROM dq_cleanse.results WHERE run_id = $2 AND before IS NOT NULL ORDER BY row_key OFFSET $1 LIMIT 1`,
    [ROLLBACK_BATCH + ROLLBACK_BATCH / 2, runId],
  );
  const locker = new pg.Client({ connectionString: db });
  await locker.connect();
  return { locker, held: k };
}

/** Holds customer `id` locked in an open transaction of `locker`, as an application's session may. */
async function holdRow(locker: pg.Client, id: string): Promise<void> {
  await locker.query('BEGIN');
  await locker.query('SELECT 1 FROM customers WHERE id = $1 FOR UPDATE', [id]);
}

/** Waits for `done`, killing the process after `ms` (a stop that never comes fails the test instead of hanging it). */
async function within(child: { kill(signal: NodeJS.Signals): boolean }, done: Promise<CliResult>, ms: number): Promise<CliResult> {
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  try {
    return await done;
  } finally {
    clearTimeout(timer);
  }
}

/** A table of `rows` customers cleaned by run `runId` (no result store: every run pays again); its rows before and after. */
async function cleanedTable(
  runId: string,
  rows: number,
): Promise<{ db: string; original: Map<string, string>; cleaned: Map<string, string>; audited: number }> {
  const db = await env.pg.createDatabase();
  await createCustomers(db, rows);
  const original = await rowTexts(db);
  const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', runId, '--store', 'off']));
  expect(run.code, run.stderr).toBe(0);
  const cleaned = await rowTexts(db);
  const audited = summaryOf(run)['written'] as number;
  // Three batches or more: a rollback stopped in its second has done some and not all.
  expect(audited).toBeGreaterThan(2 * ROLLBACK_BATCH);
  return { db, original, cleaned, audited };
}

describe('dq-pg rollback stopped part way', () => {
  it('SIGTERM lets the batch under way commit and starts no other: exit 75 (it was killed, exit 143, no word), one line with the counts and the command to finish, and the rerun restores the rest exactly', async () => {
    const { db, original, cleaned, audited } = await cleanedTable('undo-term', 3000);
    // About 2 s per batch of 1000 rows on the server.
    await slowUpdates(db, 2);
    const { child, done } = spawnCli(['rollback', '--db', db, '--run', 'undo-term']);
    // The first batch committed: the second is under way.
    await until('the first batch restored', async () => (await marks(db, 'undo-term')).restored >= ROLLBACK_BATCH);
    child.kill('SIGTERM');
    const stopped = await within(child, done, 30_000);

    expect(stopped.signal, stopped.stderr).toBeNull();
    expect(stopped.code, stopped.stderr).toBe(75);
    expect(stopped.stderr).not.toMatch(/\n\s+at /);
    expect(stopped.stderr).toContain('dq-pg: SIGTERM: stopping the rollback once the batch under way has committed');
    // The batch under way when the signal came was committed, no batch after it was started.
    const summary = JSON.parse(stopped.stdout) as { restored: number; state: string; exitCode: number; error: { code: string } };
    expect(summary).toMatchObject({ runId: 'undo-term', state: 'stopped', exitCode: 75, restored: 2 * ROLLBACK_BATCH, error: { code: 'interrupted' } });
    expect(stopped.stderr).toContain(
      `dq-pg: interrupted: rollback of run undo-term stopped by SIGTERM: ${2 * ROLLBACK_BATCH} of the ${audited} audited rows left to restore were restored, ${audited - 2 * ROLLBACK_BATCH} not yet; the run is not marked rolled back: rerun dq-pg rollback --run undo-term to finish\n`,
    );
    expect(await marks(db, 'undo-term')).toEqual({ restored: 2 * ROLLBACK_BATCH, open: audited - 2 * ROLLBACK_BATCH });
    await matchesAudit(db, 'undo-term', original, cleaned);
    // Status says the rollback is unfinished, and how to finish it.
    expect(JSON.parse((await runCli(['status', '--db', db, '--run', 'undo-term', '--json'])).stdout)).toMatchObject({
      state: 'done',
      restored: 2 * ROLLBACK_BATCH,
      rollback: { state: 'unfinished', finish: 'dq-pg rollback --run undo-term' },
    });
    const table = (await runCli(['status', '--db', db])).stdout;
    expect(table).toMatch(/undo-term .* done, rollback unfinished /);
    expect(table).toContain('to finish the rollback of undo-term: dq-pg rollback --run undo-term (with --db)');
    // A run stopped part way whose rollback is unfinished: the rollback is finished first, no resume is offered.
    await withClient(db, (c) => c.query(`UPDATE dq_cleanse.runs SET state = 'stopped' WHERE run_id = 'undo-term'`));
    const [halfway] = await status({ db, runId: 'undo-term' });
    expect(halfway).toMatchObject({ state: 'stopped', rollback: { state: 'unfinished' } });
    expect(halfway?.resume).toBeUndefined();
    await withClient(db, (c) => c.query(`UPDATE dq_cleanse.runs SET state = 'done' WHERE run_id = 'undo-term'`));

    await setPace(db, 0);
    const again = await runCli(['rollback', '--db', db, '--run', 'undo-term']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ restored: audited - 2 * ROLLBACK_BATCH, conflicts: 0, state: 'done' });
    expect(await rowTexts(db)).toEqual(original);
    // Each row updated once by the rollback: by the stopped one or by the rerun.
    expect(await one(db, `SELECT count(*)::int AS rows, COALESCE(max(n), 0)::int AS most FROM writes`)).toEqual({ rows: audited, most: 1 });
    const finished = JSON.parse((await runCli(['status', '--db', db, '--run', 'undo-term', '--json'])).stdout) as Record<string, unknown>;
    expect(finished).toMatchObject({ state: 'rolled-back', restored: audited });
    expect(finished['rollback']).toBeUndefined();
  }, 120_000);

  it('rows the table refuses to take back are counted as refused, not as changed since the run, exactly as the complete rollback counts them', async () => {
    const { db, audited } = await cleanedTable('undo-refused', 3000);
    // Rows of the first batch edited by hand since the run (changed), then a rule their old long streets break (refused).
    const edited = await withClient(db, async (c) => {
      const { rows } = await c.query<{ k: string }>(
        `SELECT row_key AS k FROM dq_cleanse.results WHERE run_id = 'undo-refused' AND before IS NOT NULL AND length(before[1]) <= 15
          ORDER BY row_key LIMIT 5`,
      );
      await c.query(`UPDATE customers SET city = 'Edited by hand' WHERE id = ANY ($1::bigint[])`, [rows.map((r) => r.k)]);
      await c.query(`ALTER TABLE customers ADD CONSTRAINT short_street CHECK (length(street) <= 15) NOT VALID`);
      return rows.map((r) => r.k);
    });
    const blocked = await one<{ n: number }>(
      db,
      `SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'undo-refused' AND before IS NOT NULL AND length(before[1]) > 15`,
    );
    expect(blocked.n).toBeGreaterThan(0);
    await slowUpdates(db, 2);
    const { child, done } = spawnCli(['rollback', '--db', db, '--run', 'undo-refused']);
    await until('the first batch committed', async () => (await one<{ n: number }>(db, `SELECT count(rollback)::int AS n FROM dq_cleanse.results`)).n > 0);
    child.kill('SIGTERM');
    const stopped = await within(child, done, 30_000);
    expect(stopped.code, stopped.stderr).toBe(75);

    // What the audit says of the rows the stopped rollback went through.
    const seen = await one<{ restored: number; refused: number; changed: number; untried: number }>(
      db,
      `SELECT count(*) FILTER (WHERE rollback = 'restored')::int AS restored,
              count(*) FILTER (WHERE rollback = 'conflict' AND length(before[1]) > 15)::int AS refused,
              count(*) FILTER (WHERE rollback = 'conflict' AND row_key = ANY ($2::text[]))::int AS changed,
              count(*) FILTER (WHERE rollback IS NULL)::int AS untried
         FROM dq_cleanse.results WHERE run_id = $1 AND before IS NOT NULL`,
      ['undo-refused', edited],
    );
    expect(seen.refused).toBeGreaterThan(0);
    expect(seen.changed).toBe(edited.length);
    expect(seen.restored + seen.refused + seen.changed + seen.untried).toBe(audited);
    expect(await one(db, `SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'undo-refused' AND rollback = 'conflict'`)).toEqual({
      n: seen.refused + seen.changed,
    });
    expect(stopped.stderr).toContain(
      `dq-pg: interrupted: rollback of run undo-refused stopped by SIGTERM: ${seen.restored} of the ${audited} audited rows left to restore were restored, ${seen.refused + seen.changed} left as conflicts (${seen.changed} changed since the run, ${seen.refused} whose old values the table refuses, named above), ${seen.untried} not yet; the run is not marked rolled back: rerun dq-pg rollback --run undo-refused to finish\n`,
    );
    // The refused rows named with their constraint, as the complete rollback names them.
    expect(stopped.stderr).toMatch(new RegExp(`rows whose old values the table refuses .*"count":${seen.refused}\\b`));
    expect(stopped.stderr).toContain('short_street');
    expect(stopped.stderr).toMatch(new RegExp(`rows changed after the run .*"count":${seen.changed}\\b`));
    expect(JSON.parse(stopped.stdout)).toMatchObject({
      state: 'stopped',
      restored: seen.restored,
      conflicts: seen.refused + seen.changed,
      refused: seen.refused,
    });

    // The complete rollback counts the same rows the same way: every refused and changed row again, the rest restored.
    await setPace(db, 0);
    const again = await runCli(['rollback', '--db', db, '--run', 'undo-refused']);
    expect(again.code, again.stderr).toBe(4);
    expect(JSON.parse(again.stdout)).toMatchObject({
      state: 'done',
      restored: audited - seen.restored - blocked.n - edited.length,
      conflicts: blocked.n + edited.length,
      refused: blocked.n,
    });
    expect(again.stderr).toMatch(new RegExp(`rows whose old values the table refuses .*"count":${blocked.n}\\b`));
    expect(again.stderr).toMatch(new RegExp(`rows changed after the run .*"count":${edited.length}\\b`));
  }, 120_000);

  it('a second signal cancels the batch under way (waiting for a locked row): exit 75 at once, nothing of that batch restored, and the rerun right after restores the rest', async () => {
    const { db, original, cleaned, audited } = await cleanedTable('undo-twice', 3000);
    // An application holds a row of the second batch (audit rows go in key order as text).
    const { locker, held } = await lockerOfSecondBatch(db, 'undo-twice');
    let stopped: CliResult;
    let afterSecond: number;
    let sessionGone: boolean;
    try {
      await holdRow(locker, held);
      const { child, done } = spawnCli(['rollback', '--db', db, '--run', 'undo-twice']);
      await until('the rollback waits for the locked row', () => waitsForLock(db), 30_000);
      // Meanwhile status tells the rollback under way (read in this process: the lock wait is short).
      const [during] = await status({ db, runId: 'undo-twice' });
      expect(during).toMatchObject({ state: 'done', rollback: { state: 'running', finish: 'dq-pg rollback --run undo-twice' } });
      child.kill('SIGINT');
      await sleep(300);
      // The first signal waits for the batch under way (here: for the lock, up to 5 s).
      expect(child.exitCode).toBeNull();
      child.kill('SIGTERM');
      const t0 = Date.now();
      stopped = await within(child, done, 30_000);
      afterSecond = Date.now() - t0;
      // Its session is gone with it (the run's lock too) while the row is still held: the rerun below is not refused.
      sessionGone = await until('no dq-pg session', async () => (await dqSessions(db)) === 0, 2_000).then(
        () => true,
        () => false,
      );
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }

    expect(stopped.signal, stopped.stderr).toBeNull();
    expect(stopped.code, stopped.stderr).toBe(75);
    // Well before the lock wait (5 s) would have ended the batch.
    expect(afterSecond).toBeLessThan(2_500);
    expect(stopped.stderr).not.toMatch(/\n\s+at /);
    expect(stopped.stderr).toContain('dq-pg: second SIGTERM: cancelling the batch under way (nothing of it is restored) and ending now');
    expect(stopped.stderr).toContain(
      `dq-pg: interrupted: rollback of run undo-twice stopped by a second SIGTERM: ${ROLLBACK_BATCH} of the ${audited} audited rows left to restore were restored, ${audited - ROLLBACK_BATCH} not yet (the batch under way was cancelled: nothing of it was restored); the run is not marked rolled back: rerun dq-pg rollback --run undo-twice to finish\n`,
    );
    expect(JSON.parse(stopped.stdout)).toMatchObject({ state: 'stopped', restored: ROLLBACK_BATCH, exitCode: 75, error: { code: 'interrupted' } });
    expect(sessionGone, 'the stopped rollback left its session waiting for the row').toBe(true);
    expect(await marks(db, 'undo-twice')).toEqual({ restored: ROLLBACK_BATCH, open: audited - ROLLBACK_BATCH });
    await matchesAudit(db, 'undo-twice', original, cleaned);

    const again = await runCli(['rollback', '--db', db, '--run', 'undo-twice']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ restored: audited - ROLLBACK_BATCH, conflicts: 0 });
    expect(await rowTexts(db)).toEqual(original);
  }, 120_000);

  it('its session terminated by the server (pg_terminate_backend) mid-way: exit 75 naming the database connection, and the rerun restores the rest exactly', async () => {
    const { db, original, cleaned, audited } = await cleanedTable('undo-lost', 3000);
    const { locker, held } = await lockerOfSecondBatch(db, 'undo-lost');
    let lost: CliResult;
    try {
      await holdRow(locker, held);
      const { child, done } = spawnCli(['rollback', '--db', db, '--run', 'undo-lost']);
      await until('the rollback waits for the locked row', () => waitsForLock(db), 30_000);
      await locker.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'dq-pg'`);
      lost = await within(child, done, 30_000);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
    expect(lost.code, lost.stderr).toBe(75);
    expect(lost.stderr).not.toMatch(/\n\s+at /);
    expect(lost.stderr).toContain('dq-pg: db-unreachable: lost the connection to the database 127.0.0.1:');
    expect(lost.stderr).toContain('rerun dq-pg rollback --run undo-lost to finish');
    expect(await marks(db, 'undo-lost')).toEqual({ restored: ROLLBACK_BATCH, open: audited - ROLLBACK_BATCH });
    await matchesAudit(db, 'undo-lost', original, cleaned);

    await until('the terminated session to end', async () => (await dqSessions(db)) === 0, 20_000);
    const again = await runCli(['rollback', '--db', db, '--run', 'undo-lost']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ restored: audited - ROLLBACK_BATCH, conflicts: 0 });
    expect(await rowTexts(db)).toEqual(original);
  }, 120_000);
});

/** A table of 1000 customers with status columns cleaned by run `runId`, its review exported to a file with every row decided `invalid`; the number of rows decided. */
async function decidedReview(runId: string): Promise<{ db: string; file: string; decided: number }> {
  const db = await env.pg.createDatabase();
  await createCustomers(db, 1000);
  await withClient(db, (c) => c.query('ALTER TABLE customers ADD COLUMN dq_status text, ADD COLUMN dq_class text'));
  const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', runId, '--status-columns', 'status=dq_status,class=dq_class']));
  expect(run.code, run.stderr).toBe(0);
  const file = join(dir, `${runId}.csv`);
  const exported = await runCli(['review', 'export', '--db', db, '--run', runId, '--output', file]);
  expect(exported.code, exported.stderr).toBe(0);
  const decided = summaryOf(exported)['rows'] as number;
  expect(decided).toBeGreaterThan(100);
  // The decision is the last cell of each row (every cell quoted): "invalid" for all, so that each
  // decided row is updated (its status column) and audited.
  const text = await readFile(file, 'utf8');
  const lines = text.split('\r\n');
  await writeFile(file, [lines[0], ...lines.slice(1).map((l) => (l === '' ? l : l.replace(/,""$/, ',"invalid"')))].join('\r\n'));
  return { db, file, decided };
}

/** Results rows of review run `runId`, how many keys they cover, and its audit rows. */
async function applied(db: string, runId: string): Promise<{ rows: number; keys: number; audited: number }> {
  return one(
    db,
    `SELECT count(*)::int AS rows, count(DISTINCT row_key)::int AS keys, count(before)::int AS audited FROM dq_cleanse.results WHERE run_id = $1`,
    [runId],
  );
}

describe('dq-pg review apply stopped part way', () => {
  it('a second SIGINT (Ctrl-C twice) cancels the page under way: exit 75 with the summary and the counts (it was killed, exit 130, no word), and the same --run-id applies every other row exactly once', async () => {
    const { db, file, decided } = await decidedReview('c-twice');
    const PAGE = 20;
    // About a second per page on the server.
    await slowUpdates(db, 50);
    const args = ['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv-twice', '--batch-size', String(PAGE)];
    const { child, done } = spawnCli(args);
    // A page has just committed: the next is under way for about a second.
    await until('two pages applied', async () => (await applied(db, 'rv-twice')).rows >= 2 * PAGE);
    child.kill('SIGINT');
    await sleep(100);
    expect(child.exitCode).toBeNull();
    child.kill('SIGINT');
    const stopped = await within(child, done, 30_000);

    expect(stopped.signal, stopped.stderr).toBeNull();
    expect(stopped.code, stopped.stderr).toBe(75);
    expect(stopped.stderr).not.toMatch(/\n\s+at /);
    expect(stopped.stderr).toContain('dq-pg: second SIGINT: cancelling the page in flight (nothing of it is written) and ending now');
    const summary = summaryOf(stopped) as { invalid: number };
    expect(summary).toMatchObject({ runId: 'rv-twice', state: 'stopped', exitCode: 75, error: { code: 'interrupted' } });
    const done1 = summary.invalid;
    expect(done1 % PAGE).toBe(0);
    expect(stopped.stderr).toContain(
      `dq-pg: interrupted: review run rv-twice stopped by a second SIGINT: ${done1} of the ${decided} decided rows of ${file} left to apply were applied (0 given a candidate, 0 kept, ${done1} invalid, 0 conflicts); the other ${decided - done1} are not yet (the page under way was cancelled: nothing of it was written): rerun dq-pg review apply --input ${file} --run-id rv-twice to finish\n`,
    );
    // What the summary says is what the database holds: no row of the cancelled page.
    expect(await applied(db, 'rv-twice')).toEqual({ rows: done1, keys: done1, audited: done1 });
    expect(await one(db, `SELECT count(*)::int AS n FROM writes`)).toEqual({ n: done1 });
    expect(JSON.parse((await runCli(['status', '--db', db, '--run', 'rv-twice', '--json'])).stdout)).toMatchObject({ state: 'stopped' });

    await setPace(db, 0);
    const again = await runCli(args);
    expect(again.code, again.stderr).toBe(0);
    expect(summaryOf(again)).toMatchObject({ state: 'done', alreadyApplied: done1, invalid: decided - done1 });
    expect(await applied(db, 'rv-twice')).toEqual({ rows: decided, keys: decided, audited: decided });
    expect(await one(db, `SELECT count(*)::int AS rows, max(n)::int AS most FROM writes`)).toEqual({ rows: decided, most: 1 });
  }, 120_000);

  it('a second SIGINT while the run is being marked done (every page written): exit 75 with the summary, and the rerun marks it done applying nothing again', async () => {
    const { db, file, decided } = await decidedReview('c-fin');
    const args = ['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv-fin', '--batch-size', '50'];
    await slowUpdates(db, 5);
    const locker = new pg.Client({ connectionString: db });
    await locker.connect();
    let stopped: CliResult;
    try {
      const { child, done } = spawnCli(args);
      await until('a page applied', async () => (await applied(db, 'rv-fin')).rows > 0);
      // Marking the run done waits for this row lock; the pages do not touch the run's row.
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM dq_cleanse.runs WHERE run_id = 'rv-fin' FOR UPDATE`);
      await until(
        'every page applied, the run being marked done',
        async () => (await applied(db, 'rv-fin')).rows === decided && (await waitsForLock(db)),
        60_000,
      );
      child.kill('SIGINT');
      await sleep(100);
      child.kill('SIGINT');
      // The stop is recorded once the lock is gone.
      await sleep(300);
      await locker.query('ROLLBACK');
      stopped = await within(child, done, 30_000);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
    expect(stopped.signal, stopped.stderr).toBeNull();
    expect(stopped.code, stopped.stderr).toBe(75);
    expect(summaryOf(stopped)).toMatchObject({ runId: 'rv-fin', state: 'stopped', exitCode: 75, invalid: decided, error: { code: 'interrupted' } });
    expect(stopped.stderr).toContain('(every page is written; the run was not yet marked done): rerun dq-pg review apply');
    const again = await runCli(args);
    expect(again.code, again.stderr).toBe(0);
    expect(summaryOf(again)).toMatchObject({ state: 'done', alreadyApplied: decided, invalid: 0 });
    expect(await one(db, `SELECT count(*)::int AS rows, max(n)::int AS most FROM writes`)).toEqual({ rows: decided, most: 1 });
  }, 120_000);

  it('the session holding the review run terminated (pg_terminate_backend): exit 75 naming the database connection before the next page (it went on without it, exit 0), and the rerun applies the rest exactly once', async () => {
    const { db, file, decided } = await decidedReview('c-claim');
    const PAGE = 10;
    await slowUpdates(db, 20);
    const args = ['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv-claim', '--batch-size', String(PAGE)];
    const { child, done } = spawnCli(args);
    await until('two pages applied', async () => (await applied(db, 'rv-claim')).rows >= 2 * PAGE);
    const ended = await one<{ n: number }>(
      db,
      `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'dq-pg claim'`,
    );
    expect(ended.n).toBe(1);
    const lost = await within(child, done, 30_000);

    expect(lost.code, lost.stderr).toBe(75);
    expect(lost.stderr).not.toMatch(/\n\s+at /);
    expect(lost.stderr).toContain('dq-pg: db-unreachable: lost the connection to the database 127.0.0.1:');
    expect(lost.stderr).toContain('the session holding review run rv-claim (its range row) ended');
    expect(lost.stderr).toContain(`rerun dq-pg review apply --input ${file} --run-id rv-claim to finish`);
    const atLoss = await applied(db, 'rv-claim');
    expect(atLoss.rows).toBeLessThan(decided);
    expect(atLoss.rows % PAGE).toBe(0);
    // Its summary line is printed all the same, counting what the database holds.
    expect(summaryOf(lost)).toMatchObject({ runId: 'rv-claim', state: 'stopped', exitCode: 75, invalid: atLoss.rows, error: { code: 'db-unreachable' } });
    expect(JSON.parse((await runCli(['status', '--db', db, '--run', 'rv-claim', '--json'])).stdout)).toMatchObject({
      state: 'stopped',
      lastError: { code: 'db-unreachable' },
    });

    await setPace(db, 0);
    const again = await runCli(args);
    expect(again.code, again.stderr).toBe(0);
    expect(summaryOf(again)).toMatchObject({ state: 'done', alreadyApplied: atLoss.rows, invalid: decided - atLoss.rows });
    expect(await applied(db, 'rv-claim')).toEqual({ rows: decided, keys: decided, audited: decided });
    expect(await one(db, `SELECT count(*)::int AS rows, max(n)::int AS most FROM writes`)).toEqual({ rows: decided, most: 1 });
  }, 120_000);
});

describe('dq-pg review export stopped', () => {
  it('SIGINT, then SIGTERM, while its read waits: exit 75 with one line, the file left as it was, no temporary file (it was killed, exit 130, no word)', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 300);
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'c-export']));
    expect(run.code, run.stderr).toBe(0);
    const folder = await mkdtemp(join(dir, 'export-'));
    const output = join(folder, 'review.csv');
    await writeFile(output, 'yesterday\r\n');
    // A migration holds the table: the export's read waits for it.
    const locker = new pg.Client({ connectionString: db });
    await locker.connect();
    let stopped: CliResult;
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE customers IN ACCESS EXCLUSIVE MODE');
      const { child, done } = spawnCli(['review', 'export', '--db', db, '--run', 'c-export', '--output', output]);
      await until('the export waits for the table', () => waitsForLock(db), 30_000);
      // Ctrl-C and a supervisor's SIGTERM at once: the second arrives while the first is being handled.
      child.kill('SIGINT');
      child.kill('SIGTERM');
      stopped = await within(child, done, 30_000);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
    expect(stopped.signal, stopped.stderr).toBeNull();
    expect(stopped.code, stopped.stderr).toBe(75);
    expect(stopped.stderr).not.toMatch(/\n\s+at /);
    // The two signals may be handled in either order: the line names the first.
    expect(stopped.stderr).toContain(`dq-pg: interrupted: review export of run c-export stopped by SIG`);
    expect(stopped.stderr).toMatch(/^dq-pg: SIG(INT|TERM): stopping the export/m);
    const first = /^dq-pg: (SIGINT|SIGTERM): stopping the export/m.exec(stopped.stderr)?.[1];
    expect(stopped.stderr).toContain(
      `dq-pg: interrupted: review export of run c-export stopped by ${first}: ${output} was not written (left as it was); run the same command again to write it\n`,
    );
    expect(await readFile(output, 'utf8')).toBe('yesterday\r\n');
    expect(await readdir(folder)).toEqual(['review.csv']);

    const again = await runCli(['review', 'export', '--db', db, '--run', 'c-export', '--output', output]);
    expect(again.code, again.stderr).toBe(0);
    expect((await readFile(output, 'utf8')).startsWith('\uFEFF"run_id"')).toBe(true);
  }, 90_000);
});
