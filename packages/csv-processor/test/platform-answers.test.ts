import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createCompanyService, generateDirtyInputs } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { readCsv, runCli, summaryOf, unlimited, useSandbox, useTempDir } from './helpers.js';

// What a dq-csv user sees in the output for the platform's answers: inputs the platform takes,
// a country it has no reference data for, a 503 outside the contract's rows, an ambiguous company.

const dir = useTempDir();
const sandbox = useSandbox(unlimited());

/** Clean addresses of the sandbox's reference data (the truths of the generator's class A inputs). */
function knownAddresses(n: number): Array<{ street: string; houseNumber: string; postalCode: string; locality: string }> {
  const out = new Map<string, { street: string; houseNumber: string; postalCode: string; locality: string }>();
  for (const item of generateDirtyInputs(400, { seed: 11, country: 'DE' })) {
    const t = item.truth;
    if (item.intendedClass !== 'A' || t === undefined || t.houseNumber === '') continue;
    out.set(`${t.street}|${t.houseNumber}|${t.postalCode}`, { street: t.street, houseNumber: t.houseNumber, postalCode: t.postalCode, locality: t.locality });
    if (out.size === n) return [...out.values()];
  }
  throw new Error('too few known addresses');
}

const ADDRESS_MAP = ['--map', 'street=strasse,houseNumber=nr,postalCode=plz,locality=ort,country=land'];

async function validate(name: string, csv: string, ...more: string[]) {
  const input = join(dir, `${name}.csv`);
  const output = join(dir, `${name}.out.csv`);
  await writeFile(input, csv);
  const run = await runCli(['validate', '--input', input, '--output', output, '--delimiter', ';', '--max-failed', '0', ...more], sandbox.env());
  const out = await readCsv(output, { delimiter: ';' }).catch(() => ({ header: [] as string[], rows: [] as string[][] }));
  const column = (row: string[], name: string) => row[out.header.indexOf(name)];
  return { run, out, column };
}

describe("dq-csv against the sandbox: how the platform's answers come out", () => {
  it('sends a lower-case country and a row with a locality but no postal code (or the reverse), and writes the input back as it was', async () => {
    const [a, b, c] = knownAddresses(3) as [
      ReturnType<typeof knownAddresses>[number],
      ReturnType<typeof knownAddresses>[number],
      ReturnType<typeof knownAddresses>[number],
    ];
    const rows = [
      `1;${a.street};${a.houseNumber};${a.postalCode};${a.locality};de`,
      `2;${b.street};${b.houseNumber};;${b.locality};DE`,
      `3;${c.street};${c.houseNumber};${c.postalCode};;De`,
    ];
    const { run, out, column } = await validate('shapes', `id;strasse;nr;plz;ort;land\n${rows.join('\n')}\n`, ...ADDRESS_MAP);
    expect(run.code, run.stderr).toBe(0);
    // Answered by the platform (the class is its judgement of each input), none refused.
    expect(column(out.rows[0] as string[], 'dq_status')).toBe('accepted');
    for (const row of out.rows) {
      expect(['accepted', 'review']).toContain(column(row, 'dq_status'));
      expect(column(row, 'dq_result_class')).toMatch(/^[A-E]$/);
      expect(column(row, 'dq_error')).toBe('');
    }
    // The platform's corrections are in the dq_ columns; the input columns are the input, byte for byte.
    expect(out.rows.map((r) => r.slice(0, 6).join(';'))).toEqual(rows);
    // What was missing comes back from the platform.
    expect(column(out.rows[1] as string[], 'dq_postal_code')).toMatch(/^\d{5}$/);
    expect(column(out.rows[2] as string[], 'dq_locality')).not.toBe('');
    expect(summaryOf(run).byStatus['invalid-input']).toBe(0);
  });

  it('marks rows of a country without reference data unsupported-country, asks once per row, and exits 0', async () => {
    const [a, b] = knownAddresses(2) as [ReturnType<typeof knownAddresses>[number], ReturnType<typeof knownAddresses>[number]];
    const before = sandbox.stats().requests['batch']?.total ?? 0;
    const { run, out, column } = await validate(
      'countries',
      `id;strasse;nr;plz;ort;land\n1;${a.street};${a.houseNumber};${a.postalCode};${a.locality};DE\n2;Rue de Rivoli;99;75001;Paris;FR\n3;${b.street};${b.houseNumber};${b.postalCode};${b.locality};FR\n`,
      ...ADDRESS_MAP,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(out.rows.map((r) => column(r, 'dq_status'))).toEqual(['accepted', 'unsupported-country', 'unsupported-country']);
    expect(column(out.rows[1] as string[], 'dq_error')).toMatch(/^country-not-available: .*no reference data for this country/);
    expect(column(out.rows[1] as string[], 'dq_request_id')).not.toBe('');
    const summary = summaryOf(run);
    expect(summary.byStatus).toMatchObject({ accepted: 1, 'unsupported-country': 2, unavailable: 0 });
    expect(summary.failedShare).toBe(0);
    expect(summary.retries).toBe(0);
    expect((sandbox.stats().requests['batch']?.total ?? 0) - before).toBe(3);
  });

  it("names a 503 outside the contract's rows server-error with its status once the retries are used up, and exits 75", async () => {
    const [a] = knownAddresses(1) as [ReturnType<typeof knownAddresses>[number]];
    sandbox.setFaults({ batch: { errorRate: 1, errorStatuses: [503] } });
    try {
      const { run, out } = await validate(
        'outage',
        `id;strasse;nr;plz;ort;land\n1;${a.street};${a.houseNumber};${a.postalCode};${a.locality};DE\n`,
        ...ADDRESS_MAP,
      );
      expect(run.code, run.stderr).toBe(75);
      // Every call failed, so this is an outage: the run stops before the record, nothing is final.
      expect(out.rows).toEqual([]);
      const summary = summaryOf(run);
      expect(summary.error?.code).toBe('platform-unreachable');
      expect(summary.error?.message).toMatch(/server-error: Gave up after \d+ attempts.*HTTP 503/);
      expect(run.stdout + run.stderr).not.toContain('unknown-problem');
      expect(summary.retries).toBeGreaterThan(0);
    } finally {
      sandbox.setFaults({});
    }
  });

  it('sends a company name matching two companies, without an address, to review with both hits in dq_company_candidates', async () => {
    const byName = new Map<string, { id: number; company: string; zip: number }[]>();
    for (const c of createCompanyService({ seed: 1 }).companies) if (c.trStatus === 'active') byName.set(c.company, [...(byName.get(c.company) ?? []), c]);
    const [a, b] = [...byName.values()].find((same) => same.length === 2) ?? [];
    if (a === undefined || b === undefined) throw new Error('the register has no two active companies of one name');
    const { run, out, column } = await validate(
      'companies',
      `name;plz\n${a.company};\n${b.company};${b.zip}\n`,
      '--mode',
      'company',
      '--map',
      'company=name,zip=plz',
    );
    expect(run.code, run.stderr).toBe(0);
    const [ambiguous, clear] = out.rows as [string[], string[]];
    expect(column(ambiguous, 'dq_status')).toBe('review');
    const candidates = JSON.parse(column(ambiguous, 'dq_company_candidates') ?? '[]') as { id: number }[];
    expect(
      candidates
        .slice(0, 2)
        .map((c) => c.id)
        .sort(),
    ).toEqual([a.id, b.id].sort());
    expect(column(clear, 'dq_status')).toBe('accepted');
    expect(column(clear, 'dq_company_id')).toBe(String(b.id));
    expect(column(clear, 'dq_company_candidates')).toBe('');
  });
});
