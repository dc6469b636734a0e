import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '@dq/sandbox';
import type { Sandbox } from '@dq/sandbox';
import { openStore, StoreError } from '@dq/core/store';
import { extraPostgres, startPostgres } from '@dq/test-support/pg';
import type { TestPostgres } from '@dq/test-support/pg';
import { billable, cleanseArgs, createCustomers, rowTexts, runCli, sandboxConfig, summaryOf } from './support.js';

// The oldest supported PostgreSQL (README "Supported PostgreSQL versions") and the one before it,
// installed with the tests on linux-x64 only (test/support's optionalDependencies).
const oldest = extraPostgres(12);
const tooOld = extraPostgres(11);

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ config: sandboxConfig() });
});
afterAll(async () => {
  await sandbox?.close();
});

/** A server of the binaries in `nativeDir` for the enclosing describe. */
function useServer(nativeDir: string | undefined): () => TestPostgres {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres({ nativeDir });
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (!server) throw new Error('the server did not start');
    return server;
  };
}

describe.skipIf(oldest === undefined)('dq-pg on PostgreSQL 12, the oldest supported version', () => {
  const server = useServer(oldest);

  it('cleanses, shows the run and rolls it back to the original values', async () => {
    const db = await server().createDatabase();
    await createCustomers(db, 60);
    const original = await rowTexts(db);

    const run = await runCli(cleanseArgs(db, sandbox, ['--run-id', 'on-12']));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const written = summaryOf(run)['written'] as number;
    expect(written).toBeGreaterThan(10);

    const status = await runCli(['status', '--db', db, '--run', 'on-12', '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId: 'on-12', state: 'done', rows: 60, written });

    const undo = await runCli(['rollback', '--db', db, '--run', 'on-12']);
    expect(undo.code).toBe(0);
    expect(JSON.parse(undo.stdout)).toMatchObject({ restored: written, conflicts: 0 });
    expect(await rowTexts(db)).toEqual(original);
  });
});

describe.skipIf(tooOld === undefined)('PostgreSQL 11, older than supported', () => {
  const server = useServer(tooOld);

  it('is refused before any platform call: exit 2 naming the server and its version, without the password', async () => {
    const db = await server().createDatabase();
    await createCustomers(db, 20);
    const calls = billable(sandbox);
    const before = await rowTexts(db);
    const run = await runCli(cleanseArgs(db, sandbox));
    expect(run.code).toBe(2);
    const where = `127.0.0.1:${new URL(db).port}${new URL(db).pathname}`;
    expect(run.stderr).toMatch(
      new RegExp(`^dq-pg: db-version: dq-pg needs PostgreSQL 12 or later; the server at ${where} is 11\\.\\d+ \\(server_version_num 1100\\d\\d\\)`),
    );
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).not.toContain(decodeURIComponent(new URL(db).password));
    expect(billable(sandbox)).toBe(calls);
    expect(await rowTexts(db)).toEqual(before);

    // status, too, and no schema was made.
    const status = await runCli(['status', '--db', db]);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain('dq-pg needs PostgreSQL 12 or later');
  });

  it('is refused as the shared rate budget (--budget) of a run on a supported server: exit 2 before any platform call', async () => {
    const current = await startPostgres();
    try {
      const db = await current.createDatabase();
      await createCustomers(db, 20);
      const budget = await server().createDatabase();
      const calls = billable(sandbox);
      const before = await rowTexts(db);
      // The default rate limit: an endpoint without one (--rate-limit 0) has nothing to share.
      const args = cleanseArgs(db, sandbox, ['--budget', budget]).filter((a, i, all) => a !== '--rate-limit' && all[i - 1] !== '--rate-limit');
      const run = await runCli(args);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(
        /^dq-pg: budget-db-version: the shared rate budget needs PostgreSQL 12 or later; the server at postgres:\/\/postgres:(\*\*\*|\[redacted\])@127\.0\.0\.1:\d+\/t_\w+ is 11\.\d+ \(server_version_num 1100\d\d\); upgrade the server, or run with --budget off to use a budget of this process only/m,
      );
      expect(`${run.stdout}${run.stderr}`).not.toContain(decodeURIComponent(new URL(budget).password));
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(billable(sandbox)).toBe(calls);
      expect(await rowTexts(db)).toEqual(before);
    } finally {
      await current.stop();
    }
  });

  it('is refused by a Postgres result store when it opens', async () => {
    const db = await server().createDatabase();
    const error = await openStore(db).then(
      async (s) => {
        await s?.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).exitCode).toBe(2);
    expect((error as Error).message).toMatch(
      /^the result store needs PostgreSQL 12 or later; the server at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/t_\w+ is 11\.\d+ \(server_version_num 1100\d\d\); upgrade the server or pass --store off$/,
    );
    expect((error as Error).message).not.toContain(decodeURIComponent(new URL(db).password));
  });
});
