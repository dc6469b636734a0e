import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import { cliArgs, committedOffsets, killIfRunning, produce, spawnEnricher, startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Running, TestKafka } from '@dq/test-support/kafka';
import { extraPostgres, startPostgres, type TestPostgres } from '@dq/test-support/pg';
import { startSandboxProcess, type SandboxProcess } from '@dq/test-support/sandbox-process';

// A shared rate budget (`--budget postgres://…`) on PostgreSQL 11, older than the connectors
// support (README, "Supported PostgreSQL versions"); installed with the tests on linux-x64 only.
const tooOld = extraPostgres(11);

let kafka: TestKafka | undefined;
let sandbox: SandboxProcess | undefined;
let server: TestPostgres | undefined;
const runs: Running[] = [];

describe.skipIf(tooOld === undefined)('dq-kafka --budget on PostgreSQL 11', () => {
  beforeAll(async () => {
    [kafka, sandbox, server] = await Promise.all([startKafka(), startSandboxProcess(), startPostgres({ nativeDir: tooOld })]);
  }, 120_000);
  afterAll(async () => {
    runs.forEach(killIfRunning);
    await Promise.all([kafka?.stop(), sandbox?.stop(), server?.stop()]);
  });

  it('stops with exit 2 naming the server version and what to do, before any call, committing nothing', async () => {
    if (!kafka || !sandbox || !server) throw new Error('not started');
    const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
    await produce(kafka.brokers, names.input, [
      {
        key: 'k1',
        value: JSON.stringify({ id: 1, address: { street: 'Lindenweg', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' } }),
      },
    ]);
    const budget = await server.createDatabase();
    const before = await sandbox.billable();
    // The default rate limit: an endpoint without one (--rate-limit 0) has nothing to share.
    const run = spawnEnricher(cliArgs(kafka.brokers, names, ['--budget', budget]), { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
    runs.push(run);
    const exited = await run.exited;
    const stderr = run.stderr();
    expect(exited.code, stderr.slice(-2000)).toBe(2);
    expect(stderr).toMatch(
      /^dq-kafka: budget-db-version: the shared rate budget needs PostgreSQL 12 or later; the server at postgres:\/\/postgres:(\*\*\*|\[redacted\])@127\.0\.0\.1:\d+\/t_\w+ is 11\.\d+ \(server_version_num 1100\d\d\); upgrade the server, or run with --budget off to use a budget of this process only; fix what the error names, then restart$/m,
    );
    // The log says what to do, not to wait for the platform.
    expect(stderr).toContain(
      `"msg":"run stopped: the shared rate budget cannot be used (its database, user, grants or server's version); fix what the error names, then restart"`,
    );
    expect(stderr).not.toMatch(/restart after the time it names|run stopped by the platform/);
    expect(stderr).not.toContain(decodeURIComponent(new URL(budget).password));
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(await sandbox.billable()).toBe(before);
    // Nothing committed: every partition of the input still has no offset of the group (-1).
    expect([...(await committedOffsets(kafka.brokers, names.group, names.input)).values()].every((o) => o < 0n)).toBe(true);
  }, 90_000);
});
