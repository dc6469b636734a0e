import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_API_KEY, makeSampleCsv } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { sampleArgs } from '@dq/test-support/csv';
import { usePostgres, withClient } from '@dq/test-support/pg';
import { useSandbox, useTempDir } from '@dq/test-support/use';

// --account left out (README: "default: a digest of the API key and base URL; the key is never
// stored"): the processes using one key against one platform share one rate budget in the
// --account-db database, a process with another key or against another base URL has its own, and
// the key's text is nowhere in that database.
const DQ_CSV = fileURLToPath(new URL('../packages/csv-processor/dist/cli.js', import.meta.url));
const OTHER_KEY = 'second-account-key-5e1f';
const dir = useTempDir('dq-account-default-');
const sandbox = useSandbox({
  accounts: [
    { id: 'first', apiKeys: [DEFAULT_API_KEY] },
    { id: 'second', apiKeys: [OTHER_KEY] },
  ],
});
const server = usePostgres();

/** dq-csv validate of a sample file of its own (`seed`) with `--account-db db`; its exit code, output and summary's budget. */
async function validate(seed: number, db: string, env: Record<string, string>) {
  const input = join(dir, `in-${seed}.csv`);
  await writeFile(input, makeSampleCsv(20, seed));
  const args = [DQ_CSV, ...sampleArgs(input, join(dir, `out-${seed}.csv`), '--account-db', db)];
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(process.execPath, args, { env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      resolve({ code: typeof error?.code === 'number' ? error.code : error ? 1 : 0, stdout, stderr }),
    ),
  );
  const summary = stdout.split('\n').find((l) => l.startsWith('{"event":"summary"'));
  return { code, stdout, stderr, budget: summary ? (JSON.parse(summary) as { budget: { scope: string; account: string } }).budget : undefined };
}

describe('the shared budget without --account', () => {
  it('is one row for the processes of one key and base URL, another for another key or base URL, and the keys are nowhere in the database', async () => {
    const db = await server.createDatabase();
    const env = sandbox.env();
    const [a1, a2, other, otherUrl] = await Promise.all([
      validate(1, db, env),
      validate(2, db, env),
      validate(3, db, { ...env, DQ_API_KEY: OTHER_KEY }),
      // The same key against the same sandbox under another name: another base URL.
      validate(4, db, { ...env, DQ_BASE_URL: sandbox.url.replace('127.0.0.1', 'localhost') }),
    ]);
    for (const r of [a1, a2, other, otherUrl]) {
      expect(r.code, r.stderr.slice(-2000)).toBe(0);
      expect(r.budget?.scope).toBe('shared');
      expect(r.stdout + r.stderr).not.toContain(DEFAULT_API_KEY);
      expect(r.stdout + r.stderr).not.toContain(OTHER_KEY);
    }
    const [first, second, third] = [a1.budget!.account, other.budget!.account, otherUrl.budget!.account];
    expect(a2.budget!.account).toBe(first);
    expect(new Set([first, second, third]).size).toBe(3);

    // One budget row per account and endpoint: the batch endpoint's rows are those of the three accounts.
    const rows = await withClient(db, async (c) => (await c.query<{ account: string }>(`SELECT account FROM dq_throttle WHERE endpoint = 'batch'`)).rows);
    expect(rows.map((r) => r.account).sort()).toEqual([first, second, third].sort());

    // Every row of every table in the database (the budget's and the result store's), as text.
    const dump = await withClient(db, async (c) => {
      const tables = await c.query<{ name: string }>(
        `SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.tables
          WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
      );
      const texts: string[] = [];
      for (const { name } of tables.rows) {
        const all = await c.query<{ row: string }>(`SELECT t::text AS row FROM ${name} AS t`);
        texts.push(name, ...all.rows.map((r) => r.row));
      }
      return texts.join('\n');
    });
    expect(dump).toContain('dq_throttle');
    expect(dump).toContain(first);
    expect(dump).toMatch(/dq_store\./); // the result store's rows are in it too
    expect(dump).not.toContain(DEFAULT_API_KEY);
    expect(dump).not.toContain(OTHER_KEY);
  }, 90_000);
});
