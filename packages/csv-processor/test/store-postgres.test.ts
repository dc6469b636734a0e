import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_API_KEY, makeSampleCsv, startSandbox, type Sandbox } from '@dq/sandbox';
import { startPostgres, withClient, type TestPostgres } from '@dq/test-support/pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, comparable, completed, readCsv, runCli, sampleArgs, startCli, summaryOf, unlimited, useTempDir } from './helpers.js';

// The shared Postgres result store (`--store postgres://…`) gives back the answers as they were
// stored, byte for byte, and a store of the former layout (answers as jsonb) is upgraded by its
// owner, while another role is told what the owner must run.

const dir = useTempDir();
const ROWS = 3000;
const ETL_PASSWORD = 'etl-store-secret-4b1c';
let server: TestPostgres;
let input: string;

beforeAll(async () => {
  server = await startPostgres();
  input = join(dir, 'in.csv');
  await writeFile(input, makeSampleCsv(ROWS, 73));
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

const args = (output: string, store: string) => sampleArgs(input, output, '--rate-limit', '0', '--store', store);
const env = (sandbox: Sandbox) => ({ DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });

/** The dq-store command of @dq/core, as a user runs it. */
const DQ_STORE = fileURLToPath(new URL('../../core/bin/dq-store.js', import.meta.url));

function dqStore(argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [DQ_STORE, ...argv], (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The review candidates of an output: JSON lists of objects with several fields each. */
async function candidates(output: string): Promise<string[]> {
  const { header, rows } = await readCsv(output, { delimiter: ';' });
  const column = header.indexOf('dq_review_candidates');
  expect(column).toBeGreaterThanOrEqual(0);
  return rows.map((r) => r[column] ?? '').filter((c) => c !== '');
}

/** {@link comparable} with the JSON cells compared by value (object keys sorted). */
async function byValue(output: string): Promise<string[][]> {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, x]) => [k, sorted(x)]),
          )
        : v;
  return (await comparable(output)).map((row) => row.map((cell) => (/^[[{]/.test(cell) ? JSON.stringify(sorted(JSON.parse(cell))) : cell)));
}

/** The store's layout as the database holds it: the version rows and the type of the answers. */
async function layout(url: string): Promise<{ versions: string; type: string; entries: number }> {
  return withClient(url, async (c) => {
    const versions = await c.query<{ v: string }>('SELECT array_agg(version ORDER BY version)::text AS v FROM dq_store.schema_version');
    const type = await c.query<{ t: string }>(
      `SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = 'dq_store.results'::regclass AND attname = 'result'`,
    );
    const entries = await c.query<{ n: number }>('SELECT count(*)::int AS n FROM dq_store.results');
    return { versions: versions.rows[0]!.v, type: type.rows[0]!.t, entries: entries.rows[0]!.n };
  });
}

/** The store's DDL of layout 1, as the dq-connectors before layout 2 sent it. */
const LAYOUT_1 = `
CREATE SCHEMA dq_store;
CREATE TABLE IF NOT EXISTS dq_store.results (
  key        text COLLATE "C" PRIMARY KEY,
  result     jsonb NOT NULL,
  checked_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS results_checked_at ON dq_store.results (checked_at);
CREATE TABLE IF NOT EXISTS dq_store.schema_version (version integer NOT NULL);
INSERT INTO dq_store.schema_version (version) VALUES (1);`;

describe('dq-csv with a Postgres result store', () => {
  it('a second run over the same file calls nothing and writes the same bytes, review candidates included', { timeout: 300_000 }, async () => {
    const store = await server.createDatabase();
    const sandbox = await startSandbox({ port: 0, config: unlimited() });
    try {
      const first = await runCli(args(join(dir, 'first.csv'), store), env(sandbox));
      expect(first.code, first.stderr).toBe(0);
      const paid = billable(sandbox);
      expect(paid).toBeGreaterThan(ROWS * 0.5);
      // Answers with objects of several fields: the review candidates of the rows left for review.
      const listed = await candidates(join(dir, 'first.csv'));
      expect(listed.length).toBeGreaterThan(20);
      expect(Object.keys((JSON.parse(listed[0]!) as object[])[0]!).length).toBeGreaterThan(3);

      const second = await runCli(args(join(dir, 'second.csv'), store), env(sandbox));
      expect(second.code, second.stderr).toBe(0);
      expect(billable(sandbox)).toBe(paid); // 0 calls
      expect(summaryOf(second)).toMatchObject({ apiCalls: 0, storeHitRate: 1 });
      // Byte for byte, stored request ids and check times included.
      const [a, b] = [await readFile(join(dir, 'first.csv')), await readFile(join(dir, 'second.csv'))];
      expect(b.toString('utf8')).toBe(a.toString('utf8'));
    } finally {
      await sandbox.close();
    }
  });

  it(
    'a store of layout 1: a role that does not own it is told to have the owner run dq-store init (exit 2, nothing called); opened by the owner it is upgraded once and its entries answer',
    { timeout: 300_000 },
    async () => {
      const sandbox = await startSandbox({ port: 0, config: unlimited() });
      try {
        // The answers of one run, in a layout-1 store: bought into a current store, then copied
        // into the old layout in another database, as the former dq-csv left it.
        const bought = await server.createDatabase();
        const reference = join(dir, 'reference.csv');
        const buy = await runCli(args(reference, bought), env(sandbox));
        expect(buy.code, buy.stderr).toBe(0);
        const paid = billable(sandbox);
        const rows = await withClient(
          bought,
          async (c) =>
            (await c.query<{ key: string; result: string; at: string }>(`SELECT key, result::text AS result, checked_at::text AS at FROM dq_store.results`))
              .rows,
        );
        const owner = await server.createDatabase();
        await withClient(owner, async (c) => {
          await c.query(LAYOUT_1);
          await c.query('INSERT INTO dq_store.results SELECT * FROM unnest($1::text[], $2::jsonb[], $3::timestamptz[])', [
            rows.map((r) => r.key),
            rows.map((r) => r.result),
            rows.map((r) => r.at),
          ]);
          // The ETL role with the grants the README lists.
          await c.query(
            `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'etl') THEN CREATE ROLE etl LOGIN PASSWORD '${ETL_PASSWORD}'; END IF; END $$`,
          );
          await c.query('GRANT USAGE ON SCHEMA dq_store TO etl');
          await c.query('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA dq_store TO etl');
        });
        const etl = new URL(owner);
        etl.username = 'etl';
        etl.password = ETL_PASSWORD;

        // The ETL role first: exit 2 before any call, naming what the owner must run.
        const refused = await runCli(args(join(dir, 'refused.csv'), etl.toString()), env(sandbox));
        expect(refused.code, refused.stderr).toBe(2);
        expect(refused.stderr).toMatch(
          /store-permission-denied: the result store postgres:\/\/etl:.*cannot be used: the database user etl may not upgrade schema dq_store from layout version 1 to 2 .*run "dq-store init --store postgres:\/\/<owner>@127\.0\.0\.1:\d+\/\w+" once/,
        );
        expect(refused.stderr).not.toContain(ETL_PASSWORD);
        expect(refused.stderr).not.toMatch(/\n\s+at /);
        expect(billable(sandbox)).toBe(paid);
        expect(await layout(owner)).toEqual({ versions: '{1}', type: 'jsonb', entries: rows.length });

        // The owner: the dq-store init the message names and two runs, all started together,
        // upgrade it once, and the runs answer every input from it.
        const init = dqStore(['init', '--store', owner, '--json']);
        const runs = [1, 2].map((i) => completed(startCli(args(join(dir, `owner-${i}.csv`), owner), env(sandbox))));
        const initialised = await init;
        expect(initialised.code, initialised.stderr).toBe(0);
        expect(JSON.parse(initialised.stdout)).toMatchObject({ command: 'init' });
        for (const run of await Promise.all(runs)) {
          expect(run.code, run.stderr).toBe(0);
          expect(summaryOf(run)).toMatchObject({ apiCalls: 0, storeHitRate: 1 });
        }
        expect(billable(sandbox)).toBe(paid);
        expect(await layout(owner)).toEqual({ versions: '{2}', type: 'json', entries: rows.length });
        // The values are the ones bought (jsonb had already lost the key order of these entries).
        expect(await byValue(join(dir, 'owner-1.csv'))).toEqual(await byValue(reference));

        // The ETL role now uses it with its grants as they were: nothing called, the same bytes as the owner's run.
        const after = await runCli(args(join(dir, 'etl.csv'), etl.toString()), env(sandbox));
        expect(after.code, after.stderr).toBe(0);
        expect(billable(sandbox)).toBe(paid);
        expect(await readFile(join(dir, 'etl.csv'), 'utf8')).toBe(await readFile(join(dir, 'owner-1.csv'), 'utf8'));
      } finally {
        await sandbox.close();
      }
    },
  );
});
