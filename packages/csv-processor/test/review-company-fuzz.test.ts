import { createHash } from 'node:crypto';
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CANDIDATE_FIELDS, candidateText, formatCsvLine, neutraliseCell, restoreCell } from '@dq/core/review';
import { seededRandom, type Rand } from '@dq/test-support/random';
import {
  EXCEL,
  formatCsv as formatCsvAs,
  hostileText,
  parseCsv,
  randomDecision as randomDecisionOf,
  saveReview,
  type Expected as ReviewExpected,
} from '@dq/test-support/spreadsheet';
import { beforeAll, describe, expect, it } from 'vitest';
import { readCsv, runCli, unlimited, useSandbox, useTempDir } from './helpers.js';
import { noStackTrace, randomSave } from './review-fuzz-support.js';

/*
 * The company-mode review round trip (validate --mode company → review export → a spreadsheet →
 * review apply) with hostile company hits and the ways spreadsheets save a file, drawn from seeds:
 * the CLI from dist/, the sandbox over real HTTP behind a proxy that answers every company search
 * with hits drawn from the request (hostile names, identical names, names differing in case or
 * spacing, postcodes and register numbers with leading zeros, long digit strings, dates), real
 * files. A model computes the applied file from the cleaned file and the decisions, and the real
 * one must be it byte for byte. REVIEW_FUZZ_SCALE=n runs n times as many seeds.
 */

const dir = useTempDir();
const sandbox = useSandbox(unlimited());

type Expected = ReviewExpected<'undecided'>;

/** The review file's names of the company candidate fields (README: candidate_N_company_id, _name, …, _score). */
const SUFFIXES: Record<string, string> = { id: 'company_id', company: 'name', searchScore: 'score' };
const FIELDS = CANDIDATE_FIELDS.company.map((f) => ({ ...f, suffix: SUFFIXES[f.field] ?? f.suffix }));
/** The dq_ column each candidate field is written into. */
const TARGETS: Record<string, string> = {
  id: 'dq_company_id',
  company: 'dq_company_name',
  zip: 'dq_company_zip',
  city: 'dq_company_city',
  street: 'dq_company_street',
  trCourt: 'dq_tr_court',
  trType: 'dq_tr_type',
  trNo: 'dq_tr_no',
  trStatus: 'dq_tr_status',
  searchScore: 'dq_score',
};

// ---------------------------------------------------------------------------------------------
// A platform answering hostile company hits

/** Text a spreadsheet reformats or a register holds: leading zeros, long digit strings, dates. */
const REFORMATTED = ['01067', '04103', '007', '0', '000123456789012345678', '12345678901234567890', '2024-01-02', '1.2.2024', '1/2/24', '1e5', '00'];

function hostileName(r: Rand): string {
  return r.chance(0.6)
    ? hostileText(r)
    : r.pick(['Müller GmbH', 'müller gmbh', 'Müller  GmbH', ' Müller GmbH', 'MÜLLER GMBH', 'Müller GmbH\r\n', ...REFORMATTED]);
}

/** The hits of one search, drawn from the request body: none, one, or several without a clear winner. */
function hostileHits(body: string): Record<string, unknown>[] {
  const r = seededRandom(createHash('sha256').update(body).digest().readUInt32LE(0));
  const roll = r();
  const count = roll < 0.1 ? 0 : roll < 0.2 ? 1 : r.int(2, 6);
  const shared = hostileName(r);
  const hits: Record<string, unknown>[] = [];
  for (let k = 0; k < count; k++) {
    const hit: Record<string, unknown> = {
      id: r.chance(0.7) ? 1_000_000 + r.int(0, 999_999) : r.pick(['007', '=1', "'42", hostileText(r) || 'x']),
      company: r.chance(0.4) ? shared : hostileName(r),
      searchScore: r.pick([90, 89.5, 88, 87]),
      searchMethod: 'company',
    };
    // Postcodes: a number below 100000 is the register's five digits (4103 is 04103), a string as it is.
    if (r.chance(0.9)) hit['zip'] = r.pick([4103, 80331, 1067, '01067', r.pick(REFORMATTED), hostileText(r)]);
    if (r.chance(0.9)) hit['city'] = r.chance(0.5) ? hostileText(r) : r.pick(['Leipzig', ...REFORMATTED]);
    if (r.chance(0.9)) hit['street'] = hostileText(r);
    if (r.chance(0.8)) hit['trCourt'] = r.chance(0.5) ? 'Amtsgericht Leipzig' : hostileText(r);
    if (r.chance(0.8)) hit['trType'] = r.pick(['HRB', 'HRA', '=HRB', '-']);
    if (r.chance(0.8)) hit['trNo'] = r.pick([2345, 10234, '000123', r.pick(REFORMATTED), hostileText(r)]);
    if (r.chance(0.8)) hit['trStatus'] = r.pick(['active', 'inactive']);
    hits.push(hit);
  }
  // Best first, within the platform's clear lead of each other: a review.
  return hits.sort((a, b) => (b['searchScore'] as number) - (a['searchScore'] as number));
}

/**
 * The sandbox behind a proxy (real HTTP both ways: authentication, request ids, rate limits are
 * the sandbox's) that answers every company search with {@link hostileHits} of its request.
 */
async function hostilePlatform(upstream: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks).toString('utf8');
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && !['host', 'connection', 'content-length', 'keep-alive'].includes(k)) headers[k] = v;
      // A search the sandbox answers whatever the hostile input was; the hits are replaced anyway.
      const search = (req.url ?? '').includes('searchMethod=tr')
        ? { trCourt: 'Amtsgericht München', trType: 'HRB', trNo: 10234 }
        : { company: 'Müller Maschinenbau GmbH' };
      const answer = await fetch(upstream + (req.url ?? '/'), { method: req.method, headers, body: JSON.stringify(search) });
      const out: Record<string, string> = {};
      answer.headers.forEach((v, k) => {
        if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive', 'x-total-count'].includes(k)) out[k] = v;
      });
      const json = (await answer.json()) as Record<string, unknown>;
      if (answer.status !== 200) return void res.writeHead(answer.status, out).end(JSON.stringify(json));
      const hits = hostileHits(body);
      res.writeHead(200, { ...out, 'x-total-count': String(hits.length) }).end(JSON.stringify({ ...json, companies: hits }));
    })().catch((e: unknown) => res.writeHead(502).end(String(e)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const INPUT_COLUMNS = ['id', 'Firma', 'PLZ', 'Ort', 'Strasse', 'USt-IdNr', 'memo'] as const;
/** Company searches, and register (tr) searches, whose hits are reviewed the same way. */
const MAPS = {
  plain: ['--mode', 'company', '--map', 'company=Firma,zip=PLZ,city=Ort,street=Strasse'],
  tr: ['--mode', 'tr', '--map', 'trCourt=Firma,trType=USt-IdNr,trNo=id'],
};

/** An input CSV of company rows with hostile names, postcodes with leading zeros, hostile notes. */
function hostileInput(r: Rand, rows: number): string {
  const lines: string[][] = [];
  for (let i = 1; i <= rows; i++) {
    lines.push([
      r.pick([String(i), `00${i}`]),
      // A name (mandatory): never empty, so every row is searched.
      `${hostileName(r)}${i}`,
      r.pick(['', '01067', '04103', '80331']),
      r.chance(0.5) ? '' : r.pick(['Leipzig', 'Dresden', '1.2.2024']),
      r.chance(0.5) ? '' : r.pick(['Augustusplatz 1', 'Hauptstr. 5']),
      r.pick(['DE0123456789', '', '000123456789012345678', '2024-01-02']),
      hostileText(r),
    ]);
  }
  return [INPUT_COLUMNS.join(','), ...lines.map((cells) => formatCsvLine(cells, ',').slice(0, -1))].join('\n') + '\n';
}

/** The cleaned files validate wrote through the hostile platform: as read, with --spreadsheet-safe, and of register searches. */
const KINDS = ['plain', 'safe', 'tr'] as const;
const cleaned: Record<(typeof KINDS)[number], string> = { plain: '', safe: '', tr: '' };
beforeAll(async () => {
  const platform = await hostilePlatform(sandbox.url);
  try {
    const input = join(dir, 'companies.csv');
    await writeFile(input, hostileInput(seededRandom(1), 60));
    const env = { ...sandbox.env(), DQ_BASE_URL: platform.url, DQ_REALTIME_URL: platform.url };
    for (const kind of KINDS) {
      cleaned[kind] = join(dir, `companies.${kind}.out.csv`);
      const flags = kind === 'safe' ? ['--spreadsheet-safe', ...MAPS.plain] : MAPS[kind];
      const run = await runCli(['validate', '--input', input, '--output', cleaned[kind], ...flags, '--store', 'off', '--rate-limit', '0'], env);
      expect(run.code, run.stderr).toBe(0);
    }
  } finally {
    await platform.close();
  }
  for (const kind of KINDS) {
    const { header, rows } = await readCsv(cleaned[kind]);
    // The file is dq-csv's CSV writing of its cells: the model below rebuilds it byte for byte.
    expect(await readFile(cleaned[kind], 'utf8')).toBe([header, ...rows].map((cells) => formatCsvLine(cells, ',')).join(''));
    const review = rows.filter((c) => c[header.indexOf('dq_status')] === 'review');
    expect(review.length, `${kind}: review rows`).toBeGreaterThan(20);
    const candidates = review.map((c) => c[header.indexOf('dq_company_candidates')]!);
    expect(candidates.some((c) => /"company":"[=+\-@\t\r]/.test(c))).toBe(true);
    expect(candidates.some((c) => /"zip":"0/.test(c))).toBe(true);
  }
}, 60_000);

/** The cell dq-csv writes for a candidate's value: numbers as written, text neutralised in a --spreadsheet-safe file. */
function cellOf(value: unknown, safe: boolean): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'number') return String(value);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return safe ? neutraliseCell(text) : text;
}

describe('dq-csv review round trip in company mode, fuzzed', () => {
  it('hostile hits, spreadsheet saves, decisions, rows changed meanwhile: the applied file is the model, byte for byte', async () => {
    const scale = Number(process.env['REVIEW_FUZZ_SCALE'] ?? 1);
    for (let seed = 1; seed <= 8 * scale; seed++) await fuzzCase(seed);
  }, 120_000);
});

async function fuzzCase(seed: number): Promise<void> {
  const r = seededRandom(seed);
  const kind = r.pick(KINDS);
  const safe = kind === 'safe';
  const where = `seed ${seed} (${kind})`;
  const output = join(dir, `cf-${seed}.out.csv`);
  await copyFile(cleaned[kind], output);
  const { header: names, rows: cleanedRows } = await readCsv(output);
  const at = (name: string) => names.indexOf(name);

  // Export: every cell shows its value exactly once the leading ' is taken off.
  const file = join(dir, `cf-${seed}.review.csv`);
  const exported = await runCli(['review', 'export', '--input', output, '--output', file]);
  noStackTrace(exported);
  expect(exported.code, `${where}: ${exported.stderr}`).toBe(0);
  const text = await readFile(file, 'utf8');
  expect(text.startsWith('\uFEFF'), where).toBe(true);
  const [header, ...rows] = parseCsv(text.slice(1), ',');
  const col = (name: string) => header!.indexOf(name);
  const candidatesOf = (row: number) => JSON.parse(cleanedRows[row - 1]![at('dq_company_candidates')]!) as Record<string, unknown>[];
  expect(rows.length, where).toBe(cleanedRows.filter((c) => c[at('dq_status')] === 'review').length);
  for (const row of rows) {
    expect(row.length, where).toBe(header!.length);
    const n = Number(row[0]);
    INPUT_COLUMNS.forEach((c) => expect(restoreCell(row[col(c)]!), `${where}: row ${n} ${c}`).toBe(cleanedRows[n - 1]![at(c)]));
    candidatesOf(n).forEach((cand, k) => {
      for (const f of FIELDS)
        expect(restoreCell(row[col(`candidate_${k + 1}_${f.suffix}`)]!), `${where}: row ${n} candidate ${k + 1} ${f.field}`).toBe(candidateText(cand, f));
    });
  }

  // Decisions, a duplicate, a row number the cleaned file does not have; rows changed in the cleaned file meanwhile.
  const expected = new Map<string[], { row: number; expected: Expected }>();
  for (const row of rows) {
    const n = Number(row[0]);
    const d = randomDecisionOf(r, candidatesOf(n).length, 'undecided', 'does not exist');
    row[col('decision')] = d.cell;
    expected.set(row, { row: n, expected: d.expected });
  }
  // A person's edits of the candidate cells change nothing: the candidate written is the one the cleaned file holds.
  for (const [row, { expected: e }] of expected) if (e.kind === 'applied' && r.chance(0.3)) row[col(`candidate_${e.n}_name`)] += ' (corrected)';
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
  // A decision written a column too far, or a note next to it (not on a multi-line row, as the address fuzz).
  const single = rows.filter((row) => row !== duplicated && !row.some((v) => /[\r\n]/.test(v)));
  const spill = single.length > 0 && r.chance(0.5) ? r.pick(single) : undefined;
  const spilled = spill ? (r.chance(0.5) ? spill[col('decision')]!.trim() || 'keep' : 'checked by A. Jones') : '';
  if (spill) {
    if (spilled !== 'checked by A. Jones') spill[col('decision')] = '';
    expected.get(spill)!.expected = { kind: 'bad', message: 'is in no named column' };
  }
  // A decision written a column too near: in the class column (company rows have no class), or in the
  // last candidate column of a row with fewer candidates than the widest: named, never left undecided unsaid.
  const widest = Math.max(...rows.map((row) => candidatesOf(Number(row[0])).length));
  const near = rows.filter((row) => row !== duplicated && row !== spill && (r.chance(0.5) || candidatesOf(Number(row[0])).length < widest));
  const misplaced = near.length > 0 && r.chance(0.5) ? r.pick(near) : undefined;
  if (misplaced) {
    const short = candidatesOf(Number(misplaced[0])).length < widest;
    misplaced[short && r.chance(0.5) ? col(`candidate_${widest}_score`) : col('class')] = misplaced[col('decision')]!.trim() || '2';
    if (r.chance(0.7)) misplaced[col('decision')] = '';
    expected.get(misplaced)!.expected = { kind: 'bad', message: 'a decision written in the wrong column?' };
  }
  const changed = decided.filter((row) => row !== duplicated && row !== spill && row !== misplaced && r.chance(0.25));
  for (const row of changed) {
    const cells = cleanedRows[Number(row[0]) - 1]!;
    cells[at('memo')] = `${cells[at('memo')]} edited`;
    expected.get(row)!.expected = { kind: 'conflict' };
  }
  if (changed.length > 0) await writeFile(output, [names, ...cleanedRows].map((cells) => formatCsvLine(cells, ',')).join(''));

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
  // "Unicode text" (UTF-16 with its byte order mark), or plain "CSV" in a one-byte encoding, where
  // every character it cannot hold becomes a ? (apply is told with --encoding).
  const encoding = r.pick(['utf8', 'utf8', 'utf16', 'latin1'] as const);
  const body = saved.replace(/^\uFEFF/, '');
  await writeFile(
    file,
    encoding === 'utf16'
      ? Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(body, 'utf16le')])
      : encoding === 'latin1'
        ? Buffer.from(body.replace(/[^\x00-\xff]/gu, '?'), 'latin1')
        : saved,
  );
  const lineOf = new Map<string[], number>();
  let line = 1;
  lines.forEach((cells, i) => {
    if (origin[i]) lineOf.set(origin[i]!, line);
    line += 1 + (cells.join('').match(/\n/g)?.length ?? 0);
  });

  // Apply, with --spreadsheet-safe exactly when the cleaned file was written with it.
  const to = join(dir, `cf-${seed}.applied.csv`);
  const applied = await runCli([
    'review',
    'apply',
    '--input',
    file,
    '--output',
    output,
    '--to',
    to,
    ...(safe ? ['--spreadsheet-safe'] : []),
    ...(encoding === 'latin1' ? ['--encoding', 'latin1'] : []),
  ]);
  const context = `${where} (${JSON.stringify(save)}, ${encoding}): exit ${applied.code}\n${applied.stderr}`;
  noStackTrace(applied);
  const outcomes = [...expected.values()];
  const count = (k: Expected['kind']) => outcomes.filter((o) => o.expected.kind === k).length;
  const summary = JSON.parse(applied.stdout || '{}') as Record<string, unknown>;
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
    const named = applied.stderr.split('\n').find((l) => l.startsWith(`dq-csv: review line ${lineOf.get(row)}: bad decision`));
    expect(named, `${context}\nthe bad decision on line ${lineOf.get(row)} is named`).toBeDefined();
    expect(named, context).toContain(e.message);
  }

  // A row changed since the export is named with the cell that changed, not one the spreadsheet
  // reformatted (a one-byte save turns other cells' characters into ?, so not there).
  if (encoding !== 'latin1')
    for (const row of changed) {
      const conflict = applied.stderr.split('\n').find((l) => l.startsWith(`dq-csv: review line ${lineOf.get(row)}: conflict`));
      expect(conflict, `${context}\nline ${lineOf.get(row)}`).toContain(`changed since the export: memo is now`);
    }

  // The model: the cleaned file, each decided row with exactly its decision, written as dq-csv writes a row.
  const decidedRows = new Map<number, Expected>();
  for (const { row, expected: e } of expected.values()) if (['applied', 'kept', 'invalid'].includes(e.kind)) decidedRows.set(row, e);
  const model = [
    names,
    ...cleanedRows.map((cells, i) => {
      const e = decidedRows.get(i + 1);
      if (e === undefined) return cells;
      const want = [...cells];
      want[at('dq_status')] = e.kind === 'applied' ? 'accepted' : e.kind === 'kept' ? 'kept' : 'invalid';
      want[at('dq_review_decision')] = e.kind === 'applied' ? `candidate ${e.n}` : e.kind === 'kept' ? 'keep' : 'invalid';
      if (e.kind === 'applied') {
        const cand = candidatesOf(i + 1)[e.n - 1]!;
        for (const [field, column] of Object.entries(TARGETS)) want[at(column)] = cellOf(cand[field], safe);
      }
      return want;
    }),
  ];
  const got = await readFile(to, 'utf8');
  if (got !== model.map((cells) => formatCsvLine(cells, ',')).join('')) {
    // Name the first row that differs, cell by cell.
    const after = await readCsv(to);
    expect(after.header, context).toEqual(names);
    after.rows.forEach((cells, i) => expect(cells, `${context}\nrow ${i + 1} (${decidedRows.get(i + 1)?.kind ?? 'left alone'})`).toEqual(model[i + 1]));
    expect(got, context).toBe(model.map((cells) => formatCsvLine(cells, ',')).join(''));
  }
}

describe('dq-csv review apply in company mode: the smallest cases the fuzz found', () => {
  /** The plain cleaned file with its first review rows given `candidates`, exported: the files and the review file's rows. */
  async function edited(name: string, candidates: unknown[][]) {
    const { header: names, rows } = await readCsv(cleaned.plain);
    const review = rows.filter((c) => c[names.indexOf('dq_status')] === 'review');
    candidates.forEach((list, k) => (review[k]![names.indexOf('dq_company_candidates')] = JSON.stringify(list)));
    const output = join(dir, `${name}.out.csv`);
    await writeFile(output, [names, ...rows].map((cells) => formatCsvLine(cells, ',')).join(''));
    const file = join(dir, `${name}.review.csv`);
    const run = await runCli(['review', 'export', '--input', output, '--output', file]);
    expect(run.code, run.stderr).toBe(0);
    const [header, ...lines] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
    return { output, file, header: header!, lines, col: (c: string) => header!.indexOf(c) };
  }
  async function apply(output: string, file: string, header: string[], lines: string[][]) {
    await writeFile(file, [header, ...lines].map((cells) => formatCsvLine(cells, ',')).join(''));
    const run = await runCli(['review', 'apply', '--input', file, '--output', output, '--to', join(dir, `${Date.now()}.applied.csv`)]);
    noStackTrace(run);
    return run;
  }

  it('a decision written in the class column, or in a candidate column the row has no candidate for, is named, not left undecided', async () => {
    const hit = (id: number) => ({ id, company: 'Müller GmbH', searchScore: 90 });
    const { output, file, header, lines, col } = await edited('misplaced', [
      [hit(1), hit(2), hit(3)],
      [hit(4), hit(5)],
      [hit(6), hit(7)],
    ]);
    lines[0]![col('decision')] = 'keep'; // widest: three candidates
    lines[1]![col('candidate_3_score')] = '2'; // one column left of decision, in a row of two candidates
    lines[2]![col('class')] = 'keep';
    const run = await apply(output, file, header, lines);
    expect(run.code, run.stderr).toBe(4);
    expect(JSON.parse(run.stdout)).toMatchObject({ kept: 1, bad: 2, undecided: lines.length - 3 });
    expect(run.stderr).toContain(
      `review line 3: bad decision, skipped: column candidate_3_score holds "2", but row ${lines[1]![0]} has candidates 1-2 (a decision written in the wrong column?): write the decision in column decision`,
    );
    expect(run.stderr).toContain(`review line 4: bad decision, skipped: column class holds "keep", but row ${lines[2]![0]} has no class`);
  });

  it('a candidate number for a row without candidates says it has none', async () => {
    const { output, file, header, lines, col } = await edited('none', [[]]);
    lines[0]![col('decision')] = '1';
    const run = await apply(output, file, header, lines);
    expect(run.code, run.stderr).toBe(4);
    expect(run.stderr).toContain(
      `review line 2: bad decision "1", skipped: candidate 1 does not exist: row ${lines[0]![0]} has no candidates (keep or invalid)`,
    );
  });
});

describe('dq-csv review round trip in company mode, NDJSON', () => {
  it('hostile hits and numbers as written: decided lines get exactly the chosen hit (typed), every other line stays byte for byte', async () => {
    const r = seededRandom(21);
    const lines = Array.from({ length: 40 }, (_, i) =>
      JSON.stringify({ id: i + 1, Firma: `${hostileName(r)}${i}`, PLZ: r.pick(['01067', null, 'x']), memo: hostileText(r) }).replace(
        /^\{"id":(\d+)/,
        (_, id: string) => `{"id":${id}${r.pick(['', '.0', 'e0'])}`,
      ),
    );
    const input = join(dir, 'companies.ndjson');
    const output = join(dir, 'companies.out.ndjson');
    await writeFile(input, lines.join('\n') + '\n');
    const platform = await hostilePlatform(sandbox.url);
    try {
      const env = { ...sandbox.env(), DQ_BASE_URL: platform.url, DQ_REALTIME_URL: platform.url };
      const run = await runCli(['validate', '--input', input, '--output', output, ...MAPS.plain, '--store', 'off', '--rate-limit', '0'], env);
      expect(run.code, run.stderr).toBe(0);
    } finally {
      await platform.close();
    }
    const file = join(dir, 'companies.ndjson.review.csv');
    const exported = await runCli(['review', 'export', '--input', output, '--output', file]);
    expect(exported.code, exported.stderr).toBe(0);
    const [header, ...rows] = parseCsv((await readFile(file, 'utf8')).slice(1), ',');
    const before = (await readFile(output, 'utf8')).split('\n');
    const objects = before.map((l) => (l ? (JSON.parse(l) as Record<string, unknown>) : {}));
    const candidatesOf = (n: number) => JSON.parse(objects[n - 1]!['dq_company_candidates'] as string) as Record<string, unknown>[];
    const decided = new Map<number, Expected>();
    for (const row of rows) {
      const n = Number(row[0]);
      const d = randomDecisionOf(r, candidatesOf(n).length, 'undecided', 'does not exist');
      row[header!.indexOf('decision')] = d.cell;
      if (['applied', 'kept', 'invalid'].includes(d.expected.kind)) decided.set(n, d.expected);
    }
    expect(
      [...decided.values()].some((e) => e.kind === 'applied'),
      'a hit picked',
    ).toBe(true);
    await writeFile(file, formatCsvAs([header!, ...rows], { ...EXCEL, delimiter: ';', quoteAll: true, numbers: true }, true));
    const to = join(dir, 'companies.applied.ndjson');
    const applied = await runCli(['review', 'apply', '--input', file, '--output', output, '--to', to]);
    noStackTrace(applied);
    expect(applied.code, applied.stderr).toBe(JSON.parse(applied.stdout).bad + JSON.parse(applied.stdout).conflicts > 0 ? 4 : 0);
    expect(JSON.parse(applied.stdout)).toMatchObject({ applied: [...decided.values()].filter((e) => e.kind === 'applied').length });
    const after = (await readFile(to, 'utf8')).split('\n');
    expect(after.length).toBe(before.length);
    after.forEach((line, i) => {
      const e = decided.get(i + 1);
      if (e === undefined) return expect(line, `line ${i + 1} is left alone`).toBe(before[i]);
      // The input's own text (numbers as written) up to the result keys.
      const inputs = (text: string) => text.slice(0, text.indexOf(',"dq_status"'));
      expect(inputs(line), `line ${i + 1}`).toBe(inputs(before[i]!));
      const want: Record<string, unknown> = { ...objects[i]! };
      want['dq_status'] = e.kind === 'applied' ? 'accepted' : e.kind === 'kept' ? 'kept' : 'invalid';
      want['dq_review_decision'] = e.kind === 'applied' ? `candidate ${e.n}` : e.kind === 'kept' ? 'keep' : 'invalid';
      if (e.kind === 'applied') {
        const cand = candidatesOf(i + 1)[e.n - 1]!;
        for (const [field, key] of Object.entries(TARGETS)) want[key] = cand[field] ?? null;
      }
      expect(JSON.parse(line), `line ${i + 1} (${e.kind})`).toEqual(want);
    });
  });
});
