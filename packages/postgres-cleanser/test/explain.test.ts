import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSchema, inspectTable, pageWriteParams, pageWriteParamTypes, pageWriteSql, textArrayLiteral } from '../src/index.js';
import type { PageCheckpoint, PageWrite, TargetTable } from '../src/index.js';
import { startPostgres } from '../../../test/support/pg.js';
import type { TestPostgres } from '../../../test/support/pg.js';

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
    keys, write: keys.map(() => true), status: keys.map(() => 'accepted'), resultClass: keys.map(() => 'C'),
    requestId: none, candidates: none, detail: none, error: none,
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
  rangeNo: 1, prevKey: '100000', lastKey: '101000', done: false,
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
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${pageWriteSql(target)}`, pageWriteParams('explain', 'w', new Date(), page(), CHECKPOINT));
    const scans = scansOfBig(rows[0]?.['QUERY PLAN']);
    expect(scans.length).toBeGreaterThan(0);
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
    const args = pageWriteParams('explain', 'w', new Date(), page(), CHECKPOINT).map((v, i) => `${client.escapeLiteral(literal(v))}::${types[i]}`);
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) EXECUTE page_write(${args.join(', ')})`);
    const scans = scansOfBig(rows[0]?.['QUERY PLAN']);
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) expect(scan['Index Name']).toBe('big_pkey');
  });
});

describe('page parameters', () => {
  it('reach PostgreSQL as exactly the values given, whatever characters they hold', async () => {
    const values = ['plain', null, 'say "hi"', 'back\\slash\\', '', 'NULL', '{a,b}', ' spaced ', 'line\nbreak', 'Straße 5 – 🏠', "it's"];
    const { rows } = await client.query<{ v: string | null }>('SELECT unnest($1::text[]) AS v', [textArrayLiteral(values)]);
    expect(rows.map((r) => r.v)).toEqual(values);
  });
});
