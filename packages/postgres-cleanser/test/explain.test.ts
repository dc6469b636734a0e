import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSchema } from '../src/bookkeeping.js';
import { pageReadSql, pageWriteParams, pageWriteParamTypes, pageWriteSql, textArrayLiteral, textArrayParam } from '../src/page-store.js';
import type { PageCheckpoint, PageWrite } from '../src/page-store.js';
import { inspectTable } from '../src/preflight.js';
import type { TargetTable } from '../src/preflight.js';
import { startPostgres } from '@dq/test-support/pg';
import type { TestPostgres } from '@dq/test-support/pg';

let server: TestPostgres;
let client: pg.Client;
let target: TargetTable;
const ROWS = 200_000;

beforeAll(async () => {
  server = await startPostgres();
  client = new pg.Client({ connectionString: await server.createDatabase() });
  await client.connect();
  await client.query(`CREATE TABLE big (id bigint PRIMARY KEY, street text, city text)`);
  await client.query(`INSERT INTO big SELECT g, 'Street ' || g, 'Town ' || (g % 1000) FROM generate_series(1, ${ROWS}) g`);
  await client.query('ANALYZE big');
  await ensureSchema(client);
  target = await inspectTable(client, { table: 'big', key: 'id', map: { street: 'street', locality: 'city' }, mode: 'address', write: true });
});
afterAll(async () => {
  await client?.end();
  await server?.stop();
});

/** A page of 1000 rows from the middle of the table, every row to be written. */
function page(): PageWrite {
  const keys = Array.from({ length: 1000 }, (_, i) => String(100_001 + i));
  const none = keys.map(() => null);
  return {
    keys,
    write: keys.map(() => true),
    status: keys.map(() => 'accepted'),
    resultClass: keys.map(() => 'C'),
    requestId: none,
    candidates: none,
    detail: none,
    error: none,
    before: [keys.map((k) => `Street ${k}`), keys.map((k) => `Town ${Number(k) % 1000}`)],
    after: [keys.map((k) => `Street ${k} (fixed)`), keys.map((k) => `Town ${Number(k) % 1000}`)],
  };
}

/** A parameter as PostgreSQL's text input: arrays as `{"a",NULL}`, dates as ISO. */
function literal(v: unknown): string {
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) {
    return `{${v.map((e) => (e === null ? 'NULL' : `"${String(e).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`)).join(',')}}`;
  }
  return String(v);
}

const CHECKPOINT: PageCheckpoint = {
  rangeNo: 1,
  prevKey: '100000',
  lastKey: '101000',
  done: false,
  counts: { rowsRead: 1000, unchanged: 0, accepted: 1000, review: 0, invalid: 0, invalidInput: 0, unavailable: 0, apiCalls: 1000 },
};

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** The scans of table `big` inside the UPDATE of the page write. */
function scansOfBig(explained: unknown): PlanNode[] {
  const plan = (explained as [{ Plan: PlanNode }])[0].Plan;
  const update = nodes(plan).find((n) => n['Node Type'] === 'ModifyTable' && n['Relation Name'] === 'big');
  expect(update).toBeDefined();
  return nodes(update as PlanNode).filter((n) => n['Relation Name'] === 'big' && n['Node Type'] !== 'ModifyTable');
}

describe('the page update', () => {
  it('finds its rows through the primary-key index, not a scan of the table', async () => {
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
      `EXPLAIN (FORMAT JSON) ${pageWriteSql(target)}`,
      pageWriteParams('explain', 'w', new Date(), page(), CHECKPOINT),
    );
    const scans = scansOfBig(rows[0]?.['QUERY PLAN']);
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) {
      expect(scan['Node Type']).toMatch(/Index/);
      expect(scan['Index Name']).toBe('big_pkey');
    }
  });

  it('written again without the rows another session holds, locks them and finds them through the primary-key index too', async () => {
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
      `EXPLAIN (FORMAT JSON) ${pageWriteSql(target, undefined, true)}`,
      pageWriteParams('explain', 'w', new Date(), page(), CHECKPOINT),
    );
    const plan = (rows[0]?.['QUERY PLAN'] as [{ Plan: PlanNode }])[0].Plan;
    expect(nodes(plan).some((n) => n['Node Type'] === 'LockRows')).toBe(true);
    // Every scan of the table in the statement: the lock's and the UPDATE's.
    const scans = nodes(plan).filter((n) => n['Relation Name'] === 'big' && n['Node Type'] !== 'ModifyTable');
    expect(scans.length).toBeGreaterThan(1);
    for (const scan of scans) {
      expect(scan['Node Type']).toMatch(/Index/);
      expect(scan['Index Name']).toBe('big_pkey');
    }
  });

  it('keeps using the primary-key index once the prepared statement switches to a generic plan', async () => {
    const types = pageWriteParamTypes(target);
    await client.query(`PREPARE page_write(${types.join(', ')}) AS ${pageWriteSql(target)}`);
    await client.query('SET plan_cache_mode = force_generic_plan');
    // EXECUTE takes no bind parameters: spell the values as literals.
    const args = pageWriteParams('explain', 'w', new Date(), page(), CHECKPOINT).map(
      (v, i) => `${v === null ? 'NULL' : client.escapeLiteral(literal(v))}::${types[i]}`,
    );
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) EXECUTE page_write(${args.join(', ')})`);
    const scans = scansOfBig(rows[0]?.['QUERY PLAN']);
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) expect(scan['Index Name']).toBe('big_pkey');
  });
});

describe('page parameters', () => {
  it('send a column that is NULL throughout the page as one NULL, and the page is still written right', async () => {
    const p = page();
    // No request ids, and no new city anywhere on the page: both go as a NULL parameter.
    p.after[1] = p.keys.map(() => null);
    const params = pageWriteParams('nulls', 'w', new Date(), p, CHECKPOINT);
    expect(params.filter((v) => v === null).length).toBeGreaterThanOrEqual(5); // request ids, candidates, detail, error, new cities
    await client.query('BEGIN');
    try {
      await client.query(`INSERT INTO dq_cleanse.progress (run_id, range_no, last_key) VALUES ('nulls', 1, '100000')`);
      const { rows } = await client.query<{ written: number; conflicts: string[] }>({ text: pageWriteSql(target), values: params });
      expect(rows[0]).toMatchObject({ written: 1000, conflicts: [] });
      const table = await client.query<{ street: string; city: string }>(`SELECT street, city FROM big WHERE id IN (100001, 101000) ORDER BY id`);
      expect(table.rows).toEqual([
        { street: 'Street 100001 (fixed)', city: 'Town 1' },
        { street: 'Street 101000 (fixed)', city: 'Town 0' },
      ]);
      const audit = await client.query(
        `SELECT row_key, request_id, candidates, before, after FROM dq_cleanse.results WHERE run_id = 'nulls' ORDER BY row_key LIMIT 1`,
      );
      expect(audit.rows).toEqual([
        { row_key: '100001', request_id: null, candidates: null, before: ['Street 100001', 'Town 1'], after: ['Street 100001 (fixed)', 'Town 1'] },
      ]);
    } finally {
      await client.query('ROLLBACK');
    }
  });

  it('textArrayParam is null only when every value is', () => {
    expect(textArrayParam([null, null])).toBeNull();
    expect(textArrayParam([null, ''])).toBe('{NULL,""}');
  });

  it('reach PostgreSQL as exactly the values given, whatever characters they hold', async () => {
    const values = ['plain', null, 'say "hi"', 'back\\slash\\', '', 'NULL', '{a,b}', ' spaced ', 'line\nbreak', 'Straße 5 – 🏠', "it's"];
    const { rows } = await client.query<{ v: string | null }>('SELECT unnest($1::text[]) AS v', [textArrayLiteral(values)]);
    expect(rows.map((r) => r.v)).toEqual(values);
  });
});

describe('the page read with known rows', () => {
  const text = (): string => pageReadSql(target, undefined, true, true, true);
  const values = (): unknown[] => ['100000', '150000', 1000, ['scope', 'scope-before'], new Date(Date.now() - 3_600_000).toISOString()];
  /** The scans of the read's plan, as `Node Type` and relation. */
  const scans = async (): Promise<PlanNode[]> => {
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${text()}`, values());
    return nodes((rows[0]?.['QUERY PLAN'] as [{ Plan: PlanNode }])[0].Plan).filter((n) => n['Relation Name'] !== undefined);
  };

  it('finds each row of the page, its known entry and its results row through their indexes, not a scan, with or without statistics', async () => {
    // A first run's results, before anything analysed them (autovacuum off, as in the harness), and no known rows yet.
    await client.query(`INSERT INTO dq_cleanse.results (run_id, row_key, status, outcome, checked_at, worker, before, after)
      SELECT 'known-explain', g::text, 'accepted', 'written', now(), 'w', ARRAY['Old ' || g, 'Town'], ARRAY['Street ' || g, 'Town ' || (g % 1000)]
        FROM generate_series(1, ${ROWS}) g`);
    for (const scan of await scans()) expect(scan['Node Type'], scan['Relation Name']).not.toBe('Seq Scan');
    // Every row of the table known from that run, statistics up to date.
    await client.query(`INSERT INTO dq_cleanse.known (scope, row_key, run_id) SELECT 'scope', g::text, 'known-explain' FROM generate_series(1, ${ROWS}) g`);
    await client.query('ANALYZE dq_cleanse.results');
    await client.query('ANALYZE dq_cleanse.known');
    const found = await scans();
    for (const scan of found) expect(scan['Node Type'], scan['Relation Name']).not.toBe('Seq Scan');
    expect(new Set(found.map((n) => n['Relation Name']))).toEqual(new Set(['big', 'known', 'results']));
    // And it reads them as known: the page's 1000 rows, each with its answer.
    const read = await client.query<unknown[]>({ text: text(), values: values(), rowMode: 'array' });
    expect(read.rows).toHaveLength(1000);
    expect(read.rows.every((r) => r[3] === 'accepted')).toBe(true);
  });
});
