import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDirtyInputs } from '@dq/sandbox';
import { runCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
let db: string;
beforeAll(async () => {
  env = await startEnv();
  db = await env.pg.createDatabase();
  // The README's table: columns under everyday names, only "street" and "city"-less names.
  const inputs = generateDirtyInputs(60, { seed: 3 });
  await withClient(db, async (c) => {
    await c.query(`CREATE TABLE customers (id bigint PRIMARY KEY, name text, street text, house_no text, zip text, city text)`);
    for (const [i, { input }] of inputs.entries()) {
      await c.query(`INSERT INTO customers VALUES ($1, $2, $3, $4, $5, $6)`, [
        i + 1,
        `Customer ${i + 1}`,
        input.street ?? null,
        input.houseNumber ?? null,
        input.postalCode ?? null,
        input.locality ?? null,
      ]);
    }
  });
});
afterAll(async () => {
  await env?.stop();
});

const base = () => ['cleanse', '--db', db, '--table', 'public.customers', '--base-url', env.sandbox.url, '--country', 'DE', '--rate-limit', '0', '--dry-run'];

describe('dq-pg mapping hints', () => {
  it('without --map, names the columns that look like fields it left out, with the --map that uses them', async () => {
    const res = await runCli(base());
    expect(res.code).toBe(0);
    expect(res.stderr).toContain('dq-pg: hint: no --map given, so only columns named like address fields were mapped (street=street)');
    expect(res.stderr).toContain('house_no (houseNumber), zip (postalCode), city (locality)');
    expect(res.stderr).toContain('--map street=street,houseNumber=house_no,postalCode=zip,locality=city');

    // The suggested mapping is one that works: the rows are read as addresses.
    const mapped = await runCli([...base(), '--map', 'street=street,houseNumber=house_no,postalCode=zip,locality=city']);
    expect(mapped.code).toBe(0);
    expect(mapped.stderr).not.toContain('hint');
    const byStatus = summaryOf(mapped)['byStatus'] as Record<string, number>;
    expect(byStatus['invalid-input']).toBeLessThan(60);
  });

  it('says so when every row of the first page is invalid-input, with the mapping it would have needed', async () => {
    const res = await runCli([...base(), '--map', 'street=street', '--batch-size', '20']);
    expect(res.code).toBe(0);
    expect((summaryOf(res)['byStatus'] as Record<string, number>)['invalid-input']).toBe(60);
    expect(res.stderr).toContain('dq-pg: hint: every row of the first page (20) came back invalid-input: the mapped columns (street=street)');
    expect(res.stderr).toContain('--map street=street,houseNumber=house_no,postalCode=zip,locality=city');
  });
});
