import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeSampleCsv } from '@dq/sandbox';
import { usePostgres } from '@dq/test-support/pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { billable, runCli, sampleArgs, summaryOf, unlimited, useSandbox, useTempDir } from './helpers.js';

// A shared rate budget (`--budget postgres://…`) whose database answers and refuses the setting:
// a retry would be refused the same way, so the run stops before any call with exit 2 and the
// server's own words, not exit 75 ("could not be reached"), which a scheduler retries for ever.
const dir = useTempDir();
const postgres = usePostgres();
const sandbox = useSandbox(unlimited());
const input = join(dir, 'in.csv');

beforeAll(async () => {
  await writeFile(input, makeSampleCsv(20, 7));
});

describe('dq-csv --budget on a database that refuses it', () => {
  it.each([
    ['a wrong password', (url: URL) => void (url.password = 'not-the-password'), /password authentication failed for user "postgres" \(28P01\)/],
    ['a database that does not exist', (url: URL) => void (url.pathname = '/no_such_db'), /database "no_such_db" does not exist \(3D000\)/],
  ])(
    '%s: exit 2 before any call, the server’s reason named, the password never shown',
    async (name, spoil, reason) => {
      const url = new URL(await postgres.createDatabase());
      const password = decodeURIComponent(url.password);
      spoil(url);
      const before = billable(sandbox);
      const run = await runCli([...sampleArgs(input, join(dir, `${name.replace(/\W+/g, '-')}.csv`)), '--budget', url.href, '--store', 'off'], sandbox.env());
      expect(run.code, run.stderr).toBe(2);
      const line = run.stderr.split('\n').find((l) => l.startsWith('dq-csv: '));
      expect(line).toMatch(/^dq-csv: budget-db-config: the shared rate budget's database refused it: /);
      expect(line).toMatch(reason);
      expect(line).toContain('run with --budget off');
      expect(summaryOf(run)).toMatchObject({ outcome: 'stopped', exitCode: 2, error: { code: 'budget-db-config' } });
      expect(`${run.stdout}${run.stderr}`).not.toContain(password);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(billable(sandbox)).toBe(before);
    },
    60_000,
  );
});
