import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCompanyService } from '@dq/sandbox';
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
import { billable, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { CliResult, TestEnv } from './support.js';
import { expectAppliedAsModelled } from './review-fuzz-support.js';

/*
 * The company-mode review round trip (cleanse → export → a spreadsheet → apply → rollback) with
 * hostile names and fields, the column types a company table has (text, varchar(n), citext,
 * char(n)), candidate lists of 0, 1 or many hits, and the ways spreadsheets save a file, drawn from
 * seeds: a real PostgreSQL, the sandbox over HTTP, the CLI from dist/ as a child process. A model
 * computes what the table must hold after the apply and after the rollback, and is compared with the
 * table. COMPANY_REVIEW_FUZZ_SCALE=n runs n times as many seeds.
 */

let env: TestEnv;
let dir: string;
beforeAll(async () => {
  env = await startEnv();
  dir = await mkdtemp(join(tmpdir(), 'dq-review-company-fuzz-'));
});
afterAll(async () => {
  await env?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The firms table: the request field each mapped column gets, its SQL type, and the length it holds. */
const FIRM_COLUMNS = [
  { column: 'name', field: 'company', type: 'text', length: Infinity },
  { column: 'zip', field: 'zip', type: 'varchar(12)', length: 12 },
  { column: 'city', field: 'city', type: 'citext', length: Infinity },
  { column: 'street', field: 'street', type: 'char(40)', length: 40 },
] as const;
const NAMES = FIRM_COLUMNS.map((c) => c.column);
const MAP = FIRM_COLUMNS.map((c) => `${c.field}=${c.column}`).join(',');

type Candidate = Record<string, unknown>;
interface ReviewRow {
  key: string;
  candidates: Candidate[];
}

/** Names two or more active companies of the sandbox's register share: a company search puts them in review. */
function ambiguousNames(): string[] {
  const byName = new Map<string, number>();
  for (const c of createCompanyService({ seed: 1 }).companies) if (c.trStatus === 'active') byName.set(c.company, (byName.get(c.company) ?? 0) + 1);
  return [...byName].filter(([, n]) => n >= 2).map(([name]) => name);
}

function companyCleanse(db: string, runId: string): string[] {
  return ['cleanse', '--db', db, '--table', 'public.firms', '--key', 'id', '--map', MAP, '--mode', 'company', '--base-url', env.sandbox.url, '--run-id', runId];
}

/** A firms table of ambiguous names (also in other case and spacing), cleaned in company mode by run `runId`; its review rows. */
async function cleanedFirms(runId: string, rows: number, statusColumn = true): Promise<{ db: string; review: ReviewRow[] }> {
  const db = await env.pg.createDatabase();
  const names = ambiguousNames();
  expect(names.length, 'ambiguous names in the register').toBeGreaterThanOrEqual(5);
  await withClient(db, async (c) => {
    await c.query('CREATE EXTENSION IF NOT EXISTS citext');
    await c.query(`CREATE TABLE firms (id bigint PRIMARY KEY, ${FIRM_COLUMNS.map((x) => `${x.column} ${x.type}`).join(', ')}, dq_status text)`);
    for (let i = 1; i <= rows; i++) {
      const name = names[i % names.length]!;
      // Names differing only in case or spacing from a register name.
      const variant = [name, name.toUpperCase(), name.replace(' ', '  '), name.toLowerCase()][Math.floor(i / names.length) % 4]!;
      await c.query('INSERT INTO firms (id, name) VALUES ($1, $2)', [i, variant]);
    }
  });
  const run = await runCli([
    ...companyCleanse(db, runId),
    '--rate-limit',
    '0',
    '--threads',
    '0',
    ...(statusColumn ? ['--status-columns', 'status=dq_status'] : []),
  ]);
  expect(run.code, run.stderr).toBe(0);
  const review = await withClient(
    db,
    async (c) =>
      (
        await c.query<ReviewRow>(`SELECT row_key AS key, candidates FROM dq_cleanse.results WHERE run_id = $1 AND status = 'review' ORDER BY row_key::bigint`, [
          runId,
        ])
      ).rows,
  );
  return { db, review };
}

/** The mapped columns and the status column of every row, as node-postgres reads them (NULL as null), by id. */
async function values(db: string): Promise<Map<string, (string | null)[]>> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<string[]>({ text: `SELECT id::text, ${NAMES.join(', ')}, dq_status FROM firms`, rowMode: 'array' });
    return new Map(rows.map((r) => [r[0]!, r.slice(1) as (string | null)[]]));
  });
}

/** Each row's full text form (every column, exactly as stored), by id. */
async function rowTexts(db: string): Promise<Map<string, string>> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<{ id: string; t: string }>('SELECT id::text AS id, f::text AS t FROM firms f ORDER BY id');
    return new Map(rows.map((r) => [r.id, r.t]));
  });
}

/** Characters of a text as PostgreSQL counts them (code points). */
const chars = (v: string): number => [...v].length;

/** A hostile text of at most `max` characters; also digit strings a spreadsheet makes numbers of. */
function hostile(r: Rand, max: number): string {
  const v = r.chance(0.15) ? `0${String(r.int(0, 1e9)).padStart(r.int(4, 14), '0')}` : hostileText(r);
  return [...v].slice(0, max).join('');
}

/** A value `column` may hold: NULL, or a hostile text that fits it. */
function hostileValue(r: Rand, column: (typeof FIRM_COLUMNS)[number]): string | null {
  if (r.chance(0.1)) return null;
  return hostile(r, Math.min(column.length, 4000));
}

/** How a `char(n)` column gives a value back: padded with spaces to n characters (trailing ones not counted). */
function stored(column: (typeof FIRM_COLUMNS)[number], v: string | null): string | null {
  if (v === null || !column.type.startsWith('char(')) return v;
  const bare = v.replace(/ +$/u, '');
  return bare + ' '.repeat(column.length - chars(bare));
}

/**
 * The mapped values a row with `before` gets from company hit `hit`, as a cleanse writes an
 * accepted hit: each mapped field the hit has (a number as written), an empty one never replacing NULL.
 */
function withHit(before: readonly (string | null)[], hit: Candidate): (string | null)[] {
  return FIRM_COLUMNS.map((c, i) => {
    const v = hit[c.field];
    const text = typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
    const was = before[i] ?? null;
    return text === undefined || (text === '' && was === null) ? was : stored(c, text);
  });
}

type Expected = ReviewExpected<'skipped'>;

function noStackTrace(run: CliResult): void {
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

describe('dq-pg review round trip, company mode, fuzzed', () => {
  it('hostile names and fields, column types, 0/1/many hits, spreadsheet saves, rows changed meanwhile: each row applied exactly or named; rollback restores the table', async () => {
    const { db, review } = await cleanedFirms('cf', 48);
    expect(review.length, 'review rows').toBeGreaterThanOrEqual(10);
    const scale = Number(process.env['COMPANY_REVIEW_FUZZ_SCALE'] ?? 1);
    for (let seed = 1; seed <= 4 * scale; seed++) await fuzzCase(seed, db, review);
  }, 120_000);
});

async function fuzzCase(seed: number, db: string, review: ReviewRow[]): Promise<void> {
  const r = seededRandom(seed);
  const where = `seed ${seed}`;
  // A platform may answer any text: the run's stored hits get hostile fields that fit the columns
  // (a hit too long for its column is the apply's value-too-long, tested on its own), and 0, 1 or
  // many hits; the table's review rows hostile values before the export.
  await withClient(db, async (c) => {
    for (const row of review) {
      let hits = row.candidates.map((hit) =>
        r.chance(0.4)
          ? { ...hit, ...Object.fromEntries(FIRM_COLUMNS.map((col) => [col.field, r.chance(0.1) ? '' : hostile(r, Math.min(col.length, 300))])) }
          : hit,
      );
      const shape = r();
      if (shape < 0.1) hits = [];
      else if (shape < 0.25) hits = hits.slice(0, 1);
      else if (shape < 0.35) hits = [...hits, ...hits.map((h) => ({ ...h, company: `${String(h['company'])} ` }))];
      row.candidates = hits;
      await c.query(`UPDATE dq_cleanse.results SET candidates = $3::jsonb WHERE run_id = $1 AND row_key = $2`, ['cf', row.key, JSON.stringify(hits)]);
      if (r.chance(0.7)) {
        await c.query(`UPDATE firms SET ${NAMES.map((n, i) => `${n} = $${i + 2}`).join(', ')} WHERE id = $1`, [
          row.key,
          ...FIRM_COLUMNS.map((col) => hostileValue(r, col)),
        ]);
      }
    }
  });
  const atExport = await values(db);

  const file = join(dir, `cf-${seed}.csv`);
  const exported = await runCli(['review', 'export', '--db', db, '--run', 'cf', '--output', file]);
  noStackTrace(exported);
  expect(exported.code, `${where}: ${exported.stderr}`).toBe(0);
  const text = await readFile(file, 'utf8');
  const [header, ...rows] = parseCsv(text.slice(1), ',');
  expect(rows.length, where).toBe(review.length);
  const col = (name: string) => header!.indexOf(name);
  // Every cell shows its value exactly once the leading ' is taken off.
  for (const row of rows) {
    expect(row.length, where).toBe(header!.length);
    const key = row[col('id')]!;
    const want = atExport.get(key)!;
    NAMES.forEach((n, i) => expect(restoreCell(row[col(n)]!), `${where}: ${key}.${n}`).toBe(want[i] ?? ''));
    review
      .find((x) => x.key === key)!
      .candidates.forEach((hit, n) =>
        CANDIDATE_FIELDS.company.forEach((f) =>
          expect(restoreCell(row[col(`candidate_${n + 1}_${f.suffix}`)]!), `${where}: ${key} hit ${n + 1}`).toBe(candidateText(hit, f)),
        ),
      );
  }

  // Decisions; a duplicate, a row of no review, a decision a column too far; rows changed meanwhile.
  const expected = new Map<string[], { key: string; expected: Expected }>();
  const byKey = new Map(review.map((x) => [x.key, x]));
  for (const row of rows) {
    const key = row[col('id')]!;
    const d = randomDecisionOf(r, byKey.get(key)!.candidates.length, 'skipped', 'is not a candidate of this row');
    row[col('decision')] = d.cell;
    expected.set(row, { key, expected: d.expected });
  }
  // A decision written into another column of a row left undecided: over a hit's field it is an
  // edit of the platform's answer, which changes nothing (the row is left for later); in a cell the
  // export left empty (a company row's class, a field past the row's last hit) it is named.
  const hitColumns = header!.filter((h) => h.startsWith('candidate_'));
  for (const [row, e] of expected) {
    if (e.expected.kind === 'skipped' && r.chance(0.4)) {
      const column = r.chance(0.3) || hitColumns.length === 0 ? 'class' : r.pick(hitColumns);
      const wasEmpty = restoreCell(row[col(column)]!).trim() === '';
      row[col(column)] = r.pick(['1', '2', 'keep', 'invalid']);
      if (wasEmpty) e.expected = { kind: 'bad', message: `column ${column} holds` };
    }
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
    expected.set(stranger, { key: '999999', expected: { kind: 'bad', message: 'awaits review in run cf' } });
  }
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
      const i = now.slice(0, NAMES.length).findIndex((v) => v === null);
      // NULLs made empty text, a name changed in case only (citext and a case-insensitive eye see no change), or a value edited.
      const how = r();
      if (i >= 0 && how < 0.4) await c.query(`UPDATE firms SET ${NAMES[i]} = '' WHERE id = $1`, [key]);
      else {
        const upper =
          how < 0.7 && (await c.query(`UPDATE firms SET city = upper(city) WHERE id = $1 AND upper(city)::text <> city::text COLLATE "C"`, [key])).rowCount;
        if (!upper) await c.query(`UPDATE firms SET name = coalesce(name, '') || ' GmbH' WHERE id = $1`, [key]);
      }
      expected.get(row)!.expected = { kind: 'conflict' };
    }
  });
  const meanwhile = await values(db);
  for (const row of changed) {
    const key = expected.get(row)!.key;
    expect(meanwhile.get(key), `${where}: row ${key} changed since the export`).not.toEqual(atExport.get(key));
  }

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
  const rowOf = (row: string[]) => origin.indexOf(row) + 1;

  // Apply: no platform call is paid.
  const before = await rowTexts(db);
  const beforeValues = await values(db);
  const paid = billable(env.sandbox);
  const runId = `cf-review-${seed}`;
  const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', runId, '--batch-size', String(r.pick([1, 3, 500]))]);
  const context = `${where} (${JSON.stringify(save)}): exit ${applied.code}\n${applied.stderr}`;
  noStackTrace(applied);
  expect(billable(env.sandbox), context).toBe(paid);
  expectAppliedAsModelled(applied, expected, file, rowOf, context);

  // The model: decided rows hold their values or the chosen hit's exactly, with their status; every other row is as it was, byte for byte.
  const after = await values(db);
  const afterTexts = await rowTexts(db);
  const touched = new Set<string>();
  for (const { key, expected: e } of expected.values()) {
    if (e.kind === 'bad' || e.kind === 'skipped' || e.kind === 'conflict') continue;
    touched.add(key);
    const was = beforeValues.get(key)!.slice(0, NAMES.length);
    const want = [...(e.kind === 'applied' ? withHit(was, byKey.get(key)!.candidates[e.n - 1]!) : was), e.kind === 'invalid' ? 'invalid' : 'accepted'];
    expect(after.get(key), `${context}\nrow ${key} (${e.kind})`).toEqual(want);
  }
  for (const [key, t] of before) if (!touched.has(key)) expect(afterTexts.get(key), `${context}\nrow ${key} is left alone`).toBe(t);

  // Rollback restores every row exactly.
  const undo = await runCli(['rollback', '--db', db, '--run', runId]);
  noStackTrace(undo);
  expect(undo.code, `${where}: ${undo.stderr}`).toBe(0);
  expect(await rowTexts(db), `${where}: after the rollback`).toEqual(before);
}

describe('dq-pg review apply, company mode, a hit longer than its column', () => {
  it('stops with value-too-long naming the line, key and column; nothing of the page is written, and the rerun after a changed decision applies it', async () => {
    const { db, review } = await cleanedFirms('cl', 24);
    const [row, other] = review;
    expect(other, 'two review rows').toBeDefined();
    // The hit's zip longer than varchar(12), its street longer than char(40) (trailing spaces do not count).
    const long = { ...row!.candidates[0], zip: '0123456789012', street: `${'S'.repeat(40)}   ` };
    await withClient(db, (c) =>
      c.query(`UPDATE dq_cleanse.results SET candidates = $2::jsonb WHERE run_id = 'cl' AND row_key = $1`, [
        row!.key,
        JSON.stringify([long, ...row!.candidates]),
      ]),
    );
    const file = join(dir, 'cl.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'cl', '--output', file])).code).toBe(0);
    const [header, ...rows] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
    const decision = header!.indexOf('decision');
    const line = (key: string) => rows.findIndex((x) => x[header!.indexOf('id')] === key) + 2;
    rows[line(row!.key) - 2]![decision] = '1';
    rows[line(other!.key) - 2]![decision] = 'keep';
    await writeFile(file, formatCsv([header!, ...rows], EXCEL));
    const before = await rowTexts(db);
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'cl-review']);
    noStackTrace(applied);
    expect(applied.code, applied.stderr).toBe(2);
    expect(applied.stderr).toContain(`value-too-long: line ${line(row!.key)}, key ${row!.key}: candidate 1 does not fit`);
    expect(applied.stderr).toMatch(/"zip"|zip/);
    expect(await rowTexts(db)).toEqual(before);
    // The steward decides the row otherwise: the rerun with the same run id applies both rows.
    rows[line(row!.key) - 2]![decision] = '2';
    await writeFile(file, formatCsv([header!, ...rows], EXCEL));
    const again = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'cl-review']);
    noStackTrace(again);
    expect(again.code, again.stderr).toBe(0);
    expect(summaryOf(again)).toMatchObject({ applied: 1, kept: 1 });
    const undo = await runCli(['rollback', '--db', db, '--run', 'cl-review']);
    expect(undo.code, undo.stderr).toBe(0);
    expect(await rowTexts(db)).toEqual(before);
  });
});

describe('dq-pg review round trip, company mode, the next cleanse', () => {
  it('reuses every decision while the row holds what it left (no call, not back in review), also in char(n) and citext columns and with hostile hits', async () => {
    const { db, review } = await cleanedFirms('cn', 24);
    expect(review.length).toBeGreaterThanOrEqual(4);
    const r = seededRandom(99);
    const decisions = new Map<string, string>();
    await withClient(db, async (c) => {
      for (const row of review) {
        // Hostile hits that fit the columns, a street with trailing spaces (char(n) pads it), a city in other case.
        const hits = row.candidates.map((hit, n) =>
          n === 0
            ? { ...hit, company: hostile(r, 200) || 'x', zip: hostile(r, 12), city: String(hit['city'] ?? '').toUpperCase(), street: `${hostile(r, 30)}  ` }
            : hit,
        );
        row.candidates = hits;
        await c.query(`UPDATE dq_cleanse.results SET candidates = $2::jsonb WHERE run_id = 'cn' AND row_key = $1`, [row.key, JSON.stringify(hits)]);
        decisions.set(row.key, r.pick(['1', '1', 'keep', 'invalid']));
      }
    });
    const file = join(dir, 'cn.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'cn', '--output', file])).code).toBe(0);
    const [header, ...rows] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
    for (const x of rows) x[header!.indexOf('decision')] = decisions.get(x[header!.indexOf('id')]!)!;
    await writeFile(file, formatCsv([header!, ...rows], EXCEL));
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'cn-review']);
    noStackTrace(applied);
    expect(applied.code, applied.stderr).toBe(0);
    const decidedTexts = await rowTexts(db);
    const paid = billable(env.sandbox);
    const next = await runCli([...companyCleanse(db, 'cn-next'), '--rate-limit', '0', '--threads', '0', '--status-columns', 'status=dq_status']);
    noStackTrace(next);
    expect(next.code, next.stderr).toBe(0);
    const again = await withClient(
      db,
      async (c) =>
        (
          await c.query<{ key: string; status: string; outcome: string }>(
            `SELECT row_key AS key, status, outcome FROM dq_cleanse.results WHERE run_id = 'cn-next' AND row_key = ANY ($1::text[]) ORDER BY row_key::bigint`,
            [[...decisions.keys()]],
          )
        ).rows,
    );
    expect(again.map((x) => [x.key, x.status, x.outcome])).toEqual(
      [...decisions].map(([key, d]) => (d === 'invalid' ? [key, 'invalid', 'kept'] : [key, 'accepted', 'unchanged'])),
    );
    // The rows not decided were asked again (the same names, from the result store or a call); the decided ones cost nothing.
    expect(summaryOf(next)['apiCalls'] ?? 0, next.stdout).toBe(billable(env.sandbox) - paid);
    expect(await rowTexts(db)).toEqual(decidedTexts);
  });
});

describe('dq-pg review apply, company mode, a hit the row holds already', () => {
  it('is no change in a char(n) column whose padding is all that differs: no UPDATE, no audit, outcome unchanged', async () => {
    const { db, review } = await cleanedFirms('cu', 12, false);
    const row = review[0]!;
    // The row holds the hit's name and street already; char(40) pads the street with spaces.
    const hit = { ...row.candidates[0], company: 'Muster GmbH', street: 'Hauptstr. 1', zip: undefined, city: undefined };
    await withClient(db, async (c) => {
      await c.query(`UPDATE dq_cleanse.results SET candidates = $2::jsonb WHERE run_id = 'cu' AND row_key = $1`, [row.key, JSON.stringify([hit])]);
      await c.query(`UPDATE firms SET name = 'Muster GmbH', street = 'Hauptstr. 1' WHERE id = $1`, [row.key]);
      await c.query(`CREATE TABLE updates (id bigint)`);
      await c.query(`CREATE FUNCTION count_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO updates VALUES (NEW.id); RETURN NEW; END $$`);
      await c.query(`CREATE TRIGGER count_update BEFORE UPDATE ON firms FOR EACH ROW EXECUTE FUNCTION count_update()`);
    });
    const file = join(dir, 'cu.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'cu', '--output', file])).code).toBe(0);
    const [header, ...rows] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
    rows.find((x) => x[header!.indexOf('id')] === row.key)![header!.indexOf('decision')] = '1';
    await writeFile(file, formatCsv([header!, ...rows], EXCEL));
    const before = await rowTexts(db);
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'cu-review']);
    noStackTrace(applied);
    expect(applied.code, applied.stderr).toBe(0);
    expect(summaryOf(applied)).toMatchObject({ applied: 1 });
    expect(await rowTexts(db)).toEqual(before);
    await withClient(db, async (c) => {
      expect((await c.query(`SELECT outcome FROM dq_cleanse.results WHERE run_id = 'cu-review'`)).rows).toEqual([{ outcome: 'unchanged' }]);
      expect((await c.query(`SELECT count(*)::int AS n FROM dq_cleanse.audit WHERE run_id = 'cu-review'`)).rows).toEqual([{ n: 0 }]);
      expect((await c.query(`SELECT count(*)::int AS n FROM updates`)).rows).toEqual([{ n: 0 }]);
    });
  });
});

describe('dq-pg review apply, company mode, a decision in the wrong column', () => {
  it("a decision written in the empty class column, or past the row's last hit, is named with its line, not taken as a row left for later", async () => {
    const { db, review } = await cleanedFirms('cw', 24);
    const [one, many] = [review.find((x) => x.candidates.length >= 2)!, review.filter((x) => x.candidates.length >= 2)[1]!];
    expect(many, 'two review rows with several hits').toBeDefined();
    // One row with a single hit, in a file as wide as the other rows' hits.
    await withClient(db, (c) =>
      c.query(`UPDATE dq_cleanse.results SET candidates = candidates -> 0 || '[]'::jsonb WHERE run_id = 'cw' AND row_key = $1`, [many.key]),
    );
    const file = join(dir, 'cw.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'cw', '--output', file])).code).toBe(0);
    const [header, ...rows] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
    const line = (key: string) => rows.findIndex((x) => x[header!.indexOf('id')] === key) + 2;
    rows[line(one.key) - 2]![header!.indexOf('class')] = '2';
    rows[line(many.key) - 2]![header!.indexOf('candidate_2_company')] = '1';
    await writeFile(file, formatCsv([header!, ...rows], EXCEL));
    const before = await rowTexts(db);
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'cw-review']);
    noStackTrace(applied);
    expect(applied.code, applied.stderr).toBe(4);
    expect(summaryOf(applied)).toMatchObject({ badDecisions: 2, skipped: rows.length - 2, applied: 0 });
    expect(applied.stderr).toContain(`line ${line(one.key)} (key ${one.key}): the decision cell is empty, but column class holds "2"`);
    expect(applied.stderr).toContain(`line ${line(many.key)} (key ${many.key}): the decision cell is empty, but column candidate_2_company holds "1"`);
    expect(await rowTexts(db)).toEqual(before);
  });
});
