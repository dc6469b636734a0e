import { readFile, writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeToString } from '@fast-csv/format';
import { parseString } from '@fast-csv/parse';
import pg from 'pg';
import { createCompanyService } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../src/bookkeeping.js';
import { billable, cleanseArgs, COLUMNS, createCustomers, createEtlRole, runCli, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { CliResult, TestEnv } from './support.js';

// The review loop end to end: a real PostgreSQL, the sandbox over HTTP, the CLI from dist/ as a
// child process. The sandbox's labelled dirty inputs give class D and E answers, which the default
// policy leaves for review.
let env: TestEnv;
let dir: string;
beforeAll(async () => {
  env = await startEnv();
  dir = await mkdtemp(join(tmpdir(), 'dq-review-'));
});
afterAll(async () => {
  await env?.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Candidate {
  street?: string;
  houseNumber?: string;
  postalCode?: string;
  locality?: string;
  country?: string;
}
interface ReviewRow {
  key: string;
  cls: string;
  requestId: string | null;
  candidates: Candidate[];
}

/** Each row's full text form (every column, exactly as stored), by id. */
async function rowTexts(db: string): Promise<Map<string, string>> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<{ id: string; t: string }>('SELECT id::text AS id, c::text AS t FROM customers c ORDER BY id');
    return new Map(rows.map((r) => [r.id, r.t]));
  });
}

async function row(db: string, id: string): Promise<Record<string, string | null>> {
  return withClient(db, async (c) => (await c.query<Record<string, string | null>>('SELECT * FROM customers WHERE id = $1', [id])).rows[0] ?? {});
}

async function reviewRows(db: string, runId: string): Promise<ReviewRow[]> {
  return withClient(
    db,
    async (c) =>
      (
        await c.query<{ key: string; cls: string; requestId: string | null; candidates: Candidate[] }>(
          `SELECT row_key AS key, result_class AS cls, request_id AS "requestId", candidates FROM dq_cleanse.results WHERE run_id = $1 AND status = 'review' ORDER BY row_key::bigint`,
          [runId],
        )
      ).rows,
  );
}

/** Counts every UPDATE of each row of customers (table `writes`: id, n). */
async function countWrites(db: string): Promise<void> {
  await withClient(db, async (c) => {
    await c.query(`CREATE TABLE writes (id bigint, n int NOT NULL DEFAULT 0, PRIMARY KEY (id))`);
    await c.query(`CREATE FUNCTION count_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                     INSERT INTO writes (id, n) VALUES (NEW.id, 1) ON CONFLICT (id) DO UPDATE SET n = writes.n + 1; RETURN NEW; END $$`);
    await c.query(`CREATE TRIGGER count_write AFTER UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION count_write()`);
  });
}

/** Keys of the rows updated since `writes` was last emptied. */
async function writes(db: string): Promise<string[]> {
  return withClient(db, async (c) => (await c.query<{ id: string }>('SELECT id::text AS id FROM writes ORDER BY id')).rows.map((r) => r.id));
}

/** Run `runId`'s results rows of `keys`, by key. */
async function resultsOf(
  db: string,
  runId: string,
  keys: readonly string[],
): Promise<Map<string, { status: string; outcome: string; request_id: string | null }>> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<{ row_key: string; status: string; outcome: string; request_id: string | null }>(
      `SELECT row_key, status, outcome, request_id FROM dq_cleanse.results WHERE run_id = $1 AND row_key = ANY ($2::text[])`,
      [runId, keys],
    );
    return new Map(rows.map((r) => [r.row_key, r]));
  });
}

/** A file's header and rows (cells as strings), read the way a spreadsheet would. */
async function readCsv(path: string): Promise<{ headers: string[]; rows: Record<string, string>[] }> {
  const text = await readFile(path, 'utf8');
  const headers: string[] = [];
  const rows: Record<string, string>[] = [];
  await new Promise<void>((resolve, reject) => {
    parseString(text, { headers: true })
      .on('headers', (h: string[]) => headers.push(...h))
      .on('data', (r: Record<string, string>) => rows.push(r))
      .on('error', reject)
      .on('end', () => resolve());
  });
  return { headers, rows };
}

/** The rows written back with `decisions` (key → cell), as a spreadsheet would save them. */
async function saveCsv(
  path: string,
  headers: string[],
  rows: Record<string, string>[],
  decisions: Map<string, string>,
  how: { bom: boolean; delimiter: string; quoteAll: boolean },
): Promise<void> {
  const body = await writeToString(
    rows.map((r) => headers.map((h) => (h === 'decision' ? (decisions.get(r['id'] ?? '') ?? '') : (r[h] ?? '')))),
    {
      headers,
      rowDelimiter: '\r\n',
      delimiter: how.delimiter,
      quoteColumns: how.quoteAll,
      quoteHeaders: how.quoteAll,
      includeEndRowDelimiter: true,
    },
  );
  await writeFile(path, `${how.bom ? '\uFEFF' : ''}${body}`);
}

function json(r: CliResult): Record<string, unknown> {
  return summaryOf(r);
}

/** A table with status columns, cleaned by run `runId` (as the role of `db`). */
async function cleaned(runId: string, rows = 200, statusColumns = true, db?: string, owner?: string): Promise<string> {
  const ownerDb = owner ?? db ?? (await env.pg.createDatabase());
  if (!owner) {
    await createCustomers(ownerDb, rows);
    if (statusColumns) await withClient(ownerDb, (c) => c.query('ALTER TABLE customers ADD COLUMN dq_status text, ADD COLUMN dq_class text'));
  }
  const run = await runCli(
    cleanseArgs(db ?? ownerDb, env.sandbox, [
      '--run-id',
      runId,
      '--batch-size',
      '50',
      ...(statusColumns ? ['--status-columns', 'status=dq_status,class=dq_class'] : []),
    ]),
  );
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return ownerDb;
}

const full = (c: Candidate | undefined): c is Required<Pick<Candidate, 'street' | 'houseNumber' | 'postalCode' | 'locality'>> & Candidate =>
  !!c && !!c.street && !!c.houseNumber && !!c.postalCode && !!c.locality;

/** A database whose table `firms` has one row: a name two active companies of the register share (a company search puts it in review). */
async function firmsWithAmbiguousName(): Promise<{ db: string; name: string }> {
  const byName = new Map<string, { id: number; company: string }[]>();
  for (const c of createCompanyService({ seed: 1 }).companies) if (c.trStatus === 'active') byName.set(c.company, [...(byName.get(c.company) ?? []), c]);
  const [a] = [...byName.values()].find((same) => same.length === 2) ?? [];
  if (a === undefined) throw new Error('the register has no two active companies of one name');
  const db = await env.pg.createDatabase();
  await withClient(db, async (c) => {
    await c.query('CREATE TABLE firms (id int PRIMARY KEY, name text, zip text, city text, street text)');
    await c.query('INSERT INTO firms (id, name) VALUES (1, $1)', [a.company]);
  });
  return { db, name: a.company };
}

/** A company cleanse of `firms` with run id `runId`. */
const firmsCleanse = (db: string, runId: string): string[] => [
  'cleanse',
  '--db',
  db,
  '--table',
  'public.firms',
  '--key',
  'id',
  '--map',
  'company=name,zip=zip,city=city,street=street',
  '--mode',
  'company',
  '--base-url',
  env.sandbox.url,
  '--rate-limit',
  '0',
  '--threads',
  '0',
  '--run-id',
  runId,
];

describe('dq-pg review export / apply', () => {
  it('exports D and E rows, applies a candidate, keep and invalid, reports a bad decision and a conflict, and rollback restores the table exactly', async () => {
    const db = await cleaned('c1');
    const review = await reviewRows(db, 'c1');
    expect(new Set(review.map((r) => r.cls))).toEqual(new Set(['D', 'E']));

    const file = join(dir, 'review.csv');
    const exported = await runCli(['review', 'export', '--db', db, '--run', 'c1', '--output', file]);
    expect(exported.stderr).toBe('');
    expect(exported.code).toBe(0);
    expect(json(exported)).toMatchObject({ rows: review.length, runId: 'c1' });
    const bytes = await readFile(file);
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(bytes.toString('utf8').split('\r\n').length).toBe(review.length + 2);
    const { headers, rows } = await readCsv(file);
    const widest = Math.max(...review.map((r) => r.candidates.length));
    expect(widest).toBeGreaterThan(1);
    expect(headers.slice(0, 12)).toEqual([
      'run_id',
      'id',
      'street',
      'house_number',
      'postal_code',
      'city',
      'address_line',
      'locality_line',
      'country',
      'class',
      'request_id',
      'row_check',
    ]);
    expect(headers).toContain(`candidate_${widest}_postal_code`);
    expect(headers.at(-1)).toBe('decision');
    expect(rows.map((r) => r['id'])).toEqual(review.map((r) => r.key));

    // A row whose second candidate is complete (else a first one), a keep, an invalid, two bad
    // cells and a row changed in the table after the export.
    const pick = review.find((r) => full(r.candidates[1])) ?? review.find((r) => full(r.candidates[0]));
    expect(pick).toBeDefined();
    const n = full(pick?.candidates[1]) ? 2 : 1;
    const others = review.filter((r) => r !== pick);
    const [keep, invalid, typo, tooHigh, changed] = others as [ReviewRow, ReviewRow, ReviewRow, ReviewRow, ReviewRow];
    const decisions = new Map([
      [pick!.key, String(n)],
      [keep.key, 'keep'],
      [invalid.key, 'Invalid'],
      [typo.key, 'kep'],
      [tooHigh.key, String(tooHigh.candidates.length + 1)],
      [changed.key, '1'],
    ]);
    await saveCsv(file, headers, rows, decisions, { bom: true, delimiter: ',', quoteAll: true });
    await withClient(db, (c) => c.query(`UPDATE customers SET city = 'Changed after export' WHERE id = $1`, [changed.key]));

    const beforeApply = await rowTexts(db);
    const before = await row(db, pick!.key);
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv1']);
    // Some rows need a person: exit 4, each named on stderr.
    expect(applied.code).toBe(4);
    expect(json(applied)).toMatchObject({
      runId: 'rv1',
      reviewOf: 'c1',
      applied: 1,
      kept: 1,
      invalid: 1,
      conflicts: 1,
      conflictKeys: [changed.key],
      badDecisions: 2,
      skipped: review.length - 6,
      state: 'done',
    });
    const line = (key: string) => rows.findIndex((r) => r['id'] === key) + 2;
    expect(applied.stderr).toContain(`line ${line(typo.key)} (key ${typo.key}): "kep" is not a decision`);
    expect(applied.stderr).toContain(
      `line ${line(tooHigh.key)} (key ${tooHigh.key}): "${tooHigh.candidates.length + 1}" is not a candidate of this row: it has ${tooHigh.candidates.length}`,
    );
    expect(applied.stderr).toContain(`conflict: key ${changed.key} changed`);
    expect(applied.stderr).not.toMatch(/\n\s+at /);

    // The candidate's exact fields in the mapped columns; status columns say decided.
    const chosen = pick!.candidates[n - 1] as Candidate;
    const after = await row(db, pick!.key);
    expect(after).toMatchObject({
      street: chosen.street,
      house_number: chosen.houseNumber,
      postal_code: chosen.postalCode,
      city: chosen.locality,
      dq_status: 'accepted',
      dq_class: pick!.cls,
    });
    expect(await row(db, keep.key)).toMatchObject({ dq_status: 'accepted', dq_class: keep.cls });
    expect(await row(db, invalid.key)).toMatchObject({ dq_status: 'invalid' });
    const nowTexts = await rowTexts(db);
    for (const [id, text] of beforeApply) if (![pick!.key, keep.key, invalid.key].includes(id)) expect(nowTexts.get(id)).toBe(text);
    expect(nowTexts.get(keep.key)?.replace(',accepted,', ',review,')).toBe(beforeApply.get(keep.key));

    // Audit: before → after of every row the apply wrote.
    const audit = await withClient(
      db,
      async (c) =>
        (
          await c.query<{ row_key: string; before: Record<string, string | null>; after: Record<string, string | null> }>(
            `SELECT row_key, before, after FROM dq_cleanse.audit WHERE run_id = 'rv1' ORDER BY row_key`,
          )
        ).rows,
    );
    expect(audit.map((a) => a.row_key).sort()).toEqual([pick!.key, keep.key, invalid.key].sort());
    const a = audit.find((x) => x.row_key === pick!.key)!;
    expect(a.before).toMatchObject({ street: before['street'], house_number: before['house_number'], city: before['city'], dq_status: 'review' });
    expect(a.after).toMatchObject({
      street: chosen.street,
      house_number: chosen.houseNumber,
      postal_code: chosen.postalCode,
      city: chosen.locality,
      dq_status: 'accepted',
    });

    const status = await runCli(['status', '--db', db, '--run', 'rv1', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId: 'rv1', kind: 'review', state: 'done' });

    // Decided rows are no longer exported; the conflict and the bad cells are.
    const again = await runCli(['review', 'export', '--db', db, '--run', 'c1', '--output', join(dir, 'again.csv')]);
    expect(json(again)['rows']).toBe(review.length - 3);

    // The same file applied again as another review run: the rows rv1 decided are not decided
    // twice — the same decisions count as applied; the bad cells and the conflict are still named.
    const twice = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv1-again']);
    expect(twice.code).toBe(4);
    expect(json(twice)).toMatchObject({ applied: 0, kept: 0, invalid: 0, conflicts: 1, badDecisions: 2, sameAsApplied: { rows: 3, runs: ['rv1'] } });
    expect(twice.stderr).toContain(`note: 3 row(s) of ${file} were decided the same way already by review run(s) rv1`);
    expect(twice.stderr).not.toContain('decided this row already');
    expect(await rowTexts(db)).toEqual(nowTexts);
    expect((await runCli(['rollback', '--db', db, '--run', 'rv1-again'])).code).toBe(0);

    const undo = await runCli(['rollback', '--db', db, '--run', 'rv1']);
    expect(undo.code).toBe(0);
    expect(JSON.parse(undo.stdout)).toMatchObject({ restored: 3, conflicts: 0 });
    expect(await rowTexts(db)).toEqual(beforeApply);
    const third = await runCli(['review', 'export', '--db', db, '--run', 'c1', '--output', join(dir, 'third.csv')]);
    expect(json(third)['rows']).toBe(review.length);
  });

  it.each([
    { how: 'BOM, ";" between cells, quoted only where needed, CRLF', bom: true, delimiter: ';', quoteAll: false },
    { how: 'no BOM, ",", quoted only where needed, CRLF', bom: false, delimiter: ',', quoteAll: false },
  ])('applies a file re-saved by a spreadsheet ($how), undoing the neutralisation of formula-like values exactly', async ({ bom, delimiter, quoteAll }) => {
    const runId = `c-${delimiter === ';' ? 'semi' : 'comma'}`;
    const db = await cleaned(runId, 120);
    const review = await reviewRows(db, runId);
    const [risky, quote, chooser] = review as [ReviewRow, ReviewRow, ReviewRow];
    // Values a spreadsheet would take for formulas, and one that already starts with an apostrophe.
    await withClient(db, async (c) => {
      await c.query(`UPDATE customers SET street = '=HYPERLINK("http://x")', house_number = '-12', city = E'\\tTab' WHERE id = $1`, [risky.key]);
      await c.query(`UPDATE customers SET street = '''s-Hertogenbosch', address_line = '@home' WHERE id = $1`, [quote.key]);
    });
    const file = join(dir, `${runId}.csv`);
    expect((await runCli(['review', 'export', '--db', db, '--run', runId, '--output', file])).code).toBe(0);
    const raw = await readFile(file, 'utf8');
    expect(raw).toContain(`"'=HYPERLINK(""http://x"")"`);
    expect(raw).toContain(`"'-12"`);
    expect(raw).toContain(`"''s-Hertogenbosch"`);
    const { headers, rows } = await readCsv(file);
    const c1 = chooser.candidates[0] as Candidate;
    await saveCsv(
      file,
      headers,
      rows,
      new Map([
        [risky.key, 'keep'],
        [quote.key, ' KEEP '],
        [chooser.key, '1'],
      ]),
      { bom, delimiter, quoteAll },
    );
    expect((await readFile(file, 'utf8')).includes('\r\n')).toBe(true);

    const applied = await runCli(['review', 'apply', '--db', db, '--input', file]);
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    expect(json(applied)).toMatchObject({ applied: 1, kept: 2, conflicts: 0, badDecisions: 0 });
    expect(await row(db, risky.key)).toMatchObject({ street: '=HYPERLINK("http://x")', house_number: '-12', city: '\tTab', dq_status: 'accepted' });
    expect(await row(db, quote.key)).toMatchObject({ street: "'s-Hertogenbosch", address_line: '@home', dq_status: 'accepted' });
    if (c1.street) expect((await row(db, chooser.key))['street']).toBe(c1.street);
  });

  it('applies a file whose values and keys a spreadsheet reformatted (leading zeros gone, ";" between cells); a row changed in the table since the export is still a conflict', async () => {
    // Text keys and postal codes with leading zeros (customer numbers; Saxony and Thuringia), before the run.
    const db = await env.pg.createDatabase();
    await createCustomers(db, 200);
    await withClient(db, async (c) => {
      await c.query(`ALTER TABLE customers ALTER COLUMN id TYPE text USING lpad(id::text, 6, '0')`);
      await c.query(`UPDATE customers SET postal_code = '0' || substr(postal_code, 2) WHERE postal_code ~ '^[0-9]{5}$'`);
    });
    await cleaned('zeros', 200, false, db, db);
    const review = await reviewRows(db, 'zeros');
    const file = join(dir, 'zeros.review.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'zeros', '--output', file])).code).toBe(0);
    const { headers, rows } = await readCsv(file);
    const zeros = rows.filter((r) => /^0\d+$/.test(r['postal_code'] ?? ''));
    expect(zeros.length, 'exported rows with a leading zero').toBeGreaterThanOrEqual(3);
    // What a spreadsheet saves: every cell of digits as a number (the key column too).
    const number = (r: Record<string, string>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, /^\d+$/.test(v) ? String(Number(v)) : v]));
    const saved = rows.map(number);
    expect(number(zeros[0]!)['postal_code']).not.toMatch(/^0/);
    expect(number(zeros[0]!)['id']).not.toMatch(/^0/);
    const decisions = new Map(zeros.map((r) => [number(r)['id']!, 'keep']));
    await saveCsv(file, headers, saved, decisions, { bom: true, delimiter: ';', quoteAll: false });
    const changed = zeros[2]!['id']!;
    await withClient(db, (c) => c.query(`UPDATE customers SET street = street || ' Nord' WHERE id = $1`, [changed]));

    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'zeros-review']);
    expect(applied.code, applied.stderr).toBe(4);
    expect(json(applied)).toMatchObject({
      kept: zeros.length - 1,
      conflicts: 1,
      conflictKeys: [changed],
      badDecisions: 0,
      skipped: review.length - zeros.length,
    });
    // The kept rows keep their values, leading zeros included: the file's reformatted ones were never written.
    for (const r of zeros) if (r['id'] !== changed) expect(await row(db, r['id']!)).toMatchObject({ postal_code: r['postal_code'] });
  });

  it('with status columns, a kept row another transaction changes while the apply waits for it is a conflict, not silently left undecided', async () => {
    const db = await cleaned('c-race', 120);
    const [raced] = (await reviewRows(db, 'c-race')) as [ReviewRow];
    const file = join(dir, 'race.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'c-race', '--output', file])).code).toBe(0);
    const { headers, rows } = await readCsv(file);
    await saveCsv(file, headers, rows, new Map([[raced.key, 'keep']]), { bom: true, delimiter: ',', quoteAll: true });
    const other = new pg.Client({ connectionString: db });
    await other.connect();
    let applied: CliResult;
    try {
      await other.query('BEGIN');
      await other.query(`UPDATE customers SET city = 'Raced' WHERE id = $1`, [raced.key]);
      const { done } = spawnCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv-race']);
      for (let i = 0; ; i += 1) {
        const { rows: waiting } = await other.query(
          `SELECT 1 FROM pg_stat_activity WHERE application_name = 'dq-pg' AND pg_backend_pid() = ANY (pg_blocking_pids(pid))`,
        );
        if (waiting.length > 0) break;
        if (i > 1000) throw new Error('the apply never waited for the row');
        await other.query('SELECT pg_stat_clear_snapshot()');
        await sleep(20);
      }
      await other.query('COMMIT');
      applied = await done;
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      await other.end();
    }
    expect(applied.code).toBe(4);
    expect(json(applied)).toMatchObject({ kept: 0, conflicts: 1, conflictKeys: [raced.key] });
    expect(await row(db, raced.key)).toMatchObject({ city: 'Raced', dq_status: 'review' });
  });

  it('a decided row another session keeps locked is named as locked, not as changed, and applying the file again once it is released writes it', async () => {
    const db = await cleaned('c-lock', 120);
    const [held] = (await reviewRows(db, 'c-lock')) as [ReviewRow];
    const file = join(dir, 'lock.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'c-lock', '--output', file])).code).toBe(0);
    const { headers, rows } = await readCsv(file);
    await saveCsv(file, headers, rows, new Map([[held.key, 'keep']]), { bom: false, delimiter: ',', quoteAll: false });
    // Locked, not changed: an application's open transaction on the row (SELECT … FOR UPDATE).
    const other = new pg.Client({ connectionString: db });
    await other.connect();
    let first: CliResult;
    try {
      await other.query('BEGIN');
      await other.query('SELECT 1 FROM customers WHERE id = $1 FOR UPDATE', [held.key]);
      // A short query timeout makes the wait for a row lock short (a quarter of it).
      // Held until the apply has ended (the ROLLBACK below): the apply did not wait for it.
      first = await runCli(['review', 'apply', '--db', `${db}?query_timeout=4000`, '--input', file, '--run-id', 'rv-lock-1']);
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      await other.end();
    }
    expect(first.code, first.stderr).toBe(4);
    expect(json(first)).toMatchObject({ kept: 0, conflicts: 0, locked: 1, lockedKeys: [held.key] });
    expect(first.stderr).toContain(`locked: key ${held.key} is locked by another session`);
    expect(first.stderr).not.toMatch(/changed in .* since the export/);
    expect(await row(db, held.key)).toMatchObject({ dq_status: 'review' });

    const again = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv-lock-2']);
    expect(again.code, again.stderr).toBe(0);
    expect(json(again)).toMatchObject({ kept: 1, conflicts: 0, locked: 0 });
    expect(await row(db, held.key)).toMatchObject({ dq_status: 'accepted' });
  });

  it('resumes after kill -9 during apply without writing any row twice', async () => {
    const db = await cleaned('c-kill', 300, false);
    const review = await reviewRows(db, 'c-kill');
    expect(review.length).toBeGreaterThan(20);
    await countWrites(db);
    const file = join(dir, 'kill.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'c-kill', '--output', file])).code).toBe(0);
    const { headers, rows } = await readCsv(file);
    // Every row decided: candidate 1 where it differs from the row, else invalid.
    const decisions = new Map(review.map((r) => [r.key, r.candidates.length > 0 ? '1' : 'invalid']));
    await saveCsv(file, headers, rows, decisions, { bom: true, delimiter: ',', quoteAll: true });

    // Another session holds a row half-way: the apply blocks on its page, and is killed there.
    const blocked = review[Math.floor(review.length / 2)]!.key;
    const other = new pg.Client({ connectionString: db });
    await other.connect();
    let killed: CliResult;
    try {
      await other.query('BEGIN');
      await other.query('SELECT 1 FROM customers WHERE id = $1 FOR UPDATE', [blocked]);
      const { child, done } = spawnCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv-kill', '--batch-size', '3']);
      for (let i = 0; ; i += 1) {
        const { rows: waiting } = await other.query(
          `SELECT 1 FROM pg_stat_activity WHERE application_name = 'dq-pg' AND pg_backend_pid() = ANY (pg_blocking_pids(pid))`,
        );
        if (waiting.length > 0) break;
        if (i > 1000) throw new Error('the apply never reached the locked row');
        await other.query('SELECT pg_stat_clear_snapshot()');
        await sleep(20);
      }
      child.kill('SIGKILL');
      killed = await done;
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      await other.end();
    }
    expect(killed.signal).toBe('SIGKILL');
    // The statement the killed process had sent still runs to its end once the lock is gone (its
    // server session only notices the dead client afterwards): count once that session is gone.
    for (let i = 0; ; i += 1) {
      const left = await withClient(db, async (c) => (await c.query(`SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'dq-pg%'`)).rowCount);
      if (left === 0) break;
      if (i > 500) throw new Error("the killed apply's database sessions did not end");
      await sleep(20);
    }
    const atKill = await withClient(
      db,
      async (c) => (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'rv-kill'`)).rows[0]?.n ?? 0,
    );
    expect(atKill).toBeGreaterThan(0);
    expect(atKill).toBeLessThan(review.length);
    const status = await runCli(['status', '--db', db, '--run', 'rv-kill', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ kind: 'review', state: 'interrupted' });

    const resumed = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv-kill']);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    const s = json(resumed) as { applied: number; invalid: number; alreadyApplied: number };
    expect(s.alreadyApplied).toBe(atKill);
    expect(s.applied + s.invalid + s.alreadyApplied).toBe(review.length);
    await withClient(db, async (c) => {
      const twice = await c.query(`SELECT id FROM writes WHERE n > 1`);
      expect(twice.rows).toEqual([]);
      const results = await c.query<{ n: number; distinct: number }>(
        `SELECT count(*)::int AS n, count(DISTINCT row_key)::int AS distinct FROM dq_cleanse.results WHERE run_id = 'rv-kill'`,
      );
      expect(results.rows[0]).toEqual({ n: review.length, distinct: review.length });
      const written = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM writes`);
      const audited = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.audit WHERE run_id = 'rv-kill'`);
      expect(audited.rows[0]?.n).toBe(written.rows[0]?.n);
    });
    // A third run with the same id has nothing left to do.
    const third = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv-kill']);
    expect(json(third)).toMatchObject({ applied: 0, invalid: 0, alreadyApplied: review.length });
  });

  it('the next cleanse reuses what a review run decided: no call, no write; keep and invalid stand, also past --max-age; a rollback of the review run withdraws it', async () => {
    const db = await cleaned('c-known', 200, false);
    const review = await reviewRows(db, 'c-known');
    await countWrites(db);
    const file = join(dir, 'known.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'c-known', '--output', file])).code).toBe(0);
    const { headers, rows } = await readCsv(file);
    // Candidates that change the row (their calls would be new inputs), two keeps, two invalids.
    const differs = (r: ReviewRow): boolean => {
      const c = r.candidates[0];
      const now = rows.find((x) => x['id'] === r.key);
      return full(c) && (c.street !== now?.['street'] || c.postalCode !== now?.['postal_code'] || c.locality !== now?.['city']);
    };
    const picked = review.filter(differs).slice(0, 3);
    const rest = review.filter((r) => !picked.includes(r));
    const kept = rest.slice(0, 2);
    const invalid = rest.slice(2, 4);
    expect(picked.length).toBeGreaterThan(0);
    expect(invalid).toHaveLength(2);
    const decisions = new Map([
      ...picked.map((r) => [r.key, '1'] as const),
      ...kept.map((r) => [r.key, 'keep'] as const),
      ...invalid.map((r) => [r.key, 'invalid'] as const),
    ]);
    await saveCsv(file, headers, rows, decisions, { bom: true, delimiter: ',', quoteAll: true });
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv-known']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(json(applied)).toMatchObject({ applied: picked.length, kept: 2, invalid: 2, conflicts: 0 });
    const decided = [...decisions.keys()];
    const afterApply = await rowTexts(db);
    await withClient(db, (c) => c.query('TRUNCATE writes'));

    // The next night: nothing called, nothing written; each decision is that night's result.
    const night = async (runId: string, ...extra: string[]) => {
      const calls = billable(env.sandbox);
      const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', runId, '--batch-size', '50', ...extra]));
      expect(run.code, run.stderr).toBe(0);
      return { calls: billable(env.sandbox) - calls, summary: json(run), results: await resultsOf(db, runId, decided) };
    };
    const next = await night('n-known-2');
    expect(next.calls).toBe(0);
    expect(next.summary).toMatchObject({ rows: 200, apiCalls: 0, written: 0, conflicts: 0 });
    expect(await rowTexts(db)).toEqual(afterApply);
    expect(await writes(db)).toEqual([]);
    const expected = (key: string) =>
      invalid.some((r) => r.key === key) ? { status: 'invalid', outcome: 'kept' } : { status: 'accepted', outcome: 'unchanged' };
    for (const key of decided) expect(next.results.get(key), key).toMatchObject({ ...expected(key), request_id: review.find((r) => r.key === key)?.requestId });
    // Not back in the review queue of the new run.
    const queued = new Set((await reviewRows(db, 'n-known-2')).map((r) => r.key));
    for (const key of decided) expect(queued.has(key), key).toBe(false);

    // A month on: the platform's answers are bought again, the reviewer's decisions still stand.
    await withClient(db, async (c) => {
      await c.query(`UPDATE dq_cleanse.results SET checked_at = checked_at - interval '2 hours'`);
      await c.query(`UPDATE dq_store.results SET checked_at = checked_at - interval '2 hours'`);
    });
    const aged = await night('n-known-3', '--max-age', '1h');
    expect(aged.calls).toBeGreaterThan(0);
    for (const key of decided) expect(aged.results.get(key), key).toMatchObject(expected(key));
    expect((await writes(db)).filter((id) => decided.includes(id))).toEqual([]);

    // The review run rolled back: the candidate rows get their old values, and every decided row
    // is checked again (its input's answer is in the store) and awaits review again.
    const undo = await runCli(['rollback', '--db', db, '--run', 'rv-known']);
    expect(undo.code, undo.stderr).toBe(0);
    expect(JSON.parse(undo.stdout)).toMatchObject({ restored: picked.length, conflicts: 0 });
    const again = await night('n-known-4');
    expect(again.calls).toBe(0);
    for (const key of decided) expect(again.results.get(key), key).toMatchObject({ status: 'review' });
  });

  it('with status columns, the next cleanse leaves what the reviewer decided in them', async () => {
    const db = await cleaned('c-known-st', 120);
    const [kept, invalid, picked] = (await reviewRows(db, 'c-known-st')) as [ReviewRow, ReviewRow, ReviewRow];
    const file = join(dir, 'known-st.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'c-known-st', '--output', file])).code).toBe(0);
    const { headers, rows } = await readCsv(file);
    const decisions = new Map([
      [kept.key, 'keep'],
      [invalid.key, 'invalid'],
      [picked.key, picked.candidates.length > 0 ? '1' : 'keep'],
    ]);
    await saveCsv(file, headers, rows, decisions, { bom: true, delimiter: ',', quoteAll: true });
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv-known-st']);
    expect(applied.code, applied.stderr).toBe(0);
    const afterApply = await rowTexts(db);
    const calls = billable(env.sandbox);
    const next = await runCli(
      cleanseArgs(db, env.sandbox, ['--run-id', 'n-known-st', '--batch-size', '50', '--status-columns', 'status=dq_status,class=dq_class']),
    );
    expect(next.code, next.stderr).toBe(0);
    expect(billable(env.sandbox) - calls).toBe(0);
    expect(await rowTexts(db)).toEqual(afterApply);
    expect(await row(db, kept.key)).toMatchObject({ dq_status: 'accepted', dq_class: kept.cls });
    expect(await row(db, invalid.key)).toMatchObject({ dq_status: 'invalid' });
  });

  it('runs export, apply and rollback as the ETL role with the documented grants', async () => {
    const owner = await env.pg.createDatabase();
    await createCustomers(owner, 150);
    const init = await runCli(['init', '--db', owner]);
    expect(init.code).toBe(0);
    const etl = await createEtlRole(owner);
    await cleaned('c-etl', 150, false, etl, owner);
    const review = await reviewRows(owner, 'c-etl');
    const file = join(dir, 'etl.csv');
    const exported = await runCli(['review', 'export', '--db', etl, '--run', 'c-etl', '--output', file]);
    expect(exported.stderr).toBe('');
    expect(exported.code).toBe(0);
    const { headers, rows } = await readCsv(file);
    const withCandidate = review.filter((r) => r.candidates.length > 0).slice(0, 5);
    await saveCsv(file, headers, rows, new Map(withCandidate.map((r) => [r.key, '1'])), { bom: true, delimiter: ',', quoteAll: true });
    const before = await rowTexts(owner);
    const applied = await runCli(['review', 'apply', '--db', etl, '--input', file, '--run-id', 'rv-etl']);
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    expect(json(applied)).toMatchObject({ applied: withCandidate.length });
    // The ETL role's next cleanse reuses the decisions: no call, no write.
    const afterApply = await rowTexts(owner);
    const calls = billable(env.sandbox);
    const next = await runCli(cleanseArgs(etl, env.sandbox, ['--run-id', 'c-etl-2', '--batch-size', '50']));
    expect(next.code, next.stderr).toBe(0);
    expect(billable(env.sandbox) - calls).toBe(0);
    expect(json(next)).toMatchObject({ apiCalls: 0, written: 0 });
    expect(await rowTexts(owner)).toEqual(afterApply);
    const undo = await runCli(['rollback', '--db', etl, '--run', 'rv-etl']);
    expect(undo.code).toBe(0);
    expect(await rowTexts(owner)).toEqual(before);
  });

  it('a run recorded by the layout before review runs (version 2) is exported once its owner ran dq-pg init; until then the ETL role is told to', async () => {
    const owner = await env.pg.createDatabase();
    await createCustomers(owner, 80);
    await cleaned('c-old', 80, false, owner, owner);
    // The layout as dq-pg wrote it before review runs: no kind, no review_of, version 2.
    await withClient(owner, (c) =>
      c.query(`ALTER TABLE dq_cleanse.runs DROP COLUMN kind, DROP COLUMN review_of; UPDATE dq_cleanse.schema_version SET version = 2`),
    );
    const etl = await createEtlRole(owner);
    const status = await runCli(['status', '--db', etl, '--run', 'c-old', '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId: 'c-old', kind: 'cleanse', state: 'done' });
    const out = join(dir, 'old.csv');
    const refused = await runCli(['review', 'export', '--db', etl, '--run', 'c-old', '--output', out]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`permission-denied: .*may not upgrade schema dq_cleanse from layout version 2 to ${SCHEMA_VERSION}.*dq-pg init`));
    const init = await runCli(['init', '--db', owner]);
    expect(JSON.parse(init.stdout)).toMatchObject({ version: SCHEMA_VERSION });
    const exported = await runCli(['review', 'export', '--db', etl, '--run', 'c-old', '--output', out]);
    expect(exported.code).toBe(0);
    expect(json(exported)['rows']).toBe((await reviewRows(owner, 'c-old')).filter((r) => r.cls === 'D' || r.cls === 'E').length);
  });

  it('company mode: an ambiguous name goes to review, and the hit picked lands in the mapped columns', async () => {
    const { db, name } = await firmsWithAmbiguousName();
    const run = await runCli(firmsCleanse(db, 'firms'));
    expect(run.code, run.stderr).toBe(0);
    const file = join(dir, 'firms.csv');
    const classes = await runCli(['review', 'export', '--db', db, '--run', 'firms', '--classes', 'E', '--output', file]);
    expect(classes.code).toBe(2);
    expect(classes.stderr).toMatch(/--classes: run firms is a company run/);
    const exported = await runCli(['review', 'export', '--db', db, '--run', 'firms', '--output', file]);
    expect(exported.code, exported.stderr).toBe(0);
    const { headers, rows } = await readCsv(file);
    expect(headers).toEqual(
      expect.arrayContaining([
        'name',
        'zip',
        'city',
        'street',
        'candidate_2_company',
        'candidate_2_zip',
        'candidate_2_city',
        'candidate_2_street',
        'candidate_2_id',
      ]),
    );
    expect(rows).toHaveLength(1);
    const second = {
      id: rows[0]?.['candidate_2_id'],
      company: rows[0]?.['candidate_2_company'],
      zip: rows[0]?.['candidate_2_zip'],
      city: rows[0]?.['candidate_2_city'],
      street: rows[0]?.['candidate_2_street'],
    };
    expect(second.company).toBe(name);
    const before = await withClient(db, async (c) => (await c.query('SELECT * FROM firms')).rows);
    await saveCsv(file, headers, rows, new Map([['1', '2']]), { bom: true, delimiter: ',', quoteAll: true });
    const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'firms-review']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(json(applied)).toMatchObject({ applied: 1, conflicts: 0, badDecisions: 0 });
    const stored = await withClient(
      db,
      async (c) => (await c.query<{ candidates: { id: number }[] }>(`SELECT candidates FROM dq_cleanse.results WHERE run_id = 'firms-review'`)).rows[0],
    );
    expect(String(stored?.candidates[0]?.id)).toBe(second.id);
    await withClient(db, async (c) => {
      expect((await c.query('SELECT id, name, zip, city, street FROM firms')).rows).toEqual([
        { id: 1, name: second.company, zip: second.zip, city: second.city, street: second.street },
      ]);
    });
    expect((await runCli(['rollback', '--db', db, '--run', 'firms-review'])).code).toBe(0);
    expect(await withClient(db, async (c) => (await c.query('SELECT * FROM firms')).rows)).toEqual(before);
  });

  it('company mode: the same hit picked in two exports is the same decision, also when the platform scored it differently the second night', async () => {
    const { db } = await firmsWithAmbiguousName();
    // Two nights before the steward decides: both leave the row awaiting review.
    for (const night of ['firms-1', 'firms-2']) {
      const run = await runCli(firmsCleanse(db, night));
      expect(run.code, run.stderr).toBe(0);
    }
    // The platform scored the same hits a little differently the second night.
    const rescored = await withClient(db, (c) =>
      c.query(
        `UPDATE dq_cleanse.results SET candidates = (SELECT jsonb_agg(jsonb_set(h, '{searchScore}', to_jsonb((h->>'searchScore')::numeric - 0.01)))
           FROM jsonb_array_elements(candidates) AS h) WHERE run_id = 'firms-2' AND status = 'review'`,
      ),
    );
    expect(rescored.rowCount).toBe(1);
    // Both exports are with the steward before either comes back.
    const exported = await Promise.all(
      ['firms-1', 'firms-2'].map(async (run) => {
        const file = join(dir, `${run}.csv`);
        const done = await runCli(['review', 'export', '--db', db, '--run', run, '--output', file]);
        expect(done.code, done.stderr).toBe(0);
        const { headers, rows } = await readCsv(file);
        expect(rows).toHaveLength(1);
        return { file, headers, rows, ids: [1, 2, 3, 4, 5].map((n) => rows[0]?.[`candidate_${n}_id`]) };
      }),
    );
    /** Picks candidate `n` of export `k` and applies the file under `reviewRun`. */
    const pick = async (k: number, n: number, reviewRun: string) => {
      const { file, headers, rows } = exported[k]!;
      await saveCsv(file, headers, rows, new Map([['1', String(n)]]), { bom: true, delimiter: ',', quoteAll: true });
      return runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', reviewRun]);
    };
    const first = await pick(0, 2, 'firms-1-review');
    expect(first.code, first.stderr).toBe(0);
    expect(json(first)).toMatchObject({ applied: 1, badDecisions: 0 });
    const afterFirst = await withClient(db, async (c) => (await c.query('SELECT * FROM firms')).rows);
    // The second file, the same hit picked (under its own number, with its own score): nothing to
    // decide again, exit 0, the row as the first file left it.
    const id = exported[0]!.ids[1];
    const n = exported[1]!.ids.indexOf(id) + 1;
    expect(n).toBeGreaterThan(0);
    expect(exported[1]!.rows[0]?.[`candidate_${n}_search_score`]).not.toBe(exported[0]!.rows[0]?.['candidate_2_search_score']);
    const second = await pick(1, n, 'firms-2-review');
    expect(second.code, second.stderr).toBe(0);
    expect(json(second)).toMatchObject({ applied: 0, badDecisions: 0, sameAsApplied: { rows: 1, runs: ['firms-1-review'] } });
    expect(await withClient(db, async (c) => (await c.query('SELECT * FROM firms')).rows)).toEqual(afterFirst);
  });

  it('export: exit 2 for an unknown run or a run of another table; exit 0 and a header-only file when nothing awaits review', async () => {
    const db = await cleaned('c-small', 40, false);
    await withClient(db, (c) => c.query('CREATE TABLE other (id bigint PRIMARY KEY, street text)'));
    const out = join(dir, 'small.csv');
    const unknown = await runCli(['review', 'export', '--db', db, '--run', 'nope', '--output', out]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/run-not-found: --run nope/);
    const otherTable = await runCli(['review', 'export', '--db', db, '--run', 'c-small', '--table', 'other', '--output', out]);
    expect(otherTable.code).toBe(2);
    expect(otherTable.stderr).toMatch(/run c-small cleaned "public"."customers", not that table/);
    const none = await runCli(['review', 'export', '--db', db, '--run', 'c-small', '--classes', 'F', '--output', out]);
    expect(none.code).toBe(0);
    expect(none.stderr).toMatch(/nothing awaits review in run c-small/);
    expect((await readFile(out, 'utf8')).split('\r\n').filter(Boolean)).toHaveLength(1);
    // Applying that file does nothing, and says so.
    const apply = await runCli(['review', 'apply', '--db', db, '--input', out]);
    expect(apply.code).toBe(0);
    expect(apply.stderr).toMatch(/nothing to apply/);
    // A file that is not a review export is refused, naming what is wrong.
    await writeFile(out, 'a,b\r\n1,2\r\n');
    const foreign = await runCli(['review', 'apply', '--db', db, '--input', out]);
    expect(foreign.code).toBe(2);
    expect(foreign.stderr).toMatch(/review-file: .* has no run_id column/);
    await writeFile(out, Buffer.from([0x72, 0x75, 0x6e, 0x5f, 0x69, 0x64, 0x0d, 0x0a, 0x4b, 0xf6, 0x6c, 0x6e, 0x0d, 0x0a]));
    const latin1 = await runCli(['review', 'apply', '--db', db, '--input', out]);
    expect(latin1.code).toBe(2);
    expect(latin1.stderr).toMatch(/is not UTF-8 text; save it from the spreadsheet as "CSV UTF-8"/);
  });

  it('a nightly run between an export and its apply: its export lists the rows again and says so; the decision applied first stands, and the older file never overwrites newer data', async () => {
    const status = ['--status-columns', 'status=dq_status,class=dq_class'];
    const db = await cleaned('night-a', 150);
    const review = await reviewRows(db, 'night-a');
    const file1 = join(dir, 'night-a.csv');
    const first = await runCli(['review', 'export', '--db', db, '--run', 'night-a', '--output', file1]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toBe('');
    expect(json(first)).toMatchObject({ rows: review.length, alsoAwaiting: { rows: 0, runs: [] } });

    // While the file is with the steward, a person edits one of its rows, and the nightly run comes.
    const [edited, ...rest] = review as [ReviewRow, ...ReviewRow[]];
    await withClient(db, (c) => c.query(`UPDATE customers SET city = 'Edited by a person' WHERE id = $1`, [edited.key]));
    const calls = billable(env.sandbox);
    const nightly = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'night-b', '--batch-size', '50', ...status]));
    expect(nightly.code, nightly.stderr).toBe(0);
    expect(billable(env.sandbox) - calls).toBeLessThanOrEqual(1);
    const queued = new Set((await reviewRows(db, 'night-b')).map((r) => r.key));
    const both = rest.filter((r) => queued.has(r.key));
    expect(both).toHaveLength(rest.length);
    // Listed in both queues by key (the edited row too, if its new values await review as well).
    const shared = review.filter((r) => queued.has(r.key)).length;

    // Its export lists those rows again (nothing waits on a file that may never come back), and
    // says which other run's export lists them too.
    const file2 = join(dir, 'night-b.csv');
    const second = await runCli(['review', 'export', '--db', db, '--run', 'night-b', '--output', file2]);
    expect(second.code, second.stderr).toBe(0);
    expect(json(second)).toMatchObject({ rows: queued.size, alsoAwaiting: { rows: shared, runs: ['night-a'] } });
    expect(second.stderr).toContain(`note: ${shared} of the ${queued.size} row(s) also await a decision in run(s) night-a: no review of that run`);
    const csv2 = await readCsv(file2);
    expect(csv2.rows.map((r) => r['id'])).toEqual(expect.arrayContaining(both.map((r) => r.key)));

    // The steward decides the newer file first: one row kept, one given its first candidate.
    const withCandidates = both.filter((r) => r.candidates.length > 0);
    const [kept, picked, pickedInOld] = withCandidates as [ReviewRow, ReviewRow, ReviewRow];
    expect(pickedInOld).toBeDefined();
    await saveCsv(
      file2,
      csv2.headers,
      csv2.rows,
      new Map([
        [kept.key, 'keep'],
        [picked.key, '1'],
      ]),
      { bom: true, delimiter: ',', quoteAll: true },
    );
    const newer = await runCli(['review', 'apply', '--db', db, '--input', file2, '--run-id', 'rv-night-b']);
    expect(newer.code, newer.stderr).toBe(0);
    expect(json(newer)).toMatchObject({ applied: 1, kept: 1, conflicts: 0, badDecisions: 0 });
    const afterNewer = await rowTexts(db);

    // Then the older file, decided differently for those two rows, plus a row only it decides and
    // the row edited since its export: only that one row is applied.
    const csv1 = await readCsv(file1);
    await saveCsv(
      file1,
      csv1.headers,
      csv1.rows,
      new Map([
        [kept.key, 'invalid'],
        [picked.key, 'keep'],
        [pickedInOld.key, '1'],
        [edited.key, 'keep'],
      ]),
      { bom: true, delimiter: ',', quoteAll: true },
    );
    const older = await runCli(['review', 'apply', '--db', db, '--input', file1, '--run-id', 'rv-night-a']);
    expect(older.code).toBe(4);
    expect(json(older)).toMatchObject({ applied: 1, kept: 0, invalid: 0, conflicts: 1, conflictKeys: [edited.key], badDecisions: 2 });
    for (const r of [kept, picked]) {
      expect(older.stderr).toContain(
        `(key ${r.key}): review run rv-night-b decided this row already (it applied an export of run night-b, which listed the row too)`,
      );
    }
    const afterOlder = await rowTexts(db);
    for (const [id, text] of afterNewer) if (id !== pickedInOld.key) expect(afterOlder.get(id), id).toBe(text);
    expect(await row(db, kept.key)).toMatchObject({ dq_status: 'accepted' });
    expect(await row(db, edited.key)).toMatchObject({ city: 'Edited by a person' });
    expect(await row(db, pickedInOld.key)).toMatchObject({ dq_status: 'accepted' });

    // Neither run's export lists a decided row again.
    for (const [runId, size] of [
      ['night-a', review.length],
      ['night-b', queued.size],
    ] as const) {
      const again = await runCli(['review', 'export', '--db', db, '--run', runId, '--output', join(dir, `${runId}-again.csv`)]);
      expect(again.code, again.stderr).toBe(0);
      expect(json(again)['rows'], runId).toBe(size - 3);
    }

    // The next night calls nothing and writes nothing: every decision stands.
    const callsBefore = billable(env.sandbox);
    const next = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'night-c', '--batch-size', '50', ...status]));
    expect(next.code, next.stderr).toBe(0);
    expect(billable(env.sandbox) - callsBefore).toBe(0);
    expect(json(next)).toMatchObject({ written: 0, conflicts: 0 });
    expect(await rowTexts(db)).toEqual(afterOlder);
  });

  it('the older export applied first: the newer one does not decide its rows again; a decision older than a run (--max-age 0 asked again) lets that run decide anew', async () => {
    const status = ['--status-columns', 'status=dq_status,class=dq_class'];
    const db = await cleaned('night-x', 100);
    const [first] = (await reviewRows(db, 'night-x')) as [ReviewRow];
    const fileX = join(dir, 'night-x.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'night-x', '--output', fileX])).code).toBe(0);
    expect((await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'night-y', '--batch-size', '50', ...status]))).code).toBe(0);
    const fileY = join(dir, 'night-y.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'night-y', '--output', fileY])).code).toBe(0);

    const x = await readCsv(fileX);
    await saveCsv(fileX, x.headers, x.rows, new Map([[first.key, 'keep']]), { bom: true, delimiter: ',', quoteAll: true });
    const appliedX = await runCli(['review', 'apply', '--db', db, '--input', fileX, '--run-id', 'rv-x']);
    expect(appliedX.code, appliedX.stderr).toBe(0);
    expect(json(appliedX)).toMatchObject({ kept: 1 });
    const y = await readCsv(fileY);
    expect(y.rows.map((r) => r['id'])).toContain(first.key);
    await saveCsv(fileY, y.headers, y.rows, new Map([[first.key, 'invalid']]), { bom: true, delimiter: ',', quoteAll: true });
    const appliedY = await runCli(['review', 'apply', '--db', db, '--input', fileY, '--run-id', 'rv-y']);
    expect(appliedY.code).toBe(4);
    expect(json(appliedY)).toMatchObject({ invalid: 0, badDecisions: 1 });
    expect(appliedY.stderr).toContain(
      `(key ${first.key}): review run rv-x decided this row already (it applied an export of run night-x, which listed the row too)`,
    );
    expect(await row(db, first.key)).toMatchObject({ dq_status: 'accepted' });

    // A run that asks the platform again (--max-age 0) puts the row back in review after the
    // decision: its export lists it, and a decision in that file is applied.
    expect((await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'night-z', '--batch-size', '50', '--max-age', '0', ...status]))).code).toBe(0);
    expect((await reviewRows(db, 'night-z')).map((r) => r.key)).toContain(first.key);
    const fileZ = join(dir, 'night-z.csv');
    expect((await runCli(['review', 'export', '--db', db, '--run', 'night-z', '--output', fileZ])).code).toBe(0);
    const z = await readCsv(fileZ);
    expect(z.rows.map((r) => r['id'])).toContain(first.key);
    await saveCsv(fileZ, z.headers, z.rows, new Map([[first.key, 'invalid']]), { bom: true, delimiter: ',', quoteAll: true });
    const appliedZ = await runCli(['review', 'apply', '--db', db, '--input', fileZ, '--run-id', 'rv-z']);
    expect(appliedZ.code, appliedZ.stderr).toBe(0);
    expect(json(appliedZ)).toMatchObject({ invalid: 1, badDecisions: 0 });
    expect(await row(db, first.key)).toMatchObject({ dq_status: 'invalid' });

    // Night y's file again: the row's latest decision (rv-z's invalid) is the one it is held to.
    const again = await runCli(['review', 'apply', '--db', db, '--input', fileY, '--run-id', 'rv-y2']);
    expect(again.code, again.stderr).toBe(0);
    expect(json(again)).toMatchObject({ invalid: 0, badDecisions: 0, sameAsApplied: { rows: 1, runs: ['rv-z'] } });
    await saveCsv(fileY, y.headers, y.rows, new Map([[first.key, 'keep']]), { bom: true, delimiter: ',', quoteAll: true });
    const keepY = await runCli(['review', 'apply', '--db', db, '--input', fileY, '--run-id', 'rv-y3']);
    expect(keepY.code).toBe(4);
    expect(keepY.stderr).toContain(
      `(key ${first.key}): review run rv-z decided this row already (it applied an export of run night-z, which listed the row too): invalid, not keep`,
    );
    expect(await row(db, first.key)).toMatchObject({ dq_status: 'invalid' });
  });
  it('alsoAwaiting names another run only while its review is still to come: not once its file was applied, nor for a row decided since', async () => {
    const status = ['--status-columns', 'status=dq_status,class=dq_class'];
    const db = await cleaned('n1', 150);
    const queue1 = await reviewRows(db, 'n1');
    const file1 = join(dir, 'n1.csv');
    const exported1 = await runCli(['review', 'export', '--db', db, '--run', 'n1', '--output', file1]);
    expect(exported1.code, exported1.stderr).toBe(0);

    // The nightly run while file1 is with the steward: its export names n1 for the rows both hold.
    expect((await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'n2', '--batch-size', '50', ...status]))).code).toBe(0);
    const queue2 = new Set((await reviewRows(db, 'n2')).map((r) => r.key));
    const shared = queue1.filter((r) => queue2.has(r.key)).length;
    expect(shared).toBeGreaterThan(3);
    const pending = await runCli(['review', 'export', '--db', db, '--run', 'n2', '--output', join(dir, 'n2-pending.csv')]);
    expect(pending.code, pending.stderr).toBe(0);
    expect(json(pending)).toMatchObject({ rows: queue2.size, alsoAwaiting: { rows: shared, runs: ['n1'] } });
    expect(pending.stderr).toBe(
      `dq-pg: note: ${shared} of the ${queue2.size} row(s) also await a decision in run(s) n1: no review of that run has been applied yet, and an export of that run lists them too. ` +
        'Whichever file is applied first decides such a row; applying the other file then counts the same decision as applied and refuses a different one by name (exit 4)\n',
    );

    // File1 comes back: one row given a candidate that changes it, one left empty, the rest kept.
    const csv1 = await readCsv(file1);
    const changes = (r: ReviewRow): boolean => {
      const c = r.candidates[0];
      const now = csv1.rows.find((x) => x['id'] === r.key);
      return queue2.has(r.key) && full(c) && (c.street !== now?.['street'] || c.postalCode !== now?.['postal_code'] || c.locality !== now?.['city']);
    };
    const picked = queue1.find(changes) as ReviewRow;
    const left = queue1.find((r) => r !== picked && queue2.has(r.key)) as ReviewRow;
    expect(picked).toBeDefined();
    const original = await row(db, picked.key);
    await saveCsv(file1, csv1.headers, csv1.rows, new Map(queue1.filter((r) => r !== left).map((r) => [r.key, r === picked ? '1' : 'keep'])), {
      bom: true,
      delimiter: ',',
      quoteAll: true,
    });
    const applied1 = await runCli(['review', 'apply', '--db', db, '--input', file1, '--run-id', 'rv-n1']);
    expect(applied1.code, applied1.stderr).toBe(0);
    expect(json(applied1)).toMatchObject({ applied: 1, kept: queue1.length - 2, skipped: 1, conflicts: 0 });

    // n2's export now lists the row left empty (and rows only n2 holds), and names no run: n1's
    // file was applied, and every other row is decided.
    const file2 = join(dir, 'n2.csv');
    const after = await runCli(['review', 'export', '--db', db, '--run', 'n2', '--output', file2]);
    expect(after.code, after.stderr).toBe(0);
    expect(json(after)).toMatchObject({ rows: queue2.size - (shared - 1), alsoAwaiting: { rows: 0, runs: [] } });
    expect(after.stderr).toBe('');
    const csv2 = await readCsv(file2);
    expect(csv2.rows.map((r) => r['id'])).toContain(left.key);

    // File2 comes back with that row kept; then a person puts the picked row's old values back, and
    // the next night holds it as awaiting review again: its export lists it, and names no run for
    // it (n1 and n2 both had it decided by rv-n1).
    await saveCsv(file2, csv2.headers, csv2.rows, new Map(csv2.rows.map((r) => [r['id'] ?? '', 'keep'])), { bom: true, delimiter: ',', quoteAll: true });
    const applied2 = await runCli(['review', 'apply', '--db', db, '--input', file2, '--run-id', 'rv-n2']);
    expect(applied2.code, applied2.stderr).toBe(0);
    await withClient(db, (c) =>
      c.query(`UPDATE customers SET ${COLUMNS.map((col, i) => `${col} = $${i + 2}`).join(', ')} WHERE id = $1`, [
        picked.key,
        ...COLUMNS.map((col) => original[col]),
      ]),
    );
    expect((await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'n3', '--batch-size', '50', ...status]))).code).toBe(0);
    expect((await reviewRows(db, 'n3')).map((r) => r.key)).toEqual([picked.key]);
    const third = await runCli(['review', 'export', '--db', db, '--run', 'n3', '--output', join(dir, 'n3.csv')]);
    expect(third.code, third.stderr).toBe(0);
    expect(json(third)).toMatchObject({ rows: 1, alsoAwaiting: { rows: 0, runs: [] } });
    expect(third.stderr).toBe('');
  });

  describe.each([
    { order: 'newer file first', first: 'b', second: 'a' },
    { order: 'older file first', first: 'a', second: 'b' },
  ] as const)('two exports listing the same rows, $order', ({ first, second }) => {
    it('the second file deciding a row the same way counts it as applied (no write, exit 0); a different decision is refused by name (exit 4)', async () => {
      const status = ['--status-columns', 'status=dq_status,class=dq_class'];
      const night = { a: `same-${first}${second}-a`, b: `same-${first}${second}-b` };
      const db = await cleaned(night.a, 150);
      const files = { a: join(dir, `${night.a}.csv`), b: join(dir, `${night.b}.csv`) };
      expect((await runCli(['review', 'export', '--db', db, '--run', night.a, '--output', files.a])).code).toBe(0);
      expect((await runCli(cleanseArgs(db, env.sandbox, ['--run-id', night.b, '--batch-size', '50', ...status]))).code).toBe(0);
      expect((await runCli(['review', 'export', '--db', db, '--run', night.b, '--output', files.b])).code).toBe(0);
      const queues = { a: await reviewRows(db, night.a), b: await reviewRows(db, night.b) };
      const inB = new Map(queues.b.map((r) => [r.key, r]));
      // Rows both files list: one kept, one marked invalid, one given a candidate (a row with two).
      const both = queues.a.filter((r) => inB.has(r.key));
      const picked = both.find((r) => full(r.candidates[0]) && full(r.candidates[1])) as ReviewRow;
      expect(picked).toBeDefined();
      const [kept, invalid] = both.filter((r) => r !== picked) as [ReviewRow, ReviewRow];
      // The same candidate by its fields, numbered in each file's own list.
      const numberIn = (run: 'a' | 'b', n: number): string => {
        const list = run === 'a' ? picked.candidates : (inB.get(picked.key)?.candidates ?? []);
        return String(list.findIndex((c) => JSON.stringify(c) === JSON.stringify(picked.candidates[n - 1])) + 1);
      };
      const decide = async (run: 'a' | 'b', cells: Map<string, string>, runId: string): Promise<CliResult> => {
        const csv = await readCsv(files[run]);
        const out = join(dir, `${runId}.csv`);
        await saveCsv(out, csv.headers, csv.rows, cells, { bom: true, delimiter: ',', quoteAll: true });
        return runCli(['review', 'apply', '--db', db, '--input', out, '--run-id', runId]);
      };
      const decisions = (run: 'a' | 'b', overrides: [string, string][] = []) =>
        new Map([[kept.key, 'keep'], [invalid.key, 'invalid'], [picked.key, numberIn(run, 1)], ...overrides]);

      const firstApply = await decide(first, decisions(first), `rv-${night[first]}`);
      expect(firstApply.code, firstApply.stderr).toBe(0);
      expect(json(firstApply)).toMatchObject({ applied: 1, kept: 1, invalid: 1, conflicts: 0, badDecisions: 0 });
      const decided = await rowTexts(db);
      await countWrites(db);

      // The other file, decided the same way: nothing to write, nothing refused.
      const same = await decide(second, decisions(second), `rv-${night[second]}`);
      expect(same.code, same.stderr).toBe(0);
      expect(json(same)).toMatchObject({
        applied: 0,
        kept: 0,
        invalid: 0,
        conflicts: 0,
        badDecisions: 0,
        sameAsApplied: { rows: 3, runs: [`rv-${night[first]}`] },
      });
      expect(same.stderr).toBe(
        `dq-pg: note: 3 row(s) of ${join(dir, `rv-${night[second]}.csv`)} were decided the same way already by review run(s) rv-${night[first]}: nothing to write for them\n`,
      );
      expect(await writes(db)).toEqual([]);
      expect(await rowTexts(db)).toEqual(decided);
      expect(await resultsOf(db, `rv-${night[second]}`, [kept.key, invalid.key, picked.key])).toEqual(new Map());

      // Again with the other candidate for one row: that row is refused by name, the two others
      // count as applied, and the table keeps the first decision.
      const other = await decide(second, decisions(second, [[picked.key, numberIn(second, 2)]]), `rv-${night[second]}-2`);
      expect(other.code).toBe(4);
      expect(json(other)).toMatchObject({ applied: 0, kept: 0, invalid: 0, conflicts: 0, badDecisions: 1, sameAsApplied: { rows: 2 } });
      const c = (n: number) => [picked.candidates[n - 1]?.street, picked.candidates[n - 1]?.houseNumber].join(', ');
      expect(other.stderr).toContain(
        `(key ${picked.key}): review run rv-${night[first]} decided this row already (it applied an export of run ${night[first]}, which listed the row too): candidate ${numberIn(first, 1)} of its file (${c(1)}`,
      );
      expect(other.stderr).toContain(`, not candidate ${numberIn(second, 2)} (${c(2)}`);
      expect(other.stderr.match(/bad-decision:/g)).toHaveLength(1);
      expect(await writes(db)).toEqual([]);
      expect(await rowTexts(db)).toEqual(decided);
    });
  });
});
