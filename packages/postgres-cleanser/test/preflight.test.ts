import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSilentLogger } from '@dq/core';
import { cleanse, CleanseError } from '../src/index.js';
import type { CleanseOptions } from '../src/index.js';
import { API_KEY, runCli, startEnv, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
let db: string;
beforeAll(async () => {
  env = await startEnv();
  db = await env.pg.createDatabase();
  await withClient(db, async (c) => {
    await c.query(`CREATE TABLE people (id int PRIMARY KEY, street text, zip integer, city varchar(40), country text, ref int)`);
    await c.query(`INSERT INTO people VALUES (1, 'Hauptstraße 1', 10115, 'Berlin', 'DE', 1)`);
    await c.query(`CREATE SCHEMA "Odd Schema"`);
    await c.query(`CREATE TABLE "Odd Schema"."Cust ""Table""" ("Key Col" text PRIMARY KEY, "Street Name" text, "Post Code" text, "City" text)`);
  });
});
afterAll(async () => {
  await env?.stop();
});

function options(extra: Partial<CleanseOptions>): CleanseOptions {
  return {
    db,
    table: 'people',
    baseUrl: env.sandbox.url,
    apiKey: API_KEY,
    logger: createSilentLogger(),
    engine: { threads: 1, rateLimits: { batch: 0 } },
    ...extra,
  };
}

async function failure(extra: Partial<CleanseOptions>): Promise<CleanseError> {
  const requests = env.sandbox.stats().requests['batch']?.total ?? 0;
  const error = await cleanse(options(extra)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CleanseError);
  // Refused before any API call.
  expect(env.sandbox.stats().requests['batch']?.total ?? 0).toBe(requests);
  return error as CleanseError;
}

describe('pre-flight checks', () => {
  it('refuses a flag given an empty value (an unset variable in a script) before connecting, saying what to write', async () => {
    const run = await runCli(['cleanse', '--db', env.pg.url, '--table', 'public.customers', '--where', '']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('--where: the value is empty: write --where <sql>, or leave the flag out');
  });

  it('names a table that does not exist', async () => {
    const e = await failure({ table: 'public.peeple' });
    expect(e.code).toBe('table-not-found');
    expect(e.message).toContain('public.peeple');
    expect(e.exitCode).toBe(2);
  });

  it('names a mapped column that does not exist and lists the real ones', async () => {
    const e = await failure({ map: { street: 'street', locality: 'town' } });
    expect(e.code).toBe('column-not-found');
    expect(e.message).toMatch(/"town".*id, street, zip, city, country, ref/);
  });

  it('refuses a key without a unique index', async () => {
    const e = await failure({ key: 'ref', map: { street: 'street', locality: 'city', postalCode: 'zip' } });
    expect(e.code).toBe('key-not-unique');
    expect(e.message).toContain('"ref"');
  });

  it('refuses to write text into a numeric column', async () => {
    const e = await failure({ map: { street: 'street', postalCode: 'zip', locality: 'city' } });
    expect(e.code).toBe('column-type');
    expect(e.message).toContain('"zip"');
    expect(e.message).toContain('integer');
  });

  it('reports a --where predicate that does not parse', async () => {
    const e = await failure({ map: { street: 'street', locality: 'city' }, where: 'cty = 1' });
    expect(e.code).toBe('where-invalid');
  });

  it('quotes every identifier: odd schema, table and column names work', async () => {
    await withClient(db, (c) => c.query(`INSERT INTO "Odd Schema"."Cust ""Table""" VALUES ('k1', 'Hauptstrasse 1', NULL, NULL), ('k2', NULL, '', '   ')`));
    const summary = await cleanse(
      options({
        table: '"Odd Schema"."Cust ""Table"""',
        key: 'Key Col',
        country: 'DE',
        runId: 'odd',
        map: { addressLine: 'Street Name', postalCode: 'Post Code', locality: 'City' },
      }),
    );
    // NULL and blank columns leave the locality unidentified: invalid input, not a crash.
    expect(summary).toMatchObject({ state: 'done', rows: 2, byStatus: { 'invalid-input': 2 } });
    const results = await withClient(db, (c) =>
      c.query<{ row_key: string; status: string }>(`SELECT row_key, status FROM dq_cleanse.results WHERE run_id = 'odd' ORDER BY row_key`),
    );
    expect(results.rows).toEqual([
      { row_key: 'k1', status: 'invalid-input' },
      { row_key: 'k2', status: 'invalid-input' },
    ]);
  });

  it('never prints the database password, whether the table is wrong or the server unreachable', async () => {
    const password = new URL(db).password;
    expect(password.length).toBeGreaterThan(8);
    const wrongTable = await runCli(['cleanse', '--db', db, '--table', 'nope', '--base-url', env.sandbox.url]);
    expect(wrongTable.code).toBe(2);
    expect(wrongTable.stderr).toContain('table-not-found');
    const url = new URL(db);
    url.port = '1';
    const unreachable = await runCli(['cleanse', '--db', url.toString(), '--table', 'people', '--base-url', env.sandbox.url]);
    expect(unreachable.code).toBe(75);
    expect(unreachable.stderr).toContain('db-unreachable');
    for (const r of [wrongTable, unreachable]) expect(r.stdout + r.stderr).not.toContain(password);
  });

  it('names the flag of a usage error', async () => {
    const r = await runCli(['cleanse', '--db', db, '--table', 'people', '--base-url', env.sandbox.url, '--accept', 'A,X']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--accept');
  });
});
