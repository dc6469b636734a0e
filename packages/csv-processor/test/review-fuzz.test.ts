import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { formatCsvLine, restoreCell } from '@dq/core/review';
import { generateDirtyInputs } from '@dq/sandbox';
import { rewritingPlatform } from '@dq/test-support/platform';
import { seededRandom, type Rand } from '@dq/test-support/random';
import {
  EXCEL,
  formatCsv as formatCsvAs,
  hostileText,
  parseCsv,
  randomDecision as randomDecisionOf,
  saveReview,
  type Expected as ReviewExpected,
  type Save,
} from '@dq/test-support/spreadsheet';
import { beforeAll, describe, expect, it } from 'vitest';
import { readCsv, runCli, unlimited, useSandbox, useTempDir } from './helpers.js';
import { noStackTrace, randomSave } from './review-fuzz-support.js';

/*
 * The review round trip (validate → review export → a spreadsheet → review apply) with hostile
 * values and the ways spreadsheets save a file, drawn from seeds: the CLI from dist/, the sandbox
 * over real HTTP (behind a proxy that answers hostile street and locality names), real files.
 * Every draw is checked against the invariant: a decided row gets exactly the chosen candidate's
 * fields from the cleaned file (or keeps its values), every other row and cell stays as it was, and
 * every row of the review file is applied, kept, invalid, a conflict, a bad decision named with its
 * line, or left for later. REVIEW_FUZZ_SCALE=n runs n times as many seeds.
 */

const dir = useTempDir();
const sandbox = useSandbox(unlimited());

/**
 * The file as `save` writes it; a row with a line break in a cell keeps its empty cells at the end:
 * dq-csv's reader takes a multi-line record for one row only when it has the header's width (else
 * its quote is read as a stray one).
 */
const formatCsv = (rows: readonly (readonly string[])[], save: Save): string => formatCsvAs(rows, save, true);

type Expected = ReviewExpected<'undecided'>;

/** A decision cell as a person (or a spreadsheet) writes it, and what it must come to. */
const randomDecision = (r: Rand, count: number) => randomDecisionOf(r, count, 'undecided', 'does not exist');

// ---------------------------------------------------------------------------------------------
// A platform answering hostile names

/**
 * The sandbox behind a proxy (real HTTP both ways) that answers every street and locality with a
 * hostile value (drawn from `seed`), as a platform may return any text.
 */
async function hostilePlatform(upstream: string, seed: number): Promise<{ url: string; close: () => Promise<void> }> {
  const r = seededRandom(seed);
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, (k === 'street' || k === 'locality') && typeof v === 'string' && r.chance(0.5) ? hostileText(r) : rewrite(v)]),
    );
  };
  return rewritingPlatform(upstream, rewrite);
}

const INPUT_COLUMNS = ['id', 'note', 'street', 'houseNumber', 'postalCode', 'locality', 'country', 'memo'] as const;

/** An input CSV of the sandbox's labelled D and E inputs (and some A), with hostile notes and memos. */
function hostileInput(r: Rand): string {
  const rows = generateDirtyInputs(200, { seed: 5, country: 'DE' }).filter((d) => ['A', 'D', 'E'].includes(d.intendedClass));
  const lines = rows.map((d, i) => {
    const input = d.input as unknown as Record<string, string | undefined>;
    return INPUT_COLUMNS.map((c) => (c === 'id' ? String(i + 1) : c === 'note' || c === 'memo' ? hostileText(r) : (input[c] ?? '')));
  });
  return [INPUT_COLUMNS.join(','), ...lines.map((cells) => formatCsvLine(cells, ',').slice(0, -1))].join('\n') + '\n';
}

/** The cleaned file validate wrote through the hostile platform. */
let cleaned: string;
beforeAll(async () => {
  const platform = await hostilePlatform(sandbox.url, 1);
  try {
    const input = join(dir, 'hostile.csv');
    cleaned = join(dir, 'hostile.out.csv');
    await writeFile(input, hostileInput(seededRandom(1)));
    const env = { ...sandbox.env(), DQ_BASE_URL: platform.url, DQ_REALTIME_URL: platform.url };
    const run = await runCli(['validate', '--input', input, '--output', cleaned, '--country', 'DE'], env);
    expect(run.code, run.stderr).toBe(0);
  } finally {
    await platform.close();
  }
  // The review rows' candidates hold what the proxy answered: formula-like names, line breaks.
  const { header, rows } = await readCsv(cleaned);
  const candidates = rows.filter((r) => r[header.indexOf('dq_status')] === 'review').map((r) => r[header.indexOf('dq_review_candidates')]!);
  expect(candidates.some((c) => /"street":"[=+\-@\t\r]/.test(c))).toBe(true);
  expect(candidates.some((c) => /"(street|locality)":"[^"]*\\n/.test(c))).toBe(true);
}, 60_000);

/** The cleaned file copied to `name`, its review file exported, read back: header and rows. */
async function exported(name: string): Promise<{ output: string; file: string; header: string[]; rows: string[][] }> {
  const output = join(dir, `${name}.out.csv`);
  await copyFile(cleaned, output);
  const file = join(dir, `${name}.review.csv`);
  const run = await runCli(['review', 'export', '--input', output, '--output', file]);
  expect(run.code, run.stderr).toBe(0);
  const [header, ...rows] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
  return { output, file, header: header!, rows };
}

/** As a spreadsheet saves it: BOM, CRLF, quotes where needed. */
describe('dq-csv review apply reads what spreadsheets save', () => {
  it('a candidate number with a leading zero (02, as a text cell keeps it) is that candidate', async () => {
    const { output, file, header, rows } = await exported('zero');
    const row = rows.find((r) => r[header.indexOf('candidate_2_street')] !== '' || r[header.indexOf('candidate_2_locality')] !== '')!;
    expect(row, 'a review row with two candidates').toBeDefined();
    row[header.indexOf('decision')] = '02';
    await writeFile(file, formatCsv([header, ...rows], EXCEL));
    const to = join(dir, 'zero.applied.csv');
    const run = await runCli(['review', 'apply', '--input', file, '--output', output, '--to', to]);
    noStackTrace(run);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ applied: 1, bad: 0 });
    const applied = await readCsv(to);
    expect(applied.rows[Number(row[0]) - 1]![applied.header.indexOf('dq_review_decision')]).toBe('candidate 2');
  });

  it('rows whose empty cells at the end a spreadsheet left out are read with those cells empty', async () => {
    const { output, file, header, rows } = await exported('short');
    const decided = rows[0]!;
    decided[header.indexOf('decision')] = 'keep';
    // Every row saved without its empty cells at the end: undecided rows lose their decision cell.
    await writeFile(file, formatCsv([header, ...rows], { ...EXCEL, dropTrailing: true }));
    expect(
      rows.some((r) => !r.some((v) => /[\r\n]/.test(v)) && r.at(-1) === ''),
      'an undecided row to leave its cells out',
    ).toBe(true);
    const to = join(dir, 'short.applied.csv');
    const run = await runCli(['review', 'apply', '--input', file, '--output', output, '--to', to]);
    noStackTrace(run);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ kept: 1, bad: 0, undecided: rows.length - 1 });
  });

  it('a decision written a column too far (an empty column the spreadsheet added) is named, not left undecided unsaid', async () => {
    const { output, file, header, rows } = await exported('spill');
    const [spilled, noted] = rows.filter((r) => !r.some((v) => /[\r\n]/.test(v))) as [string[], string[]];
    noted[header.indexOf('decision')] = 'keep';
    // The spreadsheet saves the used range: every row one column wider, the header's cell empty.
    const lines = [[...header, ''], ...rows.map((r) => [...r, r === spilled ? '2' : r === noted ? 'checked by A. Jones' : ''])];
    await writeFile(file, formatCsv(lines, EXCEL));
    const to = join(dir, 'spill.applied.csv');
    const run = await runCli(['review', 'apply', '--input', file, '--output', output, '--to', to]);
    noStackTrace(run);
    expect(run.code, run.stderr).toBe(4);
    expect(JSON.parse(run.stdout)).toMatchObject({ applied: 0, kept: 0, bad: 2, undecided: rows.length - 2 });
    const lineOf = (r: string[]) => rows.indexOf(r) + 2 + rows.slice(0, rows.indexOf(r)).reduce((n, x) => n + (x.join('').match(/\n/g)?.length ?? 0), 0);
    expect(run.stderr).toContain(`review line ${lineOf(spilled)}: bad decision, skipped: cell ${header.length + 1} ("2") is in no named column`);
    expect(run.stderr).toContain(
      `review line ${lineOf(noted)}: bad decision "keep", skipped: cell ${header.length + 1} ("checked by A. Jones") is in no named column`,
    );
  });
});

describe('dq-csv review round trip, fuzzed', () => {
  it('hostile values, spreadsheet saves, decisions, rows changed meanwhile: each row applied exactly, or named', async () => {
    const scale = Number(process.env['REVIEW_FUZZ_SCALE'] ?? 1);
    for (let seed = 1; seed <= 8 * scale; seed++) await fuzzCase(seed);
  }, 120_000);
});

async function fuzzCase(seed: number): Promise<void> {
  const r = seededRandom(seed);
  const where = `seed ${seed}`;
  const output = join(dir, `fz-${seed}.out.csv`);
  await copyFile(cleaned, output);
  const { header: names, rows: cleanedRows } = await readCsv(output);
  const at = (name: string) => names.indexOf(name);

  // Export: every cell shows its value exactly once the leading ' is taken off.
  const file = join(dir, `fz-${seed}.review.csv`);
  const exported = await runCli(['review', 'export', '--input', output, '--output', file]);
  noStackTrace(exported);
  expect(exported.code, `${where}: ${exported.stderr}`).toBe(0);
  const text = await readFile(file, 'utf8');
  expect(text.startsWith('\uFEFF'), where).toBe(true);
  const [header, ...rows] = parseCsv(text.slice(1), ',');
  const col = (name: string) => header!.indexOf(name);
  const candidatesOf = (row: number) => JSON.parse(cleanedRows[row - 1]![at('dq_review_candidates')]!) as Record<string, unknown>[];
  expect(rows.length, where).toBe(cleanedRows.filter((c) => c[at('dq_status')] === 'review' && ['D', 'E'].includes(c[at('dq_result_class')]!)).length);
  for (const row of rows) {
    expect(row.length, where).toBe(header!.length);
    const n = Number(row[0]);
    INPUT_COLUMNS.forEach((c) => expect(restoreCell(row[col(c)]!), `${where}: row ${n} ${c}`).toBe(cleanedRows[n - 1]![at(c)]));
    candidatesOf(n).forEach((cand, k) => {
      for (const [field, suffix] of [
        ['street', 'street'],
        ['locality', 'locality'],
        ['houseNumber', 'house_number'],
      ] as const)
        expect(restoreCell(row[col(`candidate_${k + 1}_${suffix}`)]!), `${where}: row ${n} candidate ${k + 1} ${field}`).toBe(
          (cand[field] as string | undefined) ?? '',
        );
    });
  }

  // Decisions, a duplicate, a row number the cleaned file does not have; rows changed in the cleaned file meanwhile.
  const expected = new Map<string[], { row: number; expected: Expected }>();
  for (const row of rows) {
    const n = Number(row[0]);
    const d = randomDecision(r, candidatesOf(n).length);
    row[col('decision')] = d.cell;
    expected.set(row, { row: n, expected: d.expected });
  }
  // A person's edits of the candidate cells change nothing: the candidate written is the one the cleaned file holds.
  for (const [row, { expected: e }] of expected) if (e.kind === 'applied' && r.chance(0.3)) row[col(`candidate_${e.n}_street`)] += ' (corrected)';
  const decided = rows.filter((row) => ['applied', 'kept', 'invalid'].includes(expected.get(row)!.expected.kind));
  const duplicated = decided.length > 0 && r.chance(0.5) ? r.pick(decided) : undefined;
  const copy = duplicated ? [...duplicated] : undefined;
  if (copy) {
    copy[col('decision')] = 'keep';
    expected.set(copy, { row: Number(copy[0]), expected: { kind: 'bad', message: 'is decided on review line' } });
  }
  const stranger = r.chance(0.5) ? [...rows[0]!] : undefined;
  if (stranger) {
    stranger[0] = String(cleanedRows.length + 5);
    stranger[col('decision')] = 'keep';
    expected.set(stranger, { row: cleanedRows.length + 5, expected: { kind: 'conflict' } });
  }
  // A decision written a column too far, or a note next to it: named, never left undecided unsaid.
  // (Not on a row with a line break in a cell: a multi-line record wider than the header is read as a stray quote.)
  const single = rows.filter((row) => row !== duplicated && !row.some((v) => /[\r\n]/.test(v)));
  const spill = single.length > 0 && r.chance(0.5) ? r.pick(single) : undefined;
  const spilled = spill ? (r.chance(0.5) ? spill[col('decision')]!.trim() || 'keep' : 'checked by A. Jones') : '';
  if (spill) {
    if (spilled !== 'checked by A. Jones') spill[col('decision')] = '';
    expected.get(spill)!.expected = { kind: 'bad', message: 'is in no named column' };
  }
  const changed = decided.filter((row) => row !== duplicated && row !== spill && r.chance(0.25));
  for (const row of changed) {
    const cells = cleanedRows[Number(row[0]) - 1]!;
    cells[at('memo')] = `${cells[at('memo')]} edited`;
    expected.get(row)!.expected = { kind: 'conflict' };
  }
  if (changed.length > 0) await writeFile(output, [names, ...cleanedRows].map((cells) => formatCsvLine(cells, ',')).join(''));
  const before = await readCsv(output);

  // Saved by a spreadsheet.
  const save = randomSave(r);
  const {
    text: saved,
    lines,
    origin,
  } = saveReview(r, save, {
    header: header!,
    rows,
    decision: col('decision'),
    expected,
    duplicate: copy && { copy, duplicated: duplicated!, message: 'is decided on review line' },
    stranger,
    spill: spill && { row: spill, cell: spilled },
    multiLineWhole: true,
  });
  await writeFile(file, saved);
  // The line of the review file each row starts on (the header is line 1; a line feed in a cell starts another line).
  const lineOf = new Map<string[], number>();
  let line = 1;
  lines.forEach((cells, i) => {
    if (origin[i]) lineOf.set(origin[i]!, line);
    line += 1 + (cells.join('').match(/\n/g)?.length ?? 0);
  });
  const lineOfRow = (row: string[]) => lineOf.get(row);

  // Apply.
  const to = join(dir, `fz-${seed}.applied.csv`);
  const applied = await runCli(['review', 'apply', '--input', file, '--output', output, '--to', to]);
  const context = `${where} (${JSON.stringify(save)}): exit ${applied.code}\n${applied.stderr}`;
  noStackTrace(applied);
  const outcomes = [...expected.values()];
  const count = (kind: Expected['kind']) => outcomes.filter((o) => o.expected.kind === kind).length;
  const summary = JSON.parse(applied.stdout) as Record<string, unknown>;
  expect(
    {
      applied: summary['applied'],
      kept: summary['kept'],
      invalid: summary['invalid'],
      conflicts: summary['conflicts'],
      bad: summary['bad'],
      undecided: summary['undecided'],
    },
    context,
  ).toEqual({
    applied: count('applied'),
    kept: count('kept'),
    invalid: count('invalid'),
    conflicts: count('conflict'),
    bad: count('bad'),
    undecided: count('undecided'),
  });
  expect(applied.code, context).toBe(count('bad') + count('conflict') > 0 ? 4 : 0);
  for (const [row, { expected: e }] of expected) {
    if (e.kind !== 'bad') continue;
    const named = applied.stderr.split('\n').find((l) => l.startsWith(`dq-csv: review line ${lineOfRow(row)}: bad decision`));
    expect(named, `${context}\nthe bad decision on line ${lineOfRow(row)} is named`).toBeDefined();
    expect(named, context).toContain(e.message);
  }

  // The new file: decided rows hold the chosen candidate's fields exactly (or their values), every other cell as it was.
  const after = await readCsv(to);
  expect(after.header).toEqual(before.header);
  expect(after.rows.length).toBe(before.rows.length);
  const decidedRows = new Map<number, Expected>();
  for (const { row, expected: e } of expected.values()) if (['applied', 'kept', 'invalid'].includes(e.kind)) decidedRows.set(row, e);
  before.rows.forEach((cells, i) => {
    const e = decidedRows.get(i + 1);
    const got = after.rows[i]!;
    if (e === undefined) return expect(got, `${context}\nrow ${i + 1} is left alone`).toEqual(cells);
    const want = [...cells];
    want[at('dq_status')] = e.kind === 'applied' ? 'accepted' : e.kind === 'kept' ? 'kept' : 'invalid';
    want[at('dq_review_decision')] = e.kind === 'applied' ? `candidate ${e.n}` : e.kind === 'kept' ? 'keep' : 'invalid';
    if (e.kind === 'applied') {
      const cand = candidatesOf(i + 1)[e.n - 1]!;
      for (const [field, column] of [
        ['street', 'dq_street'],
        ['houseNumber', 'dq_house_number'],
        ['postalCode', 'dq_postal_code'],
        ['locality', 'dq_locality'],
      ] as const)
        want[at(column)] = (cand[field] as string | undefined) ?? '';
      // The other dq_ columns a candidate fills are checked by the review tests; here: its names exactly.
      for (const column of ['dq_sub_locality', 'dq_country', 'dq_address_type', 'dq_latitude', 'dq_longitude', 'dq_coordinate_precision', 'dq_meta'])
        if (at(column) >= 0) want[at(column)] = got[at(column)]!;
    }
    expect(got, `${context}\nrow ${i + 1} (${e.kind})`).toEqual(want);
  });
}

/** The candidates of a JSON row (its dq_review_candidates: the JSON array's text, or the array). */
function candidatesIn(row: Record<string, unknown>): Record<string, unknown>[] {
  const cell = row['dq_review_candidates'];
  return (typeof cell === 'string' ? JSON.parse(cell) : cell) as Record<string, unknown>[];
}

describe('dq-csv review round trip, NDJSON', () => {
  it('hostile strings, numbers as written, nested values and nulls: decided lines get exactly their decision, every other line stays byte for byte', async () => {
    const r = seededRandom(11);
    const objects = generateDirtyInputs(200, { seed: 5, country: 'DE' })
      .filter((d) => ['A', 'D', 'E'].includes(d.intendedClass))
      .map((d, i) => ({
        id: i + 1,
        note: hostileText(r),
        ...d.input,
        extra: r.pick([null, 1.5, '1.50', { nested: [hostileText(r)] }, [1, 'two'], true, hostileText(r)]),
      }));
    // Numbers as written (1.50, 1e2, a long one), which a decided line keeps as they are.
    const lines = objects.map((o) =>
      JSON.stringify(o)
        .replace(/"extra":1\.5\b/, '"extra":1.50')
        .replace(/^\{"id":(\d+)/, (_, id: string) => `{"id":${id}${r.pick(['', '.0', 'e0'])}`),
    );
    const input = join(dir, 'objects.ndjson');
    const output = join(dir, 'objects.out.ndjson');
    await writeFile(input, lines.join('\n') + '\n');
    const platform = await hostilePlatform(sandbox.url, 2);
    try {
      const run = await runCli(['validate', '--input', input, '--output', output, '--country', 'DE'], {
        ...sandbox.env(),
        DQ_BASE_URL: platform.url,
        DQ_REALTIME_URL: platform.url,
      });
      expect(run.code, run.stderr).toBe(0);
    } finally {
      await platform.close();
    }
    const file = join(dir, 'objects.review.csv');
    const exported = await runCli(['review', 'export', '--input', output, '--output', file]);
    expect(exported.code, exported.stderr).toBe(0);
    const [header, ...rows] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
    const col = (name: string) => header!.indexOf(name);
    const before = (await readFile(output, 'utf8')).split('\n');
    const cleanedObjects = before.filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const decided = new Map<number, Expected>();
    for (const row of rows) {
      const n = Number(row[0]);
      const candidates = candidatesIn(cleanedObjects[n - 1]!);
      // The cells show the line's values as text exactly.
      const original = JSON.parse(before[n - 1]!) as Record<string, unknown>;
      expect(restoreCell(row[col('note')]!)).toBe(original['note']);
      const d = randomDecision(r, candidates.length);
      row[col('decision')] = d.cell;
      if (['applied', 'kept', 'invalid'].includes(d.expected.kind)) decided.set(n, d.expected);
    }
    expect(
      [...decided.values()].some((e) => e.kind === 'applied'),
      'a candidate picked',
    ).toBe(true);
    await writeFile(file, formatCsv([header!, ...rows], { ...EXCEL, delimiter: ';', quoteAll: true }));
    const to = join(dir, 'objects.applied.ndjson');
    const applied = await runCli(['review', 'apply', '--input', file, '--output', output, '--to', to]);
    noStackTrace(applied);
    const after = (await readFile(to, 'utf8')).split('\n');
    expect(after.length).toBe(before.length);
    after.forEach((line, i) => {
      const e = decided.get(i + 1);
      if (e === undefined) return expect(line, `line ${i + 1} is left alone`).toBe(before[i]);
      const was = JSON.parse(before[i]!) as Record<string, unknown>;
      const now = JSON.parse(line) as Record<string, unknown>;
      // Numbers as written: the line's own text of them.
      expect(line.slice(0, line.indexOf(',')), `line ${i + 1}`).toBe(before[i]!.slice(0, before[i]!.indexOf(',')));
      if (before[i]!.includes('"extra":1.50')) expect(line, `line ${i + 1}`).toContain('"extra":1.50');
      for (const [k, v] of Object.entries(was)) if (!k.startsWith('dq_')) expect(now[k], `line ${i + 1} ${k}`).toEqual(v);
      expect(now['dq_status']).toBe(e.kind === 'applied' ? 'accepted' : e.kind === 'kept' ? 'kept' : 'invalid');
      if (e.kind === 'applied') {
        const cand = candidatesIn(was)[e.n - 1]!;
        expect(now['dq_street'] ?? '').toBe(cand['street'] ?? '');
        expect(now['dq_locality'] ?? '').toBe(cand['locality'] ?? '');
      }
    });
  });
});
