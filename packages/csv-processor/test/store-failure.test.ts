import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { DEFAULT_API_KEY, makeSampleCsv, startSandbox, type Sandbox } from '@dq/sandbox';
import { ensureStoreSchema } from '@dq/core/store';
import { startPostgres, type TestPostgres } from '@dq/test-support/pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, checkpointPast, comparable, completed, runCli, sampleArgs, startCli, summaryOf, unlimited, useTempDir } from './helpers.js';

// A Postgres result store that fails in the middle of a run: the run stops at its last checkpoint
// with one line naming the store and what to do, and the rerun once the store is back pays only for
// the answers that were not stored.

const dir = useTempDir();
const ROWS = 2000;
const CONCURRENCY = 8;
/**
 * What was in flight when the store failed, which the rerun buys again: answers bought and not yet
 * committed (a call waits while as many answers as the run has call slots await their commit, so
 * fewer than two per slot) and the calls the stop cut off (one per slot).
 */
const BOUGHT_IN_FLIGHT = 3 * CONCURRENCY;
const STORE_PASSWORD = 'store-secret-9d2e71';
let server: TestPostgres;
let reference: { distinct: number; output: string };

beforeAll(async () => {
  server = await startPostgres();
  // What one uninterrupted run without a store pays, and writes.
  const input = join(dir, 'in.csv');
  await writeFile(input, makeSampleCsv(ROWS, 57));
  const sandbox = await startSandbox({ port: 0, config: unlimited() });
  try {
    const output = join(dir, 'reference.csv');
    const straight = await runCli(sampleArgs(input, output, '--rate-limit', '0', '--store', 'off'), env(sandbox));
    expect(straight.code, straight.stderr).toBe(0);
    reference = { distinct: billable(sandbox), output };
  } finally {
    await sandbox.close();
  }
}, 300_000);

afterAll(async () => {
  await server?.stop();
});

const env = (sandbox: Sandbox) => ({ DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });

/**
 * A fresh database whose store (schema dq_store) belongs to the superuser and is used by the
 * ordinary role `etl` with the grants the README lists; returns an admin client and etl's URL.
 */
async function storeDatabase(): Promise<{ admin: pg.Client; name: string; url: string }> {
  const adminUrl = await server.createDatabase();
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const name = new URL(adminUrl).pathname.slice(1);
  await admin.query(
    `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'etl') THEN CREATE ROLE etl LOGIN PASSWORD '${STORE_PASSWORD}'; END IF; END $$`,
  );
  await ensureStoreSchema(admin);
  await admin.query('GRANT USAGE ON SCHEMA dq_store TO etl');
  await admin.query('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA dq_store TO etl');
  const url = new URL(adminUrl);
  url.username = 'etl';
  url.password = STORE_PASSWORD;
  return { admin, name, url: url.toString() };
}

/**
 * Runs dq-csv over the sample with the store `storeUrl` against a slow sandbox, calls `fail` once
 * the checkpoint passes 400 records, and returns the run with what it paid.
 */
async function runAndFail(storeUrl: string, output: string, fail: () => Promise<void>, flags = ['--rate-limit', '0', '--store', storeUrl]) {
  const sandbox = await startSandbox({ port: 0, config: unlimited({ faults: { batch: { latencyMs: 20 } } }) });
  try {
    const child = startCli(
      sampleArgs(join(dir, 'in.csv'), output, ...flags, '--resume', '--batch-size', '100', '--concurrency', String(CONCURRENCY)),
      env(sandbox),
    );
    const run = completed(child);
    await checkpointPast(output, 400, run);
    await fail();
    const ended = await run;
    return { ended, paid: billable(sandbox) };
  } finally {
    await sandbox.close();
  }
}

/**
 * The rerun once the store is back: it finishes the file with the same output as the run without a
 * store (the answers read back from the store included), and both runs together pay every distinct
 * input once, plus at most what was in flight when the store failed.
 */
async function rerunFinishes(storeUrl: string, output: string, firstPaid: number, flags = ['--rate-limit', '0', '--store', storeUrl]): Promise<void> {
  const sandbox = await startSandbox({ port: 0, config: unlimited() });
  try {
    const ended = await runCli(sampleArgs(join(dir, 'in.csv'), output, ...flags, '--resume'), env(sandbox));
    expect(ended.code, ended.stderr).toBe(0);
    expect(await comparable(output)).toEqual(await comparable(reference.output));
    expect(firstPaid + billable(sandbox)).toBeLessThanOrEqual(reference.distinct + BOUGHT_IN_FLIGHT);
  } finally {
    await sandbox.close();
  }
}

/** What the stopped run left: only checkpointed bytes in the output, and the checkpoint's records. */
async function leftBehind(output: string): Promise<number> {
  const checkpoint = JSON.parse(await readFile(`${output}.checkpoint.json`, 'utf8')) as { position: { records: number }; sink: { outputBytes: number } };
  expect((await stat(output)).size).toBe(checkpoint.sink.outputBytes);
  return checkpoint.position.records;
}

/** The one error line of a stopped run: names the store, says what to do, no stack, no password. */
function errorLine(stderr: string): string {
  expect(stderr).not.toContain(STORE_PASSWORD);
  expect(stderr).not.toMatch(/\n\s+at /);
  const lines = stderr.split('\n').filter((l) => l.startsWith('dq-csv: '));
  expect(lines, stderr).toHaveLength(1);
  return lines[0]!;
}

describe('dq-csv validate when the Postgres result store fails mid-run', () => {
  it(
    'the store database closes and drops its connections: exit 75 at the last checkpoint, and the rerun once it is back pays only for answers not stored',
    { timeout: 300_000 },
    async () => {
      const { admin, name, url } = await storeDatabase();
      try {
        const output = join(dir, 'closed.csv');
        // Maintenance, from another database: no new connections, and the open ones are terminated.
        const maintenance = new pg.Client({ connectionString: server.url });
        await maintenance.connect();
        const first = await runAndFail(url, output, async () => {
          await maintenance.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
          await maintenance.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'etl'`);
        }).finally(() => maintenance.end());
        expect(first.ended.code, first.ended.stderr).toBe(75);
        const line = errorLine(first.ended.stderr);
        expect(line).toMatch(/^dq-csv: store-unreachable: the result store postgres:\/\/etl:(\*\*\*|\[redacted\])@127\.0\.0\.1:\d+\/\w+ /);
        expect(line).toMatch(
          /; --store off runs without it instead, buying again every answer it holds; input records 1-\d+ are written and checkpointed; rerun with --resume once the store's database answers again \(answers already paid for are not bought again\)$/,
        );
        const checkpointed = await leftBehind(output);
        expect(checkpointed).toBeGreaterThanOrEqual(400);
        expect(checkpointed).toBeLessThan(ROWS);
        expect(summaryOf(first.ended)).toMatchObject({ outcome: 'stopped', exitCode: 75 });

        await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`); // the superuser may connect anyway
        // Without the stop, the run went on buying answers it could not keep (2,172 here; 2,071 in
        // the frozen case below without the wait on uncommitted answers).
        await rerunFinishes(url, output, first.paid);
      } finally {
        await admin.end();
      }
    },
  );

  it(
    "the store role's privileges are revoked: exit 2 saying what to grant; after the grant the rerun finishes paying only for answers not stored",
    { timeout: 300_000 },
    async () => {
      const { admin, url } = await storeDatabase();
      try {
        const output = join(dir, 'revoked.csv');
        const first = await runAndFail(url, output, async () => {
          await admin.query('REVOKE INSERT, UPDATE ON dq_store.results FROM etl');
        });
        expect(first.ended.code, first.ended.stderr).toBe(2);
        const line = errorLine(first.ended.stderr);
        expect(line).toMatch(/^dq-csv: store-permission-denied: the result store postgres:\/\/etl:(\*\*\*|\[redacted\])@127\.0\.0\.1:\d+\/\w+ /);
        expect(line).toMatch(/GRANT SELECT, INSERT, UPDATE, DELETE ON dq_store\.results/);
        // A rerun as it is would stop again: the grant comes first.
        expect(line).toMatch(/; fix what the error names, then rerun with --resume$/);
        const checkpointed = await leftBehind(output);
        expect(checkpointed).toBeGreaterThanOrEqual(400);
        expect(checkpointed).toBeLessThan(ROWS);

        await admin.query('GRANT INSERT, UPDATE ON dq_store.results TO etl');
        await rerunFinishes(url, output, first.paid);
      } finally {
        await admin.end();
      }
    },
  );

  it(
    'the store database stops answering (server frozen): exit 75 once the store times out, not a hang; the rerun once it answers again finishes the file',
    { timeout: 300_000 },
    async () => {
      const { admin, url } = await storeDatabase();
      let thaw = (): void => undefined;
      try {
        const output = join(dir, 'frozen.csv');
        const started = Date.now();
        const first = await runAndFail(url, output, async () => {
          thaw = server.freeze();
        }).finally(() => thaw());
        expect(first.ended.code, first.ended.stderr).toBe(75);
        const line = errorLine(first.ended.stderr);
        expect(line).toMatch(
          /^dq-csv: store-unreachable: the result store postgres:\/\/etl:(\*\*\*|\[redacted\])@127\.0\.0\.1:\d+\/\w+ cannot be used: unreachable \(.*timeout/i,
        );
        expect(Date.now() - started).toBeLessThan(150_000); // the store's query and connection timeouts, then its close
        const checkpointed = await leftBehind(output);
        expect(checkpointed).toBeGreaterThanOrEqual(400);
        expect(checkpointed).toBeLessThan(ROWS);

        await rerunFinishes(url, output, first.paid);
      } finally {
        thaw();
        await admin.end();
      }
    },
  );

  it(
    "the shared rate budget's database stops answering (server frozen): exit 75 once its query times out, not a hang; the rerun once it answers again finishes the file",
    { timeout: 300_000 },
    async () => {
      const budget = await server.createDatabase();
      // The answers go to an embedded store; the run's calls wait for slots from the budget.
      const flags = ['--store', join(dir, 'budget-store'), '--budget', budget, '--rate-limit', '1000'];
      let thaw = (): void => undefined;
      try {
        const output = join(dir, 'budget-frozen.csv');
        const started = Date.now();
        const first = await runAndFail(budget, output, async () => void (thaw = server.freeze()), flags).finally(() => thaw());
        expect(first.ended.code, first.ended.stderr).toBe(75);
        expect(errorLine(first.ended.stderr)).toMatch(
          /^dq-csv: budget-unreachable: the shared rate budget's database could not be reached; .*; rerun with --resume once the budget's database answers again/,
        );
        expect(Date.now() - started).toBeLessThan(150_000); // a reservation's query and connection timeouts, then the close
        const checkpointed = await leftBehind(output);
        expect(checkpointed).toBeGreaterThanOrEqual(400);
        expect(checkpointed).toBeLessThan(ROWS);

        await rerunFinishes(budget, output, first.paid, flags);
      } finally {
        thaw();
      }
    },
  );
});
