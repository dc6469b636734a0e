import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY, makeSampleCsv, startSandbox, type Sandbox } from '@dq/sandbox';
import { extraPostgres, startPostgres, type TestPostgres } from '@dq/test-support/pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, runCli, sampleArgs, summaryOf, unlimited, useTempDir } from './helpers.js';

// A shared rate budget (`--budget postgres://…`) on PostgreSQL 11, older than the connectors
// support (README, "Supported PostgreSQL versions"); installed with the tests on linux-x64 only.
const tooOld = extraPostgres(11);
const dir = useTempDir();
let server: TestPostgres | undefined;
let sandbox: Sandbox | undefined;

describe.skipIf(tooOld === undefined)('dq-csv --budget on PostgreSQL 11', () => {
  beforeAll(async () => {
    server = await startPostgres({ nativeDir: tooOld });
    sandbox = await startSandbox({ port: 0, config: unlimited() });
    await writeFile(join(dir, 'in.csv'), makeSampleCsv(20, 7));
  }, 120_000);
  afterAll(async () => {
    await sandbox?.close();
    await server?.stop();
  });

  it('stops before any call with exit 2, naming the server version and what to do, not "once the platform answers again"', async () => {
    if (!server || !sandbox) throw new Error('not started');
    const db = await server.createDatabase();
    const before = billable(sandbox);
    // The default rate limit: an endpoint without one (--rate-limit 0) has nothing to share.
    const run = await runCli([...sampleArgs(join(dir, 'in.csv'), join(dir, 'out.csv')), '--budget', db, '--store', 'off'], {
      DQ_BASE_URL: sandbox.url,
      DQ_API_KEY: DEFAULT_API_KEY,
    });
    expect(run.code, run.stderr).toBe(2);
    const line = run.stderr.split('\n').find((l) => l.startsWith('dq-csv: '));
    expect(line).toMatch(
      /^dq-csv: budget-db-version: the shared rate budget needs PostgreSQL 12 or later; the server at postgres:\/\/postgres:(\*\*\*|\[redacted\])@127\.0\.0\.1:\d+\/t_\w+ is 11\.\d+ \(server_version_num 1100\d\d\); upgrade the server, or run with --budget off to use a budget of this process only; no input record is written yet; fix what the error names, then rerun with --resume$/,
    );
    expect(summaryOf(run)).toMatchObject({ outcome: 'stopped', exitCode: 2, error: { code: 'budget-db-version' } });
    expect(`${run.stdout}${run.stderr}`).not.toContain(decodeURIComponent(new URL(db).password));
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(billable(sandbox)).toBe(before);
  }, 60_000);
});
