import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseString } from '@fast-csv/parse';
import { writeToString } from '@fast-csv/format';
import { FORMULA_START } from '@dq/core/review';
import { createCompanyService, generateDirtyInputs } from '@dq/sandbox';
import { rewritingPlatform } from '@dq/test-support/platform';
import { describe, expect, it } from 'vitest';
import { readCsv, runCli, unlimited, useSandbox, useTempDir } from './helpers.js';

// The review loop with the real CLI (dist/), the sandbox over real HTTP and real files:
// validate → review export → decisions filled in (as a person, or a spreadsheet, would) → review apply.

const dir = useTempDir();
const sandbox = useSandbox(unlimited());

const COLUMNS = ['id', 'note', 'street', 'houseNumber', 'addressLine', 'postalCode', 'locality', 'localityLine', 'country'] as const;
// Input values a spreadsheet would run, or that need quoting: they must come back byte for byte.
const NOTES = ['=SUM(A1:A9)', '-5', "'quoted", '+49 711 1', '@home', 'a, "b"', 'plain'];

/** An input CSV of labelled sandbox inputs (A, D and E), with awkward notes; the text written. */
function addressCsv(n: number): string {
  const rows = generateDirtyInputs(n, { seed: 5, country: 'DE' }).filter((d) => ['A', 'D', 'E'].includes(d.intendedClass));
  const quote = (v: string) => (/[",\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);
  const lines = rows.map((d, i) => {
    const input = d.input as unknown as Record<string, string | undefined>;
    const cells = COLUMNS.map((c) => (c === 'id' ? String(i + 1) : c === 'note' ? NOTES[i % NOTES.length]! : (input[c] ?? '')));
    return cells.map(quote).join(',');
  });
  return `${COLUMNS.join(',')}\n${lines.join('\n')}\n`;
}

/** Raw data records of a CSV without quoted newlines: the header and one line per row, terminators kept. */
function rawRows(text: string): { header: string; rows: string[] } {
  const parts = text.split(/(?<=\n)/);
  return { header: parts[0]!, rows: parts.slice(1) };
}

async function parseCsvText(text: string): Promise<string[][]> {
  return new Promise((resolve, reject) => {
    const rows: string[][] = [];
    parseString(text.replace(/^\uFEFF/, ''), { headers: false })
      .on('data', (row: string[]) => rows.push(row))
      .on('error', reject)
      .on('end', () => resolve(rows));
  });
}

/**
 * A platform whose answers hold formula-like values: the sandbox behind a proxy (real HTTP both
 * ways) that puts `=` before every street it answers, as a platform may return any text. Returns
 * its URL and a close function.
 */
async function formulaPlatform(upstream: string): Promise<{ url: string; close: () => Promise<void> }> {
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === 'street' && typeof v === 'string' ? `=${v}` : rewrite(v)]));
  };
  return rewritingPlatform(upstream, rewrite);
}

async function validate(name: string, csv: string, ...more: string[]) {
  const input = join(dir, `${name}.csv`);
  const output = join(dir, `${name}.out.csv`);
  await writeFile(input, csv);
  const run = await runCli(['validate', '--input', input, '--output', output, ...more], sandbox.env());
  expect(run.code, run.stderr).toBe(0);
  return { input, output };
}

describe('dq-csv review: export, decide, apply', () => {
  it('applies a candidate, keep and invalid; lists a conflict and names bad decisions; leaves every other row byte for byte', async () => {
    const { input, output } = await validate('loop', addressCsv(160), '--country', 'DE');
    const cleaned = await readCsv(output);
    const col = (name: string) => cleaned.header.indexOf(name);
    // Item 1: a review row carries its candidates' full fields; other rows leave the column empty.
    for (const row of cleaned.rows) {
      if (row[col('dq_status')] === 'review') {
        const candidates = JSON.parse(row[col('dq_review_candidates')]!) as { street?: string }[];
        expect(candidates.length).toBe(Number(row[col('dq_candidates')]));
        expect(candidates[0]?.street).toBe(row[col('dq_street')]);
      } else {
        expect(row[col('dq_review_candidates')]).toBe('');
      }
      expect(row[col('dq_review_decision')]).toBe('');
    }
    const classes = cleaned.rows.filter((r) => r[col('dq_status')] === 'review').map((r) => r[col('dq_result_class')]);
    expect(classes).toContain('D');
    expect(classes).toContain('E');

    const review = join(dir, 'loop.review.csv');
    const exported = await runCli(['review', 'export', '--input', output, '--output', review]);
    expect(exported.code, exported.stderr).toBe(0);
    const exportText = await readFile(review, 'utf8');
    expect(exportText.startsWith('\uFEFF')).toBe(true);
    expect(exportText.replaceAll('\r\n', '')).not.toContain('\n');
    const [header, ...rows] = await parseCsvText(exportText);
    expect(JSON.parse(exported.stdout)).toMatchObject({ event: 'review-export', rows: classes.length });
    expect(header!.slice(0, COLUMNS.length + 4)).toEqual(['line', ...COLUMNS, 'class', 'request_id', 'row_check']);
    expect(header!.slice(COLUMNS.length + 4, COLUMNS.length + 10)).toEqual([
      'candidate_1_street',
      'candidate_1_house_number',
      'candidate_1_postal_code',
      'candidate_1_locality',
      'candidate_1_sub_locality',
      'candidate_1_country',
    ]);
    expect(header!.at(-1)).toBe('decision');
    const h = (name: string) => header!.indexOf(name);
    // Current values: the cleaned file's, formula-like ones behind a '.
    for (const row of rows) {
      const line = Number(row[0]);
      const original = cleaned.rows[line - 1]!;
      expect(row[h('note')]).toBe(/^[=+\-@']/.test(original[1]!) ? `'${original[1]}` : original[1]);
      expect(row[h('request_id')]).toBe(original[col('dq_request_id')]);
    }

    // --classes picks the classes to export.
    const onlyE = join(dir, 'loop.review-e.csv');
    const eRun = await runCli(['review', 'export', '--input', output, '--output', onlyE, '--classes', 'e']);
    expect(eRun.code, eRun.stderr).toBe(0);
    const [, ...eRows] = await parseCsvText(await readFile(onlyE, 'utf8'));
    expect(eRows.map((r) => r[h('class')])).toEqual(rows.filter((r) => r[h('class')] === 'E').map(() => 'E'));
    expect(eRows.length).toBeGreaterThan(0);

    // Decisions, as a person writes them.
    const byClass = (c: string) => rows.filter((r) => r[h('class')] === c);
    const [e1, e2] = byClass('E') as [string[], string[]];
    const [d1, d2, d3] = byClass('D') as [string[], string[], string[]];
    const candidateCount = (r: string[]) => header!.filter((name, i) => /^candidate_\d+_street$/.test(name) && r[i] !== '').length;
    expect(candidateCount(e1)).toBeGreaterThanOrEqual(2);
    const decide: [string[], string][] = [
      [e1, '2'],
      [d1, 'Keep'],
      [e2, 'invalid'],
      [d2, '2x'],
      [d3, String(candidateCount(d3) + 1)],
    ];
    const conflictRow = rows.find((r) => !decide.some(([d]) => d === r) && r[h('street')] !== '')!;
    decide.push([conflictRow, '1']);
    for (const [row, decision] of decide) row[h('decision')] = decision;
    // Saved back with LF and without a BOM: still applies.
    await writeFile(review, await writeToString([header!, ...rows], { rowDelimiter: '\n' }));

    // The cleaned file is edited after the export: the conflict row's street changes.
    const before = rawRows(await readFile(output, 'utf8'));
    const conflictLine = Number(conflictRow[0]);
    const editedRow = before.rows[conflictLine - 1]!.replace(`,${cleaned.rows[conflictLine - 1]![col('street')]},`, ',Edited Street,');
    expect(editedRow).not.toBe(before.rows[conflictLine - 1]);
    before.rows[conflictLine - 1] = editedRow;
    await writeFile(output, before.header + before.rows.join(''));

    const applied = join(dir, 'loop.applied.csv');
    const run = await runCli(['review', 'apply', '--input', review, '--output', output, '--to', applied]);
    expect(run.code, run.stderr).toBe(4);
    const summary = JSON.parse(run.stdout) as Record<string, any>;
    expect(summary).toMatchObject({
      event: 'review-apply',
      exitCode: 4,
      applied: 1,
      kept: 1,
      invalid: 1,
      conflicts: 1,
      bad: 2,
      undecided: rows.length - decide.length,
    });
    // The review file's lines (header = line 1, one line per row here) are named.
    const reviewLine = (r: string[]) => rows.indexOf(r) + 2;
    expect(summary.conflictRows).toEqual([expect.objectContaining({ reviewLine: reviewLine(conflictRow), row: conflictLine })]);
    expect(summary.conflictRows[0].reason).toMatch(/street is now "Edited Street"/);
    expect(summary.badDecisions.map((b: any) => [b.reviewLine, b.decision]).sort()).toEqual(
      [
        [reviewLine(d2), '2x'],
        [reviewLine(d3), String(candidateCount(d3) + 1)],
      ].sort(),
    );
    expect(run.stderr).toContain(`review line ${reviewLine(d2)}: bad decision "2x"`);
    expect(run.stderr).toContain(`review line ${reviewLine(conflictRow)}: conflict`);

    const after = rawRows(await readFile(applied, 'utf8'));
    expect(after.header).toBe(before.header);
    expect(after.rows.length).toBe(before.rows.length);
    const decided = new Map([
      [Number(e1[0]), e1],
      [Number(d1[0]), d1],
      [Number(e2[0]), e2],
    ]);
    after.rows.forEach((raw, i) => {
      if (!decided.has(i + 1)) expect(raw, `row ${i + 1}`).toBe(before.rows[i]);
    });
    const out = await readCsv(applied);
    const outRow = (r: string[]) => out.rows[Number(r[0]) - 1]!;
    // Input columns unchanged in the decided rows too.
    for (const r of decided.values()) expect(outRow(r).slice(0, COLUMNS.length)).toEqual(cleaned.rows[Number(r[0]) - 1]!.slice(0, COLUMNS.length));
    // Candidate 2: exactly the exported candidate 2's fields.
    const chosen = outRow(e1);
    for (const [field, column] of [
      ['street', 'dq_street'],
      ['house_number', 'dq_house_number'],
      ['postal_code', 'dq_postal_code'],
      ['locality', 'dq_locality'],
      ['sub_locality', 'dq_sub_locality'],
      ['country', 'dq_country'],
      ['address_type', 'dq_address_type'],
    ] as const) {
      expect(chosen[col(column)], column).toBe(e1[h(`candidate_2_${field}`)]);
    }
    expect(chosen[col('dq_status')]).toBe('accepted');
    expect(chosen[col('dq_result_class')]).toBe('E');
    expect(chosen[col('dq_review_decision')]).toBe('candidate 2');
    expect(outRow(d1)[col('dq_status')]).toBe('kept');
    expect(outRow(d1)[col('dq_review_decision')]).toBe('keep');
    expect(outRow(e2)[col('dq_status')]).toBe('invalid');
    expect(outRow(e2)[col('dq_review_decision')]).toBe('invalid');
    // The cleaned file itself is untouched, and --to may not be it.
    expect(await readFile(output, 'utf8')).toBe(before.header + before.rows.join(''));
    const inPlace = await runCli(['review', 'apply', '--input', review, '--output', output, '--to', output]);
    expect(inPlace.code).toBe(2);
    expect(inPlace.stderr).toMatch(/path-conflict: --to .* is the cleaned file/);
    expect(input).not.toBe(output);
  });

  it('applies a review file re-saved by a spreadsheet: CRLF, every cell quoted, BOM or not, ; or tab, UTF-16; neutralised values restored exactly', async () => {
    const { output } = await validate('sheet', addressCsv(160), '--country', 'DE');
    const review = join(dir, 'sheet.review.csv');
    expect((await runCli(['review', 'export', '--input', output, '--output', review])).code).toBe(0);
    const [header, ...rows] = await parseCsvText(await readFile(review, 'utf8'));
    const h = (name: string) => header!.indexOf(name);
    const formula = rows.find((r) => r[h('note')]!.startsWith("'="))!;
    const apostrophe = rows.find((r) => r[h('note')] === "''quoted")!;
    expect(formula, 'a review row with a formula-like note').toBeDefined();
    expect(apostrophe, "a review row with a note starting with '").toBeDefined();
    formula[h('decision')] = '1';
    apostrophe[h('decision')] = 'keep';
    const cleanedText = await readFile(output, 'utf8');
    const saves = [
      { name: 'utf8-bom', delimiter: ',', bom: true, utf16: false },
      { name: 'utf8-semicolon', delimiter: ';', bom: false, utf16: false },
      { name: 'utf16-tab', delimiter: '\t', bom: false, utf16: true }, // a spreadsheet's "Unicode text"
    ];
    for (const save of saves) {
      const text = await writeToString([header!, ...rows], {
        rowDelimiter: '\r\n',
        quoteColumns: true,
        quoteHeaders: true,
        writeBOM: save.bom,
        delimiter: save.delimiter,
      });
      await writeFile(review, save.utf16 ? Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]) : text);
      const applied = join(dir, `sheet.applied.${save.name}.csv`);
      const run = await runCli(['review', 'apply', '--input', review, '--output', output, '--to', applied]);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ applied: 1, kept: 1, conflicts: 0, bad: 0 });
      const out = await readCsv(applied);
      const row = out.rows[Number(formula[0]) - 1]!;
      expect(row[1]).toBe('=SUM(A1:A9)');
      expect(row[out.header.indexOf('dq_status')]).toBe('accepted');
      expect(out.rows[Number(apostrophe[0]) - 1]![1]).toBe("'quoted");
      // Only the two decided rows differ from the cleaned file.
      const a = rawRows(await readFile(applied, 'utf8')).rows;
      const b = rawRows(cleanedText).rows;
      expect(a.filter((line, i) => line !== b[i]).length).toBe(2);
    }
  });

  it('a review file a spreadsheet saved as plain "CSV" (Windows-1252, ;) is refused whole, nothing written, naming --encoding; with --encoding windows-1252 it applies as the UTF-8 file does', async () => {
    const { output } = await validate('ansi', addressCsv(160), '--country', 'DE');
    const review = join(dir, 'ansi.review.csv');
    expect((await runCli(['review', 'export', '--input', output, '--output', review])).code).toBe(0);
    const [header, ...rows] = await parseCsvText(await readFile(review, 'utf8'));
    const decision = header!.indexOf('decision');
    // Decisions on rows with letters beyond ASCII (ß, ü, …), which Windows-1252 writes as one byte each.
    const accented = rows.filter((r) => r.some((cell) => /[^\x00-\x7f]/.test(cell)));
    expect(accented.length, 'review rows with non-ASCII letters').toBeGreaterThanOrEqual(2);
    accented[0]![decision] = 'keep';
    accented[1]![decision] = '1';
    const text = await writeToString([header!, ...rows], { rowDelimiter: '\r\n', delimiter: ';' });
    expect(/[^\x00-\xff]/.test(text), 'every character has a Windows-1252 byte of its own').toBe(false);
    const utf8Review = join(dir, 'ansi.review.utf8.csv');
    await writeFile(utf8Review, text);
    await writeFile(review, Buffer.from(text, 'latin1'));

    const refusedTo = join(dir, 'ansi.refused.csv');
    const refused = await runCli(['review', 'apply', '--input', review, '--output', output, '--to', refusedTo]);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(
      /^dq-csv: review-file: the review file .* is not UTF-8 \(line \d+\): .*pass --encoding windows-1252 .*; nothing was written\n$/,
    );
    await expect(readFile(refusedTo)).rejects.toMatchObject({ code: 'ENOENT' });

    const fromAnsi = join(dir, 'ansi.applied.csv');
    const ansi = await runCli(['review', 'apply', '--input', review, '--output', output, '--to', fromAnsi, '--encoding', 'windows-1252']);
    expect(ansi.code, ansi.stderr).toBe(0);
    expect(JSON.parse(ansi.stdout)).toMatchObject({ applied: 1, kept: 1, conflicts: 0, bad: 0 });
    const fromUtf8 = join(dir, 'ansi.applied.utf8.csv');
    expect((await runCli(['review', 'apply', '--input', utf8Review, '--output', output, '--to', fromUtf8])).code).toBe(0);
    expect(await readFile(fromAnsi)).toEqual(await readFile(fromUtf8));
  });

  it('applies a review file whose values a spreadsheet reformatted (leading zeros gone, dates and long numbers rewritten); a row really changed since the export is still a conflict', async () => {
    // Inputs as a CRM export has them: ids and postal codes with leading zeros, a date, a long
    // customer number; the review rows of the sandbox's labelled D and E inputs.
    const inputs = generateDirtyInputs(160, { seed: 5, country: 'DE' }).filter((d) => ['D', 'E'].includes(d.intendedClass));
    const csv = [
      'id,street,houseNumber,postalCode,locality,country,since,customer',
      ...inputs.map((d, i) => {
        const input = d.input as unknown as Record<string, string | undefined>;
        const postal = `0${(input['postalCode'] ?? '').slice(1)}`; // Saxony and Thuringia: 0xxxx
        return [
          `00${i + 1}`,
          input['street'] ?? '',
          input['houseNumber'] ?? '',
          postal,
          input['locality'] ?? '',
          'DE',
          '2019-11-12',
          `4917012345${String(i).padStart(3, '0')}`,
        ]
          .map((v) => (/[",]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v))
          .join(',');
      }),
    ].join('\n');
    const { output } = await validate('reformatted', `${csv}\n`);
    const review = join(dir, 'reformatted.review.csv');
    expect((await runCli(['review', 'export', '--input', output, '--output', review])).code).toBe(0);
    const [header, ...rows] = await parseCsvText(await readFile(review, 'utf8'));
    expect(rows.length, 'review rows').toBeGreaterThanOrEqual(4);
    const decision = header!.indexOf('decision');
    for (const row of rows) row[decision] = 'keep';
    // The untouched file, for comparison.
    await writeFile(review, await writeToString([header!, ...rows], { rowDelimiter: '\r\n', writeBOM: true }));
    const asExported = join(dir, 'reformatted.as-exported.csv');
    const plain = await runCli(['review', 'apply', '--input', review, '--output', output, '--to', asExported]);
    expect(plain.code, plain.stderr).toBe(0);
    // What a spreadsheet in a German locale saves: numbers without leading zeros, long numbers in
    // scientific notation, dates as it shows them, ';' between cells.
    const saved = rows.map((row) =>
      row.map((cell, i) => {
        if (i === decision) return cell;
        if (/^\d{12,}$/.test(cell)) return Number(cell).toExponential(5).replace('.', ',').replace('e+', 'E+');
        if (/^\d+$/.test(cell)) return String(Number(cell));
        const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(cell);
        return date ? `${date[3]}.${date[2]}.${date[1]}` : cell;
      }),
    );
    const postal = header!.indexOf('postalCode');
    expect(rows[0]![postal]).toMatch(/^0/);
    expect(saved[0]![postal]).not.toMatch(/^0/);
    // One row edited in the cleaned file after the export: its street, which the file does not show changed.
    const cleaned = await readFile(output, 'utf8');
    const edited = Number(rows[1]![0]);
    const lines = cleaned.split('\n');
    const street = rows[1]![header!.indexOf('street')]!;
    lines[edited] = lines[edited]!.replace(street, `${street} Nord`);
    await writeFile(output, lines.join('\n'));
    await writeFile(review, await writeToString([header!, ...saved], { rowDelimiter: '\r\n', delimiter: ';', writeBOM: true }));
    const applied = join(dir, 'reformatted.applied.csv');
    const run = await runCli(['review', 'apply', '--input', review, '--output', output, '--to', applied]);
    expect(run.code, run.stderr).toBe(4);
    expect(JSON.parse(run.stdout)).toMatchObject({ kept: rows.length - 1, conflicts: 1, bad: 0 });
    expect(run.stderr).toContain(`row ${edited} of the cleaned file changed since the export`);
    // Every other row as applying the untouched file made it.
    const a = rawRows(await readFile(applied, 'utf8')).rows;
    const b = rawRows(await readFile(asExported, 'utf8')).rows;
    expect(a.filter((line, i) => line !== b[i]).map((_, i) => i)).toHaveLength(1);
  });

  it('company mode: exports every hit of an ambiguous search and writes the chosen one into the dq_company_ columns', async () => {
    const byName = new Map<string, { id: number; company: string; zip: number }[]>();
    for (const c of createCompanyService({ seed: 1 }).companies) if (c.trStatus === 'active') byName.set(c.company, [...(byName.get(c.company) ?? []), c]);
    const [a, b] = [...byName.values()].find((same) => same.length === 2) ?? [];
    if (a === undefined || b === undefined) throw new Error('the register has no two active companies of one name');
    const { output } = await validate(
      'company',
      `name;plz\n${a.company};\n${b.company};${b.zip}\n`,
      '--delimiter',
      ';',
      '--mode',
      'company',
      '--map',
      'company=name,zip=plz',
    );
    // Saved once with CRLF line ends (as an editor may): apply keeps each row's own terminator.
    await writeFile(output, (await readFile(output, 'utf8')).replaceAll('\n', '\r\n'));
    const review = join(dir, 'company.review.csv');
    const exported = await runCli(['review', 'export', '--input', output, '--output', review]);
    expect(exported.code, exported.stderr).toBe(0);
    const [header, ...rows] = await parseCsvText(await readFile(review, 'utf8'));
    expect(rows.length).toBe(1);
    const h = (name: string) => header!.indexOf(name);
    expect(header!.slice(0, 3)).toEqual(['line', 'name', 'plz']);
    expect(header).toEqual(
      expect.arrayContaining([
        'candidate_1_company_id',
        'candidate_1_name',
        'candidate_1_street',
        'candidate_1_zip',
        'candidate_1_city',
        'candidate_2_company_id',
      ]),
    );
    const row = rows[0]!;
    row[h('decision')] = '2';
    await writeFile(review, await writeToString([header!, ...rows], { rowDelimiter: '\r\n', writeBOM: true }));
    const applied = join(dir, 'company.applied.csv');
    const run = await runCli(['review', 'apply', '--input', review, '--output', output, '--to', applied]);
    expect(run.code, run.stderr).toBe(0);
    const out = await readCsv(applied, { delimiter: ';' });
    const chosen = out.rows[0]!;
    const c = (name: string) => chosen[out.header.indexOf(name)];
    expect(c('dq_status')).toBe('accepted');
    expect(c('dq_company_id')).toBe(row[h('candidate_2_company_id')]);
    expect(c('dq_company_name')).toBe(row[h('candidate_2_name')]);
    expect(c('dq_company_zip')).toBe(row[h('candidate_2_zip')]);
    expect(c('dq_company_city')).toBe(row[h('candidate_2_city')]);
    expect(c('dq_company_street')).toBe(row[h('candidate_2_street')]);
    expect(c('dq_review_decision')).toBe('candidate 2');
    const [decidedRow, otherRow] = rawRows(await readFile(applied, 'utf8')).rows as [string, string];
    expect(otherRow).toBe(rawRows(await readFile(output, 'utf8')).rows[1]);
    expect(decidedRow.endsWith(';candidate 2\r\n')).toBe(true);
  });

  for (const format of ['ndjson', 'json'] as const) {
    it(`${format} output: exports the review rows and applies decisions to the decided lines only`, async () => {
      const objects = generateDirtyInputs(120, { seed: 5, country: 'DE' })
        .filter((d) => ['A', 'D', 'E'].includes(d.intendedClass))
        .map((d, i) => ({ id: i + 1, note: NOTES[i % NOTES.length], ...d.input }));
      const input = join(dir, `objects.${format}`);
      const output = join(dir, `objects.out.${format}`);
      await writeFile(input, format === 'ndjson' ? objects.map((o) => JSON.stringify(o)).join('\n') + '\n' : JSON.stringify(objects, null, 1));
      const run = await runCli(['validate', '--input', input, '--output', output, '--country', 'DE'], sandbox.env());
      expect(run.code, run.stderr).toBe(0);
      const review = join(dir, `objects.${format}.review.csv`);
      const exported = await runCli(['review', 'export', '--input', output, '--output', review]);
      expect(exported.code, exported.stderr).toBe(0);
      const [header, ...rows] = await parseCsvText(await readFile(review, 'utf8'));
      const h = (name: string) => header!.indexOf(name);
      expect(header!.slice(0, 3)).toEqual(['line', 'id', 'note']);
      const e = rows.find((r) => r[h('class')] === 'E' && r[h('candidate_2_street')] !== '')!;
      const d = rows.find((r) => r[h('class')] === 'D')!;
      e[h('decision')] = '2';
      d[h('decision')] = 'keep';
      await writeFile(review, await writeToString([header!, ...rows], { rowDelimiter: '\r\n', writeBOM: true }));
      const applied = join(dir, `objects.applied.${format}`);
      const done = await runCli(['review', 'apply', '--input', review, '--output', output, '--to', applied]);
      expect(done.code, done.stderr).toBe(0);
      expect(JSON.parse(done.stdout)).toMatchObject({ applied: 1, kept: 1, conflicts: 0, bad: 0 });
      const before = (await readFile(output, 'utf8')).split('\n');
      const after = (await readFile(applied, 'utf8')).split('\n');
      expect(after.length).toBe(before.length);
      const offset = format === 'json' ? 1 : 0; // the line holding "["
      const changed = after.map((line, i) => (line === before[i] ? -1 : i - offset + 1)).filter((i) => i > 0);
      expect(changed.sort((a, b) => a - b)).toEqual([Number(e[0]), Number(d[0])].sort((a, b) => a - b));
      const elements =
        format === 'json'
          ? (JSON.parse(after.join('\n')) as Record<string, unknown>[])
          : after.filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
      const chosen = elements[Number(e[0]) - 1]!;
      expect(chosen).toMatchObject({
        id: Number(e[h('id')]),
        dq_status: 'accepted',
        dq_review_decision: 'candidate 2',
        dq_street: e[h('candidate_2_street')],
        dq_postal_code: e[h('candidate_2_postal_code')],
        dq_locality: e[h('candidate_2_locality')],
      });
      expect(elements[Number(d[0]) - 1]).toMatchObject({ dq_status: 'kept', dq_review_decision: 'keep' });
    });
  }

  it("--spreadsheet-safe output: the chosen candidate's formula-like values are written behind a ', like the rest of the file; a mismatch is refused", async () => {
    const platform = await formulaPlatform(sandbox.url);
    const env = { ...sandbox.env(), DQ_BASE_URL: platform.url, DQ_REALTIME_URL: platform.url };
    const run = async (name: string, ...more: string[]) => {
      const input = join(dir, `${name}.csv`);
      const output = join(dir, `${name}.out.csv`);
      await writeFile(input, addressCsv(160));
      const done = await runCli(['validate', '--input', input, '--output', output, '--country', 'DE', ...more], env);
      expect(done.code, done.stderr).toBe(0);
      return output;
    };
    let safeOutput: string;
    let plainOutput: string;
    try {
      safeOutput = await run('safe', '--spreadsheet-safe');
      plainOutput = await run('plain');
    } finally {
      await platform.close();
    }
    const cleaned = await readCsv(safeOutput);
    const col = (name: string) => cleaned.header.indexOf(name);
    // What the sink wrote: every formula-like cell behind a ', the streets the platform answered included.
    expect(cleaned.rows.some((r) => r[col('dq_street')]!.startsWith("'="))).toBe(true);
    for (const row of cleaned.rows) for (const cell of row) expect(cell).not.toMatch(FORMULA_START);

    const review = join(dir, 'safe.review.csv');
    const exported = await runCli(['review', 'export', '--input', safeOutput, '--output', review]);
    expect(exported.code, exported.stderr).toBe(0);
    const [header, ...rows] = await parseCsvText(await readFile(review, 'utf8'));
    const h = (name: string) => header!.indexOf(name);
    const e = rows.find((r) => r[h('class')] === 'E' && r[h('candidate_2_street')] !== '')!;
    const d = rows.find((r) => r[h('class')] === 'D')!;
    e[h('decision')] = '2';
    d[h('decision')] = 'keep';
    await writeFile(review, await writeToString([header!, ...rows], { rowDelimiter: '\r\n', writeBOM: true }));

    const applied = join(dir, 'safe.applied.csv');
    const done = await runCli(['review', 'apply', '--input', review, '--output', safeOutput, '--to', applied, '--spreadsheet-safe']);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ applied: 1, kept: 1, conflicts: 0, bad: 0 });
    const out = await readCsv(applied);
    const chosen = out.rows[Number(e[0]) - 1]!;
    // The review file shows candidate 2's street behind its own ' (the review file's), which apply takes off: "'=…" there is "=…".
    const street = e[h('candidate_2_street')]!.replace(/^'/, '');
    expect(street.startsWith('=')).toBe(true);
    expect(chosen[col('dq_street')]).toBe(`'${street}`);
    expect(chosen[col('dq_status')]).toBe('accepted');
    for (const row of out.rows) for (const cell of row) expect(cell).not.toMatch(FORMULA_START);
    // Every undecided row byte for byte.
    const before = rawRows(await readFile(safeOutput, 'utf8'));
    const after = rawRows(await readFile(applied, 'utf8'));
    expect(after.header).toBe(before.header);
    const changed = after.rows.map((line, i) => (line === before.rows[i] ? 0 : i + 1)).filter((i) => i > 0);
    expect(changed.sort((a, b) => a - b)).toEqual([Number(e[0]), Number(d[0])].sort((a, b) => a - b));

    // The flag and the file must agree: each mismatch is refused before anything is written.
    const unflagged = await runCli(['review', 'apply', '--input', review, '--output', safeOutput, '--to', join(dir, 'safe.unflagged.csv')]);
    expect(unflagged.code).toBe(2);
    expect(unflagged.stderr).toMatch(
      /^dq-csv: usage: --spreadsheet-safe: .*safe\.out\.csv looks written with --spreadsheet-safe \(row \d+, column \w+, holds .*\): pass --spreadsheet-safe to review apply/,
    );
    const plainReview = join(dir, 'plain.review.csv');
    expect((await runCli(['review', 'export', '--input', plainOutput, '--output', plainReview])).code).toBe(0);
    const flagged = await runCli([
      'review',
      'apply',
      '--input',
      plainReview,
      '--output',
      plainOutput,
      '--to',
      join(dir, 'plain.flagged.csv'),
      '--spreadsheet-safe',
    ]);
    expect(flagged.code).toBe(2);
    expect(flagged.stderr).toMatch(
      /^dq-csv: usage: --spreadsheet-safe: .*plain\.out\.csv was not written with --spreadsheet-safe \(row \d+, column \w+, holds "[=+\-@]/,
    );
    await expect(readFile(join(dir, 'safe.unflagged.csv'))).rejects.toThrow();
    await expect(readFile(join(dir, 'plain.flagged.csv'))).rejects.toThrow();
  });

  it('--spreadsheet-safe output with negative coordinates (numbers, never behind a quote): apply takes it as the safe file it is', async () => {
    const negate = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(negate);
      if (value === null || typeof value !== 'object') return value;
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, (k === 'lat' || k === 'lon') && typeof v === 'number' ? -v : negate(v)]));
    };
    const platform = await rewritingPlatform(sandbox.url, negate);
    const input = join(dir, 'west.csv');
    const output = join(dir, 'west.out.csv');
    await writeFile(input, addressCsv(160));
    try {
      const done = await runCli(['validate', '--input', input, '--output', output, '--country', 'DE', '--include', 'coordinates-wgs84', '--spreadsheet-safe'], {
        ...sandbox.env(),
        DQ_BASE_URL: platform.url,
      });
      expect(done.code, done.stderr).toBe(0);
    } finally {
      await platform.close();
    }
    const cleaned = await readCsv(output);
    expect(cleaned.rows.some((r) => r[cleaned.header.indexOf('dq_longitude')]!.startsWith('-'))).toBe(true);
    const review = join(dir, 'west.review.csv');
    expect((await runCli(['review', 'export', '--input', output, '--output', review])).code).toBe(0);
    const [header, ...rows] = await parseCsvText(await readFile(review, 'utf8'));
    rows[0]![header!.indexOf('decision')] = 'keep';
    await writeFile(review, await writeToString([header!, ...rows], { rowDelimiter: '\r\n', writeBOM: true }));
    const applied = await runCli(['review', 'apply', '--input', review, '--output', output, '--to', join(dir, 'west.applied.csv'), '--spreadsheet-safe']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(JSON.parse(applied.stdout)).toMatchObject({ kept: 1, bad: 0 });
  });

  it('refuses to export or apply the output of a run that has not finished (its checkpoint left), exit 2', async () => {
    const input = join(dir, 'unfinished.csv');
    const output = join(dir, 'unfinished.out.csv');
    await writeFile(input, addressCsv(20));
    sandbox.setFaults({ batch: { errorRate: 1, errorStatuses: [503] } });
    try {
      const run = await runCli(['validate', '--input', input, '--output', output, '--country', 'DE'], sandbox.env());
      expect(run.code, run.stderr).toBe(75);
    } finally {
      sandbox.setFaults({});
    }
    const exported = await runCli(['review', 'export', '--input', output, '--output', join(dir, 'unfinished.review.csv')]);
    expect(exported.code).toBe(2);
    expect(exported.stderr).toMatch(/the dq-csv validate run writing .*unfinished\.out\.csv has not finished \(.* is there\): finish it with --resume first/);
    const applied = await runCli(['review', 'apply', '--input', join(dir, 'loop.review.csv'), '--output', output, '--to', join(dir, 'unfinished.applied.csv')]);
    expect(applied.code).toBe(2);
    expect(applied.stderr).toContain('has not finished');
    const help = await runCli(['review', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('dq-csv review apply --input <review.csv> --output <cleaned file> --to <new file>');
  });
});
