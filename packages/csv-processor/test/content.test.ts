import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY, startSandbox, type Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askAddresses, askCompany, companyInputs, labelledAddresses, type AddressFields } from '@dq/test-support/known-answers';
import { readCsv, runCli, summaryOf, tempDir } from './helpers.js';

// What dq-csv writes, record by record, against answers worked out without the engine: each
// labelled input asked of the sandbox's HTTP API on its own. A field written into another field's
// column, or results shifted by one row, fails here.

let dir: string;
let cleanup: () => Promise<void>;
let sandbox: Sandbox;
let env: Record<string, string>;

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir());
  sandbox = await startSandbox({ port: 0, config: { accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0, validate: 0 } }] } });
  env = { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY };
});
afterAll(async () => {
  await sandbox?.close();
  await cleanup?.();
});

const INPUT_COLUMNS = ['id', 'strasse', 'nr', 'adresse', 'plz', 'ort', 'ortszeile', 'land'] as const;
const FIELD_OF: Record<string, keyof AddressFields> = {
  strasse: 'street',
  nr: 'houseNumber',
  adresse: 'addressLine',
  plz: 'postalCode',
  ort: 'locality',
  ortszeile: 'localityLine',
  land: 'country',
};
const MAP = [
  '--map',
  Object.entries(FIELD_OF)
    .map(([column, field]) => `${field}=${column}`)
    .join(','),
];

describe("dq-csv writes the platform's answer for each row into that row", () => {
  it('address mode: status, class and every corrected field per row, for separate fields, addressLine, localityLine and several candidates', async () => {
    const labelled = labelledAddresses(160);
    for (const { fields } of labelled) for (const v of Object.values(fields)) expect(v).not.toMatch(/[;"\r\n]/);
    const lines = labelled.map(({ fields }, i) =>
      [String(i + 1), ...INPUT_COLUMNS.slice(1).map((c) => fields[FIELD_OF[c] as keyof AddressFields] ?? '')].join(';'),
    );
    const input = join(dir, 'addresses.csv');
    const output = join(dir, 'addresses.out.csv');
    await writeFile(input, `${INPUT_COLUMNS.join(';')}\n${lines.join('\n')}\n`);

    const run = await runCli(['validate', '--input', input, '--output', output, '--delimiter', ';', ...MAP], env);
    expect(run.code, run.stderr).toBe(0);
    const expected = await askAddresses(
      sandbox.url,
      DEFAULT_API_KEY,
      labelled.map((l) => l.fields),
    );

    const out = await readCsv(output, { delimiter: ';' });
    const col = (row: string[], name: string): string => {
      const i = out.header.indexOf(name);
      if (i === -1) throw new Error(`no column ${name}`);
      return row[i] as string;
    };
    expect(out.rows).toHaveLength(labelled.length);
    // What the set covers, so the per-row checks below mean something.
    expect(new Set(expected.map((e) => e.resultClass))).toEqual(new Set(['A', 'B', 'C', 'D', 'E', 'F']));
    expect(labelled.filter((l) => l.fields.addressLine !== undefined).length).toBeGreaterThan(10);
    expect(labelled.filter((l) => l.fields.localityLine !== undefined).length).toBeGreaterThan(10);
    expect(expected.filter((e) => e.candidates.length > 1).length).toBeGreaterThan(0);

    out.rows.forEach((row, i) => {
      const want = expected[i]!;
      const best = want.candidates[0];
      const at = `row ${i + 1} (${labelled[i]!.variant}: ${JSON.stringify(labelled[i]!.fields)})`;
      // The input columns are the input, byte for byte.
      expect(row.slice(0, INPUT_COLUMNS.length).join(';'), at).toBe(lines[i]);
      expect(
        {
          status: col(row, 'dq_status'),
          class: col(row, 'dq_result_class'),
          street: col(row, 'dq_street'),
          houseNumber: col(row, 'dq_house_number'),
          postalCode: col(row, 'dq_postal_code'),
          locality: col(row, 'dq_locality'),
          subLocality: col(row, 'dq_sub_locality'),
          country: col(row, 'dq_country'),
          addressType: col(row, 'dq_address_type'),
          candidates: col(row, 'dq_candidates'),
          houseNumberChoice: col(row, 'dq_house_number_choice'),
          error: col(row, 'dq_error'),
        },
        at,
      ).toEqual({
        status: want.status,
        class: want.resultClass,
        street: best?.street ?? '',
        houseNumber: best?.houseNumber ?? '',
        postalCode: best?.postalCode ?? '',
        locality: best?.locality ?? '',
        subLocality: best?.subLocality ?? '',
        country: best?.country ?? '',
        addressType: best?.addressType ?? '',
        candidates: String(want.candidates.length),
        houseNumberChoice: want.candidates.flatMap((c) => (c.houseNumberChoice ?? []).map((r) => `${c.postalCode} ${r.from}-${r.to} ${r.step}`)).join(' | '),
        error: '',
      });
      expect(col(row, 'dq_request_id'), at).not.toBe('');
      // The labelled truth agrees: a high-confidence answer is the address the input meant.
      const truth = labelled[i]!.truth;
      if (truth !== undefined && ['A', 'B', 'C'].includes(want.resultClass)) {
        expect([col(row, 'dq_street'), col(row, 'dq_house_number'), col(row, 'dq_postal_code'), col(row, 'dq_locality')], at).toEqual([
          truth.street,
          truth.houseNumber,
          truth.postalCode,
          truth.locality,
        ]);
      }
    });
    const summary = summaryOf(run);
    for (const status of ['accepted', 'review', 'invalid'] as const) {
      expect(summary.byStatus[status], status).toBe(expected.filter((e) => e.status === status).length);
    }
  });

  it("company mode: status and the best hit's fields per row, a shared name with every hit, and a name with no hit", async () => {
    const inputs = companyInputs(8);
    const input = join(dir, 'companies.csv');
    const output = join(dir, 'companies.out.csv');
    await writeFile(input, `name;plz;ort\n${inputs.map((c) => [c.company, c.zip ?? '', c.city ?? ''].join(';')).join('\n')}\n`);
    const run = await runCli(
      ['validate', '--input', input, '--output', output, '--delimiter', ';', '--mode', 'company', '--map', 'company=name,zip=plz,city=ort'],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    const expected = await Promise.all(inputs.map((c) => askCompany(sandbox.url, DEFAULT_API_KEY, c)));
    expect(new Set(expected.map((e) => e.status))).toEqual(new Set(['accepted', 'review', 'invalid']));

    const out = await readCsv(output, { delimiter: ';' });
    const col = (row: string[], name: string): string => row[out.header.indexOf(name)] as string;
    expect(out.rows).toHaveLength(inputs.length);
    // The first input is a Saxon company: its postcode keeps the leading zero.
    expect(col(out.rows[0]!, 'dq_company_zip')).toMatch(/^0\d{4}$/);
    out.rows.forEach((row, i) => {
      const want = expected[i]!;
      const best = want.hits[0];
      const at = `row ${i + 1} (${JSON.stringify(inputs[i])})`;
      expect(
        {
          status: col(row, 'dq_status'),
          id: col(row, 'dq_company_id'),
          name: col(row, 'dq_company_name'),
          zip: col(row, 'dq_company_zip'),
          city: col(row, 'dq_company_city'),
          street: col(row, 'dq_company_street'),
          trCourt: col(row, 'dq_tr_court'),
          trType: col(row, 'dq_tr_type'),
          trNo: col(row, 'dq_tr_no'),
          trStatus: col(row, 'dq_tr_status'),
          score: col(row, 'dq_score'),
          hits: col(row, 'dq_hits'),
          candidates: col(row, 'dq_company_candidates') === '' ? [] : (JSON.parse(col(row, 'dq_company_candidates')) as { id: number }[]).map((c) => c.id),
        },
        at,
      ).toEqual({
        status: want.status,
        id: best ? String(best.id) : '',
        name: best?.company ?? '',
        // The register's five digits: the platform's JSON number 4103 is 04103.
        zip: best?.zip === undefined ? '' : String(best.zip).padStart(5, '0'),
        city: best?.city ?? '',
        street: best?.street ?? '',
        trCourt: best?.trCourt ?? '',
        trType: best?.trType ?? '',
        trNo: best?.trNo === undefined ? '' : String(best.trNo),
        trStatus: best?.trStatus ?? '',
        score: best ? String(best.searchScore) : '',
        hits: String(want.hits.length),
        candidates: want.status === 'review' ? want.hits.map((h) => h.id) : [],
      });
    });
  });
});
