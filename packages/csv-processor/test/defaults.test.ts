import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateDirtyInputs, makeSampleCsv } from '@dq/sandbox';
import { ageStoreEntries, DAY_MS } from '@dq/test-support/store';
import { describe, expect, it } from 'vitest';
import { billable, readCsv, runCli, sampleArgs, summaryOf, useSandbox, useTempDir } from './helpers.js';

// Defaults that no other test runs: every run here leaves out --store, --max-age and --rate-limit,
// so the store is the default folder ($XDG_CACHE_HOME/dq-connectors/store; test/support/isolated-store.ts
// gives each test its own XDG_CACHE_HOME) and answers are reused for the default 30 days.
const ROWS = 60;
const dir = useTempDir();
const sandbox = useSandbox();

describe('dq-csv validate with the default --store and --max-age', () => {
  it('reuses a stored answer checked 29 days ago (its check time in the output) and buys again one checked 31 days ago', async () => {
    const input = join(dir, 'in.csv');
    await writeFile(input, makeSampleCsv(ROWS, 11));

    const first = await runCli(sampleArgs(input, join(dir, 'out.1.csv')), sandbox.env());
    expect(first.code, first.stderr).toBe(0);
    const paid = billable(sandbox);
    expect(paid).toBeGreaterThan(10);
    // The default rate limit keeps under the platform's per-account limit: not one 429.
    expect(sandbox.stats().requests['batch']?.byStatus['429'] ?? 0).toBe(0);

    const ages = await ageStoreEntries(join(process.env['XDG_CACHE_HOME']!, 'dq-connectors', 'store'), (i) => (i % 2 === 0 ? 31 : 29));
    expect((ages.get(31) ?? 0) + (ages.get(29) ?? 0)).toBe(paid);

    const second = await runCli(sampleArgs(input, join(dir, 'out.2.csv')), sandbox.env());
    expect(second.code, second.stderr).toBe(0);
    expect(billable(sandbox) - paid).toBe(ages.get(31)); // only the answers older than 30 days
    expect(summaryOf(second)).toMatchObject({ apiCalls: ages.get(31) });

    // Rows answered from the store show when the platform gave the answer: 29 days ago.
    const { header, rows } = await readCsv(join(dir, 'out.2.csv'), { delimiter: ';' });
    expect(rows).toHaveLength(ROWS);
    const checkedAt = header.indexOf('dq_checked_at');
    const days = rows.map((r) => Math.round((Date.now() - Date.parse(r[checkedAt]!)) / DAY_MS));
    expect(days.filter((d) => d === 29).length).toBeGreaterThan(0);
    expect(days.every((d) => d === 29 || d === 0)).toBe(true);

    // The answers bought again replaced the old entries: a third run calls nothing.
    const third = await runCli(sampleArgs(input, join(dir, 'out.3.csv')), sandbox.env());
    expect(third.code, third.stderr).toBe(0);
    expect(summaryOf(third)).toMatchObject({ apiCalls: 0, storeHitRate: 1 });
  });
});

describe('dq-csv validate with only --input and --output', () => {
  it('reads a comma-separated .csv, maps the columns named like the fields, rejects a bad row to <output without extension>.rejects.csv and exits 4 (default --max-failed 0)', async () => {
    const columns = ['id', 'street', 'houseNumber', 'postalCode', 'locality', 'country'] as const;
    const inputs = generateDirtyInputs(200, { seed: 3 })
      .map((x) => x.input)
      .filter((a) => a.street && a.houseNumber && a.postalCode && a.locality && a.country && !/[",\r\n]/.test(Object.values(a).join('')))
      .slice(0, 12);
    const lines = [
      'id,street,houseNumber,postalCode,locality,country',
      ...inputs.map((a, i) => [String(i + 1), a.street, a.houseNumber, a.postalCode, a.locality, a.country].join(',')),
    ];
    lines.splice(5, 0, '99,only two cells'); // line 6: the wrong number of cells
    const input = join(dir, 'plain.csv');
    await writeFile(input, lines.join('\n') + '\n');
    const output = join(dir, 'plain.out.csv');

    const run = await runCli(['validate', '--input', input, '--output', output], sandbox.env());
    expect(run.code, run.stderr).toBe(4);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(summaryOf(run)).toMatchObject({ exitCode: 4 });

    const out = await readCsv(output); // the default delimiter: ','
    expect(out.header.slice(0, columns.length)).toEqual([...columns]);
    expect(out.rows).toHaveLength(inputs.length);
    const status = out.header.indexOf('dq_status');
    const error = out.header.indexOf('dq_error');
    out.rows.forEach((row, i) => {
      expect(row.slice(0, columns.length)).toEqual(lines[i < 4 ? i + 1 : i + 2]!.split(',')); // values as read
      expect(['accepted', 'review', 'invalid']).toContain(row[status]); // every mapped field was sent
      expect(row[error]).toBe('');
    });
    const rejects = await readFile(join(dir, 'plain.out.rejects.csv'), 'utf8'); // <output without extension>.rejects.csv
    expect(rejects).toMatch(/^line,code,reason,raw/);
    expect(rejects).toContain('6,');
    expect(rejects).toContain('only two cells');
  });
});
