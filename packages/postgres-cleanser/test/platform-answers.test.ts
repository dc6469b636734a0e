import { createCompanyService } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

// dq-pg with the platform's answers that are findings about a row, not failures: a country the
// platform has no reference data for, and a company name that two companies share.

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

const args = (db: string, table: string, map: string, ...extra: string[]) => [
  'cleanse',
  '--db',
  db,
  '--table',
  table,
  '--key',
  'id',
  '--map',
  map,
  '--base-url',
  env.sandbox.url,
  '--rate-limit',
  '0',
  '--threads',
  '0',
  ...extra,
];

describe("dq-pg and the platform's answers about a row", () => {
  it('records rows of a country without reference data as unsupported-country, keeps them, and exits 0', async () => {
    const db = await env.pg.createDatabase();
    await withClient(db, async (c) => {
      await c.query('CREATE TABLE places (id int PRIMARY KEY, line text, town text, country text)');
      await c.query(`INSERT INTO places VALUES (1, 'Rue de Rivoli 99', '75001 Paris', 'FR'), (2, 'Via Roma 1', '00184 Roma', 'IT')`);
    });
    const before = env.sandbox.stats().requests['batch']?.total ?? 0;
    const run = await runCli(args(db, 'public.places', 'addressLine=line,localityLine=town,country=country', '--run-id', 'countries', '--max-failed', '0'));
    expect(run.code, run.stderr).toBe(0);
    expect(summaryOf(run)).toMatchObject({ state: 'done', rows: 2, byStatus: { 'unsupported-country': 2, unavailable: 0 } });
    // Each row asked once: the answer is not repeated.
    expect((env.sandbox.stats().requests['batch']?.total ?? 0) - before).toBe(2);
    await withClient(db, async (c) => {
      const results = await c.query<{ row_key: string; status: string; outcome: string; error: { code: string } }>(
        `SELECT row_key, status, outcome, error FROM dq_cleanse.results WHERE run_id = 'countries' ORDER BY row_key`,
      );
      expect(results.rows.map((r) => [r.row_key, r.status, r.outcome, r.error.code])).toEqual([
        ['1', 'unsupported-country', 'kept', 'country-not-available'],
        ['2', 'unsupported-country', 'kept', 'country-not-available'],
      ]);
      const rows = await c.query('SELECT id, line, town, country FROM places ORDER BY id');
      expect(rows.rows).toEqual([
        { id: 1, line: 'Rue de Rivoli 99', town: '75001 Paris', country: 'FR' },
        { id: 2, line: 'Via Roma 1', town: '00184 Roma', country: 'IT' },
      ]);
    });
  });

  it('keeps a company name shared by two companies for review with both hits as candidates', async () => {
    const byName = new Map<string, { id: number; company: string }[]>();
    for (const c of createCompanyService({ seed: 1 }).companies) if (c.trStatus === 'active') byName.set(c.company, [...(byName.get(c.company) ?? []), c]);
    const [a, b] = [...byName.values()].find((same) => same.length === 2) ?? [];
    if (a === undefined || b === undefined) throw new Error('the register has no two active companies of one name');
    const db = await env.pg.createDatabase();
    await withClient(db, async (c) => {
      await c.query('CREATE TABLE firms (id int PRIMARY KEY, name text)');
      await c.query('INSERT INTO firms VALUES (1, $1)', [a.company]);
    });
    const run = await runCli(args(db, 'public.firms', 'company=name', '--mode', 'company', '--run-id', 'firms'));
    expect(run.code, run.stderr).toBe(0);
    await withClient(db, async (c) => {
      const results = await c.query<{ status: string; outcome: string; candidates: { id: number }[] }>(
        `SELECT status, outcome, candidates FROM dq_cleanse.results WHERE run_id = 'firms'`,
      );
      expect(results.rows[0]).toMatchObject({ status: 'review', outcome: 'kept' });
      expect(
        results.rows[0]?.candidates
          .slice(0, 2)
          .map((h) => h.id)
          .sort(),
      ).toEqual([a.id, b.id].sort());
      expect((await c.query('SELECT name FROM firms')).rows).toEqual([{ name: a.company }]);
    });
  });
});
