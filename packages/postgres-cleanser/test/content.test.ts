import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askAddresses, askCompany, companyInputs, labelledAddresses, type AddressFields, type KnownCandidate } from '@dq/test-support/known-answers';
import { API_KEY, cleanseArgs, COLUMNS, runCli, summaryOf, withClient } from './support.js';
import { startEnv, type TestEnv } from './support.js';

// What dq-pg writes into the table, row by row, against answers worked out without the engine:
// each labelled input asked of the sandbox's HTTP API on its own. A corrected value written into
// another column, or a result applied to the neighbouring key, fails here.

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

/** Column → request field of the customers table (support's MAP, which cleanseArgs uses). */
const FIELD_OF_COLUMN: Record<(typeof COLUMNS)[number], keyof AddressFields> = {
  street: 'street',
  house_number: 'houseNumber',
  postal_code: 'postalCode',
  city: 'locality',
  address_line: 'addressLine',
  locality_line: 'localityLine',
  country: 'country',
};

/** The platform's own one-line forms (street then number; postal code then town). */
const line = (...parts: (string | undefined)[]): string | undefined => {
  const present = parts.filter((p): p is string => p !== undefined && p.trim() !== '');
  return present.length === 0 ? undefined : present.join(' ');
};

/** The value an accepted answer gives a field, or undefined when it has none. */
function corrected(field: keyof AddressFields, best: KnownCandidate): string | undefined {
  if (field === 'addressLine') return line(best.street, best.houseNumber);
  if (field === 'localityLine') return line(best.postalCode, best.locality);
  return best[field as keyof KnownCandidate] as string | undefined;
}

/**
 * The README's rule for the table: an accepted answer replaces each mapped column with the best
 * candidate's value (a field it has no value for keeps its value; an empty value never replaces a
 * NULL); any other status keeps the row as it was.
 */
function expectedRow(before: (string | null)[], fields: readonly (keyof AddressFields)[], status: string, best: KnownCandidate | undefined): (string | null)[] {
  if (status !== 'accepted' || best === undefined) return before;
  return fields.map((f, i) => {
    const v = corrected(f, best);
    if (v === undefined || (v === '' && before[i] === null)) return before[i] ?? null;
    return v;
  });
}

describe("dq-pg writes the platform's answer for each row into that row", () => {
  it("address mode: each row's status and class, its corrected columns (addressLine and localityLine too) and the audit's before and after", async () => {
    const db = await env.pg.createDatabase();
    const labelled = labelledAddresses(160);
    const fields = COLUMNS.map((c) => FIELD_OF_COLUMN[c]);
    const inputs = labelled.map((l) => fields.map((f) => l.fields[f] ?? null));
    await withClient(db, async (c) => {
      await c.query(`CREATE TABLE customers (id bigint PRIMARY KEY, street text, house_number text, postal_code varchar(10),
                       city text, address_line text, locality_line text, country char(2))`);
      for (const [i, v] of inputs.entries()) {
        await c.query('INSERT INTO customers VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [i + 1, ...v]);
      }
    });
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'content', '--batch-size', '25']));
    expect(run.code, run.stderr).toBe(0);
    const expected = await askAddresses(
      env.sandbox.url,
      API_KEY,
      labelled.map((l) => l.fields),
    );
    expect(new Set(expected.map((e) => e.resultClass))).toEqual(new Set(['A', 'B', 'C', 'D', 'E', 'F']));
    expect(labelled.filter((l, i) => l.fields.addressLine !== undefined && expected[i]!.status === 'accepted').length).toBeGreaterThan(5);
    expect(labelled.filter((l, i) => l.fields.localityLine !== undefined && expected[i]!.status === 'accepted').length).toBeGreaterThan(5);

    await withClient(db, async (c) => {
      const table = await c.query<{ id: string; v: (string | null)[] }>(
        `SELECT id::text, ARRAY[${COLUMNS.join(', ')}]::text[] AS v FROM customers ORDER BY customers.id`,
      );
      const results = new Map(
        (
          await c.query<{ row_key: string; status: string; result_class: string | null; candidates: KnownCandidate[] | null }>(
            `SELECT row_key, status, result_class, candidates FROM dq_cleanse.results WHERE run_id = 'content'`,
          )
        ).rows.map((r) => [r.row_key, r]),
      );
      const audit = new Map(
        (
          await c.query<{ row_key: string; before: Record<string, string | null>; after: Record<string, string | null> }>(
            `SELECT row_key, before, after FROM dq_cleanse.audit WHERE run_id = 'content'`,
          )
        ).rows.map((r) => [r.row_key, r]),
      );
      expect(table.rows).toHaveLength(labelled.length);
      let written = 0;
      table.rows.forEach((row, i) => {
        const want = expected[i]!;
        const at = `id ${row.id} (${labelled[i]!.variant}: ${JSON.stringify(labelled[i]!.fields)})`;
        const result = results.get(row.id);
        expect({ status: result?.status, class: result?.result_class }, at).toEqual({ status: want.status, class: want.resultClass });
        if (want.resultClass === 'E')
          expect(
            result?.candidates?.map((k) => [k.street, k.postalCode, k.locality]),
            at,
          ).toEqual(want.candidates.map((k) => [k.street, k.postalCode, k.locality]));
        const after = expectedRow(inputs[i]!, fields, want.status, want.candidates[0]);
        expect(row.v, at).toEqual(after);
        const changed = after.some((v, j) => v !== inputs[i]![j]);
        if (changed) {
          written += 1;
          const byColumn = (values: (string | null)[]) => Object.fromEntries(COLUMNS.map((col, j) => [col, values[j] ?? null]));
          expect(audit.get(row.id), at).toEqual({ row_key: row.id, before: byColumn(inputs[i]!), after: byColumn(after) });
        } else {
          expect(audit.has(row.id), at).toBe(false);
        }
        // A high-confidence answer is the address the input meant.
        const truth = labelled[i]!.truth;
        if (truth !== undefined && want.status === 'accepted') {
          expect([row.v[0], row.v[1], row.v[2], row.v[3]], at).toEqual([truth.street, truth.houseNumber, truth.postalCode, truth.locality]);
        }
      });
      expect(written).toBeGreaterThan(20);
      expect(summaryOf(run)['written']).toBe(written);
    });
  });

  it("company mode: the best hit's name, zip and city written into accepted rows, review and no-hit rows kept", async () => {
    const db = await env.pg.createDatabase();
    const inputs = companyInputs(8);
    await withClient(db, async (c) => {
      await c.query('CREATE TABLE firms (id int PRIMARY KEY, name text, zip text, city text)');
      for (const [i, f] of inputs.entries()) await c.query('INSERT INTO firms VALUES ($1, $2, $3, $4)', [i + 1, f.company, f.zip ?? null, f.city ?? null]);
    });
    const run = await runCli([
      'cleanse',
      '--db',
      db,
      '--table',
      'public.firms',
      '--key',
      'id',
      '--mode',
      'company',
      '--map',
      'company=name,zip=zip,city=city',
      '--base-url',
      env.sandbox.url,
      '--rate-limit',
      '0',
      '--threads',
      '1',
      '--run-id',
      'firms',
      '--batch-size',
      '4',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const expected = await Promise.all(inputs.map((f) => askCompany(env.sandbox.url, API_KEY, f)));
    expect(new Set(expected.map((e) => e.status))).toEqual(new Set(['accepted', 'review', 'invalid']));
    await withClient(db, async (c) => {
      const rows = (
        await c.query<{ id: number; name: string | null; zip: string | null; city: string | null; status: string }>(
          `SELECT f.id, f.name, f.zip, f.city, r.status FROM firms f JOIN dq_cleanse.results r ON r.run_id = 'firms' AND r.row_key = f.id::text ORDER BY f.id`,
        )
      ).rows;
      expect(rows).toHaveLength(inputs.length);
      rows.forEach((row, i) => {
        const want = expected[i]!;
        const best = want.hits[0];
        const input = inputs[i]!;
        const at = `id ${row.id} (${JSON.stringify(input)})`;
        const after =
          want.status === 'accepted' && best
            ? {
                name: best.company,
                zip: best.zip === undefined ? (input.zip ?? null) : String(best.zip).padStart(5, '0'),
                city: best.city ?? input.city ?? null,
              }
            : { name: input.company, zip: input.zip ?? null, city: input.city ?? null };
        expect({ status: row.status, name: row.name, zip: row.zip, city: row.city }, at).toEqual({ status: want.status, ...after });
      });
    });
  });
});
