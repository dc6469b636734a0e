import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { candidateText, CANDIDATE_FIELDS, restoreCell, rowCheck } from '@dq/core/review';
import { seededRandom, type Rand } from '@dq/test-support/random';
import {
  EXCEL,
  formatCsv,
  hostileText,
  parseCsv,
  randomDecision as randomDecisionOf,
  randomSave,
  saveReview,
  type Expected as ReviewExpected,
} from '@dq/test-support/spreadsheet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanseArgs, COLUMNS, createCustomers, rowTexts, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { CliResult, TestEnv } from './support.js';
import { expectAppliedAsModelled } from './review-fuzz-support.js';

/*
 * The review round trip (export → a spreadsheet → apply → rollback) with hostile values and the
 * ways spreadsheets save a file, drawn from seeds: a real PostgreSQL, the sandbox over HTTP, the
 * CLI from dist/ as a child process. Every draw is checked against the invariant: a value the
 * table ends up with is the one it held or the chosen candidate's exactly, every row of the file is
 * applied, kept, invalid, a conflict, a bad decision named with its spreadsheet row, or left for
 * later, and a rollback restores the table byte for byte. REVIEW_FUZZ_SCALE=n runs n times as many seeds.
 */

let env: TestEnv;
let dir: string;
beforeAll(async () => {
  env = await startEnv();
  dir = await mkdtemp(join(tmpdir(), 'dq-review-fuzz-'));
});
afterAll(async () => {
  await env?.stop();
  await rm(dir, { recursive: true, force: true });
});

type Candidate = Record<string, unknown>;
interface ReviewRow {
  key: string;
  candidates: Candidate[];
}

/** A customers table of `rows` rows with status columns, cleaned by run `runId`; its review rows. */
async function cleaned(runId: string, rows: number): Promise<{ db: string; review: ReviewRow[] }> {
  const db = await env.pg.createDatabase();
  await createCustomers(db, rows);
  await withClient(db, (c) => c.query('ALTER TABLE customers ADD COLUMN dq_status text, ADD COLUMN dq_class text'));
  const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', runId, '--status-columns', 'status=dq_status,class=dq_class']));
  expect(run.code, run.stderr).toBe(0);
  return { db, review: await reviewRows(db, runId) };
}

async function reviewRows(db: string, runId: string): Promise<ReviewRow[]> {
  return withClient(
    db,
    async (c) =>
      (
        await c.query<ReviewRow>(`SELECT row_key AS key, candidates FROM dq_cleanse.results WHERE run_id = $1 AND status = 'review' ORDER BY row_key::bigint`, [
          runId,
        ])
      ).rows,
  );
}

/** The mapped columns of every row (NULL as null), by id. */
async function values(db: string): Promise<Map<string, (string | null)[]>> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<string[]>({ text: `SELECT id::text, ${COLUMNS.join(', ')} FROM customers`, rowMode: 'array' });
    return new Map(rows.map((r) => [r[0]!, r.slice(1) as (string | null)[]]));
  });
}

/** A value a table may hold: NULL, or a hostile text (see @dq/test-support/spreadsheet), at most `maxLength` characters. */
function hostileValue(r: Rand, maxLength = Infinity): string | null {
  if (r.chance(0.1)) return null;
  return [...hostileText(r)].slice(0, maxLength).join('');
}

type Expected = ReviewExpected<'skipped'>;

/** A decision cell as a person (or a spreadsheet) writes it, and what it must come to. */
const randomDecision = (r: Rand, count: number) => randomDecisionOf(r, count, 'skipped', 'is not a candidate of this row');

/**
 * The values a row with `before` gets from `candidate`, as a cleanse writes an accepted answer:
 * each mapped field the candidate has (the address and locality lines composed), an empty one never
 * replacing NULL.
 */
function withCandidate(before: readonly (string | null)[], candidate: Candidate): (string | null)[] {
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
  // The address and locality lines: the fields that are not blank, joined by a space; none without.
  const join = (a: unknown, b: unknown) => {
    const present = [text(a), text(b)].filter((v) => v !== undefined && v.trim() !== '');
    return present.length === 0 ? undefined : present.join(' ');
  };
  const fields: (string | undefined)[] = [
    text(candidate['street']),
    text(candidate['houseNumber']),
    text(candidate['postalCode']),
    text(candidate['locality']),
    join(candidate['street'], candidate['houseNumber']),
    join(candidate['postalCode'], candidate['locality']),
    text(candidate['country']),
  ];
  return before.map((v, i) => {
    const c = fields[i];
    return c === undefined || (c === '' && v === null) ? v : c;
  });
}

function noStackTrace(run: CliResult): void {
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

describe('dq-pg review round trip', () => {
  it('a decided row whose NULLs were made empty text after the export is a conflict, not counted applied with its candidate unwritten', async () => {
    const { db, review } = await cleaned('n1', 60);
    const atExport = await values(db);
    // A row with a NULL whose first candidate would change it.
    const row = review.find(
      (x) => atExport.get(x.key)!.includes(null) && withCandidate(atExport.get(x.key)!, x.candidates[0] ?? {}).some((v, i) => v !== atExport.get(x.key)![i]),
    )!;
    expect(row, 'a review row with a NULL and a candidate that changes it').toBeDefined();
    const file = join(dir, 'n1.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'n1', '--output', file])).code).toBe(0);
    const [header, ...rows] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
    rows.find((x) => x[header!.indexOf('id')] === row.key)![header!.indexOf('decision')] = '1';
    await writeFile(file, formatCsv([header!, ...rows], EXCEL));
    // A nightly job normalises NULLs to empty text: the file's cells show the row as it is now.
    await withClient(db, (c) =>
      c.query(`UPDATE customers SET ${COLUMNS.map((name) => `${name} = coalesce(${name}, '')`).join(', ')} WHERE id = $1`, [row.key]),
    );
    const before = await rowTexts(db);
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'n1-review']);
    noStackTrace(applied);
    expect(summaryOf(applied), applied.stderr).toMatchObject({ applied: 0, conflicts: 1, conflictKeys: [row.key] });
    expect(applied.code).toBe(4);
    expect(applied.stderr).toContain(`conflict: key ${row.key} changed`);
    expect(await rowTexts(db)).toEqual(before);
  });

  it('names a bad decision by its spreadsheet row also below a blank row', async () => {
    const { db, review } = await cleaned('b1', 60);
    expect(review.length).toBeGreaterThanOrEqual(3);
    const file = join(dir, 'b1.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'b1', '--output', file])).code).toBe(0);
    const [header, ...rows] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
    const last = rows.at(-1)!;
    last[header!.indexOf('decision')] = 'kep';
    // Row 1 the header, rows 2… the review rows, a blank row after the first: the last is row length + 2.
    await writeFile(file, formatCsv([header!, rows[0]!, [''], ...rows.slice(1)], EXCEL));
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'b1-review']);
    noStackTrace(applied);
    expect(applied.code).toBe(4);
    expect(applied.stderr).toContain(`line ${rows.length + 2} (key ${last[header!.indexOf('id')]}): "kep" is not a decision`);
    expect(summaryOf(applied)).toMatchObject({ badDecisions: 1, skipped: rows.length - 1 });
  });
});

describe('dq-pg review apply reads what spreadsheets save', () => {
  it('a decision written a column too far, or a note past the last column, is named with its row; the other rows are applied', async () => {
    const { db, review } = await cleaned('s1', 60);
    expect(review.length).toBeGreaterThanOrEqual(4);
    const file = join(dir, 's1.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 's1', '--output', file])).code).toBe(0);
    const [header, ...rows] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
    const [spilled, noted, kept] = rows as [string[], string[], string[]];
    const decision = header!.indexOf('decision');
    noted[decision] = 'keep';
    kept[decision] = 'keep';
    const key = (r: string[]) => r[header!.indexOf('id')]!;
    // The spreadsheet saves the used range: every row one column wider, the header's cell empty.
    const wide = [[...header!, ''], ...rows.map((r) => [...r, r === spilled ? '2' : r === noted ? 'checked by A. Jones' : ''])];
    await writeFile(file, formatCsv(wide, EXCEL));
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 's1-review']);
    noStackTrace(applied);
    expect(applied.code, applied.stderr).toBe(4);
    expect(summaryOf(applied)).toMatchObject({ kept: 1, badDecisions: 2, skipped: rows.length - 3 });
    expect(applied.stderr).toContain(`line 2 (key ${key(spilled)}): the row has a cell in no named column`);
    expect(applied.stderr).toContain(`line 3 (key ${key(noted)}): the row has a cell in no named column`);

    // Only the noted row wider than the header (a spreadsheet that writes no used range): the same.
    const ragged = [header!, ...rows.map((r) => (r === noted ? [...r, 'checked by A. Jones'] : r))];
    await writeFile(file, formatCsv(ragged, EXCEL));
    const again = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 's1-review-2']);
    noStackTrace(again);
    expect(again.code, again.stderr).toBe(4);
    expect(summaryOf(again)).toMatchObject({ badDecisions: 1, sameAsApplied: { rows: 1 } });
    expect(again.stderr).toContain(`line 3 (key ${key(noted)}): the row has a cell in no named column`);
  });
});

describe('dq-pg review round trip, text keys', () => {
  it('keys with quotes, delimiters, line breaks, formula characters and unicode name their rows, a changed one is a conflict; rollback restores them', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 60);
    const r = seededRandom(7);
    await withClient(db, async (c) => {
      await c.query(`ALTER TABLE customers ALTER COLUMN id TYPE text USING id::text`);
      const { rows } = await c.query<{ id: string }>('SELECT id FROM customers');
      for (const { id } of rows)
        await c.query(`UPDATE customers SET id = $2 WHERE id = $1`, [id, `${hostileValue(r) ?? ''}${id}${r.pick(['', ' ', '\u00a0', "'"])}`]);
    });
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'k1']));
    expect(run.code, run.stderr).toBe(0);
    const review = await withClient(
      db,
      async (c) =>
        (await c.query<ReviewRow>(`SELECT row_key AS key, candidates FROM dq_cleanse.results WHERE run_id = 'k1' AND status = 'review' ORDER BY row_key`)).rows,
    );
    expect(review.length).toBeGreaterThanOrEqual(4);
    const file = join(dir, 'k1.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'k1', '--output', file])).code).toBe(0);
    const [header, ...rows] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
    const col = (name: string) => header!.indexOf(name);
    expect(rows.map((x) => restoreCell(x[col('id')]!)).sort()).toEqual(review.map((x) => x.key).sort());
    const decisions = new Map<string, string>();
    for (const x of rows) {
      const key = restoreCell(x[col('id')]!);
      const count = review.find((y) => y.key === key)!.candidates.length;
      x[col('decision')] = r.pick(['keep', 'invalid', ...(count > 0 ? ['1'] : [])]);
      decisions.set(key, x[col('decision')]!);
    }
    // One decided row's NULLs made empty text after the export (no status columns here): a conflict.
    const atExport = await values(db);
    const changed = [...decisions.keys()].find((key) => atExport.get(key)!.includes(null))!;
    expect(changed, 'a decided row with a NULL').toBeDefined();
    await withClient(db, (c) =>
      c.query(`UPDATE customers SET ${COLUMNS.map((name) => `${name} = coalesce(${name}, '')`).join(', ')} WHERE id = $1`, [changed]),
    );
    const before = await values(db);
    const beforeTexts = await rowTexts(db);
    await writeFile(file, formatCsv([header!, ...r.shuffle(rows)], { ...EXCEL, delimiter: ';', quoteAll: true }));
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'k1-review', '--batch-size', '2']);
    noStackTrace(applied);
    expect(applied.code, applied.stderr).toBe(4);
    const count = (d: string) => [...decisions.entries()].filter(([key, v]) => v === d && key !== changed).length;
    expect(summaryOf(applied)).toMatchObject({
      applied: count('1'),
      kept: count('keep'),
      invalid: count('invalid'),
      conflicts: 1,
      conflictKeys: [changed],
      badDecisions: 0,
    });
    decisions.delete(changed);
    const after = await values(db);
    for (const [key, d] of decisions) {
      const want = d === '1' ? withCandidate(before.get(key)!, review.find((y) => y.key === key)!.candidates[0]!) : before.get(key)!;
      expect(after.get(key), `row ${JSON.stringify(key)}`).toEqual(want);
    }
    for (const [key, v] of before) if (!decisions.has(key)) expect(after.get(key)).toEqual(v);
    const undo = await runCli(['rollback', '--db', db, '--run', 'k1-review']);
    expect(undo.code, undo.stderr).toBe(0);
    expect(await rowTexts(db)).toEqual(beforeTexts);
  });
});

describe('dq-pg review round trip, fuzzed', () => {
  it('hostile values, spreadsheet saves, decisions, rows changed meanwhile: each row applied exactly, or named; rollback restores the table', async () => {
    const { db, review } = await cleaned('fz', 160);
    expect(review.length, 'review rows').toBeGreaterThanOrEqual(10);
    const scale = Number(process.env['REVIEW_FUZZ_SCALE'] ?? 1);
    for (let seed = 1; seed <= 5 * scale; seed++) await fuzzCase(seed, db, review);
  }, 120_000);
});

async function fuzzCase(seed: number, db: string, review: ReviewRow[]): Promise<void> {
  const r = seededRandom(seed);
  const where = `seed ${seed}`;
  // A platform may answer any text: the run's stored candidates get hostile fields (as the run
  // would have stored such answers), the table's review rows hostile values before the export.
  await withClient(db, async (c) => {
    for (const row of review) {
      const candidates = row.candidates.map((cand) =>
        r.chance(0.3)
          ? {
              ...cand,
              street: hostileValue(r) ?? '',
              houseNumber: hostileValue(r) ?? '',
              postalCode: hostileValue(r, 10) ?? '',
              locality: hostileValue(r) ?? '',
            }
          : cand,
      );
      row.candidates = candidates;
      await c.query(`UPDATE dq_cleanse.results SET candidates = $3::jsonb WHERE run_id = $1 AND row_key = $2`, ['fz', row.key, JSON.stringify(candidates)]);
      if (r.chance(0.7)) {
        await c.query(`UPDATE customers SET street = $2, house_number = $3, postal_code = $4, city = $5, address_line = $6, locality_line = $7 WHERE id = $1`, [
          row.key,
          hostileValue(r),
          hostileValue(r),
          hostileValue(r, 10),
          hostileValue(r),
          hostileValue(r),
          hostileValue(r),
        ]);
      }
    }
  });
  const atExport = await values(db);

  // Export: every cell shows its value exactly once the leading ' is taken off.
  const file = join(dir, `fz-${seed}.csv`);
  const exported = await runCli(['review', 'export', '--db', db, '--run', 'fz', '--output', file]);
  expect(exported.code, `${where}: ${exported.stderr}`).toBe(0);
  const text = await readFile(file, 'utf8');
  expect(text.startsWith('\uFEFF'), where).toBe(true);
  const [header, ...rows] = parseCsv(text.slice(1), ',');
  expect(rows.length, where).toBe(review.length);
  const col = (name: string) => header!.indexOf(name);
  const fields = CANDIDATE_FIELDS.address;
  for (const row of rows) {
    expect(row.length, where).toBe(header!.length);
    const key = row[col('id')]!;
    const want = atExport.get(key)!;
    COLUMNS.forEach((c, i) => expect(restoreCell(row[col(c)]!), `${where}: ${key}.${c}`).toBe(want[i] ?? ''));
    const candidates = review.find((x) => x.key === key)!.candidates;
    candidates.forEach((cand, n) =>
      fields.forEach((f) =>
        expect(restoreCell(row[col(`candidate_${n + 1}_${f.suffix}`)]!), `${where}: ${key} candidate ${n + 1}`).toBe(candidateText(cand, f)),
      ),
    );
  }

  // Decisions, duplicates, a row that is not in the run; then rows changed in the table meanwhile.
  const expected = new Map<string[], { key: string; expected: Expected }>();
  const byKey = new Map(review.map((x) => [x.key, x]));
  for (const row of rows) {
    const key = row[col('id')]!;
    const d = randomDecision(r, byKey.get(key)!.candidates.length);
    row[col('decision')] = d.cell;
    expected.set(row, { key, expected: d.expected });
  }
  // A person's edits of cells that are not the decision change nothing: the candidate written is
  // the platform's as the run stored it, and the key is the one the row check names.
  for (const [row, { expected: e }] of expected) {
    if (e.kind === 'applied' && r.chance(0.3)) row[col(`candidate_${e.n}_street`)] += ' (corrected)';
    if (r.chance(0.1)) row[col('id')] = `0${row[col('id')]}`;
  }
  const decided = rows.filter((row) => ['applied', 'kept', 'invalid'].includes(expected.get(row)!.expected.kind));
  const duplicated = decided.length > 0 && r.chance(0.5) ? r.pick(decided) : undefined;
  const copy = duplicated ? [...duplicated] : undefined;
  if (copy) {
    copy[col('decision')] = 'keep';
    expected.set(copy, { key: expected.get(duplicated!)!.key, expected: { kind: 'bad', message: 'the row was decided already on line' } });
  }
  const stranger = r.chance(0.5) ? [...rows[0]!] : undefined;
  if (stranger) {
    stranger[col('row_check')] = rowCheck(['x'], '999999');
    stranger[col('decision')] = 'keep';
    expected.set(stranger, { key: '999999', expected: { kind: 'bad', message: 'awaits review in run fz' } });
  }
  // A decision written a column too far, or a note next to it: named, never left undecided unsaid.
  const spill = r.chance(0.5) ? r.pick(rows.filter((row) => row !== duplicated)) : undefined;
  const spilled = spill ? (r.chance(0.5) ? spill[col('decision')]!.trim() || 'keep' : 'checked by A. Jones') : '';
  if (spill) {
    if (spilled !== 'checked by A. Jones') spill[col('decision')] = '';
    expected.get(spill)!.expected = { kind: 'bad', message: 'in no named column' };
  }
  const changed = decided.filter((row) => row !== duplicated && row !== spill && r.chance(0.25));
  await withClient(db, async (c) => {
    for (const row of changed) {
      const key = expected.get(row)!.key;
      const now = atExport.get(key)!;
      const i = now.findIndex((v) => v === null);
      // NULLs made empty text (a nightly normalisation), or a value edited.
      if (i >= 0 && r.chance(0.6)) await c.query(`UPDATE customers SET ${COLUMNS[i]} = '' WHERE id = $1`, [key]);
      else await c.query(`UPDATE customers SET city = coalesce(city, '') || ' Nord' WHERE id = $1`, [key]);
      expected.get(row)!.expected = { kind: 'conflict' };
    }
  });

  // Saved by a spreadsheet.
  const save = randomSave(r);
  const { text: saved, origin } = saveReview(r, save, {
    header: header!,
    rows,
    decision: col('decision'),
    expected,
    duplicate: copy && { copy, duplicated: duplicated!, message: 'the row was decided already on line' },
    stranger,
    spill: spill && { row: spill, cell: spilled },
  });
  await writeFile(file, saved);
  // The spreadsheet row of each of the file's rows (the header is row 1; a blank row is a row).
  const rowOf = (row: string[]) => origin.indexOf(row) + 1;

  // Apply.
  const before = await rowTexts(db);
  const beforeValues = await values(db);
  const runId = `fz-review-${seed}`;
  const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', runId, '--batch-size', String(r.pick([1, 3, 500]))]);
  const context = `${where} (${JSON.stringify(save)}): exit ${applied.code}\n${applied.stderr}`;
  noStackTrace(applied);
  expectAppliedAsModelled(applied, expected, file, rowOf, context);

  // The table: decided rows hold their values or the chosen candidate's exactly; every other row is as it was.
  const after = await values(db);
  const afterTexts = await rowTexts(db);
  const touched = new Set<string>();
  for (const { key, expected: e } of expected.values()) {
    if (e.kind === 'bad' || e.kind === 'skipped' || e.kind === 'conflict') continue;
    touched.add(key);
    const want = e.kind === 'applied' ? withCandidate(beforeValues.get(key)!, byKey.get(key)!.candidates[e.n - 1]!) : beforeValues.get(key)!;
    expect(after.get(key), `${context}\nrow ${key} (${e.kind})`).toEqual(want);
  }
  for (const [key, text] of before) if (!touched.has(key)) expect(afterTexts.get(key), `${context}\nrow ${key} is left alone`).toBe(text);

  // Rollback restores every row exactly.
  const undo = await runCli(['rollback', '--db', db, '--run', runId]);
  noStackTrace(undo);
  expect(undo.code, `${where}: ${undo.stderr}`).toBe(0);
  expect(await rowTexts(db), `${where}: after the rollback`).toEqual(before);
}
